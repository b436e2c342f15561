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

import numba
import numpy as np

from ..risk.keys import group_ids
from .suppress_bits import popcount

FULL_ENUMERATION_MAX = 12
SMALL_PATTERN_SIZE = 3
NEAR_SIZE = 3
"""Patterns of up to this many positions group only the records with enough near records inside them."""
HASH_BITS = 48
"""Bits of a projected row's hash kept in its slot beside the pattern's tag (matches are then compared value
by value, so a collision never merges two rows; 2^16 patterns and 2^32 rows at most)."""


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
    masks = np.array([sum(1 << v for v in pattern) for pattern in _patterns(free, costs)], dtype=np.uint64)
    assert len(masks) < 1 << (64 - HASH_BITS) and n < 1 << 32  # the tags and rows place_patterns packs
    bits = np.uint64(1) << np.arange(q, dtype=np.uint64)
    obs_bits = (obs.astype(np.uint64) * bits[None, :]).sum(axis=1, dtype=np.uint64) if q else np.zeros(n, np.uint64)
    place_patterns(X, placed, obs_bits, masks, int(k))
    todo = np.flatnonzero(~placed)
    if len(todo):
        sub = X[np.ix_(todo, free)]
        sub[obs[np.ix_(todo, free)]] = -1
        X[np.ix_(todo, free)] = sub
        placed[todo] = True
        _borrow(X, costs, free, k, obs)
    return X, lower


@numba.njit(cache=True, nogil=True, inline="always")
def _mix(j, v):  # pragma: no cover - compiled
    """A 64-bit hash of (position, code) (splitmix64's finaliser)."""
    z = np.uint64(j) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(v + 2) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def _row_hash(X, r, q):  # pragma: no cover - compiled
    h = np.uint64(0)
    for j in range(q):
        h += _mix(j, X[r, j])
    return h


@numba.njit(cache=True, nogil=True)
def _same_projection(X, a, b, pm, q):  # pragma: no cover - compiled
    """Rows a and b are equal once the positions in ``pm`` are suppressed (-1)."""
    for j in range(q):
        if (pm >> np.uint64(j)) & np.uint64(1):
            continue
        if X[a, j] != X[b, j]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _gather(r, pm, placed, obs_bits, neg_bits, todo, nt, cand, ncand):  # pragma: no cover - compiled
    """Row r into the pattern's grouping: an unplaced row observed on all of ``pm`` to be projected
    (``todo``), a placed row already suppressed on all of it as a possible class-mate (``cand``)."""
    if not placed[r]:
        if (obs_bits[r] & pm) == pm:
            todo[nt] = r
            nt += 1
    elif (neg_bits[r] & pm) == pm:
        cand[ncand] = r
        ncand += 1
    return nt, ncand


def place_patterns(X: np.ndarray, placed: np.ndarray, obs_bits: np.ndarray, patterns: np.ndarray, k: int,
                   near: bool = True) -> None:
    """Step 2 of the module docstring, in place on ``X`` and ``placed``.

    For each pattern S in order: every unplaced record observed on S is projected (S set to -1); a
    projected row shared by at least k records -- projected ones, plus placed records that already
    read -1 on all of S -- becomes a class, and its projected records are placed. Rows are grouped
    exactly: an additive hash of (position, code) is updated by S's positions only, and rows whose
    hashes meet are compared value by value (open addressing), so a hash collision never merges two
    different rows.

    With ``near`` (and no cell of ``X`` suppressed yet, the greedy's own input), the patterns of at most
    :data:`NEAR_SIZE` positions group only the records that can share a class under them. Such a class
    holds records whose input values agree outside S (a record is suppressed only once, when placed, and
    then reads -1 where no unplaced record does), so every member differs from each other member on
    positions inside S only: it has at least k - 1 *near* records (:mod:`.suppress_near`) whose
    differing positions lie inside S. Records with fewer cannot be in a class of k under S, and leaving
    them out of the grouping changes no class of k: the result is the same, record by record (tested
    against the loop without the lists).
    """
    lists = None
    if near and k >= 2 and len(X) and not (X < 0).any():
        from .suppress_near import near_pairs

        lists = near_pairs(X, np.flatnonzero(~placed), min(NEAR_SIZE, X.shape[1] - 1))
    if lists is None:
        none = np.zeros(0, np.uint64)
        _place_patterns(X, placed, obs_bits, patterns, int(k), none, np.zeros(1, np.int64), np.zeros(0, np.int64), -1)
        return
    # the near entries (row, differing positions) grouped by their positions: a pattern visits the entries
    # of its subsets only
    owner = np.repeat(np.arange(len(X), dtype=np.int64), lists.degree())
    by_mask = np.argsort(lists.mask, kind="stable")
    masks, first = np.unique(lists.mask[by_mask], return_index=True)
    start = np.append(first, len(by_mask)).astype(np.int64)
    _place_patterns(X, placed, obs_bits, patterns, int(k), masks, start, owner[by_mask], lists.m)


