"""A starting hierarchy for every QI, so the optimal search can run before the officer builds any.

Hierarchy files next to the data (ARX's ``*_hierarchy_<variable>.csv``) win. Otherwise the variable's
scale decides (:func:`infer_scale`, which the officer may override):

* **ordinal** (numbers, or codes whose labels are ordered quantities: ``$1,001-$5,000``, ``Very fluent``,
  years) with at least four values: Angiuli & Waldo's greedy capacity binning at 1 %, 5 % and 20 % of the
  records (adjacent values merged towards the closest mass, so the order is kept and bins stay narrow);
* **nominal** (texts, or codes of unordered categories: relationship, region, occupation): never numeric
  intervals, which would claim an order the codes do not have ("4-5", "6-9"). The rarest groups merge,
  level by level, until every group holds 1 %, 5 % and 20 % of the records
  (:func:`frequency_grouping_hierarchy`); groups are named by the labels of their categories of at least
  1 % of the records (rarer ones are counted, never named), numbered where two groups of a level would
  share a name;
* anything with fewer than four values: keep or drop (original → ``*``).

These are proposals: the Recode page shows them with the scale and why, and the officer replaces them.
"""

from __future__ import annotations

import bisect
import heapq
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..errors import InputError
from ..exact_numbers import count_beyond_double
from .hierarchy import (
    TOP,
    Hierarchy,
    _nested_hierarchy,
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
           if str(lab).strip() and str(lab).strip() != value_text(v)]  # type: ignore[arg-type]
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


def frequency_grouping_hierarchy(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                                 capacities: Sequence[float], name: str = "") -> Hierarchy:
    """Unordered categories grouped by rarity, one level per capacity (increasing): starting from the
    level below, the two smallest groups (by records, ties by name) merge until every group holds at
    least the capacity (or one group is left).

    Groups only ever merge, so the levels nest; a category is never split, and no interval of codes is
    formed. A group is named by its members' labels (``Farmer / Laborer``), with a number added
    (``Farmer / Laborer (2)``) where another group or a category of the level already has that name
    (:func:`_level_labels`); the number is only in the label, ties between groups still go by the name.
    Groups of equal size and name go in this order: the newest merged group first, then older merged
    groups, then categories in their given order. A category not merged at a level keeps its text there, but
    for an empty text or one of only spaces, named by :func:`blank_name`: such a label would be released as
    an empty cell (most readers trim spaces), read as missing.

    A member is named only if it holds at least the smallest capacity in records (``Farmer / … (3
    categories)``, or ``3 rare categories`` when none does): the groups are made of the rarest
    categories, and a label naming a category of one record would tell everyone who reads the release
    that a person of that category is in the file, however well that person's record is protected. So
    no label above the originals names a category of fewer records than the smallest capacity: a category
    left alone at a level holds at least that level's capacity (or is the only group).

    A postcode's 100,000 categories are grouped in a fraction of a second (see :class:`_Merging`).
    """
    merging = _Merging(texts, labels, counts, min(capacities, default=0))
    levels: list[tuple[int, list[str]]] = []
    for c in sorted(capacities):
        merging.merge_below(c)
        if merging.waiting() < (levels[-1][0] if levels else len(texts)):  # else the level adds nothing
            levels.append((merging.waiting(), merging.level_labels()))
    return _nested_hierarchy(list(texts), levels, name)


def group_name(named: Sequence[str], size: int) -> str:
    """The name of a group of ``size`` categories, of which ``named`` are the smallest labels (up to three) of
    the members that may be named: all of them when every member is named and there are at most three
    (``a / b / c``); else the first two and the count (``a / b / … (4 categories)``, ``a / … (2
    categories)``), or only the count when no member may be named (``2 rare categories``)."""
    if len(named) == size <= 3:
        return " / ".join(named)
    if named:
        return f"{' / '.join(named[:2])} / … ({size} categories)"
    return f"{size} rare categories"


BLANK = "(blank)"


