"""The disclosure threshold of the report: no category with fewer than k records is named.

A report for data stewards travels further than the data's own access rules, so every table in it
that names categories applies the rule statistical offices use for tabular output (threshold rule,
e.g. Hundepool et al., *Statistical Disclosure Control*, 2012, ch. 5): a category with fewer than k
records in the original or in the release (1 to k - 1; a count of 0 names nobody) is not named. Its rows
are pooled, per variable, into one row "other categories with fewer than k records" whose counts are
summed. A pooled count below k would be given back by differencing (the variable's total less the named
rows), so the smallest named categories join the pool until its counts are k or more (secondary
suppression, as in tabular protection); only a variable small as a whole reads "< k". A numeric variable without value
labels (an income, a birth date) is the worst case — each value is a piece of microdata — so when any of
its values is small, none of its values is listed: all its rows are pooled.

The same categories are withheld from free structures (the recipe embedded in the report): see
:func:`redact_values`. :class:`MaskLog` collects what was masked, table by table, so the report says it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..treat.hierarchy import value_key

WITHHELD = "(withheld)"


def pooled_label(k: int, with_others: bool = False) -> str:
    """The name of the pooled row of a variable's small categories (``with_others``: the smallest named ones
    joined them, :func:`_secondary_rows`)."""
    label = f"other categories with fewer than {k} records"
    return f"{label}, pooled with the smallest others" if with_others else label


def below(k: int) -> str:
    """How a count of 1 to k - 1 is shown."""
    return f"< {k}"


def is_small(count: int | float, k: int) -> bool:
    """A count that could single out people: 1 to k - 1 (0 names nobody)."""
    return 0 < count < k


def numeric_without_labels(ds: Dataset, variable: str) -> bool:
    """A numeric variable whose values are mostly unlabelled numbers: measurements (an income, a year), each
    value a piece of microdata. Coded categories carry a label per code; a top- or bottom-coded measurement
    gains one label ("40000 or more") and stays a measurement."""
    if variable not in ds.frame.columns:
        return False
    col = ds.frame[variable]
    if not pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
        return False
    labels = ds.meta_of(variable).value_labels
    if not labels:
        return True
    distinct = ds.qi_matrix([variable]).values[0]
    labelled = sum(1 for x in distinct if x in labels or (isinstance(x, float) and x.is_integer() and int(x) in labels))
    return 2 * labelled <= len(distinct)


def category_counts(ds: Dataset, variable: str) -> dict[str, int]:
    """Records per category label (the label every table of kanon shows), missing cells left out.

    Kept with the dataset's encodings: the report reads the original's counts once per version on the way
    to the release."""
    def count() -> dict[str, int]:
        qm = ds.qi_matrix([variable])
        codes = qm.codes[:, 0]
        counts = np.bincount(codes[codes >= 0], minlength=len(qm.labels[0]))
        out: dict[str, int] = {}
        for label, n in zip(qm.labels[0], counts.tolist(), strict=True):
            out[label] = out.get(label, 0) + int(n)
        return out

    return dict(ds.encoded_value("category_counts", variable, count))


def _parts(text: str) -> list[str]:
    return [part.strip() for part in text.split("/")]


@functools.lru_cache(maxsize=64)
def _slashed(small: frozenset[str]) -> tuple[tuple[str, ...], ...]:
    """The small texts that hold a "/" themselves, as their parts (few: most labels hold none)."""
    return tuple(tuple(_parts(t)) for t in small if "/" in t)


def names_small_category(label: Any, small: frozenset[str]) -> bool:
    """Whether ``label`` is, or names, one of the ``small`` texts of its variable.

    Names: merges and groups join their members' labels with " / " (a text merge its values with "/";
    hierarchy groups read "a / b / … (4 categories)"), so "Hispanic / <the one record's category>" counts
    12 records and still tells that the rare category is in the file. A small category's own label may hold
    a "/" ("Amer. Indian/Alaska Native"), so it is looked for as a run of the label's "/"-separated parts,
    not as one part. A large category whose label happens to contain a small one's as such a run is withheld
    too: the rule errs on the side of saying less."""
    text = str(label)
    if text in small or value_key(label) in small:
        return True
    if "/" not in text:
        return False
    parts = _parts(text)
    if any(part in small for part in parts):
        return True
    for run in _slashed(small):
        width = len(run)
        if any(tuple(parts[i:i + width]) == run for i in range(len(parts) - width + 1)):
            return True
    return False


@dataclass(frozen=True)
class SmallCategories:
    """Per variable, the texts (labels and value keys) of categories with 1 to k - 1 records in the
    original or the release, and whether every category of the variable is withheld."""

    k: int
    texts: Mapping[str, frozenset[str]]
    withhold_all: frozenset[str]
    counts: Mapping[str, tuple[Mapping[str, int], Mapping[str, int]]]

    def label_is_small(self, variable: str, label: Any) -> bool:
        """Whether a category shown by ``label`` (or value) of ``variable`` must not be named: a small category,
        or one whose label names one (:func:`names_small_category`)."""
        if variable in self.withhold_all:
            return True
        return names_small_category(label, self.texts.get(variable, frozenset()))

    def sizes(self, variable: str, label: Any) -> tuple[int, int]:
        """Records of the category in the original and in the release (0 when absent)."""
        o, r = self.counts.get(variable, ({}, {}))
        return int(o.get(str(label), 0)), int(r.get(str(label), 0))

    def union(self, other: SmallCategories) -> SmallCategories:
        """Small in either (the same k): a step's tables must withhold what is small in the step's input or
        output and also what was small in the original file (a merge of a category of 2 records into one of
        6 still names it). Sizes are this one's."""
        texts = {v: self.texts.get(v, frozenset()) | other.texts.get(v, frozenset())
                 for v in dict.fromkeys([*self.texts, *other.texts])}
        return SmallCategories(k=self.k, texts=texts, withhold_all=self.withhold_all | other.withhold_all,
                               counts=self.counts)

    @property
    def all_texts(self) -> frozenset[str]:
        return frozenset().union(*self.texts.values()) if self.texts else frozenset()


