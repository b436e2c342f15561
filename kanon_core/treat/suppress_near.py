"""Near records: every pair of rows that differ on at most ``m`` positions, with the positions they differ on.

The greedy strict classes (:mod:`.suppress_category`) try suppression patterns S one after the other and,
for each, group the unplaced records by their values outside S. On real files almost every record is
alone in its group for every small S (on the bundled sample, 3,680 of 15,934 unsafe records have even two
others within three differing values), so almost all of that work finds nothing. A record r can share its
group under S with a record s only when the positions where they differ, D(r, s), lie inside S; when
|S| <= m, only the pairs with |D| <= m can matter. Listing those pairs once lets the pattern loop skip
every record that has fewer than k - 1 of them inside S.

**Finding them without comparing all pairs** (the pigeonhole principle of multi-index hashing, Norouzi
et al. 2012): split the positions into b >= m + 1 blocks. A pair differing on at most m positions leaves
at least b - m blocks untouched, so it agrees exactly on the union of some b - m blocks. For each choice
of b - m blocks, the rows are grouped by their values there and only the pairs within a group are
compared; a pair is kept in the first such choice it agrees on, so it is listed once. The pairs compared
are counted from the group sizes before any is compared: the cheapest number of blocks is used, and
when even that exceeds :data:`PAIR_BUDGET` no list is made (the caller then groups every record, as
without it).

The lists are exact (tested against comparing every pair): a pair is listed iff its rows differ on at
most m positions, with its full set of differing positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numba
import numpy as np

PAIR_BUDGET = 5_000_000
"""Most pairs compared to list the near pairs (about 0.1 s, and at most this many pairs kept: 240 MB of lists at
worst); beyond it the caller does without the lists."""

MAX_EXTRA_BLOCKS = 3
"""Blocks beyond m + 1 tried (more blocks: more, smaller groupings; the cheapest design is kept)."""

FORECAST_SLACK = 4.0
"""A design forecast to compare more than this many times the budget's pairs is not tried."""

PAIRS_PER_GROUPING = 20_000
"""Pairs compared in about the time one grouping of the rows takes: the exchange rate of the design choice."""


@dataclass(frozen=True)
class NearPairs:
    """For each row i of the input, its near rows ``to[off[i]:off[i + 1]]`` and the positions each differs
    on, as bit masks ``mask[...]`` (bit j: position j); ``m`` is the most differing positions listed."""

    off: np.ndarray
    to: np.ndarray
    mask: np.ndarray
    m: int

    def degree(self) -> np.ndarray:
        return np.diff(self.off)


def _block_designs(q: int, m: int, order: list[int]) -> list[list[list[int]]]:
    """Ways to split the positions ``order`` (most informative first) into b = m + 1 .. blocks, dealt in
    a snake so that each block gets a share of the informative positions; per design, the unions of
    b - m blocks that a near pair must agree on."""
    designs = []
    for b in range(m + 1, min(q, m + 1 + MAX_EXTRA_BLOCKS) + 1):
        blocks: list[list[int]] = [[] for _ in range(b)]
        for i, j in enumerate(order):
            rnd, pos = divmod(i, b)
            blocks[pos if rnd % 2 == 0 else b - 1 - pos].append(j)
        designs.append([sorted(sum((blocks[t] for t in combo), [])) for combo in combinations(range(b), b - m)])
    return designs


def _column_stats(col: np.ndarray) -> tuple[float, float]:
    """Shannon entropy of a code column (codes >= -1) and the chance that two rows drawn at random share
    their code (the sum of the squared shares)."""
    counts = np.bincount(col.astype(np.int64) + 1)
    p = counts[counts > 0] / len(col)
    return float(-(p * np.log2(p)).sum()), float((p * p).sum())


def near_pairs(X: np.ndarray, rows: np.ndarray, m: int, budget: int = PAIR_BUDGET) -> NearPairs | None:
    """The near pairs among ``rows`` of ``X`` (n, q) differing on at most ``m`` positions (lists indexed by
    row of ``X``; rows not in ``rows`` get none), or None when listing them would compare more than
    ``budget`` pairs or ``m`` is not below q (every pair would be near)."""
    X = np.ascontiguousarray(X, dtype=np.int32)
    n, q = X.shape
    rows = np.asarray(rows, dtype=np.int64)
    if m < 0 or m >= q or q > 64:
        return None
    if len(rows) < 2:
        return NearPairs(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint64), m)
    sub = X[rows]
    stats = [_column_stats(sub[:, j]) for j in range(q)]
    order = sorted(range(q), key=lambda j: (-stats[j][0], j))
    n_u = len(rows)
    best: tuple[int, list[np.ndarray], list[int]] | None = None
    for unions in _block_designs(q, m, order):
        # a design with more blocks groups more often: tried only while the pairs it could save cost more
        # than its groupings (about as much as comparing PAIRS_PER_GROUPING pairs each)
        if best is not None and best[0] <= PAIRS_PER_GROUPING * len(unions):
            break
        # a design whose pairs, forecast as if the columns were independent, exceed the budget many times
        # over is not grouped (the forecast only spares work: a design grouped is counted exactly)
        forecast = sum(n_u * n_u / 2 * float(np.prod([stats[j][1] for j in cols])) for cols in unions)
        if forecast > FORECAST_SLACK * budget:
            continue
        gids = []
        cost = 0
        for cols in unions:
            gid, pairs = _groups(sub, np.array(cols, dtype=np.int64))
            cost += pairs
            gids.append(gid)
        if best is None or cost < best[0]:
            best = (cost, gids, [sum(1 << j for j in cols) for cols in unions])
    if best is None or best[0] > budget:
        return None
    cost, gids, col_masks = best
    a, b, d = _pairs(sub, rows, np.stack(gids), np.array(col_masks, dtype=np.uint64), m, cost)
    # both directions, grouped by row (a stable sort keeps each row's partners in increasing order)
    src = np.concatenate([a, b])
    dst = np.concatenate([b, a])
    masks = np.concatenate([d, d])
    by = np.argsort(src, kind="stable")
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=off[1:])
    return NearPairs(off, dst[by], masks[by], m)


