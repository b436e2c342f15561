"""Equivalence-class sizes: fk (records sharing a record's QI values) and Fk (their summed weights).

Two missing-value semantics (see :data:`kanon_core.dataset.MISSING_HELP`):

* ``category``: missing is a value; classes are the groups of identical rows.
* ``wildcard`` (sdcMicro's ``freqCalc``): records r and s *match* when, on every QI, their values are
  equal or one of them is missing. fk(r) counts the records matching r (r included). Matching is not
  transitive, so these are not a partition; they are computed exactly.

Exact wildcard counting. Identical rows are first collapsed (with multiplicity and summed weight). Then
one of two exact methods is chosen by estimated cost:

* *pattern pairs*: for every pair of missing patterns (A, B), rows of A and rows of B match iff they
  agree on the QIs observed in both; one compiled hash join per pair. Cost ~ P*n*q for P distinct
  missing patterns: best when P is small (large files with a few incomplete variables).
* *pairwise scan*: each collapsed row with a missing value is compared with every collapsed row in a
  compiled loop (numba). Cost ~ n_missing * n_unique * q: best when patterns are many and the file is
  survey-sized. Complete rows never match other distinct complete rows, so those pairs are skipped.

Both are tested against a brute-force count (hypothesis; ``tests/reference``) and against each other.

sdcMicro's ``alpha`` (``freqCalc(..., alpha)``). A matching record s counts fully for r when it has r's
exact key (missing positions included) or is complete, and counts ``alpha`` when it has a missing QI and
a different key: with alpha = 0 a record is only protected by records that really share its values.
The kernels count both parts exactly (integers), so fk at any alpha is ``fk_all - (1 - alpha) *
fk_wild``; fk at alpha = 1 and at alpha = 0 come from the same pass, which is what
:func:`wildcard_dependent` compares. The split is counted only when asked for (``wildcard_split``, and
always when alpha < 1), so the plain count at alpha = 1 is as fast as without alpha. Fk weighs each
record's weight the same way (as sdcMicro does). One deliberate difference from sdcMicro: its ``freqCalc`` never lets a record missing on every QI count
for the complete records (``addAllNAtoKeys = FALSE``) and gives such a record fk = n; here the rule above
applies to it like to any other record, so a fully blank record is a wildcard at alpha = 1 and
:func:`wildcard_dependent` shows whom it props up.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from ..dataset import MissingSemantics, check_semantics
from ..errors import InputError
from .keys import group_ids

WildcardMethod = Literal["auto", "pairs", "scan"]


ALPHA_DECIMALS = 9
"""Fractional fk are rounded to this many decimals, so that e.g. 100 wildcard matches at alpha = 0.29
count 29 and not 28.999999999999996 (a float artefact must not decide whether a record reaches k)."""


def check_alpha(alpha: float) -> float:
    """sdcMicro's alpha is a weight between 0 and 1; anything else is an input error."""
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise InputError("alpha must be a number between 0 and 1.") from None
    if not 0.0 <= a <= 1.0:  # also rejects NaN
        raise InputError("alpha must be between 0 and 1.")
    return a


def alpha_count(all_: np.ndarray, wild: np.ndarray, alpha: float) -> np.ndarray:
    """The one definition of an alpha-weighted size: every match counts 1, wildcard matches ``alpha``.

    ``all_`` holds the matches counted in full (alpha = 1) and ``wild`` the part of them that are
    wildcard matches. Integer input at alpha = 1 is returned as is; otherwise floats rounded to
    :data:`ALPHA_DECIMALS`.
    """
    if alpha == 1.0:
        return all_
    return np.round(all_ - (1.0 - alpha) * wild.astype(np.float64), ALPHA_DECIMALS)