def blank_name(texts: Iterable[str]) -> str:
    """The label, above level 0, of a category whose text is empty or only spaces (rows match values stripped,
    so a value of spaces has an empty row text; a caller may give the spaces): ``(blank)``, or ``(blank) (2)``,
    ... when a category has that text, so it names no other."""
    taken = set(texts)
    name, k = BLANK, 2
    while name in taken:
        name, k = f"{BLANK} ({k})", k + 1
    return name


class _Merging:
    """The groups of :func:`frequency_grouping_hierarchy` while they merge, the two smallest at a time.

    A heap would take a few microseconds per merge in Python: seconds for a postcode. Here, while every
    group holds at least one record, merges go by rounds: the groups under twice the smallest size pair off
    in order, since each pair makes a group of at least that size, which comes after all of them (a heap
    would take them in just that order). A round is sorted and paired with arrays, and the smallest size at
    least doubles from one round to the next, so there are a few dozen rounds. Groups of no records (or
    fewer) merge one pair at a time through a heap: a merged group may then come before the groups that
    made it.

    Groups are the nodes of the merge tree: categories 0 to n - 1, then merged groups in the order they are
    made (node n + j is merge number j + 1). A group's name needs only its three smallest labels (those of
    a union are among the three smallest of each side), kept as ranks among the sorted distinct labels.
    """

    def __init__(self, texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                 named_from: float) -> None:
        n = len(texts)
        nodes = max(2 * n - 1, 1)  # every merge makes a node
        self.n, self.made, self.next = n, n, 0
        self.rec = _record_array([int(counts[i]) for i in range(n)], nodes)
        self.text: list[str] = list(texts) + [""] * (nodes - n)  # a category's text, a merged group's name
        self.texts = _Sorted(self.text[:n])
        self.blank = blank_name(self.text[:n]) if any(not t.strip() for t in self.text[:n]) else ""
        # the categories by (records, text, index), taken from self.next on; merged groups waiting, in no order
        self.order = np.lexsort((self.texts.rank, self.rec[:n]))
        self.order_rec = self.rec[self.order]
        self.wait = np.empty(0, dtype=np.int64)
        self.parent = np.arange(nodes, dtype=np.int64)  # node -> the node it merged into (itself if waiting)
        self.size = np.ones(nodes, dtype=np.int64)  # categories in the group
        own = [labels[i] for i in range(n)]
        self.labels = self.texts if own == self.text[:n] else _Sorted(own)
        # the smallest ranks of the labels a group's name may show: of members of at least named_from records
        self.first = np.full((nodes, 3), len(self.labels.distinct), dtype=np.int64)
        self.first[:n, 0] = np.where(self.rec[:n] >= named_from, self.labels.rank, len(self.labels.distinct))
        self.label_texts = [*self.labels.distinct, ""]  # the rank past the last: no label

    def waiting(self) -> int:
        """The number of groups now."""
        return self.n - self.next + len(self.wait)

    def _lowest(self) -> int:
        """The records of the smallest waiting group."""
        lows = [self.order_rec[self.next]] if self.next < self.n else []
        if len(self.wait):
            lows.append(self.rec[self.wait].min())
        return min(lows)

    def merge_below(self, capacity: float) -> None:
        """Merge until every group holds at least ``capacity`` records (or one group is left)."""
        while self.waiting() > 1:
            low = self._lowest()
            if not low < capacity:
                return
            if low >= 1:
                self._merge_round(min(2 * low, capacity))
            else:
                self._merge_one_by_one(capacity)

    def _merge_round(self, bound: float) -> None:
        """Merge, in order, the groups under ``bound`` records (at most twice the smallest), then the last
        of them, if left without a pair, with the smallest group after them."""
        stop = self.next + int(np.searchsorted(self.order_rec[self.next:], bound, side="left"))
        below = self.rec[self.wait] < bound
        merged = self.wait[below]
        self.wait = self.wait[~below]
        batch = np.concatenate([self.order[self.next:stop], merged])
        self.next = stop
        if len(merged):
            batch = batch[self._in_order(batch, len(batch) - len(merged))]
        last = batch[-1:] if len(batch) % 2 else batch[:0]
        pairs = batch[:len(batch) - len(last)]
        self.wait = np.concatenate([self.wait, self._join(pairs[0::2], pairs[1::2])])
        if len(last):  # some group is left to pair with: this round began with two or more
            partner = np.array([self._take_smallest()], dtype=np.int64)
            self.wait = np.concatenate([self.wait, self._join(last, partner)])

    def _in_order(self, batch: np.ndarray, cats: int) -> np.ndarray:
        """The order of ``batch`` (its first ``cats`` nodes categories, the others merged groups) a heap would
        take them in: by records, then name (a merged group before a category of the same text), then the
        newest merged group first and categories in their given order.

        Names are compared with the texts of the round's categories only (in order, a small sorted array): a
        merged group's name goes between the texts below it and those from it on (2 x the number below it), a
        category after the texts below its own (2 x that number + 1), then names among themselves."""
        named = _Sorted([self.text[g] for g in batch[cats:].tolist()])
        rank = self.texts.rank[batch[:cats]]
        present = np.unique(rank)  # the texts of the round's categories, as ranks among all texts
        place = np.empty(len(batch), dtype=np.int64)
        place[:cats] = 2 * np.searchsorted(present, rank) + 1
        place[cats:] = 2 * self.texts.places(present, named)[named.rank]
        among = np.zeros(len(batch), dtype=np.int64)
        among[cats:] = named.rank
        tie = np.where(batch < self.n, batch, self.n - 1 - batch)
        return np.lexsort((tie, among, place, self.rec[batch]))

    def _take_smallest(self) -> int:
        """The smallest waiting group (by records, name, newest merged group, then categories in order),
        taken out of the waiting groups."""
        best: tuple | None = None
        if len(self.wait):
            r = self.rec[self.wait]
            g = min(self.wait[r == r.min()].tolist(), key=lambda g: (self.text[g], self.n - 1 - g))
            best = (self.rec[g], self.text[g], self.n - 1 - g, 0, g)
        if self.next < self.n:
            i = int(self.order[self.next])
            if best is None or (self.rec[i], self.text[i], 0, i) < best[:4]:
                self.next += 1
                return i
        assert best is not None
        self.wait = self.wait[self.wait != best[4]]
        return best[4]

    def _merge_one_by_one(self, capacity: float) -> None:
        """Merge pairs through a heap while the smallest group holds no records (or fewer) and is under
        ``capacity``: a merged group of no records may come before the groups that made it."""
        heap = [self._key(g) for g in self.wait.tolist()]
        heapq.heapify(heap)

        def take() -> int:
            if heap and (self.next == self.n or heap[0] < self._key(int(self.order[self.next]))):
                return heapq.heappop(heap)[4]
            self.next += 1
            return int(self.order[self.next - 1])

        while self.n - self.next + len(heap) > 1:
            low = min(([self.order_rec[self.next]] if self.next < self.n else []) + [k[0] for k in heap[:1]])
            if not (low < capacity and low < 1):
                break
            a, b = take(), take()
            heapq.heappush(heap, self._key(self._join_one(a, b)))
        self.wait = np.array([k[4] for k in heap], dtype=np.int64)

    def _key(self, g: int) -> tuple:
        """The heap's order of node ``g``: (records, name, minus its merge number (0 for a category), its index
        (0 for a merged group), g); the first four are never equal for two nodes."""
        if g < self.n:
            return (self.rec[g], self.text[g], 0, g, g)
        return (self.rec[g], self.text[g], self.n - 1 - g, 0, g)

    def _join(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Merge node ``a[j]`` with node ``b[j]`` for every j (the next merges, in order of j); the new nodes."""
        nodes = np.arange(self.made, self.made + len(a), dtype=np.int64)
        self.made += len(a)
        self.parent[a] = self.parent[b] = nodes
        self.rec[nodes] = self.rec[a] + self.rec[b]
        self.size[nodes] = self.size[a] + self.size[b]
        self.first[nodes] = np.sort(np.hstack([self.first[a], self.first[b]]), axis=1)[:, :3]
        self.text[self.made - len(a):self.made] = self._names(self.first[nodes], self.size[nodes])
        return nodes

    def _join_one(self, a: int, b: int) -> int:
        """:meth:`_join` of one pair, without the cost of arrays for a single merge; the new node."""
        g = self.made
        self.made += 1
        self.parent[a] = self.parent[b] = g
        self.rec[g] = self.rec[a] + self.rec[b]
        self.size[g] = self.size[a] + self.size[b]
        self.first[g] = sorted(self.first[a].tolist() + self.first[b].tolist())[:3]
        self.text[g] = self._names(self.first[g:g + 1], self.size[g:g + 1])[0]
        return g

    def _names(self, first: np.ndarray, size: np.ndarray) -> list[str]:
        """The names of groups from the smallest ranks of their nameable labels and their sizes (see
        :func:`group_name`)."""
        none = len(self.label_texts) - 1
        lab = self.label_texts
        return [group_name([lab[r] for r in ranks if r != none], k)
                for ranks, k in zip(first.tolist(), size.tolist(), strict=True)]

    def level_labels(self) -> list[str]:
        """The label of each category now (see :func:`_level_labels`)."""
        root = self.parent[:self.made]
        while True:  # follow each category up to the group now holding it
            up = root[root]
            if np.array_equal(up, root):
                break
            root = up
        self.parent[:self.made] = root  # the same groups, reached in one step next time
        root = root[:self.n]
        lowest = np.full(self.made, self.n, dtype=np.int64)
        np.minimum.at(lowest, root, np.arange(self.n, dtype=np.int64))
        merged = self.wait[np.argsort(lowest[self.wait], kind="stable")]
        single = self.order[self.next:]
        label = np.empty(self.made, dtype=object)
        singles = [t if t.strip() else self.blank  # (a blank value: see blank_name)
                   for t in map(self.text.__getitem__, single.tolist())]
        label[single] = singles
        label[merged] = _level_labels(singles, [self.text[g] for g in merged.tolist()])
        return label[root].tolist()


class _Sorted:
    """Texts sorted as Python sorts them: the distinct ones in order, and the rank of each given text.

    Sorted as numpy strings (several times faster than Python objects) unless a text is not a ``str``, holds
    a NUL character (numpy drops those at the end of a string) or is long (the array is as wide as the
    longest text)."""

    def __init__(self, texts: list[str]) -> None:
        self.array = _as_array(texts)
        if self.array is not None:
            distinct, rank = np.unique(self.array, return_inverse=True)
            self.distinct: list[str] = distinct.tolist()
            self.array = distinct
        else:
            self.distinct = sorted(set(texts))
            at = {t: r for r, t in enumerate(self.distinct)}
            rank = np.array([at[t] for t in texts], dtype=np.int64)
        self.rank = rank.reshape(-1).astype(np.int64)

    def places(self, ranks: np.ndarray, other: _Sorted) -> np.ndarray:
        """For each distinct text of ``other``, the number of the texts here of ``ranks`` (sorted) that sort
        before it."""
        if self.array is not None and other.array is not None:
            return np.searchsorted(self.array[ranks], other.array, side="left").astype(np.int64)
        texts = [self.distinct[r] for r in ranks.tolist()]
        return np.array([bisect.bisect_left(texts, t) for t in other.distinct], dtype=np.int64)


_LONGEST_ARRAY_TEXT = 256
"""Texts up to this long are sorted as a numpy array (4 bytes per character of the longest, for each text)."""


def _as_array(texts: list[str]) -> np.ndarray | None:
    """``texts`` as a numpy string array that sorts as they do, or None when it would not."""
    try:
        joined = "".join(texts)
    except TypeError:  # not all str
        return None
    if "\x00" in joined or (texts and max(map(len, texts)) > _LONGEST_ARRAY_TEXT):
        return None
    return np.array(texts, dtype=str) if texts else np.array([], dtype="<U1")


def _record_array(records: list[int], size: int) -> np.ndarray:
    """Room for the records of ``size`` groups, the categories' first: 64-bit integers when no sum of them can
    overflow, else Python integers (the records of a group are never rounded)."""
    biggest = max(max(records), -min(records)) if records else 0
    out = np.zeros(size, dtype=np.int64 if biggest * max(len(records), 1) < 2**62 else object)
    out[:len(records)] = records
    return out


def _level_labels(singles: Sequence[str], names: Sequence[str]) -> list[str]:
    """The labels of a level's merged groups, named ``names`` in the order of their first category, given
    its single categories ``singles``: each merged group under a label no other group has.

    A label stands for its group in the hierarchy, so two groups under one label would be released as one
    (and re-separated at a coarser level, which no hierarchy may do). Two codes may share a value label,
    groups of four or more may share their two smallest labels and their number of categories, and a
    category may be written like a group ("a / b"). So a category keeps its own text; a merged group keeps
    its name unless a category or a merged group holding a smaller category index has it, and then takes
    the first free `` (2)``, `` (3)``...: it depends only on the level's groups, and a level without a
    clash is unchanged."""
    taken = set(singles) | set(names)
    used = set(singles)
    suffix: dict[str, int] = {}  # next number to try per clashing name, so many clashes stay linear
    out = []
    for label in names:
        if label in used:
            k = suffix.get(label, 2)
            while f"{label} ({k})" in taken:
                k += 1
            suffix[label] = k + 1
            label = f"{label} ({k})"
            taken.add(label)
        used.add(label)
        out.append(label)
    return out


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
    # codes beyond 2^53 are identifiers, not amounts: grouped by frequency, as texts (bins compute in doubles)
    numeric = all(_is_number(v) for v in values) and not count_beyond_double(pd.Series(list(values), dtype=object))
    texts = [value_text(v) if _is_number(v) else str(v).strip() for v in values]  # type: ignore[arg-type]
    if len(values) < 4:
        return Hierarchy(tuple((t, TOP) for t in texts), column)
    scale = scale or infer_scale(column, values, labels).scale
    caps = sorted({max(2, math.ceil(share * observed)) for share in CAPACITY_SHARES})
    if scale == "ordinal" and numeric:  # weighted by the counts: a census variable is not expanded to records
        return greedy_binning_hierarchy(np.asarray(values, dtype=np.float64), caps, name=column, counts=counts)
    shown = [str(lab) if str(lab).strip() else t for lab, t in zip(labels, texts, strict=True)]
    if any(not label.strip() for label in shown):  # a group naming a blank member would read " / b"
        blank = blank_name([*texts, *shown])
        shown = [label if label.strip() else blank for label in shown]
    texts, shown, merged = _one_row_per_text(texts, shown, counts)
    return frequency_grouping_hierarchy(texts, shown, merged, caps, name=column)


def _one_row_per_text(texts: list[str], shown: list[str], counts: np.ndarray) -> tuple[list[str], list[str], list[int]]:
    """One row per distinct row text: values that differ only by surrounding spaces (``"a"`` and ``" a"``) have
    one row text (rows are matched stripped), so they make one row, with the records of both and the first
    one's label. They stay two categories at level 0 (:meth:`Hierarchy.tables`); above it they share the row's
    label, as any row's values do."""
    position: dict[str, int] = {}
    keep: list[int] = []
    for i, t in enumerate(texts):
        if t not in position:
            position[t] = len(keep)
            keep.append(i)
    if len(keep) == len(texts):
        return texts, shown, counts.tolist()
    merged = np.zeros(len(keep), dtype=np.int64)
    np.add.at(merged, [position[t] for t in texts], counts)
    return [texts[i] for i in keep], [shown[i] for i in keep], merged.tolist()


def without_observed_values(ds: Dataset, columns: Sequence[str]) -> list[str]:
    """The columns of ``columns`` with no observed value (a question not asked in this wave). They need no
    hierarchy and nothing can be recoded in them; they split no class either (every record shares their
    missing value, or matches any value as a wildcard), so a search or a risk count without them is the same."""
    return [c for c in columns if not (ds.qi_matrix([c]).codes[:, 0] >= 0).any()]


def default_hierarchies(
    ds: Dataset, columns: Sequence[str], directory: str | os.PathLike | None = None
) -> dict[str, Hierarchy]:
    """Hierarchies for ``columns``: from ARX files in ``directory`` where present, else automatic."""
    out = {}
    for c in columns:
        path = find_hierarchy_file(directory, c) if directory is not None else None
        out[c] = read_arx_hierarchy(path, c) if path is not None else default_hierarchy(ds, c)
    return out