@numba.njit(cache=True, nogil=True)
def _pairs(sub, rows, gids, col_masks, m, capacity):  # pragma: no cover - compiled
    """Pairs (row a, row b of X, differing positions) among the rows ``sub`` (= X[rows]) within the groups of each union of blocks, each kept in the
    first union it agrees on; ``capacity`` bounds the pairs compared (so the pairs kept), the buffers
    start smaller and grow."""
    n_u = rows.shape[0]
    q = sub.shape[1]
    cap = max(1, min(capacity, 4 * n_u + 1024))
    out_a = np.empty(cap, dtype=np.int64)
    out_b = np.empty(cap, dtype=np.int64)
    out_d = np.empty(cap, dtype=np.uint64)
    n_out = 0
    for u in range(gids.shape[0]):
        gid = gids[u]
        n_g = 0
        for i in range(n_u):
            if gid[i] + 1 > n_g:
                n_g = gid[i] + 1
        start = np.zeros(n_g + 1, dtype=np.int64)
        for i in range(n_u):
            start[gid[i] + 1] += 1
        for g in range(n_g):
            start[g + 1] += start[g]
        members = np.empty(n_u, dtype=np.int64)
        fill = start[:n_g].copy()
        for i in range(n_u):
            members[fill[gid[i]]] = i
            fill[gid[i]] += 1
        for g in range(n_g):
            for s in range(start[g], start[g + 1]):
                ia = members[s]
                for t in range(s + 1, start[g + 1]):
                    ib = members[t]
                    d = np.uint64(0)
                    cnt = 0
                    for j in range(q):
                        if sub[ia, j] != sub[ib, j]:
                            d |= np.uint64(1) << np.uint64(j)
                            cnt += 1
                            if cnt > m:
                                break
                    if cnt > m:
                        continue
                    first = 0
                    while (col_masks[first] & d) != 0:
                        first += 1
                    if first != u:
                        continue
                    if n_out == cap:
                        cap *= 2
                        out_a = _grown(out_a, cap)
                        out_b = _grown(out_b, cap)
                        out_d = _grown(out_d, cap)
                    out_a[n_out] = rows[ia]
                    out_b[n_out] = rows[ib]
                    out_d[n_out] = d
                    n_out += 1
    return out_a[:n_out].copy(), out_b[:n_out].copy(), out_d[:n_out].copy()


@numba.njit(cache=True, nogil=True)
def _grown(a, size):  # pragma: no cover - compiled
    out = np.empty(size, dtype=a.dtype)
    out[:a.shape[0]] = a
    return out


@numba.njit(cache=True, nogil=True)
def _groups(sub, cols):  # pragma: no cover - compiled
    """Dense group ids of the rows of ``sub`` by their values at ``cols`` (numbered by first appearance),
    and the pairs within groups: an open-addressing table of representative rows, compared value by value.

    Not :func:`~kanon_core.risk.keys.group_ids`: the block design is chosen by grouping the rows on up to
    34 unions of columns, and its packed keys' counting table (millions of entries once several columns
    are packed) made each grouping several times dearer than this hash on a few thousand rows."""
    n = sub.shape[0]
    size = 16
    while size < 2 * n:
        size *= 2
    mask = size - 1
    slot_row = np.full(size, -1, dtype=np.int64)
    slot_gid = np.empty(size, dtype=np.int64)
    gid = np.empty(n, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    n_g = 0
    pairs = 0
    for i in range(n):
        h = np.uint64(0x9E3779B97F4A7C15)
        for c in cols:
            h = (h ^ np.uint64(sub[i, c] + 2)) * np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(29)
        s = np.int64(h & np.uint64(mask))
        while True:
            r = slot_row[s]
            if r < 0:
                slot_row[s] = i
                slot_gid[s] = n_g
                gid[i] = n_g
                n_g += 1
                break
            same = True
            for c in cols:
                if sub[r, c] != sub[i, c]:
                    same = False
                    break
            if same:
                gid[i] = slot_gid[s]
                break
            s = (s + 1) & mask
        pairs += count[gid[i]]
        count[gid[i]] += 1
    return gid, pairs
