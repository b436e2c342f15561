"""Local suppression when a missing value is a category of its own (``category`` semantics).

Here a suppressed value *is* a value: a record whose QI values were partly suppressed only matches
records missing exactly the same QIs and equal elsewhere. Suppressing a record no longer makes it blend
in with everyone, so the record-wise decomposition of seed 000 does not hold: the suppressed records
must themselves form classes of at least k. (This is the classic k-anonymity-by-suppression problem,
NP-hard in general; Meyerson & Williams 2004.)

The method is a verified heuristic that builds those classes explicitly:

1. records already in classes of size >= k are kept as they are;
2. suppression patterns S (sets of free QIs) are tried from the cheapest up; for each, every remaining
   unsafe record is projected (S set to missing); a projected pattern shared by >= k records -- unsafe
   ones projected, plus records already placed with exactly that pattern -- becomes a class and its
   unsafe records are placed there (joining a class of >= k never hurts it);
3. all patterns are tried when there are at most 12 free QIs, else patterns of up to 3 QIs and then
   all free QIs at once; records still unplaced then have every free QI suppressed, and a group still
   below k borrows the cheapest records of the same protected values from classes that can spare them
   (or whole classes, which always succeeds once the protected values occur k times).

Lower bound: an unsafe record without missing values must lose at least one value (nobody else can gain
values to become identical to it), so the bound is the number of such records times the cheapest free
cost. The result is reported optimal only when it meets that bound.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ..risk.keys import group_ids, pack_rows

FULL_ENUMERATION_MAX = 12
SMALL_PATTERN_SIZE = 3


def _patterns(free: list[int], costs: np.ndarray) -> list[tuple[int, ...]]:
    if len(free) <= FULL_ENUMERATION_MAX:
        subsets = [c for r in range(1, len(free) + 1) for c in combinations(free, r)]
    else:
        subsets = [c for r in range(1, SMALL_PATTERN_SIZE + 1) for c in combinations(free, r)]
        subsets.append(tuple(free))
    return sorted(subsets, key=lambda s: (float(costs[list(s)].sum()), len(s), s))


def category_suppress(codes: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int
                      ) -> tuple[np.ndarray, float]:
    """Output codes (classes of identical rows all >= k) and a lower bound on the optimal cost.

    Feasibility (every unsafe record's protected values occur >= k times) must be checked before.
    """
    X = np.ascontiguousarray(codes, dtype=np.int32).copy()
    n, q = X.shape
    free = [v for v in range(q) if not protected[v]]
    gid, size = group_ids(X)
    unsafe = size[gid] < k
    complete = (X >= 0).all(axis=1)
    lower = float(np.count_nonzero(unsafe & complete)) * (float(costs[free].min()) if free else 0.0)
    placed = ~unsafe
    for pattern in _patterns(free, costs):
        todo = np.flatnonzero(~placed)
        if len(todo) == 0:
            break
        cols = list(pattern)
        proj = X[todo].copy()
        proj[:, cols] = -1
        # placed records can only share the projected pattern if they are missing on all of S
        cand = np.flatnonzero(placed & (X[:, cols] < 0).all(axis=1))
        keys = pack_rows(np.concatenate([proj, X[cand]]))
        _, inv = np.unique(keys, return_inverse=True)
        inv = inv.reshape(-1)
        total = np.bincount(inv)
        ok = total[inv[: len(todo)]] >= k
        if ok.any():
            rows = todo[ok]
            X[rows] = proj[ok]
            placed[rows] = True
    todo = np.flatnonzero(~placed)
    if len(todo):
        X[np.ix_(todo, free)] = -1
        placed[todo] = True
        _borrow(X, codes, costs, free, k)
    return X, lower


def _borrow(X: np.ndarray, codes: np.ndarray, costs: np.ndarray, free: list[int], k: int) -> None:
    """Make every class >= k by fully suppressing (the free QIs of) donors from classes that can spare them."""
    while True:
        gid, size = group_ids(X)
        small = np.flatnonzero(size < k)
        if len(small) == 0:
            return
        g = int(small[0])
        members = np.flatnonzero(gid == g)
        target = X[members[0]].copy()
        need = k - len(members)
        prot = [v for v in range(X.shape[1]) if v not in free]
        same = (X[:, prot] == target[prot]).all(axis=1) if prot else np.ones(len(X), bool)
        same &= gid != g
        cand = np.flatnonzero(same)
        donor_cost = ((X[cand][:, free] >= 0) * costs[free]).sum(axis=1) if free else np.zeros(len(cand))
        spare = size[gid[cand]] - k
        order = np.lexsort((cand, donor_cost))
        taken = []
        used: dict[int, int] = {}
        for t in order.tolist():
            c = int(gid[cand[t]])
            if used.get(c, 0) < spare[t]:
                used[c] = used.get(c, 0) + 1
                taken.append(int(cand[t]))
                if len(taken) == need:
                    break
        if len(taken) < need:
            # no class can spare enough: absorb the cheapest whole class (it stays >= k inside the group)
            classes = np.unique(gid[cand])
            cls_cost = np.array([donor_cost[gid[cand] == c].sum() for c in classes])
            taken = np.flatnonzero(gid == classes[int(np.argmin(cls_cost))]).tolist()
        X[np.ix_(taken, free)] = -1