def small_categories(original: Dataset, release: Dataset, variables: Iterable[str], k: int) -> SmallCategories:
    """The categories of ``variables`` the report must not name (module docstring).

    A value is small when its own count or its label's (labels may join several values) is 1 to k - 1; the
    counts are compared in arrays, so only the small values are read one by one (a postcode of 100,000
    values has most of them small, an ordinary code none)."""
    texts: dict[str, frozenset[str]] = {}
    counts: dict[str, tuple[Mapping[str, int], Mapping[str, int]]] = {}
    withhold: set[str] = set()
    for v in dict.fromkeys(variables):
        found: set[str] = set()
        per_side = []
        small_in_original = False
        for side, ds in enumerate((original, release)):
            if v not in ds.frame.columns:
                per_side.append({})
                continue
            c = category_counts(ds, v)
            per_side.append(c)
            qm = ds.qi_matrix([v])
            cnt = np.bincount(qm.codes[:, 0][qm.codes[:, 0] >= 0], minlength=len(qm.values[0]))
            labels = qm.labels[0]
            per_label = np.array([c.get(label, 0) for label in labels], dtype=np.int64)
            small = ((cnt > 0) & (cnt < k)) | ((per_label > 0) & (per_label < k))
            values = qm.values[0]
            for i in np.flatnonzero(small).tolist():
                small_in_original |= side == 0
                value = values[i]
                found.update({labels[i], str(value)})
                key = value_key(value)
                if key is not None:
                    found.add(key)
        counts[v] = (per_side[0], per_side[1])
        texts[v] = frozenset(found)
        if small_in_original and numeric_without_labels(original, v):
            withhold.add(v)
            for ds in (original, release):  # every value of the variable, in both versions
                if v in ds.frame.columns:
                    qm = ds.qi_matrix([v])
                    texts[v] = texts[v] | {str(x) for x in qm.values[0]} | set(qm.labels[0]) | {
                        key for x in qm.values[0] if (key := value_key(x)) is not None}
    return SmallCategories(k=k, texts=texts, withhold_all=frozenset(withhold), counts=counts)


@dataclass(frozen=True)
class MaskedTable:
    """A table with its small categories pooled, and per variable the number of categories pooled."""

    table: pd.DataFrame
    masked: Mapping[str, int]

    @property
    def n_masked(self) -> int:
        return int(sum(self.masked.values()))


