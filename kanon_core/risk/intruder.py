"""The intruder's view of a release: how many released records are consistent with a person.

An intruder knows a person's quasi-identifiers and looks for the released records that could be that
person. A released record is *consistent* with the person when, on every QI, the released cell is
suppressed (the intruder cannot rule it out) or equals the person's value. Cells missing in the input
are read with the session's semantics: under ``wildcard`` a missing value may be anything, so it is
consistent with every value (the same reading as the class sizes); under ``category`` "missing" is a
value, consistent only with itself (and with a suppressed cell).

This module counts consistency between the original and the released table with its own code,
independent of the class-size kernels and of the suppression solvers, so it can check their outputs:

* :func:`findable_below_k` – the people of the original file with fewer than k consistent released
  records (the protection promise, from the intruder's side);
* :func:`released_consistent_with` – for every released record, the original records consistent with
  it (Wilson et al.'s record-wise criterion: at least k).

The count is exact. Identical rows are collapsed first; every distinct row of one side is compared with
every distinct row of the other in a compiled loop (numba, parallel), so the cost is quadratic in the
number of *distinct* rows: fine for survey files (16,000 distinct rows: well under a second on two
cores).
"""

from __future__ import annotations

import numba
import numpy as np

from ..dataset import MissingSemantics, check_semantics
from ..threads import run_parallel
from .keys import unique_rows

SUPPRESSED = -2
"""Code of a suppressed cell in released codes (-1 stays "missing in the input")."""


@numba.njit(parallel=True, cache=True)
def _count_consistent(qu, tu, tmult, query_is_release, original_wild):  # pragma: no cover - compiled
    nq, q = qu.shape
    nt = tu.shape[0]
    out = np.zeros(nq, dtype=np.int64)
    for i in numba.prange(nq):
        total = 0
        for j in range(nt):
            ok = True
            for v in range(q):
                a = qu[i, v]
                b = tu[j, v]
                if a == b:
                    continue
                rel = a if query_is_release else b
                orig = b if query_is_release else a
                if rel == SUPPRESSED:
                    continue  # a suppressed cell is consistent with anything
                if (rel == -1 or orig == -1) and original_wild:
                    continue  # a value missing in the input may be anything
                ok = False
                break
            if ok:
                total += tmult[j]
        out[i] = total
    return out


def _counts(queries: np.ndarray, targets: np.ndarray, query_is_release: bool,
            missing: MissingSemantics, target_mult: np.ndarray | None = None) -> np.ndarray:
    queries = np.ascontiguousarray(queries, dtype=np.int32)
    targets = np.ascontiguousarray(targets, dtype=np.int32)
    if queries.ndim != 2 or targets.ndim != 2 or queries.shape[1] != targets.shape[1]:
        raise ValueError("the original and the released codes need the same columns")
    if target_mult is not None and len(target_mult) != len(targets):
        raise ValueError("one multiplicity per row is needed")
    if len(queries) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(targets) == 0:
        return np.zeros(len(queries), dtype=np.int64)
    qu, qinv = unique_rows(queries, return_inverse=True)
    tu, tinv = unique_rows(targets, return_inverse=True)
    weights = np.ones(len(targets), np.int64) if target_mult is None else np.asarray(target_mult, np.int64)
    tmult = np.bincount(tinv, weights=weights, minlength=len(tu)).astype(np.int64)
    counts = run_parallel(_count_consistent, np.ascontiguousarray(qu), np.ascontiguousarray(tu),
                          tmult, query_is_release, check_semantics(missing) == "wildcard")
    return counts[qinv]


def released_codes(original: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The released QI codes: the original codes, -1 where missing in the input, -2 where suppressed.

    A release declares its suppressed cells (a missing code of their own), so they are told apart from
    cells missing in the input. Class-size code that needs plain missing cells uses ``np.maximum(x, -1)``.
    """
    out = np.array(original, dtype=np.int32, copy=True)
    out[np.asarray(mask, dtype=bool)] = SUPPRESSED
    return out


def candidates_per_person(original: np.ndarray, released: np.ndarray,
                          missing: MissingSemantics = "wildcard",
                          released_mult: np.ndarray | None = None) -> np.ndarray:
    """For each person (row of the original file), the number of released records consistent with them.

    With ``released_mult`` each released row stands for that many identical released records (a
    released class table).
    """
    return _counts(original, released, False, missing, released_mult)


def released_consistent_with(original: np.ndarray, released: np.ndarray,
                             missing: MissingSemantics = "wildcard") -> np.ndarray:
    """For each released record, the number of original records consistent with it."""
    return _counts(released, original, True, missing)


def findable_below_k(original: np.ndarray, released: np.ndarray, k: int,
                     missing: MissingSemantics = "wildcard", original_mult: np.ndarray | None = None,
                     released_mult: np.ndarray | None = None) -> int:
    """People of the original file with fewer than ``k`` consistent released records.

    A release only blanks cells, so a person's own released record is always consistent with them and
    every person has at least one candidate; fewer than k means the intruder narrows them down to fewer
    than k records. With multiplicities, each row of ``original`` stands for ``original_mult`` people
    and each row of ``released`` for ``released_mult`` released records (class tables of both sides: the
    count never expands the records).
    """
    if len(original) == 0:
        return 0
    if original_mult is not None and len(original_mult) != len(original):
        raise ValueError("one multiplicity per row is needed")
    below = candidates_per_person(original, released, missing, released_mult) < int(k)
    if original_mult is None:
        return int(below.sum())
    return int(np.asarray(original_mult, dtype=np.int64)[below].sum())
