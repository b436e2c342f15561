"""Violating quasi-identifier sets (Yuan & Wang): a minimal one greedily, a minimum one exactly.

A set of QIs *violates* k-anonymity when some record's class on it is smaller than k (Yuan & Wang,
Definition 3). Violation is monotone (Sweeney's lemma: adding QIs can only split classes), so

* a **minimal** violating set (no proper subset violates) is found in polynomial time by the descent of
  Yuan & Wang §5.1: start from all QIs and drop one QI at a time whenever the rest still violates; at most
  q + (q - 1) + ... class-size computations. Which minimal set comes out depends on the order tried;
* a **minimum** violating set (fewest QIs) is NP-hard in general (Yuan & Wang §4, by reduction from minimum
  cover) and is found here by exact search over subsets by increasing size, stopping at the first size
  that violates — practical up to about 20 QIs because the answer is usually small. Its size equals the
  size of the smallest MINUC of any record.

Yuan & Wang's algorithm is stated with the witness "all records stay distinct" (the projection keeps as
many distinct rows as the full table); ``criterion="identifying"`` follows that wording: the set must
separate every pair of records that all QIs separate. ``criterion="violation"`` (default) is the
k-anonymity reading used everywhere else in kanon.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from ..dataset import MissingSemantics, QIMatrix, check_semantics
from ..errors import InputError
from ..progress import Progress, report
from .classes import class_sizes
from .keys import group_ids

Criterion = Literal["violation", "identifying"]
EXACT_MAX_QIS = 24


@dataclass(frozen=True)
class QidResult:
    """A violating QI set (empty when the data satisfy the criterion on all QIs), with its witness."""

    qis: tuple[str, ...]
    k: int
    criterion: str
    violating_records: int
    evaluations: int
    seconds: float
    exact: bool


def _names(codes: np.ndarray | QIMatrix, names: Sequence[str] | None) -> tuple[np.ndarray, tuple[str, ...]]:
    if isinstance(codes, QIMatrix):
        return codes.codes, codes.names
    arr = np.asarray(codes)
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise InputError("Codes must be a 2-D array with at least one quasi-identifier.")
    return arr, tuple(names) if names is not None else tuple(f"q{j}" for j in range(arr.shape[1]))


class _Witness:
    """Evaluates the criterion on a subset of columns (counting evaluations)."""

    def __init__(self, codes: np.ndarray, k: int, missing: MissingSemantics, criterion: Criterion):
        if k < 2:
            raise InputError("k must be at least 2.")
        check_semantics(missing)
        if criterion not in ("violation", "identifying"):
            raise InputError("The criterion must be 'violation' or 'identifying'.")
        self.codes, self.k, self.missing, self.criterion = codes, k, missing, criterion
        self.evaluations = 0
        self.goal = len(group_ids(codes)[1])

    def bad_records(self, cols: Sequence[int]) -> int:
        """Records below k on ``cols`` (violation), or 0/1 for whether ``cols`` identify (identifying)."""
        self.evaluations += 1
        if not cols:
            return 0 if len(self.codes) >= self.k else len(self.codes)
        sub = np.ascontiguousarray(self.codes[:, list(cols)])
        if self.criterion == "identifying":
            return int(len(group_ids(sub)[1]) == self.goal)
        return int((class_sizes(sub, self.missing) < self.k).sum())


def minimal_violating_qid(codes: np.ndarray | QIMatrix, k: int = 2, missing: MissingSemantics = "wildcard",
                          names: Sequence[str] | None = None, criterion: Criterion = "violation",
                          progress: Progress | None = None) -> QidResult:
    """Yuan & Wang's greedy descent: a minimal violating QI set (drop QIs in column order while it violates)."""
    t0 = time.perf_counter()
    arr, nm = _names(codes, names)
    w = _Witness(arr, k, missing, criterion)
    fields = list(range(arr.shape[1]))
    bad = w.bad_records(fields)
    if not bad:
        return QidResult((), k, criterion, 0, w.evaluations, time.perf_counter() - t0, exact=True)
    found = True
    while found and fields:
        found = False
        report(progress, 1 - len(fields) / max(arr.shape[1], 1), f"Trying {len(fields) - 1} of the QIs")
        for drop in range(len(fields)):
            nxt = fields[:drop] + fields[drop + 1:]
            b = w.bad_records(nxt)
            if b:
                fields, bad, found = nxt, b, True
                break
    return QidResult(tuple(nm[j] for j in fields), k, criterion, int(bad), w.evaluations,
                     time.perf_counter() - t0, exact=False)


def minimum_violating_qid(codes: np.ndarray | QIMatrix, k: int = 2, missing: MissingSemantics = "wildcard",
                          names: Sequence[str] | None = None, criterion: Criterion = "violation",
                          max_qis: int = EXACT_MAX_QIS, progress: Progress | None = None) -> QidResult:
    """A violating QI set of minimum size, by exact search over subsets of increasing size."""
    t0 = time.perf_counter()
    arr, nm = _names(codes, names)
    q = arr.shape[1]
    if q > max_qis:
        raise InputError(f"The exact search handles up to {max_qis} quasi-identifiers (got {q}); "
                         "use the minimal (greedy) search instead.")
    w = _Witness(arr, k, missing, criterion)
    if not w.bad_records(list(range(q))):
        return QidResult((), k, criterion, 0, w.evaluations, time.perf_counter() - t0, exact=True)
    for size in range(q + 1):  # from the empty set: a file of fewer than k records violates with no QI at all
        report(progress, size / max(q, 1), f"Trying all sets of {size} QIs")
        for combo in combinations(range(q), size):
            b = w.bad_records(list(combo))
            if b:
                return QidResult(tuple(nm[j] for j in combo), k, criterion, int(b), w.evaluations,
                                 time.perf_counter() - t0, exact=True)
    raise AssertionError("unreachable: the full set violates")  # pragma: no cover


def minimal_qids_from_minucs(result) -> list[tuple[str, ...]]:
    """Every minimal violating QI set, read off a complete MINUC result, smallest first.

    A QI set violates k-anonymity iff it contains a MINUC of some record (that record's values on it
    occur fewer than k times), so the minimal violating sets are the inclusion-minimal MINUC variable
    sets. Exact only when the MINUC search was complete (no ``max_size`` cut).
    """
    from ._minuc_summary import distinct_masks_table, minimal_masks
    from .minucs import popcount

    if not result.complete:
        raise InputError("The MINUC search was limited by a maximum size: the violating sets may be incomplete.")
    distinct = getattr(result, "combinations", None)  # flagged by the search itself (up to 22 QIs)
    if distinct is None:
        masks = result.row_masks
        distinct = distinct_masks_table(masks, result.n_qis) if result.n_qis <= 24 else np.unique(masks)
    if len(distinct) == 0:
        return []
    order = np.lexsort((distinct, popcount(distinct)))
    minimal = minimal_masks(np.ascontiguousarray(distinct[order]))
    return [tuple(result.names[j] for j in range(result.n_qis) if (int(m) >> j) & 1) for m in minimal.tolist()]