@dataclass(frozen=True)
class ClassSizes:
    """Per-record class sizes in input order; ``Fk_all`` is None without weights.

    ``fk_all``/``Fk_all`` count every match in full (alpha = 1, sdcMicro's default); ``fk_wild``/
    ``Fk_wild`` are the part of them contributed by wildcard matches (records with a missing QI and a
    key other than the record's own), None when the count was made without that split (alpha = 1 and
    not asked for: the plain count is faster). ``fk``/``Fk`` are the sizes at this object's ``alpha``:
    int64 at alpha = 1, float64 (possibly fractional) below.
    """

    fk_all: np.ndarray
    Fk_all: np.ndarray | None
    missing: MissingSemantics
    alpha: float = 1.0
    fk_wild: np.ndarray | None = None
    Fk_wild: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.alpha != 1.0:
            self._need_split()

    def _need_split(self) -> np.ndarray:
        if self.fk_wild is None:
            raise ValueError("These class sizes were counted without the wildcard split (wildcard_split=True).")
        return self.fk_wild

    @cached_property
    def fk(self) -> np.ndarray:
        return self.fk_all if self.alpha == 1.0 else alpha_count(self.fk_all, self._need_split(), self.alpha)

    @cached_property
    def Fk(self) -> np.ndarray | None:  # noqa: N802 - the standard name of the weighted class size
        if self.Fk_all is None:
            return None
        return self.Fk_all if self.alpha == 1.0 else self.Fk_all - (1.0 - self.alpha) * self.Fk_wild

    @property
    def fk_strict(self) -> np.ndarray:
        """fk at alpha = 0: only the record's own key and complete records count (int64)."""
        return self.fk_all - self._need_split()

    def check_counted_on(self, n_records: int, missing: str, weighted: bool = False) -> None:
        """Raise ValueError unless these sizes were counted on ``n_records`` records under ``missing`` with the
        wildcard split (and the weights, when ``weighted``): what a caller handed sizes counted elsewhere
        checks before taking them at its own alpha."""
        if (self.missing != missing or self.fk_wild is None or len(self.fk_all) != n_records
                or (weighted and self.Fk_all is None)):
            raise ValueError("The class sizes given were not counted on these codes with the wildcard split "
                             "(and the weights, when weights are given).")

    def at_alpha(self, alpha: float) -> ClassSizes:
        """The same counts weighed with another alpha (no recount: both parts are kept)."""
        return ClassSizes(self.fk_all, self.Fk_all, self.missing, check_alpha(alpha), self.fk_wild, self.Fk_wild)


def wildcard_dependent(sizes: ClassSizes, k: int) -> np.ndarray:
    """Records that reach k only thanks to wildcard matches: fk >= k at alpha = 1 but < k at alpha = 0.

    These are the records a few blank (or suppressed) records "make safe": drop the benefit of the doubt
    that a missing value stands for the record's own value and they fall below k. Independent of the
    alpha chosen for ``sizes``.
    """
    return (sizes.fk_all >= k) & (sizes.fk_strict < k)


def class_sizes(
    codes: np.ndarray,
    missing: MissingSemantics = "wildcard",
    weights: np.ndarray | None = None,
    method: WildcardMethod = "auto",
    alpha: float = 1.0,
) -> np.ndarray:
    """fk per record, or Fk (summed weights of matching records) when ``weights`` given.

    At ``alpha`` = 1 (the default) fk is int64; below 1 wildcard matches count ``alpha`` and fk is
    float64 (see :func:`compute_class_sizes`).
    """
    res = compute_class_sizes(codes, missing, weights, method, alpha=alpha)
    return res.fk if weights is None else res.Fk  # type: ignore[return-value]


def compute_class_sizes(
    codes: np.ndarray,
    missing: MissingSemantics = "wildcard",
    weights: np.ndarray | None = None,
    method: WildcardMethod = "auto",
    alpha: float = 1.0,
    wildcard_split: bool | None = None,
) -> ClassSizes:
    """fk and (with weights) Fk for every record, exactly, under the chosen missing semantics.

    ``alpha`` (0..1, sdcMicro's ``freqCalc``) weighs wildcard matches: a matching record with a missing QI
    and a key other than r's counts ``alpha`` for r; r's own key and complete records count 1. Under
    ``category`` semantics there are no wildcard matches, so alpha changes nothing but the dtype.
    ``wildcard_split`` keeps the wildcard part of every count (needed for :func:`wildcard_dependent`
    and :meth:`ClassSizes.at_alpha`); by default only when alpha < 1, so the plain count keeps its speed.
    """
    from ..classtable import ClassTable

    check_semantics(missing)
    alpha = check_alpha(alpha)
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    if codes.ndim != 2:
        raise ValueError("codes must be a 2-D array")
    table = ClassTable.from_codes(codes, weights=weights)
    per_class = class_sizes_of_table(table, missing, alpha, wildcard_split, method)
    if table.n_records == 0:
        return per_class
    gid = table.record_class
    return ClassSizes(
        fk_all=per_class.fk_all[gid],
        Fk_all=None if per_class.Fk_all is None else per_class.Fk_all[gid],
        missing=missing,
        alpha=alpha,
        fk_wild=None if per_class.fk_wild is None else per_class.fk_wild[gid],
        Fk_wild=None if per_class.Fk_wild is None else per_class.Fk_wild[gid],
    )


