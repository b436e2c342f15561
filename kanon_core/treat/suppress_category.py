"""Greedy strict local suppression: suppressed records form classes of k among themselves.

Under the ``strict`` protection model (:mod:`kanon_core.treat.protection`) a suppressed value *is* a
value: a record whose QI values were partly suppressed only shares a class with records suppressed on
exactly the same QIs and equal elsewhere. Suppressing a record does not make it blend in with everyone,
so the suppressed records must themselves form classes of at least k (classic k-anonymity by
suppression, NP-hard in general; Meyerson & Williams 2004). The exact method is
:mod:`kanon_core.treat.strict`; this fast heuristic builds the classes directly and is its yardstick:

1. records already in classes of size >= k are kept as they are;
2. suppression patterns S (sets of free QIs) are tried from the cheapest up; for each, every remaining
   unsafe record observed on S is projected (S suppressed); a projected pattern shared by >= k records --
   unsafe ones projected, plus records already placed with exactly that pattern -- becomes a class and
   its unsafe records are placed there (joining a class of >= k never hurts it);
3. all patterns are tried when there are at most 12 free QIs, else patterns of up to 3 QIs and then
   all free QIs at once; records still unplaced then have every free observed QI suppressed, and a group
   still below k borrows the cheapest records that agree with it from classes that can spare them (or
   whole classes, which always succeeds once the file is feasible).

Lower bound: an unsafe record must lose at least one value (nobody else can gain values to become
identical to it), so the bound is the number of such records times the cheapest free cost.
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


def category_suppress(codes: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int,
                      observed: np.ndarray | None = None, force: np.ndarray | None = None
                      ) -> tuple[np.ndarray, float]:
    """Output codes (classes of identical rows all >= k) and a lower bound on the optimal cost.

    ``codes`` has no missing cell (-1 marks a suppressed cell in the output); ``observed`` (default all)
    says which cells may be suppressed: cells missing in the input, coded as a value of their own, may
    not (the release shows them as missing, not as suppressed). Feasibility (every unsafe record's
    protected values and unsuppressible cells occur >= k times) must be checked before. ``force`` (per
    record) overrides which records must be suppressed (default: those in classes below k).
    """
    X = np.ascontiguousarray(codes, dtype=np.int32).copy()
    n, q = X.shape
    obs = np.ones((n, q), dtype=bool) if observed is None else np.asarray(observed, dtype=bool)
    free = [v for v in range(q) if not protected[v]]
    gid, size = group_ids(X)
    unsafe = size[gid] < k if force is None else np.asarray(force, dtype=bool)
    complete = (X >= 0).all(axis=1)
    lower = float(np.count_nonzero(unsafe & complete)) * (float(costs[free].min()) if free else 0.0)
    placed = ~unsafe
    for pattern in _patterns(free, costs):
        if not (~placed).any():
            break
        cols = list(pattern)
        todo = np.flatnonzero(~placed & obs[:, cols].all(axis=1))
        if len(todo) == 0:
            continue
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
        sub = X[np.ix_(todo, free)]
        sub[obs[np.ix_(todo, free)]] = -1
        X[np.ix_(todo, free)] = sub
        placed[todo] = True
        _borrow(X, costs, free, k, obs)
    return X, lower


def _borrow(X: np.ndarray, costs: np.ndarray, free: list[int], k: int, obs: np.ndarray) -> None:
    """Make every class >= k by fully suppressing (the free QIs of) donors from classes that can spare them.

    A donor joins a small class when it agrees with it wherever the class is not suppressed and can
    lose every value the class has suppressed.
    """
    while True:
        gid, size = group_ids(X)
        first = np.zeros(len(size), dtype=np.int64)
        first[gid[::-1]] = np.arange(len(X))[::-1]
        # only classes of suppressed records: unsuppressed records stay as the caller placed them
        small = np.flatnonzero((size < k) & (X[first] < 0).any(axis=1))
        if len(small) == 0:
            return
        g = int(small[0])
        members = np.flatnonzero(gid == g)
        target = X[members[0]].copy()
        need = k - len(members)
        keep = np.flatnonzero(target >= 0)
        gone = np.flatnonzero(target < 0)
        same = (X[:, keep] == target[keep]).all(axis=1) if len(keep) else np.ones(len(X), bool)
        same &= obs[:, gone].all(axis=1) if len(gone) else True
        same &= gid != g
        cand = np.flatnonzero(same)
        donor_cost = ((X[cand][:, gone] >= 0) * costs[gone]).sum(axis=1) if len(gone) else np.zeros(len(cand))
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
        X[np.ix_(taken, gone)] = -1
