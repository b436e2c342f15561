"""A starting hierarchy for every QI, so the optimal search can run before the officer builds any.

Hierarchy files next to the data (ARX's ``*_hierarchy_<variable>.csv``) win. Otherwise the variable's
scale decides (:func:`infer_scale`, which the officer may override):

* **ordinal** (numbers, or codes whose labels are ordered quantities: ``$1,001-$5,000``, ``Very fluent``,
  years) with at least four values: Angiuli & Waldo's greedy capacity binning at 1 %, 5 % and 20 % of the
  records (adjacent values merged towards the closest mass, so the order is kept and bins stay narrow);
* **nominal** (texts, or codes of unordered categories: relationship, region, occupation): never numeric
  intervals, which would claim an order the codes do not have ("4-5", "6-9"). The rarest groups merge,
  level by level, until every group holds 1 %, 5 % and 20 % of the records
  (:func:`frequency_grouping_hierarchy`); groups are named by their categories' labels, numbered where
  two groups of a level would share a name;
* anything with fewer than four values: keep or drop (original → ``*``).

These are proposals: the Recode page shows them with the scale and why, and the officer replaces them.
"""

from __future__ import annotations

import heapq
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from .hierarchy import (
    TOP,
    Hierarchy,
    _complete,
    find_hierarchy_file,
    greedy_binning_hierarchy,
    read_arx_hierarchy,
    value_text,
)

CAPACITY_SHARES = (0.01, 0.05, 0.20)
SCALES = ("nominal", "ordinal")

NOMINAL_NAMES = ("relat", "region", "occup", "race", "ethn", "relig", "marit", "country", "nation", "citizen",
                 "sex", "gender", "job", "industr", "lang", "state", "province", "district", "county", "municip",
                 "area", "sector", "tenure", "type", "kind", "status", "colou", "color", "brand", "party")
"""Name fragments of unordered categories (relationship to the household head, region, occupation...)."""
ORDINAL_WORDS = ("less", "more", "under", "over", "above", "below", "least", "most", "very", "fluent", "never",
                 "rarely", "sometimes", "often", "always", "low", "high", "medium", "middle", "none", "level",
                 "grade", "degree", "graduat", "finish", "attended", "year", "age", "small", "large", "few",
                 "many", "first", "second", "third", "primary", "secondary", "tertiary", "poor", "fair", "good",
                 "excellent", "agree", "disagree")
"""Words in value labels of ordered categories (amounts, frequencies, fluency, education levels)."""
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class ScaleGuess:
    """The scale of a variable's codes and the plain reason shown to the officer (who may override it)."""

    scale: str
    reason: str


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def infer_scale(name: str, values: Sequence[object], labels: Sequence[str]) -> ScaleGuess:
    """Nominal or ordinal, from the value types, the value labels and the name (in that order).

    Texts are nominal. Numbers with labels are ordinal when at least half of the labels that differ from
    their value hold a digit (amounts, ranges) or a word starting like a word of order (``very``, ``less``,
    ``graduated``; "language" does not count as "age"),
    else nominal. Unlabelled numbers are nominal only when the variable's name says so (``relat``,
    ``region``, ``occup``...) and it has at most 50 values; otherwise they are treated as measurements.
    """
    if not values or not all(_is_number(v) for v in values):
        return ScaleGuess("nominal", "its values are text")
    own = [str(lab) for v, lab in zip(values, labels, strict=True)
           if str(lab).strip() and str(lab).strip() != value_text(float(v))]  # type: ignore[arg-type]
    if own:
        ordered = sum(1 for lab in own if _DIGIT.search(lab)
                      or any(w.startswith(ORDINAL_WORDS) for w in _WORD.findall(lab.lower())))
        if 2 * ordered >= len(own):
            return ScaleGuess("ordinal", "its value labels describe ordered amounts or levels")
        return ScaleGuess("nominal", "its value labels name unordered categories")
    low = name.lower()
    hint = next((h for h in NOMINAL_NAMES if h in low), None)
    if hint is not None and len(values) <= 50:
        return ScaleGuess("nominal", f"its name suggests categories ('{hint}') and its codes have no labels")
    return ScaleGuess("ordinal", "its values are numbers without labels")


def scale_of(ds: Dataset, column: str) -> ScaleGuess:
    """:func:`infer_scale` on a variable of ``ds``."""
    qm = ds.qi_matrix([column])
    return infer_scale(column, qm.values[0], qm.labels[0])


def _group_name(first: Sequence[str], n: int) -> str:
    """Name of a group of ``n`` categories from its smallest labels in sorted order (at least
    ``min(n, 3)`` of them): all of them up to three, else the first two and the count."""
    if n <= 3:
        return " / ".join(first[:n])
    return f"{first[0]} / {first[1]} / … ({n} categories)"


_Group = tuple[int, str, int, int, list[int], list[str] | None]
"""A group waiting in the heap: (records, name, minus its merge number (0 for a category), category index
(0 for a merged group), member indices, its three smallest labels in sorted order (None for a category)).
The first four fields order the heap and are never equal for two groups, so members are never compared."""


def _merged(a: _Group, b: _Group, labels: Sequence[str], number: int) -> _Group:
    """The group of ``a`` and ``b`` (the ``number``-th merge), named without re-sorting all member labels.

    Only the three smallest labels can appear in a name, and those of the union are among the three
    smallest of each side; the longer member list absorbs the shorter, so a member moves O(log n) times."""
    first = sorted((a[5] or [labels[a[4][0]]]) + (b[5] or [labels[b[4][0]]]))[:3]
    big, small = (a[4], b[4]) if len(a[4]) >= len(b[4]) else (b[4], a[4])
    big.extend(small)
    return a[0] + b[0], _group_name(first, len(big)), -number, 0, big, first