def mask_categories(
    table: pd.DataFrame,
    k: int,
    small: Sequence[bool] | np.ndarray,
    name_columns: Sequence[str],
    pool_columns: Sequence[str] = (),
    count_columns: Sequence[str] = (),
    variable_column: str = "variable",
) -> MaskedTable:
    """Pool the rows marked ``small`` into one row per variable (module docstring).

    ``name_columns`` name the category (replaced by the pooled label), ``pool_columns`` are summed (counts,
    percentages). A pooled sum of a column in ``count_columns`` is never 1 to k - 1 while the variable has
    named rows: the smallest of them join the pool (:func:`_secondary_rows`); when all have, such a sum reads
    "< k". Any other column of a pooled row is left empty. Named rows keep their order; a variable's pooled row
    follows its last row.
    """
    small = np.asarray(small, dtype=bool)
    if len(small) != len(table):
        raise ValueError("one flag per row")
    if not small.any():
        return MaskedTable(table.reset_index(drop=True), {})
    has_var = variable_column in table.columns
    group = table[variable_column].tolist() if has_var else [None] * len(table)
    pooled_of: dict[Any, list[int]] = {}  # per variable, its small rows in order
    for j in np.flatnonzero(small).tolist():
        pooled_of.setdefault(group[j], []).append(j)
    counts = {c: _summable(table[c]) for c in count_columns if c in table.columns}
    with_others: set[Any] = set()
    if counts:
        small = small.copy()
        named_of: dict[Any, list[int]] = {}
        for j in np.flatnonzero(~small).tolist():
            named_of.setdefault(group[j], []).append(j)
        for g, idx in pooled_of.items():
            more = _secondary_rows(counts, idx, named_of.get(g, []), k)
            small[more] = True
            pooled_of[g] = sorted(idx + more)
            if more:
                with_others.add(g)
    # only the rows named go through records; a pooled row is made of its columns' values (a postcode of
    # 100,000 categories has most of its rows pooled)
    named = table[~small].to_dict("records")
    at_named = np.cumsum(~small) - 1  # row i's place among the named rows, if named
    last = {g: i for i, g in enumerate(group)}
    pooled_values = {c: _summable(table[c]) for c in pool_columns}
    rows: list[dict[str, Any]] = []
    masked: dict[str, int] = {}
    for i, g in enumerate(group):
        if not small[i]:
            rows.append(named[at_named[i]])
        if last[g] != i or g not in pooled_of:
            continue
        pooled_idx = pooled_of[g]
        masked[str(g) if g is not None else ""] = len(pooled_idx)
        row: dict[str, Any] = {c: None for c in table.columns}
        if has_var:
            row[variable_column] = g
        for c in name_columns:
            row[c] = pooled_label(k, g in with_others)
        for c in pool_columns:
            total = _pooled_sum(pooled_values[c], pooled_idx)
            total = int(total) if float(total).is_integer() else total
            row[c] = below(k) if c in count_columns and is_small(total, k) else total
        rows.append(row)
    out = pd.DataFrame(rows, columns=list(table.columns))
    for c in count_columns:  # keep integer columns integer where nothing reads "< k"
        if c in out.columns and not out[c].map(lambda x: isinstance(x, str)).any():
            out[c] = pd.to_numeric(out[c])
    return MaskedTable(out, masked)


def _secondary_rows(counts: Mapping[str, np.ndarray], pooled: list[int], named: list[int], k: int) -> list[int]:
    """The named rows to pool beside a variable's small ones (secondary suppression), so that no pooled count is
    1 to k - 1.

    Why: a table gives its variable's total (the records less the missing ones, or 100 % of a percentage
    column), so a pooled count is the total less the named rows; "< k" would hide nothing, and with one
    category pooled that category's count is given back. A pooled count of k or more gives back only a sum
    over its categories. The rows are taken smallest first in the first count column still below k that a
    named row can lift (the first such row in the table's order on a tie); then any of them the pool no
    longer needs is given back, so each row left is needed (without it some pooled count would be below k).
    A count that no named row can lift is the variable's own (all of it small there) and reads "< k"."""

    def short(rows: list[int]) -> set[str]:
        return {c for c, v in counts.items() if is_small(_pooled_sum(v, rows), k)}

    def size(values: np.ndarray, j: int) -> float:
        return float(values[j]) if _number(values[j]) else 0.0

    left, more = list(named), []
    while True:
        lifting = [(c, [i for i, j in enumerate(left) if size(counts[c], j) > 0]) for c in counts
                   if c in short(pooled + more)]
        lifting = [(c, rows) for c, rows in lifting if rows]
        if not lifting:
            break
        c, rows = lifting[0]
        more.append(left.pop(min(rows, key=lambda i: (size(counts[c], left[i]), i))))
    still = short(pooled + more)
    for j in list(more):  # a row taken early may be needless once a larger one joined
        rest = [i for i in more if i != j]
        if short(pooled + rest) <= still:
            more = rest
    return more