def class_sizes_of_table(table, missing: MissingSemantics = "wildcard", alpha: float = 1.0,
                         wildcard_split: bool | None = None, method: WildcardMethod = "auto") -> ClassSizes:
    """fk/Fk of every class of a :class:`~kanon_core.classtable.ClassTable`, indexed by class.

    The one place where class sizes are computed: per-record sizes (:func:`compute_class_sizes`) are these
    broadcast through the table's record index. Each class counts its own records; under wildcard
    semantics every class that agrees with it wherever both are observed adds its records too.
    """
    check_semantics(missing)
    alpha = check_alpha(alpha)
    split = alpha < 1.0 if wildcard_split is None else bool(wildcard_split)
    mult = table.count
    weighted = table.weight is not None
    wsum = table.weight if weighted else mult.astype(np.float64)
    if table.n_classes == 0:
        empty = np.zeros(0) if weighted else None
        return ClassSizes(np.zeros(0, np.int64), empty, missing, alpha, np.zeros(0, np.int64), empty)
    codes = table.codes
    if missing == "category" or not (codes < 0).any():
        fk_u, Fk_u = mult.copy(), wsum.copy()
        fkw_u, Fkw_u = np.zeros(len(mult), np.int64), np.zeros(len(mult))
    else:
        fk_u, Fk_u, fkw_u, Fkw_u = _wildcard_unique(codes, mult, wsum, method, split)
    return ClassSizes(
        fk_all=fk_u.astype(np.int64),
        Fk_all=Fk_u if weighted else None,
        missing=missing,
        alpha=alpha,
        fk_wild=fkw_u.astype(np.int64) if split else None,
        Fk_wild=Fkw_u if (split and weighted) else None,
    )


GROUPED_MAX_GAPPY = 16
"""Up to this many QIs with missing values, rows are grouped by missing pattern by a compiled counting sort
(:func:`~kanon_core.risk._wildcard_kernel.group_keys_by_pattern`: 2^m counters) when their codes fit one
key."""


def _wildcard_unique(uniq: np.ndarray, mult: np.ndarray, wsum: np.ndarray, method: WildcardMethod, split: bool):
    n_u, q = uniq.shape
    if method in ("auto", "pairs"):
        grouped = _grouped_by_pattern(uniq, mult, wsum)
        if grouped is not None:
            if method == "pairs" or _pairs_cheaper(len(grouped.values), n_u, q, grouped.with_missing):
                return join_pattern_groups(grouped, mult, wsum, split)
            method = "scan"
    miss = uniq < 0
    has_miss = miss.any(axis=1)
    pattern_ids = None
    if method == "auto":
        pattern_ids = missing_pattern_ids(miss, has_miss)
        n_patterns = int(pattern_ids.max()) + 1 if n_u else 0
        method = "pairs" if _pairs_cheaper(n_patterns, n_u, q, int(has_miss.sum())) else "scan"
    if method == "pairs":
        return _wildcard_by_pattern_pairs(uniq, miss, mult, wsum, split, pattern_ids)
    return _wildcard_scan(uniq, has_miss, mult, wsum, split)


def _pairs_cheaper(n_patterns: int, n_u: int, q: int, with_missing: int) -> bool:
    """Whether the pattern-pair join is forecast cheaper than the pairwise scan of the rows with missing values
    (seconds on 2 cores, calibrated on survey-like tables: 16k rows x 10-19 QIs, 1M rows x 10 QIs)."""
    cost_pairs = n_patterns**2 * 1e-6 + n_patterns * n_u * q * 6e-9
    cost_scan = with_missing * n_u * q * 1.2e-10
    return cost_pairs < cost_scan