def frequency_grouping_hierarchy(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                                 capacities: Sequence[float], name: str = "") -> Hierarchy:
    """Unordered categories grouped by rarity, one level per capacity (increasing): starting from the
    level below, the two smallest groups (by records, ties by name) merge until every group holds at
    least the capacity (or one group is left).

    Groups only ever merge, so the levels nest; a category is never split, and no interval of codes is
    formed. A group is named by its members' labels (``Farmer / Laborer``), with a number added
    (``Farmer / Laborer (2)``) where another group or a category of the level already has that name
    (:func:`_level_labels`); the number is only in the label, ties between groups still go by the name.

    The groups wait in a heap, so a text variable with 100,000 categories is grouped in O(n log n) rather
    than re-sorted after every merge. Groups of equal size and name keep the order such a stable re-sort
    gives: the newest merged group first, then older merged groups, then categories in their given order.
    """
    heap: list[_Group] = [(int(counts[i]), texts[i], 0, i, [i], None) for i in range(len(texts))]
    heapq.heapify(heap)
    merges = 0
    levels = []
    for c in sorted(capacities):
        while len(heap) > 1 and heap[0][0] < c:
            merges += 1
            heapq.heappush(heap, _merged(heapq.heappop(heap), heapq.heappop(heap), labels, merges))
        levels.append(_level_labels(heap, len(texts)))
    return _complete(list(texts), levels, name)


def _level_labels(groups: Sequence[_Group], size: int) -> list[str]:
    """The label of each category at one level: its group's name, made distinct from every other label.

    A label stands for its group in the hierarchy, so two groups under one label would be released as one
    (and re-separated at a coarser level, which no hierarchy may do). Two codes may share a value label,
    groups of four or more may share their two smallest labels and their number of categories, and a
    category may be written like a group ("a / b"). So a category keeps its own text; a merged group keeps
    its name unless a category or a merged group holding a smaller category index has it, and then takes
    the first free `` (2)``, `` (3)``...: it depends only on the level's groups, and a level without a
    clash is unchanged."""
    ordered = sorted(groups, key=lambda g: (g[5] is not None, min(g[4])))  # categories first
    taken = {g[1] for g in groups}
    used: set[str] = set()
    suffix: dict[str, int] = {}  # next number to try per clashing name, so many clashes stay linear
    of = [""] * size
    for g in ordered:
        label = g[1]
        if label in used and g[5] is not None:
            k = suffix.get(label, 2)
            while f"{label} ({k})" in taken:
                k += 1
            suffix[label] = k + 1
            label = f"{label} ({k})"
            taken.add(label)
        used.add(label)
        for i in g[4]:
            of[i] = label
    return of


def default_hierarchy(ds: Dataset, column: str, scale: str | None = None) -> Hierarchy:
    """The automatic hierarchy of one variable (see the module docstring); ``scale`` overrides
    :func:`infer_scale` (``"nominal"`` or ``"ordinal"``)."""
    qm = ds.qi_matrix([column])
    codes = qm.codes[:, 0]
    counts = np.bincount(codes[codes >= 0], minlength=len(qm.values[0]))
    return default_hierarchy_of_counts(column, qm.values[0], qm.labels[0], counts, scale)


def default_hierarchy_of_counts(column: str, values: Sequence[object], labels: Sequence[str],
                                counts: Sequence[int] | np.ndarray, scale: str | None = None) -> Hierarchy:
    """:func:`default_hierarchy` from a variable's distinct values and their record counts, so that a class
    table (a census file aggregated out of core) gets the hierarchy the records themselves would get."""
    if not values:
        raise InputError(f"Variable '{column}' has no observed values; it needs no hierarchy.")
    if scale is not None and scale not in SCALES:
        raise InputError(f"Unknown scale '{scale}': nominal or ordinal.")
    counts = np.asarray(counts, dtype=np.int64)
    observed = int(counts.sum())
    numeric = all(_is_number(v) for v in values)
    texts = [value_text(float(v)) if _is_number(v) else str(v).strip() for v in values]  # type: ignore[arg-type]
    if len(values) < 4:
        return Hierarchy(tuple((t, TOP) for t in texts), column)
    scale = scale or infer_scale(column, values, labels).scale
    caps = sorted({max(2, math.ceil(share * observed)) for share in CAPACITY_SHARES})
    if scale == "ordinal" and numeric:  # weighted by the counts: a census variable is not expanded to records
        return greedy_binning_hierarchy(np.asarray(values, dtype=np.float64), caps, name=column, counts=counts)
    shown = [str(lab) if str(lab).strip() else t for lab, t in zip(labels, texts, strict=True)]
    return frequency_grouping_hierarchy(texts, shown, counts.tolist(), caps, name=column)


def default_hierarchies(
    ds: Dataset, columns: Sequence[str], directory: str | os.PathLike | None = None
) -> dict[str, Hierarchy]:
    """Hierarchies for ``columns``: from ARX files in ``directory`` where present, else automatic."""
    out = {}
    for c in columns:
        path = find_hierarchy_file(directory, c) if directory is not None else None
        out[c] = read_arx_hierarchy(path, c) if path is not None else default_hierarchy(ds, c)
    return out