def _number(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and np.isnan(x)) and not isinstance(x, str)


def _summable(column: pd.Series) -> np.ndarray:
    """A column to pool: float64 (NaN where empty) when numpy holds it as numbers, else its Python values."""
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "biuf":
        return column.to_numpy(dtype=np.float64)
    return column.to_numpy(dtype=object)


def _pooled_sum(values: np.ndarray, rows: list[int]) -> float:
    """The sum of the numbers among ``values[rows]``, correctly rounded (``math.fsum``): the same figure
    whatever the order of the rows or the Python version (whose ``sum`` of floats changed in 3.12)."""
    if values.dtype == object:
        return math.fsum(float(values[j]) for j in rows if _number(values[j]))
    picked = values[rows]
    return math.fsum(picked[~np.isnan(picked)].tolist())


def redact_values(obj: Any, texts: Collection[str], per_key: Mapping[str, Collection[str]] | None = None,
                  value_fields: Collection[str] = ()) -> tuple[Any, int]:
    """``obj`` (plain JSON data) with the list elements and strings that are small categories replaced by
    :data:`WITHHELD`; returns it and the number replaced.

    ``per_key`` narrows the texts to a variable where the structure says which one it is (a step's
    ``column``, a ``hierarchies`` entry); elsewhere ``texts`` (all variables) apply. Numbers that are
    dictionary values (k, levels) are parameters, not categories, and stay — except under the keys in
    ``value_fields`` (a merge target, a top-coding bound), which hold values of the variable.
    """
    per_key = {key: frozenset(v) for key, v in (per_key or {}).items()}

    def walk(x: Any, scope: Collection[str], in_list: bool) -> tuple[Any, int]:
        if isinstance(x, dict):
            col = x.get("column")
            inner = per_key.get(col, scope) if isinstance(col, str) else scope
            n, out = 0, {}
            for key, val in x.items():
                if key == "hierarchies" and isinstance(val, dict):
                    sub = {}
                    for var, rows in val.items():
                        sub[var], m = walk(rows, per_key.get(var, scope), True)
                        n += m
                    out[key] = sub
                    continue
                out[key], m = walk(val, inner, key in value_fields)
                n += m
            return out, n
        if isinstance(x, list):
            n, out_list = 0, []
            for e in x:
                y, m = walk(e, scope, True)
                out_list.append(y)
                n += m
            return out_list, n
        if isinstance(x, str) and names_small_category(x, scope):  # a value, or a label naming one
            return WITHHELD, 1
        if in_list and isinstance(x, (int, float)) and not isinstance(x, bool):
            if str(x) in scope or value_key(x) in scope:
                return WITHHELD, 1
        return x, 0

    return walk(obj, frozenset(texts), False)


@dataclass
class MaskLog:
    """What the report masked: rows (table, variable, categories pooled)."""

    k: int
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, table: str, masked: Mapping[str, int]) -> None:
        for v, n in masked.items():
            if n:
                self.rows.append({"table": table, "variable": v, "categories_masked": int(n)})

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["table", "variable", "categories_masked"])


def gives_back_suppressed_values(variables: np.ndarray, n_original: np.ndarray, n_treated: np.ndarray,
                                 pooled: np.ndarray) -> np.ndarray:
    """The rows to pool so that the per-category table does not give back the value of a suppressed cell.

    A table of counts before and after tells, per category, how many records left it. When no category
    gained records (no recode moved records into it) and exactly one lost some, every record that left held
    that category: each suppressed cell of the variable is given back ("all 5 suppressed cells of sex were
    female"). Pooling that category with another (the smallest named one with records, when no other
    category is pooled already) leaves at least two candidates for each suppressed cell, and the pooled
    row's counts follow the threshold rule (:func:`mask_categories`). Returns flags for the rows to
    pool beyond ``pooled``; rows are compared per variable, as the table lists them."""
    more = np.zeros(len(variables), dtype=bool)
    for v in dict.fromkeys(variables.tolist()):
        rows = np.flatnonzero(variables == v)
        lost = rows[n_treated[rows] < n_original[rows]]
        if len(lost) != 1 or (n_treated[rows] > n_original[rows]).any():
            continue
        others = [j for j in rows.tolist() if j != lost[0] and n_original[j] > 0]
        if not others:
            continue  # one category with records: the variable's count before and after says as much
        more[lost[0]] = not pooled[lost[0]]
        if not any(pooled[j] for j in others):
            more[min(others, key=lambda j: (n_original[j], j))] = True
    return more