def _grouped_by_pattern(uniq: np.ndarray, mult: np.ndarray, wsum: np.ndarray) -> PatternGroups | None:
    """The rows packed into 64-bit keys and grouped by missing pattern, or None when the codes do not fit one
    key or more than :data:`GROUPED_MAX_GAPPY` QIs have missing values."""
    from ._wildcard_kernel import gappy_columns, pack_keys

    widths = packed_fields(uniq)
    if widths is None:
        return None
    uniq = np.ascontiguousarray(uniq, dtype=np.int32)
    gappy = gappy_columns(uniq)
    if int(gappy.sum()) > GROUPED_MAX_GAPPY:
        return None
    shifts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.uint64)
    fields = ((np.uint64(1) << widths.astype(np.uint64)) - np.uint64(1)) << shifts
    return group_by_pattern(pack_keys(uniq, shifts), fields, fields[gappy], mult, wsum)


@dataclass(frozen=True)
class PatternGroups:
    """Rows packed into 64-bit keys (``fields[j]``: the bits of QI j's code + 1, 0: missing) grouped by
    missing pattern over the QIs whose fields are ``gappy`` (see ``group_keys_by_pattern``): the permutation,
    the groups' offsets and patterns, and the keys, counts and weights in that order."""

    order: np.ndarray
    offsets: np.ndarray
    values: np.ndarray
    keys: np.ndarray
    mult: np.ndarray
    wsum: np.ndarray
    fields: np.ndarray
    gappy: np.ndarray

    @property
    def with_missing(self) -> int:
        """Rows with a missing value (all but the complete group, which comes first when present)."""
        return len(self.order) - int(self.offsets[1] if self.values[0] == 0 else 0)


def group_by_pattern(keys: np.ndarray, fields: np.ndarray, gappy: np.ndarray, mult: np.ndarray,
                     wsum: np.ndarray) -> PatternGroups:
    """Packed rows grouped by missing pattern (a compiled counting sort), ready for :func:`join_pattern_groups`;
    used for a table's rows and for the subset MINUC search's projected tables alike."""
    from ._wildcard_kernel import group_keys_by_pattern

    grouped = group_keys_by_pattern(keys, np.asarray(gappy, dtype=np.uint64), mult.astype(np.int64),
                                    wsum.astype(np.float64))
    return PatternGroups(*grouped, fields=np.asarray(fields, dtype=np.uint64), gappy=np.asarray(gappy, np.uint64))


def join_pattern_groups(groups: PatternGroups, mult: np.ndarray, wsum: np.ndarray, split: bool):
    """fk, Fk (and their wildcard parts with ``split``) of grouped rows, in the rows' own order: their own
    counts and weights plus the pattern-pair joins (:func:`~kanon_core.risk._wildcard_kernel.
    pattern_pairs_packed`; the sums of :func:`_wildcard_by_pattern_pairs`, bit for bit: the same groups in
    the same order)."""
    from ._wildcard_kernel import pattern_pairs_packed, totals_in_row_order

    g = groups
    every = np.bitwise_or.reduce(g.fields, initial=np.uint64(0))
    colmask = np.array([every & ~np.bitwise_or.reduce(g.gappy[[(v >> c) & 1 == 1 for c in range(len(g.gappy))]],
                                                      initial=np.uint64(0)) for v in g.values.tolist()],
                       dtype=np.uint64)
    parts = pattern_pairs_packed(g.keys, g.offsets, colmask, g.values == 0, g.mult, g.wsum, split)
    return totals_in_row_order(g.order, mult.astype(np.int64), wsum.astype(np.float64), *parts)


def missing_pattern_ids(miss: np.ndarray, has_miss: np.ndarray | None = None) -> np.ndarray:
    """A dense id per row for its missing pattern (the set of QIs it has missing), equal ids for equal
    patterns; the complete pattern, when present, is id 0 and the others follow in increasing bit order.

    Up to 64 QIs a pattern is one 64-bit integer (the rows' missing flags packed by bytes), and only the
    rows with a missing value are sorted; beyond, the rows of flags are grouped as any codes are.
    """
    n, q = miss.shape
    if q > 64:
        return group_ids(miss.astype(np.int32))[0]
    if has_miss is None:
        has_miss = miss.any(axis=1)
    packed = np.packbits(miss, axis=1, bitorder="little")
    bits = np.zeros((n, 8), dtype=np.uint8)
    bits[:, :packed.shape[1]] = packed
    key = bits.view(np.uint64).reshape(-1)
    some = key[has_miss]
    values = np.unique(some)
    ids = np.zeros(n, dtype=np.int64)
    ids[has_miss] = np.searchsorted(values, some) + 1
    if not (~has_miss).any():  # no complete row: the ids start at 0
        ids -= 1
    return ids


