"""A fast greedy local suppression, in the spirit of sdcMicro's ``localSuppression``, for comparison.

sdcMicro suppresses, record by record, values of the variables its importance vector marks as least
important until the record's class reaches k, counting classes on the *current* (already suppressed)
data with missing values as wildcards. This greedy does the same with costs instead of importance ranks:

1. unsafe records are visited once, in order of increasing fk, then input order;
2. for the visited record, the disagreement masks D(r, s) against the current data are computed (the
   positions where s clashes with r); suppressing a set T makes s match r iff D(r, s) ⊆ T;
3. it suppresses the position with the best gain per cost (records newly matched), or, when no single
   position adds a match, the position closest to completing masks (Σ 1/|D \\ T| per cost), until k
   records match.

A visited record's suppressions can only add matches for others (see :mod:`suppress_joint`), so the
records made safe earlier stay safe, and the result is k-anonymous. No optimality claim: it is the
yardstick the exact mode is compared with.
"""

from __future__ import annotations

import numba
import numpy as np

from .suppress_bits import popcount


@numba.njit(cache=True)
def greedy_suppress(X, order, costs, protected, k):  # pragma: no cover - compiled
    """Suppress in place in X (n, q); returns -1 on success, else the index of a record it cannot fix."""
    n, q = X.shape
    dm = np.empty(n, dtype=np.uint64)
    for i in order:
        got = 0
        nc = 0
        for j in range(n):
            d = np.uint64(0)
            bad = False
            for v in range(q):
                a = X[i, v]
                b = X[j, v]
                if a >= 0 and b >= 0 and a != b:
                    if protected[v]:
                        bad = True
                        break
                    d |= np.uint64(1) << np.uint64(v)
            if bad:
                continue
            if d == 0:
                got += 1
            else:
                dm[nc] = d
                nc += 1
        if got >= k:
            continue
        t = np.uint64(0)
        while got < k:
            gain = np.zeros(q)
            score = np.zeros(q)
            for c in range(nc):
                rest = dm[c] & ~t
                if rest == 0:
                    continue
                pc = popcount(rest)
                for v in range(q):
                    if rest & (np.uint64(1) << np.uint64(v)):
                        score[v] += 1.0 / pc
                        if pc == 1:
                            gain[v] += 1.0
            best = -1
            best_s = 0.0
            use_gain = False
            for v in range(q):
                if gain[v] > 0:
                    use_gain = True
            for v in range(q):
                s = (gain[v] if use_gain else score[v]) / costs[v]
                if s > best_s:
                    best_s = s
                    best = v
            if best < 0:
                return i
            bit = np.uint64(1) << np.uint64(best)
            for c in range(nc):
                if dm[c] & ~t != 0 and dm[c] & ~(t | bit) == 0:
                    got += 1
            t |= bit
        for v in range(q):
            if t & (np.uint64(1) << np.uint64(v)):
                X[i, v] = -1
    return -1


def greedy(codes: np.ndarray, fk: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int) -> np.ndarray:
    """Output codes after greedy suppression (``fk``: input class sizes, to pick the visiting order)."""
    X = np.ascontiguousarray(codes, dtype=np.int32).copy()
    unsafe = np.flatnonzero(fk < k)
    order = unsafe[np.argsort(fk[unsafe], kind="stable")].astype(np.int64)
    bad = greedy_suppress(X, order, np.asarray(costs, np.float64), np.asarray(protected, np.bool_), int(k))
    if bad >= 0:  # pragma: no cover - feasibility is checked before
        raise RuntimeError("greedy suppression could not make a record safe")
    return X
