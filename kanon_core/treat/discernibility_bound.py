"""Discernibility's lower bound at every lattice node from the levels alone, counted once per search.

Discernibility without suppression (Bayardo & Agrawal 2005) charges each record the records it matches, so
it is the number of ordered pairs of records (r, s) that match at the node, each with itself included:
equal codes under category semantics, equal wherever both are observed under wildcard semantics.

**Why the bound holds.** On each QI j, whether two records match depends on that QI's level alone and, as
the levels nest and a missing cell stays missing, once they match at a level they match at every level
above. So r and s match at node (l_1, ..., l_q) exactly when, on every QI j of the set T(r, s) of QIs where
they do not match at level 0, the lowest level m_j(r, s) at which they match is at most l_j. Grouping the
pairs by T:

    DM(l) = #{T empty} + sum_j #{T = {j}, m_j <= l_j} + sum_{j<i} #{T = {j, i}, m_j <= l_j, m_i <= l_i}
            + sum_{j<i<h} #{T = {j, i, h}, m_j <= l_j, m_i <= l_i, m_h <= l_h} + #{|T| >= 4, matching at l},

and the bound is the first four terms (:func:`~._pairs_kernel.pair_tallies` counts them, by T and the
levels m, in one pass over the pairs of input classes; the fourth only within :data:`TRIPLE_CELLS` and
:data:`TRIPLE_LOOKUPS`). The last term is never negative, so the bound never exceeds the node's discernibility
without suppression, which never exceeds its loss (suppressed records are charged n, more than the fewer than k
matches they had). With three QIs or fewer it is exact (two, without the fourth term). Every term grows with each
level, so the bound is monotone up the lattice as the discernibility is.

Why: the search needs a bound before it counts a node. Without one, every node had to be classified and
hundreds counted to rule nodes out; on the bundled sample (8 QIs, k = 3, wildcard), the bound from the pairs
differing on two QIs or fewer is above the optimum's discernibility at 37,233 of the 48,000 nodes, with no node
counted. The pairs differing on three QIs cost about 0.05 s more to count on the sample (0.12 s in all on two
cores) and narrow the search where its band is wide: at k = 5 on the other 8 QIs of ``bench_generalize.py``,
1,179 nodes evaluated at 1 % instead of 1,450 (1.75 s against 2.28 s) and 646 at 0 % instead of 838 (0.89 s
against 1.08 s); the speed table's searches at k = 3, where few nodes are spared, took 0.06 s longer (0.46 and
0.53 s against 0.40 and 0.46 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..classtable import ClassTable

PAIR_BOUND_CLASSES = 60_000
"""Input classes up to which the bound is counted. Its cost grows with their square: on two cores, 8 QIs of 20
codes with 3 % of the cells missing, 0.05 s at 15,000 classes, 0.22 s at 30,000, 0.88 s at 60,000 (0.05, 0.19
and 0.80 s without the pairs differing on three QIs, few on such data), where a search under wildcard semantics
scans tens of thousands of classes per node evaluated. Beyond, the search inherits its bounds from the nodes it
counts, as without it."""
PARALLEL_CLASSES = 2_000
"""Input classes from which the pairs are counted on every compute slot (below, a few milliseconds of work)."""
MAX_QIS = 32
"""The pair count's masks are 32 bits wide."""
TRIPLE_CELLS = 1_000_000
"""Tallies of the pairs differing on three QIs (one per set of three QIs and levels) counted at most, per thread
(8 MB): 56 sets of 125 on the bundled sample's 8 QIs of 4 or 5 levels; beyond (many QIs, many levels) the bound
leaves those pairs out, as it leaves out the pairs differing on four QIs or more."""
TRIPLE_LOOKUPS = 20_000_000
"""Sets of three QIs times lattice nodes up to which the bound counts the pairs differing on three QIs: reading the
bound at every node costs a lookup per set and node (about 5 ns: 0.03 s on the bundled sample, 56 sets and 72,000
nodes). Beyond (many QIs and a large lattice: 220 sets of 12 QIs on half a million nodes) they are left out."""
MERGED_CODES = 256
"""Codes per QI up to which the levels at which two codes join are tabulated once (at most 64 KB per QI)."""


