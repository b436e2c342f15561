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

Both are tested against a brute-force count (hypothesis) and against each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from ..dataset import Dataset, MissingSemantics, check_semantics
from .keys import group_ids

WildcardMethod = Literal["auto", "pairs", "scan"]


@dataclass(frozen=True)
class ClassSizes:
    """Per-record class sizes in input order; ``Fk`` is None without weights."""

    fk: np.ndarray
    Fk: np.ndarray | None
    missing: MissingSemantics


def class_sizes(
    codes: np.ndarray,
    missing: MissingSemantics = "wildcard",
    weights: np.ndarray | None = None,
    method: WildcardMethod = "auto",
) -> np.ndarray:
    """fk per record (int64), or Fk (float64, summed weights of matching records) when ``weights`` given."""
    res = compute_class_sizes(codes, missing, weights, method)
    return res.fk if weights is None else res.Fk  # type: ignore[return-value]


def compute_class_sizes(
    codes: np.ndarray,
    missing: MissingSemantics = "wildcard",
    weights: np.ndarray | None = None,
    method: WildcardMethod = "auto",
) -> ClassSizes:
    """fk and (with weights) Fk for every record, exactly, under the chosen missing semantics."""
    check_semantics(missing)
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    if codes.ndim != 2:
        raise ValueError("codes must be a 2-D array")
    n = codes.shape[0]
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    if n == 0:
        return ClassSizes(np.zeros(0, np.int64), None if w is None else np.zeros(0), missing)
    gid, mult = group_ids(codes)
    wsum = np.bincount(gid, weights=w, minlength=len(mult)) if w is not None else mult.astype(np.float64)
    if missing == "category" or not (codes < 0).any():
        fk_u, Fk_u = mult.copy(), wsum.copy()
    else:
        first = np.zeros(len(mult), dtype=np.int64)
        first[gid[::-1]] = np.arange(n - 1, -1, -1)
        uniq = codes[first]
        fk_u, Fk_u = _wildcard_unique(uniq, mult, wsum, method)
    fk = fk_u[gid].astype(np.int64)
    Fk = Fk_u[gid] if w is not None else None
    return ClassSizes(fk=fk, Fk=Fk, missing=missing)


def _wildcard_unique(uniq: np.ndarray, mult: np.ndarray, wsum: np.ndarray, method: WildcardMethod):
    n_u, q = uniq.shape
    miss = uniq < 0
    has_miss = miss.any(axis=1)
    if method == "auto":
        pattern_keys = np.unique(np.packbits(miss, axis=1), axis=0)
        n_patterns = len(pattern_keys)
        # seconds on 2 cores, calibrated on survey-like tables (16k rows x 10-19 QIs, 1M rows x 10 QIs)
        cost_pairs = n_patterns**2 * 1e-6 + n_patterns * n_u * q * 6e-9
        cost_scan = int(has_miss.sum()) * n_u * q * 1.2e-10
        method = "pairs" if cost_pairs < cost_scan else "scan"
    if method == "pairs":
        return _wildcard_by_pattern_pairs(uniq, miss, mult, wsum)
    return _wildcard_scan(uniq, has_miss, mult, wsum)


def _wildcard_scan(uniq: np.ndarray, has_miss: np.ndarray, mult: np.ndarray, wsum: np.ndarray):
    """Pairwise scan of the rows with missing values, split over threads (see ``_wildcard_kernel``)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from ._wildcard_kernel import wildcard_scan_block

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
    if workers == 1:
        parts = [wildcard_scan_block(cols, has_miss, mult64, w64, 0, n_u)]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(lambda lh: wildcard_scan_block(cols, has_miss, mult64, w64, lh[0], lh[1]),
                                  zip(bounds[:-1], bounds[1:])))
    for dfk, dFk in parts:
        fk += dfk
        Fk += dFk
    return fk, Fk


def _wildcard_by_pattern_pairs(uniq, miss, mult, wsum):
    """Hash joins between missing patterns (see ``_wildcard_kernel.pattern_pairs``)."""
    from ._wildcard_kernel import pattern_pairs

    pat_ids, _ = group_ids(miss.astype(np.int32))
    order = np.argsort(pat_ids, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(pat_ids))]).astype(np.int64)
    observed = ~miss[order[offsets[:-1]]]
    dfk, dFk = pattern_pairs(np.ascontiguousarray(uniq, dtype=np.int32), offsets, order.astype(np.int64),
                             np.ascontiguousarray(observed), mult.astype(np.int64), wsum.astype(np.float64))
    return mult.astype(np.int64) + dfk, wsum.astype(np.float64) + dFk


# -- a small counting interface, so an out-of-core backend can serve the same questions ------------------
class ClassCounter(Protocol):
    """Answers "how large is each record's class on these QIs?" (in-memory today, pluggable later)."""

    def class_sizes(self, qis: Sequence[str], missing: MissingSemantics, weighted: bool = False) -> ClassSizes: ...


@dataclass(frozen=True)
class InMemoryCounter:
    """Counts on the integer codes of an in-memory :class:`Dataset`."""

    dataset: Dataset

    def class_sizes(self, qis: Sequence[str], missing: MissingSemantics, weighted: bool = False) -> ClassSizes:
        qm = self.dataset.qi_matrix(qis)
        w = self.dataset.weights() if weighted else None
        return compute_class_sizes(qm.codes, missing, w)


def brute_force_class_sizes(codes: np.ndarray, missing: MissingSemantics, weights: np.ndarray | None = None):
    """O(n^2) reference used by the tests (kept here so tests and docs share one definition)."""
    codes = np.asarray(codes)
    n = codes.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    fk = np.zeros(n, dtype=np.int64)
    Fk = np.zeros(n)
    for i in range(n):
        for j in range(n):
            a, b = codes[i], codes[j]
            if missing == "category":
                ok = bool(np.all(a == b))
            else:
                ok = bool(np.all((a == b) | (a < 0) | (b < 0)))
            if ok:
                fk[i] += 1
                Fk[i] += w[j]
    return fk, Fk
