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

With alpha = 1 a visited record's suppressions can only add matches for others (a suppressed cell
matches more), so records made safe earlier stay safe. With alpha < 1 a record that loses a value also
stops counting fully for the complete records it matched, so :func:`greedy` recounts (sdcMicro's rule,
:func:`kanon_core.risk.classes.class_sizes`) and visits the records that fell below k again, until none
do. No optimality claim: it is the yardstick for sdcMicro's criterion (the ``release`` protection model).
"""

from __future__ import annotations

import numba
import numpy as np

from .suppress_bits import popcount

MAX_PASSES = 50


@numba.njit(cache=True)
def _weight(jm, im, t, alpha):  # pragma: no cover - compiled
    """sdcMicro's alpha: a match counts 1 if complete or of r's exact key, else alpha."""
    if jm == 0 or jm == (im | t):
        return 1.0
    return alpha


@numba.njit(cache=True)
def greedy_suppress(X, order, costs, protected, k, alpha):  # pragma: no cover - compiled
    """Suppress in place in X (n, q); returns -1 on success, else the index of a record it cannot fix."""
    n, q = X.shape
    dm = np.empty(n, dtype=np.uint64)
    jms = np.empty(n, dtype=np.uint64)
    miss = np.zeros(n, dtype=np.uint64)
    for j in range(n):
        for v in range(q):
            if X[j, v] < 0:
                miss[j] |= np.uint64(1) << np.uint64(v)
    for i in order:
        im = miss[i]
        got = 0.0
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
                got += _weight(miss[j], im, np.uint64(0), alpha)
            else:
                dm[nc] = d
                jms[nc] = miss[j]
                nc += 1
        if got >= k - 1e-9:
            continue
        t = np.uint64(0)
        while got < k - 1e-9:
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
                            gain[v] += _weight(jms[c], im, t | (np.uint64(1) << np.uint64(v)), alpha)
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
                # no disagreement left to remove: with alpha < 1 a record can still gain weight by
                # sharing the key of blank records, so blank its free values (the caller recounts)
                full = np.uint64(0)
                for v in range(q):
                    if not protected[v] and X[i, v] >= 0:
                        full |= np.uint64(1) << np.uint64(v)
                if full & ~t == 0 or alpha >= 1.0:
                    return i
                t = full
                break
            bit = np.uint64(1) << np.uint64(best)
            nt = t | bit
            # recount: the weights of earlier matches can change with r's key (alpha < 1)
            got = _recount(X, i, im, nt, protected, alpha, miss)
            t = nt
        for v in range(q):
            if t & (np.uint64(1) << np.uint64(v)):
                X[i, v] = -1
        miss[i] = im | t
    return -1


@numba.njit(cache=True)
def _recount(X, i, im, t, protected, alpha, miss):  # pragma: no cover - compiled
    """Weighted matches of record i once the positions t are suppressed."""
    n, q = X.shape
    got = 0.0
    for j in range(n):
        ok = True
        for v in range(q):
            if t & (np.uint64(1) << np.uint64(v)):
                continue
            a = X[i, v]
            b = X[j, v]
            if a >= 0 and b >= 0 and a != b:
                ok = False
                break
        if ok:
            got += _weight(miss[j], im, t, alpha)
    return got


def greedy(codes: np.ndarray, fk: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int,
           alpha: float = 1.0) -> np.ndarray:
    """Output codes after greedy suppression (``fk``: input class sizes, to pick the visiting order)."""
    from ..risk.classes import class_sizes

    X = np.ascontiguousarray(codes, dtype=np.int32).copy()
    costs = np.asarray(costs, np.float64)
    protected = np.asarray(protected, np.bool_)
    for _pass in range(MAX_PASSES + len(X)):
        unsafe = np.flatnonzero(fk < k - 1e-9)
        if len(unsafe) == 0:
            return X
        order = unsafe[np.argsort(fk[unsafe], kind="stable")].astype(np.int64)
        bad = greedy_suppress(X, order, costs, protected, int(k), float(alpha))
        if bad >= 0:
            if alpha >= 1.0:  # pragma: no cover - feasibility is checked before
                raise RuntimeError("greedy suppression could not make a record safe")
            _blank_a_partner(X, int(bad), costs, protected)
        fk = class_sizes(X, "wildcard", alpha=alpha)
    raise RuntimeError("greedy suppression did not settle")  # pragma: no cover


def _blank_a_partner(X: np.ndarray, i: int, costs: np.ndarray, protected: np.ndarray) -> None:
    """Record i has nothing left to blank (alpha < 1): blank the cheapest record with its protected values,
    whose key then becomes i's and counts fully."""
    from ..errors import InfeasibleError

    same = (X[:, protected] == X[i, protected]).all(axis=1) if protected.any() else np.ones(len(X), bool)
    open_cells = (X >= 0) & ~protected[None, :]
    cost = (open_cells * costs[None, :]).sum(axis=1)
    cand = np.flatnonzero(same & (cost > 0))
    if len(cand) == 0:
        raise InfeasibleError("A record cannot reach k at this alpha: too few records share its protected values.")
    j = int(cand[np.argmin(cost[cand])])
    X[j, open_cells[j]] = -1