@dataclass(frozen=True)
class DiscernibilityBound:
    """The tallies of :func:`~._pairs_kernel.pair_tallies`, summed over the levels up to each level:
    ``one[j][l]`` the pairs differing on QI j alone that match at its level l; ``two[(j, i)][l, m]`` those
    differing on QIs j and i alone that match at their levels l and m; ``three[(j, i, h)][l, m, o]`` those
    differing on three QIs alone (empty when not counted); ``same`` those that differ nowhere."""

    same: float
    one: tuple[np.ndarray, ...]
    two: dict[tuple[int, int], np.ndarray]
    three: dict[tuple[int, int, int], np.ndarray]

    def at(self, nodes: np.ndarray) -> np.ndarray:
        """The bound at each node (one row of levels per node)."""
        nodes = np.asarray(nodes)
        out = np.full(len(nodes), self.same, dtype=np.float64)
        for j, cum in enumerate(self.one):
            out += cum[nodes[:, j]]
        for (j, i), cum in self.two.items():
            out += cum[nodes[:, j], nodes[:, i]]
        for (j, i, h), cum in self.three.items():
            out += cum[nodes[:, j], nodes[:, i], nodes[:, h]]
        return out


def discernibility_bound(table: ClassTable, tables: tuple[np.ndarray, ...], category: bool,
                         workers: int | None = None) -> DiscernibilityBound | None:
    """The bound for the lattice of ``tables`` (per QI, ``[level, data code]``) over the input's class table,
    under category (``category``) or wildcard semantics; None when the table has more than
    :data:`PAIR_BOUND_CLASSES` classes or more than :data:`MAX_QIS` QIs."""
    from ..threads import map_workers
    from ..threads import workers as n_workers
    from ._pairs_kernel import merge_levels, pair_tallies

    q = len(tables)
    if table.n_classes > PAIR_BOUND_CLASSES or q > MAX_QIS or q == 0:
        return None
    heights = np.array([t.shape[0] for t in tables], dtype=np.int64)
    width = max(int(t.shape[1]) for t in tables)
    padded = np.zeros((q, int(heights.max()), max(width, 1)), dtype=np.int32)
    for j, t in enumerate(tables):
        padded[j, :t.shape[0], :t.shape[1]] = t
    data = np.ascontiguousarray(table.codes.T, dtype=np.int32)
    codes0 = np.full_like(data, -1)
    for j in range(q):
        seen = data[j] >= 0
        codes0[j, seen] = tables[j][0][data[j, seen]]
    if codes0.size == 0 or int(codes0.max()) < np.iinfo(np.int16).max:  # half the width: twice the lanes
        codes0 = codes0.astype(np.int16)
    bitvals = (np.uint16(1) << np.arange(q, dtype=np.uint16)) if q <= 16 else \
        (np.uint32(1) << np.arange(q, dtype=np.uint32))
    count = np.asarray(table.count, dtype=np.int64)
    hmax = int(heights.max())
    triples = [(j, i, h) for j in range(q) for i in range(j + 1, q) for h in range(i + 1, q)]
    n_nodes = math.prod(int(h) for h in heights)  # (Python integers: 32 QIs of many levels overflow int64)
    counted = bool(triples) and len(triples) * hmax ** 3 <= TRIPLE_CELLS and len(triples) * n_nodes <= TRIPLE_LOOKUPS
    triple_of = np.full((q, q, q) if counted else (0, 0, 0), -1, dtype=np.int64)
    for t, (j, i, h) in enumerate(triples if counted else ()):
        triple_of[j, i, h] = t
    tabulated = width <= MERGED_CODES and hmax <= np.iinfo(np.int8).max  # (a level fits the table's byte)
    merged = merge_levels(padded, heights, width) if tabulated else np.zeros((0, 0, 0), np.int16)
    n_parts = n_workers(workers) if table.n_classes >= PARALLEL_CLASSES else 1
    parts = map_workers(lambda part: pair_tallies(codes0, data, count, padded, heights, category, bitvals, part,
                                                  n_parts, triple_of, merged), range(n_parts), n_parts)
    same = float(sum(int(p[0]) for p in parts))
    one_t = sum(p[1] for p in parts)
    two_t = sum(p[2] for p in parts)
    three_t = sum(p[3] for p in parts)
    one = tuple(np.cumsum(one_t[j, :heights[j]]).astype(np.float64) for j in range(q))
    two = {}
    for j in range(q):
        for i in range(j + 1, q):
            block = two_t[j, i, :heights[j], :heights[i]]
            if block.any():
                two[(j, i)] = block.cumsum(axis=0).cumsum(axis=1).astype(np.float64)
    three = {}
    for t, (j, i, h) in enumerate(triples if counted else ()):
        block = three_t[t, :heights[j], :heights[i], :heights[h]]
        if block.any():
            three[(j, i, h)] = block.cumsum(axis=0).cumsum(axis=1).cumsum(axis=2).astype(np.float64)
    return DiscernibilityBound(same=same, one=one, two=two, three=three)
