"""Record-wise optimal suppression without enumerating MINUCs: the *neighbour* formulation.

For a record r with observed positions N(r), another record s *agrees* with r on a set S when on every
position of S the values are equal or s is missing (wildcard). Call D(r, s) the positions of N(r) where
s is observed and differs from r: s agrees with r exactly on the sets S with S ∩ D(r, s) = ∅.

Suppressing a set T ⊆ N(r) leaves r with the retained set R = N(r) \\ T, whose frequency in the input is

    count(R) = #{s : D(r, s) ∩ R = ∅} = #{s : D(r, s) ⊆ T}          (r itself has D = ∅).

A set of positions is *unsafe* when its count is below k, and the MINUCs of r are its minimal unsafe
sets (Wilson et al., RTI, for k = 2). Because count is monotone (a larger set has a smaller count), R is safe iff it
contains no MINUC, i.e. iff T hits every MINUC. So the min-cost hitting set of r's MINUCs (Wilson et al.'s
integer programme) is *the same problem* as

    minimise cost(T)  subject to  Σ_{s : D(r,s) ⊆ T} 1 ≥ k,                                   (N)

which needs only the disagreement masks D(r, s) -- no MINUC enumeration at all. For k = 2 the optimum
is the cheapest single mask D(r, s): a weighted nearest-neighbour search. For k > 2 the optimum is the
cheapest union of masks covering k - 1 other records, solved exactly here by enumeration of the subsets
of the few relevant positions (a sum-over-subsets table) or by a depth-first branch and bound; the rare
instances exceeding the node budget go to one batched integer programme (``suppress_ilp``).

Masks costlier than an upper bound (the summed cost of the k - 1 cheapest masks seen so far, a valid
solution) can never be part of an optimal union, so the scan of the other records stops early on them.
Identical rows are collapsed first and solved once; rows are scanned outwards in lexicographic order,
where near neighbours sit, so the bound tightens early.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .suppress_bits import mask_cost, popcount

SAFE, EXACT, HARD, INFEASIBLE = 0, 1, 2, 3
SOS_MAX_BITS = 14
EPS = 1e-9


@dataclass(frozen=True)
class RowSolutions:
    """Per collapsed row: suppression mask, its cost, a lower bound and a status code."""

    masks: np.ndarray  # uint64
    cost: np.ndarray  # float64
    lower: np.ndarray  # float64
    status: np.ndarray  # int8: SAFE, EXACT, HARD (incumbent + bound), INFEASIBLE


@numba.njit(cache=True)
def _insert_sorted(buf, nb, cap, c, times):  # pragma: no cover - compiled
    """Insert cost ``c`` ``times`` times into the ascending buffer ``buf`` of capacity ``cap``."""
    for _ in range(times):
        if nb == cap and c >= buf[nb - 1]:
            break
        j = nb if nb < cap else cap - 1
        while j > 0 and buf[j - 1] > c:
            buf[j] = buf[j - 1]
            j -= 1
        buf[j] = c
        if nb < cap:
            nb += 1
    return nb


@numba.njit(cache=True)
def _pair_mask(uniq, u, w, q, protected, costs, thr):  # pragma: no cover - compiled
    """(usable, D(u, w), its cost): positions of ``u``'s observed values where row w is observed and
    differs, costs added in position order; not usable when it holds a protected position or its cost
    passes ``thr`` (then it can be part of no optimal union)."""
    d = np.uint64(0)
    c = 0.0
    for v in range(q):
        x = uniq[u, v]
        if x < 0:
            continue
        y = uniq[w, v]
        if y < 0 or y == x:
            continue
        bit = np.uint64(1) << np.uint64(v)
        if protected & bit:
            return False, d, c
        d |= bit
        c += costs[v]
        if c > thr + EPS:
            return False, d, c
    return True, d, c


@numba.njit(cache=True)
def _add_candidate(d, c, times, k, m0, cd, cc, cm, nc, buf, nb, cap, thr):  # pragma: no cover - compiled
    """Record mask ``d`` (cost ``c``, ``times`` records) as a candidate, or count it in m0 when empty, and
    tighten the bound: the summed cost of the k - m0 cheapest masks seen is a valid solution."""
    if d == 0:
        return m0 + times, nc, nb, thr
    cd[nc] = d
    cc[nc] = c
    cm[nc] = times
    nc += 1
    nb = _insert_sorted(buf, nb, cap, c, min(times, cap))
    need_now = k - m0
    if need_now >= 1 and nb >= need_now:
        s = 0.0
        for i in range(need_now):
            s += buf[i]
        thr = s
    return m0, nc, nb, thr


@numba.njit(cache=True)
def _keep_within(nc, thr, cd, cc, cm):  # pragma: no cover - compiled
    """Drop the candidates the final bound rules out; returns how many are kept (compacted in place)."""
    j = 0
    for i in range(nc):
        if cc[i] <= thr + EPS:
            cd[j] = cd[i]
            cc[j] = cc[i]
            cm[j] = cm[i]
            j += 1
    return j


@numba.njit(cache=True)
def scan_row(u, uniq, mult, costs, protected, k, cd, cc, cm):  # pragma: no cover - compiled
    """Collect the disagreement masks of row ``u`` that may be part of an optimal solution.

    Returns (number of candidates, m0, need): m0 counts the records agreeing with ``u`` on all of its
    observed positions (``u`` and its duplicates included), need = k - m0 (<= 0: already safe, and then no
    candidates).
    Rows whose mask contains a protected position can never join ``u``'s class and are skipped.
    """
    n, q = uniq.shape
    m0 = mult[u]
    cap = max(k - 1, 1)
    buf = np.empty(cap, dtype=np.float64)
    nb = 0
    thr = np.inf
    nc = 0
    for dist in range(1, n):
        if m0 >= k:
            break
        for side in range(2):
            w = u + dist if side == 0 else u - dist
            if w < 0 or w >= n:
                continue
            ok, d, c = _pair_mask(uniq, u, w, q, protected, costs, thr)
            if not ok:
                continue
            m0, nc, nb, thr = _add_candidate(d, c, mult[w], k, m0, cd, cc, cm, nc, buf, nb, cap, thr)
    if m0 >= k:  # safe: no candidate is needed (and which were met before the k-th agreeing record is moot)
        return 0, m0, k - m0
    return _keep_within(nc, thr, cd, cc, cm), m0, k - m0


SCAN_NEAR = 16
"""Neighbours on each side scanned one by one before the vectorised pass (rows that turn out safe among
their nearest neighbours, as identical and near-identical rows do, stop there)."""


@numba.njit(cache=True)
def _masks_against(u, uniq, cols, dall, bitvals):  # pragma: no cover - compiled
    """dall[w]: the positions of ``u``'s observed values where row w is observed and differs, for every
    row w at once. Column by column over column-major codes in the narrowest types (``bitvals[v]`` =
    1 << v as uint32 up to 32 QIs), so LLVM vectorises the loops."""
    q, n = cols.shape
    zero = bitvals[0] ^ bitvals[0]
    for w in range(n):
        dall[w] = zero
    for v in range(q):
        x = uniq[u, v]
        if x < 0:
            continue
        col = cols[v]
        bit = bitvals[v]
        for w in range(n):
            y = col[w]
            dall[w] |= bit if ((y >= 0) & (y != x)) else zero


@numba.njit(cache=True)
def scan_row_fast(u, uniq, cols, mult, costs, protected, k, cd, cc, cm, dall, bitvals):  # pragma: no cover - compiled
    """:func:`scan_row` with the same result, computing the masks of all rows in one vectorised pass.

    The :data:`SCAN_NEAR` nearest rows on each side are scanned one by one as there. Then the masks of
    all rows are computed at once, and the outward scan is replayed over them in the same order with the
    same running bound, visiting only the rows whose mask has few enough positions to cost at most an
    upper bound of the final bound: the summed cost of the k - m0 masks with fewest positions, each
    costing at most its positions times the dearest cost (one histogram of the masks' sizes). A row
    visited there but not here costs more than the final bound, so :func:`scan_row` drops it by the end
    and it is never among the k - m0 cheapest that set that bound (nor does it count in m0: empty masks
    are always visited). So the candidates (and their order) are exactly :func:`scan_row`'s: a mask
    skipped there because its partial cost passed the bound has a full cost past it too (costs are not
    negative), and a mask with a protected position is skipped in both; costs are added in position
    order, as there. ``cols`` and ``bitvals`` come from :func:`code_columns`; ``dall`` is work space of n.
    """
    n, q = uniq.shape
    m0 = mult[u]
    cap = max(k - 1, 1)
    buf = np.empty(cap, dtype=np.float64)
    nb = 0
    thr = np.inf
    nc = 0
    cheap = np.inf
    for v in range(q):
        cheap = min(cheap, costs[v])
    cheap *= 1.0 - 1e-9
    near = min(SCAN_NEAR, n - 1)
    for dist in range(1, near + 1):
        if m0 >= k:
            break
        for side in range(2):
            w = u + dist if side == 0 else u - dist
            if w < 0 or w >= n:
                continue
            ok, d, c = _pair_mask(uniq, u, w, q, protected, costs, thr)
            if not ok:
                continue
            m0, nc, nb, thr = _add_candidate(d, c, mult[w], k, m0, cd, cc, cm, nc, buf, nb, cap, thr)
    if m0 >= k:
        return 0, m0, k - m0
    if near >= n - 1:
        return _keep_within(nc, thr, cd, cc, cm), m0, k - m0
    _masks_against(u, uniq, cols, dall, bitvals)
    # The final bound is at most the summed cost of the k - m0 masks with fewest positions (each costs at
    # most its positions times the dearest cost): a histogram of the masks' sizes gives it before the scan.
    dear = 0.0
    for v in range(q):
        dear = max(dear, costs[v])
    sizes = np.zeros(q + 2, dtype=np.int64)
    for w in range(n):
        d = np.uint64(dall[w])
        sizes[popcount(d)] += min(mult[w], cap) if ((d & protected) == 0) & (d != 0) else 0
    need = k - m0
    bound = 0.0
    for p in range(1, q + 1):
        take = min(sizes[p], need)
        bound += take * p * dear
        need -= take
        if need == 0:
            break
    if need == 0 and bound < thr:
        thr_scan = bound
    else:
        thr_scan = thr
    # The rows whose mask could pass that bound, found in one branch-free pass: a mask costlier than it is
    # costlier than the final bound, so the outward scan below would drop it by the end (or skip it); the
    # kept ones are tested there exactly as before
    idx = np.empty(n, dtype=np.int64)
    m = 0
    top = q + 1 if thr_scan == np.inf else min(q + 1, np.int64((thr_scan + EPS) / cheap) + 1)
    for w in range(n):
        d = np.uint64(dall[w])
        idx[m] = w
        m += ((d & protected) == 0) & (popcount(d) <= top)
    # the kept rows beyond the near ones, outwards (at equal distance the row after u first), as before
    right = 0
    while right < m and idx[right] <= u + near:
        right += 1
    left = right - 1
    while left >= 0 and idx[left] >= u - near:
        left -= 1
    last = 0  # the distance of the row visited last: as there, a distance begun is finished once safe
    while right < m or left >= 0:
        if left < 0 or (right < m and idx[right] - u <= u - idx[left]):
            w = idx[right]
        else:
            w = idx[left]
        if m0 >= k and abs(w - u) != last:
            break
        if w > u:
            right += 1
        else:
            left -= 1
        last = abs(w - u)
        d = np.uint64(dall[w])
        if d & protected:
            continue
        if popcount(d) * cheap > thr + EPS:
            continue  # every position costs at least ``cheap`` (with a margin for rounding)
        c = 0.0
        x = d
        over = False
        while x:
            low = x & (~x + np.uint64(1))
            c += costs[popcount(low - np.uint64(1))]
            if c > thr + EPS:
                over = True
                break
            x ^= low
        if over:
            continue
        m0, nc, nb, thr = _add_candidate(d, c, mult[w], k, m0, cd, cc, cm, nc, buf, nb, cap, thr)
    if m0 >= k:
        return 0, m0, k - m0
    return _keep_within(nc, thr, cd, cc, cm), m0, k - m0


@numba.njit(cache=True)
def merge_masks(cd, cc, cm, nc):  # pragma: no cover - compiled
    """Sort candidates by mask and merge duplicates (summing multiplicities); returns the new count."""
    if nc == 0:
        return 0
    order = np.argsort(cd[:nc])
    d2 = cd[:nc][order].copy()
    c2 = cc[:nc][order].copy()
    m2 = cm[:nc][order].copy()
    j = 0
    for i in range(nc):
        if j > 0 and d2[i] == cd[j - 1]:
            cm[j - 1] += m2[i]
        else:
            cd[j] = d2[i]
            cc[j] = c2[i]
            cm[j] = m2[i]
            j += 1
    return j


@numba.njit(cache=True)
def _better(c, pc, mask, best_c, best_pc, best_mask):  # pragma: no cover - compiled
    """Deterministic order of solutions: cost, then number of cells, then mask value."""
    if c < best_c - EPS:
        return True
    if c > best_c + EPS:
        return False
    if pc != best_pc:
        return pc < best_pc
    return mask < best_mask


@numba.njit(cache=True)
def solve_single(cd, cc, nc):  # pragma: no cover - compiled
    """need = 1: the cheapest single mask (weighted nearest neighbour)."""
    best = -1
    for i in range(nc):
        if best < 0 or _better(cc[i], popcount(cd[i]), cd[i], cc[best], popcount(cd[best]), cd[best]):
            best = i
    return cd[best], cc[best]


@numba.njit(cache=True)
def _cost_high_to_low(mask, costs):  # pragma: no cover - compiled
    """Cost of ``mask`` summed from the highest position down, the order :func:`solve_sos` sums in (so
    both give the same floating-point value)."""
    total = 0.0
    v = 63
    while v >= 0:
        if mask & (np.uint64(1) << np.uint64(v)):
            total += costs[v]
        v -= 1
    return total


@numba.njit(cache=True)
def solve_pairs(cd, cc, cm, nc, costs):  # pragma: no cover - compiled
    """need = 2: the best union of one mask held by two records or of two masks, exactly.

    A cheapest T with two records agreeing is such a union (a larger T costs more), so this is
    :func:`solve_sos`'s optimum, with the same order among equal costs (:func:`_better`), found in
    about nc² / 2 steps instead of 2^L · L, and without the limit on L. Candidates are visited by
    cost, so a pair whose dearer mask already costs more than the best union is never formed.
    """
    order = np.argsort(cc[:nc], kind="mergesort")
    best_t = np.uint64(0)
    best_c = np.inf
    best_pc = 0
    found = False
    for a in range(nc):
        i = order[a]
        if found and cc[i] > best_c + EPS:
            break
        if cm[i] >= 2:
            c = _cost_high_to_low(cd[i], costs)
            pc = popcount(cd[i])
            if not found or _better(c, pc, cd[i], best_c, best_pc, best_t):
                best_t, best_c, best_pc, found = cd[i], c, pc, True
        for b in range(a + 1, nc):
            j = order[b]
            if found and cc[j] > best_c + EPS:
                break
            t = cd[i] | cd[j]
            c = _cost_high_to_low(t, costs)
            pc = popcount(t)
            if not found or _better(c, pc, t, best_c, best_pc, best_t):
                best_t, best_c, best_pc, found = t, c, pc, True
    return best_t, best_c


@numba.njit(cache=True)
def solve_sos(cd, cm, nc, need, costs):  # pragma: no cover - compiled
    """Exact by enumeration: count(T) for every T over the relevant positions (sum over subsets)."""
    union = np.uint64(0)
    for i in range(nc):
        union |= cd[i]
    L = popcount(union)
    pos = np.empty(L, dtype=np.int64)
    j = 0
    for v in range(64):
        if union & (np.uint64(1) << np.uint64(v)):
            pos[j] = v
            j += 1
    size = 1 << L
    g = np.zeros(size, dtype=np.int64)
    for i in range(nc):
        c = 0
        for b in range(L):
            if cd[i] & (np.uint64(1) << np.uint64(pos[b])):
                c |= 1 << b
        g[c] += cm[i]
    for b in range(L):
        bit = 1 << b
        for t in range(size):
            if t & bit:
                g[t] += g[t ^ bit]
    tc = np.zeros(size, dtype=np.float64)
    full = np.zeros(size, dtype=np.uint64)
    npc = np.zeros(size, dtype=np.int64)
    best_t = -1
    for t in range(1, size):
        low = t & (-t)
        b = 0
        while (1 << b) != low:
            b += 1
        prev = t ^ low
        tc[t] = tc[prev] + costs[pos[b]]
        full[t] = full[prev] | (np.uint64(1) << np.uint64(pos[b]))
        npc[t] = npc[prev] + 1
        if g[t] >= need and (best_t < 0 or _better(tc[t], npc[t], full[t], tc[best_t], npc[best_t], full[best_t])):
            best_t = t
    return full[best_t], tc[best_t]


@numba.njit(cache=True)
def _greedy_union(cd, cm, nc, need, costs):  # pragma: no cover - compiled
    """An incumbent: repeatedly add the mask with the cheapest residual until enough records agree."""
    t = np.uint64(0)
    while True:
        got = 0
        best = -1
        best_r = np.inf
        for i in range(nc):
            rest = cd[i] & ~t
            if rest == 0:
                got += cm[i]
            else:
                r = mask_cost(rest, costs)
                if r < best_r:
                    best_r = r
                    best = i
        if got >= need or best < 0:
            return t
        t |= cd[best]


@numba.njit(cache=True)
def solve_bnb(cd, cm, nc, need, costs, node_limit):  # pragma: no cover - compiled
    """Exact depth-first branch and bound on positions (include / forbid) for problem (N).

    Bound at a node (T chosen, F forbidden): cost(T) plus the smallest x such that the masks with
    residual cost(D \\ T) <= x (and D ∩ F = ∅) cover the missing records -- any completion must contain
    the residual of a mask at least that costly. Returns (mask, cost, lower bound, proven).
    """
    best_t = _greedy_union(cd, cm, nc, need, costs)
    best = mask_cost(best_t, costs)
    cap = 2 * 66
    sT = np.zeros(cap, dtype=np.uint64)
    sF = np.zeros(cap, dtype=np.uint64)
    sL = np.zeros(cap, dtype=np.float64)
    sp = 1
    sL[0] = -np.inf
    rr = np.empty(nc, dtype=np.float64)
    rm = np.empty(nc, dtype=np.int64)
    ri = np.empty(nc, dtype=np.int64)
    nodes = 0
    aborted = False
    while sp > 0:
        sp -= 1
        T = sT[sp]
        F = sF[sp]
        plb = sL[sp]
        if plb >= best - EPS:
            continue
        nodes += 1
        if nodes > node_limit:
            sp += 1
            aborted = True
            break
        cT = mask_cost(T, costs)
        if cT >= best - EPS:
            continue
        got = 0
        nr = 0
        total = 0
        for i in range(nc):
            rest = cd[i] & ~T
            if rest == 0:
                got += cm[i]
            elif cd[i] & F == 0:
                rr[nr] = mask_cost(rest, costs)
                rm[nr] = cm[i]
                ri[nr] = i
                total += cm[i]
                nr += 1
        if got >= need:
            best = cT
            best_t = T
            continue
        rem = need - got
        if total < rem:
            continue
        order = np.argsort(rr[:nr], kind="mergesort")
        cum = 0
        x = 0.0
        for o in order:
            cum += rm[o]
            if cum >= rem:
                x = rr[o]
                break
        lb = cT + x
        if lb >= best - EPS:
            continue
        # branch on the costliest open position of the mask with the cheapest residual
        rest = cd[ri[order[0]]] & ~T
        p = -1
        pc = -1.0
        for v in range(64):
            if rest & (np.uint64(1) << np.uint64(v)) and costs[v] > pc:
                pc = costs[v]
                p = v
        bit = np.uint64(1) << np.uint64(p)
        sT[sp] = T
        sF[sp] = F | bit
        sL[sp] = lb
        sp += 1
        sT[sp] = T | bit
        sF[sp] = F
        sL[sp] = lb
        sp += 1
    lower = best
    if aborted:
        for i in range(sp):
            if sL[i] < lower:
                lower = sL[i]
        lower = max(lower, 0.0)
    return best_t, best, lower, not aborted


@numba.njit(cache=True)
def solve_combos(cd, cm, nc, need, costs, best_t, best, node_limit):  # pragma: no cover - compiled
    """Exact search over *sets of masks* for problem (N), the second exact method.

    An optimal T is the union of the masks it covers, so it suffices to choose masks (each bringing its
    records) until ``need`` records agree, minimising the cost of their union. Masks are tried cheapest
    first in combination order; a branch stops when its union already costs as much as the incumbent,
    and the scan of a level stops at the first mask that alone costs that much. Cheap when ``need`` is
    small (k <= 5 for a unique record) even where the position-wise search above runs out of nodes
    (many positions, masks of similar cost). Returns (mask, cost, proven).
    """
    cc = np.empty(nc, dtype=np.float64)
    for i in range(nc):
        cc[i] = mask_cost(cd[i], costs)
    order = np.argsort(cc, kind="mergesort")
    depth_cap = need + 1
    pos = np.zeros(depth_cap, dtype=np.int64)
    uni = np.zeros(depth_cap, dtype=np.uint64)
    got = np.zeros(depth_cap, dtype=np.int64)
    d = 0
    nodes = 0
    while d >= 0:
        i = pos[d]
        if i >= nc or cc[order[i]] >= best - EPS:
            d -= 1
            continue
        pos[d] = i + 1
        nodes += 1
        if nodes > node_limit:
            return best_t, best, False
        o = order[i]
        u2 = uni[d] | cd[o]
        c2 = mask_cost(u2, costs)
        if c2 >= best - EPS:
            continue
        g2 = got[d] + cm[o]
        if g2 >= need:
            best = c2
            best_t = u2
            continue
        if d + 1 < depth_cap:
            d += 1
            pos[d] = i + 1
            uni[d] = u2
            got[d] = g2
    return best_t, best, True


def code_columns(uniq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``uniq``'s columns, column-major, in int16 when the codes fit, and the bit of each position in
    uint32 up to 32 QIs (twice as many per vector as int32 and uint64)."""
    q = uniq.shape[1]
    small = uniq.size == 0 or int(uniq.max()) < np.iinfo(np.int16).max
    cols = np.ascontiguousarray(uniq.T, dtype=np.int16 if small else np.int32)
    bitvals = (np.uint64(1) << np.arange(max(q, 1), dtype=np.uint64)).astype(np.uint32 if q <= 32 else np.uint64)
    return cols, bitvals


@numba.njit(cache=True, parallel=True)
def solve_rows(uniq, mult, costs, protected, k, lo, hi, node_limit, out_mask, out_cost, out_lower, out_status,
               cols, bitvals):  # pragma: no cover - compiled
    """Solve problem (N) for the collapsed rows lo..hi-1 (independent, so in parallel).

    ``cols``, ``bitvals``: :func:`code_columns` of ``uniq`` (for the vectorised scan)."""
    n = uniq.shape[0]
    for u in numba.prange(lo, hi):
        cd = np.empty(n, dtype=np.uint64)
        cc = np.empty(n, dtype=np.float64)
        cm = np.empty(n, dtype=np.int64)
        dall = np.empty(n, dtype=bitvals.dtype)
        nc, m0, need = scan_row_fast(u, uniq, cols, mult, costs, protected, k, cd, cc, cm, dall, bitvals)
        out_mask[u] = 0
        out_cost[u] = 0.0
        out_lower[u] = 0.0
        if need <= 0:
            out_status[u] = SAFE
            continue
        nc = merge_masks(cd, cc, cm, nc)
        total = 0
        for i in range(nc):
            total += cm[i]
        if total < need:
            out_status[u] = INFEASIBLE
            continue
        if need == 1:
            t, c = solve_single(cd, cc, nc)
            out_mask[u] = t
            out_cost[u] = c
            out_lower[u] = c
            out_status[u] = EXACT
            continue
        if need == 2:
            t, c = solve_pairs(cd, cc, cm, nc, costs)
            out_mask[u] = t
            out_cost[u] = c
            out_lower[u] = c
            out_status[u] = EXACT
            continue
        union = np.uint64(0)
        for i in range(nc):
            union |= cd[i]
        if popcount(union) <= SOS_MAX_BITS:
            t, c = solve_sos(cd, cm, nc, need, costs)
            out_mask[u] = t
            out_cost[u] = c
            out_lower[u] = c
            out_status[u] = EXACT
            continue
        t, c, lb, proven = solve_bnb(cd, cm, nc, need, costs, node_limit)
        if not proven:
            t, c, proven = solve_combos(cd, cm, nc, need, costs, t, c, 20 * node_limit)
            if proven:
                lb = c
        out_mask[u] = t
        out_cost[u] = c
        out_lower[u] = lb
        out_status[u] = EXACT if proven else HARD


def row_candidates(uniq: np.ndarray, mult: np.ndarray, costs: np.ndarray, protected: int, k: int, u: int):
    """The merged candidate masks of one row and its need, for the batched integer programme."""
    n = uniq.shape[0]
    cd = np.empty(n, dtype=np.uint64)
    cc = np.empty(n, dtype=np.float64)
    cm = np.empty(n, dtype=np.int64)
    nc, _m0, need = scan_row(u, uniq, mult, costs, np.uint64(protected), k, cd, cc, cm)
    nc = merge_masks(cd, cc, cm, nc)
    return cd[:nc].copy(), cm[:nc].copy(), int(need)