@numba.njit(cache=True, nogil=True)
def _place_patterns(X, placed, obs_bits, patterns, k, near_masks, near_start, near_owner, near_m
                    ):  # pragma: no cover - compiled
    """:func:`place_patterns`. The patterns of at most ``near_m`` positions (-1: none) gather the rows with k - 1
    near rows differing inside the pattern from the near entries: ``near_owner[near_start[i]:near_start[i +
    1]]`` are the rows having a near row that differs from them exactly on the positions ``near_masks[i]``
    (sorted)."""
    n, q = X.shape
    size = 1
    while size < 2 * n + 2:
        size <<= 1
    # 16 bytes per slot, a lookup within one cache line: (pattern tag << HASH_BITS | row hash) and
    # (representative row << 32 | count); the table of a pattern then fits a core's own cache
    table = np.zeros((size, 2), dtype=np.uint64)
    hash_mask = np.uint64((1 << HASH_BITS) - 1)
    low32 = np.uint64(0xFFFFFFFF)
    neg_bits = np.zeros(n, dtype=np.uint64)
    h = np.empty(n, dtype=np.uint64)
    delta = np.empty((n, q), dtype=np.uint64)  # what suppressing position j changes in row r's hash
    remaining = 0
    for r in range(n):
        h[r] = _row_hash(X, r, q)
        for j in range(q):
            delta[r, j] = _mix(j, -1) - _mix(j, X[r, j])
            if X[r, j] < 0:
                neg_bits[r] |= np.uint64(1) << np.uint64(j)
        if not placed[r]:
            remaining += 1
    todo = np.empty(n, dtype=np.int64)
    cand = np.empty(n, dtype=np.int64)
    slot_of = np.empty(n, dtype=np.int64)
    pos = np.empty(q, dtype=np.int64)
    hits = np.zeros(n, dtype=np.int64)  # near rows inside the pattern, per row (reset after each pattern)
    touched = np.empty(n, dtype=np.int64)
    for p in range(patterns.shape[0]):
        if remaining == 0:
            break
        pm = patterns[p]
        tag = np.uint64(p + 1) << np.uint64(HASH_BITS)
        nt = 0
        ncand = 0
        if popcount(pm) <= near_m:
            n_touch = 0
            sub = pm
            while True:  # every subset of the pattern, itself down to the empty set
                i = np.searchsorted(near_masks, sub)
                if i < near_masks.shape[0] and near_masks[i] == sub:
                    for e in range(near_start[i], near_start[i + 1]):
                        r = near_owner[e]
                        if hits[r] == 0:
                            touched[n_touch] = r
                            n_touch += 1
                        hits[r] += 1
                        if hits[r] == k - 1:
                            nt, ncand = _gather(r, pm, placed, obs_bits, neg_bits, todo, nt, cand, ncand)
                if sub == 0:
                    break
                sub = (sub - np.uint64(1)) & pm
            for t in range(n_touch):
                hits[touched[t]] = 0
        else:
            for r in range(n):
                nt, ncand = _gather(r, pm, placed, obs_bits, neg_bits, todo, nt, cand, ncand)
        if nt == 0:
            continue
        npos = 0
        for j in range(q):
            if (pm >> np.uint64(j)) & np.uint64(1):
                pos[npos] = j
                npos += 1
        cur = 2
        while cur < 2 * (nt + ncand) + 2:  # at most half full: short probes, and never full
            cur <<= 1
        umask = np.uint64(cur - 1)
        mask = np.int64(cur - 1)
        for t in range(nt + ncand):
            r = todo[t] if t < nt else cand[t - nt]
            hp = h[r]
            for i in range(npos):
                hp += delta[r, pos[i]]
            s = np.int64((hp ^ (hp >> np.uint64(29))) & umask)
            key = tag | ((hp >> np.uint64(64 - HASH_BITS)) & hash_mask)
            while (table[s, 0] & ~hash_mask) == tag and not (
                    table[s, 0] == key and _same_projection(X, np.int64(table[s, 1] >> np.uint64(32)), r, pm, q)):
                s = (s + 1) & mask
            if (table[s, 0] & ~hash_mask) != tag:
                table[s, 0] = key
                table[s, 1] = np.uint64(r) << np.uint64(32)
            table[s, 1] += np.uint64(1)
            if t < nt:
                slot_of[t] = s
        for t in range(nt):
            if np.int64(table[slot_of[t], 1] & low32) >= k:
                r = todo[t]
                for i in range(npos):
                    X[r, pos[i]] = -1
                neg_bits[r] |= pm
                h[r] = _row_hash(X, r, q)
                for j in range(q):
                    delta[r, j] = _mix(j, -1) - _mix(j, X[r, j])
                placed[r] = True
                remaining -= 1


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