def packed_fields(uniq: np.ndarray) -> np.ndarray | None:
    """Bit widths of the fields holding each QI's code + 1 (0: missing) in one 64-bit key, or None when
    they do not fit in 64 bits."""
    if uniq.size == 0:
        return None
    top = uniq.max(axis=0).astype(np.int64) + 1  # largest code + 1 per QI
    widths = np.array([max(1, int(t).bit_length()) for t in top], dtype=np.int64)
    return widths if int(widths.sum()) <= 64 else None


def _wildcard_scan(uniq: np.ndarray, has_miss: np.ndarray, mult: np.ndarray, wsum: np.ndarray, split: bool):
    """Pairwise scan of the rows with missing values, split over threads (see ``_wildcard_kernel``)."""
    import os

    from ..threads import map_workers
    from ._wildcard_kernel import wildcard_scan_block, wildcard_scan_block_split

    kernel = wildcard_scan_block_split if split else wildcard_scan_block
    n_u = len(uniq)
    code_type = np.int16 if (uniq.size == 0 or int(uniq.max()) < np.iinfo(np.int16).max) else np.int32
    cols = np.ascontiguousarray(uniq.T, dtype=code_type)
    miss_rows = np.flatnonzero(has_miss)
    mult64, w64 = mult.astype(np.int64), wsum.astype(np.float64)
    workers = max(1, min(os.cpu_count() or 1, len(miss_rows) // 64))
    # blocks with equal numbers of rows that have missing values
    bounds = [0] + [int(miss_rows[len(miss_rows) * i // workers]) for i in range(1, workers)] + [n_u]
    fk = mult64.copy()
    Fk = w64.copy()
    fkw = np.zeros(n_u, np.int64)
    Fkw = np.zeros(n_u)
    if workers == 1:
        parts = [kernel(cols, has_miss, mult64, w64, 0, n_u)]
    else:
        parts = map_workers(lambda lh: kernel(cols, has_miss, mult64, w64, lh[0], lh[1]),
                            zip(bounds[:-1], bounds[1:]), workers)
    for part in parts:
        fk += part[0]
        Fk += part[1]
        if split:
            fkw += part[2]
            Fkw += part[3]
    return fk, Fk, fkw, Fkw


def _wildcard_by_pattern_pairs(uniq, miss, mult, wsum, split, pattern_ids=None):
    """Hash joins between missing patterns on the rows grouped by pattern (see
    ``_wildcard_kernel.pattern_pairs``); on rows packed into 64-bit keys when every QI's codes fit
    (``pattern_pairs_packed``: the same sums, bit for bit)."""
    from ._wildcard_kernel import pack_keys, pattern_pairs, pattern_pairs_packed

    pat_ids = missing_pattern_ids(miss) if pattern_ids is None else pattern_ids
    order = np.argsort(pat_ids, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(pat_ids))]).astype(np.int64)
    observed = ~miss[order[offsets[:-1]]]
    m64, w64 = mult.astype(np.int64)[order], wsum.astype(np.float64)[order]
    widths = packed_fields(uniq)
    if widths is not None:
        shifts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.uint64)
        keys = pack_keys(np.ascontiguousarray(uniq), shifts)[order]
        field = ((np.uint64(1) << widths.astype(np.uint64)) - np.uint64(1)) << shifts  # widths <= 32 here
        colmask = np.array([np.bitwise_or.reduce(field[obs], initial=np.uint64(0)) for obs in observed],
                           dtype=np.uint64)
        grouped = pattern_pairs_packed(keys, offsets, colmask, observed.all(axis=1), m64, w64, split)
    else:
        rows = np.ascontiguousarray(uniq[order], dtype=np.int32)
        grouped = pattern_pairs(rows, offsets, np.ascontiguousarray(observed), m64, w64, split)
    fk, Fk = mult.astype(np.int64).copy(), wsum.astype(np.float64).copy()
    fkw, Fkw = np.zeros(len(fk), np.int64), np.zeros(len(fk))
    for total, part in zip((fk, Fk, fkw, Fkw), grouped, strict=True):
        total[order] += part
    return fk, Fk, fkw, Fkw
