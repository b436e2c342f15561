"""Record-wise optimal suppression from MINUCs (Wilson et al., RTI): a min-cost hitting set per record.

Wilson et al. (RTI, section 3.3) makes a record safe by suppressing, at least, one value of each of its minimal
unsafe combinations, and minimises the suppressions by a binary integer programme per record. Here:

* records whose MINUC families are identical (after dropping protected positions) are solved once;
* every family is solved exactly by a compiled depth-first branch and bound (include / forbid a
  position; bound = cost so far + a packing of pairwise-disjoint unhit MINUCs, each needing its own
  cheapest position); the few families exceeding the node budget go to one batched integer programme;
* when the MINUC list is incomplete (found up to ``max_size`` only, because enumerating all of them
  would cost too much) the missing constraints are generated lazily: the retained values of each record
  are counted in the input, and an unsafe retained set is shrunk, one position at a time, to a minimal
  unsafe subset -- a MINUC the solution failed to hit -- which is added before solving again. The loop
  ends when every retained set is safe, so the result is optimal for the complete family even though
  most MINUCs were never enumerated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import InfeasibleError
from ..progress import Progress, report
from ..threads import run_parallel
from .suppress_bits import mask_cost, popcount
from .suppress_direct import EPS, EXACT, HARD, INFEASIBLE, SAFE, RowSolutions
from .suppress_ilp import Block

NODE_LIMIT = 200_000


@numba.njit(cache=True)
def _greedy_hitting(masks, costs):  # pragma: no cover - compiled
    t = np.uint64(0)
    q = costs.shape[0]
    while True:
        cnt = np.zeros(q, dtype=np.float64)
        any_unhit = False
        for m in masks:
            if m & t == 0:
                any_unhit = True
                for v in range(q):
                    if m & (np.uint64(1) << np.uint64(v)):
                        cnt[v] += 1.0
        if not any_unhit:
            return t
        best = -1
        best_s = -1.0
        for v in range(q):
            if cnt[v] > 0 and cnt[v] / costs[v] > best_s:
                best_s = cnt[v] / costs[v]
                best = v
        t |= np.uint64(1) << np.uint64(best)


@numba.njit(cache=True)
def hitting_bnb(masks, costs, node_limit):  # pragma: no cover - compiled
    """Exact min-cost hitting set of ``masks`` (sorted by size) -> (mask, cost, lower bound, proven)."""
    q = costs.shape[0]
    best_t = _greedy_hitting(masks, costs)
    best = mask_cost(best_t, costs)
    cap = 2 * 66
    sT = np.zeros(cap, dtype=np.uint64)
    sF = np.zeros(cap, dtype=np.uint64)
    sL = np.zeros(cap, dtype=np.float64)
    sL[0] = -np.inf
    sp = 1
    nodes = 0
    aborted = False
    while sp > 0:
        sp -= 1
        T = sT[sp]
        F = sF[sp]
        if sL[sp] >= best - EPS:
            continue
        nodes += 1
        if nodes > node_limit:
            sp += 1
            aborted = True
            break
        cT = mask_cost(T, costs)
        if cT >= best - EPS:
            continue
        dead = False
        used = np.uint64(0)
        pack = 0.0
        pick = np.uint64(0)
        pick_n = 99
        n_unhit = 0
        for m in masks:
            if m & T:
                continue
            n_unhit += 1
            free = m & ~F
            if free == 0:
                dead = True
                break
            pc = popcount(free)
            if pc < pick_n:
                pick_n = pc
                pick = free
            if free & used == 0:
                used |= free
                mc = np.inf
                for v in range(q):
                    if free & (np.uint64(1) << np.uint64(v)) and costs[v] < mc:
                        mc = costs[v]
                pack += mc
        if dead:
            continue
        if n_unhit == 0:
            best = cT
            best_t = T
            continue
        lb = cT + pack
        if lb >= best - EPS:
            continue
        p = -1
        pc_ = np.inf
        for v in range(q):
            if pick & (np.uint64(1) << np.uint64(v)) and costs[v] < pc_:
                pc_ = costs[v]
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


@numba.njit(cache=True, parallel=True)
def solve_families(flat, offsets, costs, node_limit, out_mask, out_cost, out_lower, out_proven):
    """Solve every family ``flat[offsets[f]:offsets[f+1]]`` (independent, so in parallel)."""
    for f in numba.prange(offsets.shape[0] - 1):
        t, c, lb, proven = hitting_bnb(flat[offsets[f]:offsets[f + 1]], costs, node_limit)
        out_mask[f] = t
        out_cost[f] = c
        out_lower[f] = lb
        out_proven[f] = proven


@numba.njit(cache=True)
def _agree_count(codes, i, retained, k):  # pragma: no cover - compiled
    """Records agreeing with record i on every position of ``retained`` (stops counting at k)."""
    n, q = codes.shape
    cnt = 0
    for j in range(n):
        ok = True
        for v in range(q):
            if retained & (np.uint64(1) << np.uint64(v)):
                y = codes[j, v]
                if y >= 0 and y != codes[i, v]:
                    ok = False
                    break
        if ok:
            cnt += 1
            if cnt >= k:
                return cnt
    return cnt


@numba.njit(cache=True, parallel=True)
def find_cuts(codes, records, retained, k, out_cut):
    """For each record with an unsafe retained set, a MINUC inside it (0 when the set is safe).

    The retained set is shrunk position by position, keeping it unsafe: the result is a minimal unsafe
    set, i.e. a MINUC of the record that the current suppression does not hit.
    """
    q = codes.shape[1]
    for t in numba.prange(records.shape[0]):
        i = records[t]
        s = retained[t]
        if _agree_count(codes, i, s, k) >= k:
            out_cut[t] = 0
            continue
        for v in range(q - 1, -1, -1):
            bit = np.uint64(1) << np.uint64(v)
            if s & bit and _agree_count(codes, i, s & ~bit, k) < k:
                s &= ~bit
        out_cut[t] = s


@dataclass
class HittingStats:
    n_families: int = 0
    n_hard: int = 0
    lazy_rounds: int = 0
    lazy_cuts: int = 0
    extra_lower: float = 0.0  # what the batched programme adds to the summed per-family bounds


def _canonical(masks: np.ndarray) -> np.ndarray:
    """Unique masks sorted by size then value: a canonical family and a good B&B order."""
    u = np.unique(masks)
    pc = np.array([int(x).bit_count() for x in u.tolist()], dtype=np.int64)
    return u[np.lexsort((u, pc))]


def solve_hitting(
    codes: np.ndarray,
    record_masks: dict[int, np.ndarray],
    unsafe: np.ndarray,
    costs: np.ndarray,
    protected: int,
    k: int,
    complete: bool,
    node_limit: int = NODE_LIMIT,
    batch_solver=None,
    progress: Progress | None = None,
) -> tuple[RowSolutions, HittingStats]:
    """Per-record hitting sets for the records in ``unsafe`` (indices); others are safe.

    ``record_masks[i]`` are the known MINUCs of record i (bitmasks). ``complete`` says whether they are
    all of them; if not, missing ones are generated lazily (see module docstring).
    ``batch_solver(blocks) -> BatchResult`` solves, in one model, the families the B&B gave up on.
    """
    n = codes.shape[0]
    free_all = ~np.uint64(protected)
    out = RowSolutions(np.zeros(n, np.uint64), np.zeros(n), np.zeros(n), np.full(n, SAFE, np.int8))
    stats = HittingStats()
    fams: dict[int, np.ndarray] = {}
    infeasible: list[int] = []
    for i in unsafe.tolist():
        m = record_masks.get(i, np.zeros(0, np.uint64)) & free_all
        if (m == 0).any():
            infeasible.append(i)
            continue
        fams[i] = _canonical(m)
    if infeasible:
        _raise_protected(len(infeasible), k)
    todo = np.array(sorted(fams), dtype=np.int64)
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    observed = (codes >= 0)
    obs_masks = (observed.astype(np.uint64) << np.arange(codes.shape[1], dtype=np.uint64)).sum(
        axis=1, dtype=np.uint64)
    while len(todo):
        _solve_round(todo, fams, costs, node_limit, batch_solver, out, stats)
        if complete:
            break
        stats.lazy_rounds += 1
        report(progress, min(0.9, 0.2 + 0.1 * stats.lazy_rounds), f"Lazy MINUC generation, round {stats.lazy_rounds}")
        retained = obs_masks[todo] & ~out.masks[todo]
        cuts = np.zeros(len(todo), dtype=np.uint64)
        run_parallel(find_cuts, codes, todo, retained, k, cuts)
        bad = cuts != 0
        free_cuts = cuts & free_all
        if (bad & (free_cuts == 0)).any():
            _raise_protected(int((bad & (free_cuts == 0)).sum()), k)
        for i, c in zip(todo[bad].tolist(), free_cuts[bad].tolist(), strict=True):
            fams[i] = _canonical(np.append(fams[i], np.uint64(c)))
        stats.lazy_cuts += int(bad.sum())
        todo = todo[bad]
    if stats.lazy_rounds:
        # a batched bound mixes records that later rounds re-solved: keep only per-family bounds (valid)
        stats.extra_lower = 0.0
    return out, stats


def _solve_round(todo, fams, costs, node_limit, batch_solver, out: RowSolutions, stats: HittingStats) -> None:
    keys: dict[bytes, int] = {}
    fam_of = np.empty(len(todo), dtype=np.int64)
    uniq: list[np.ndarray] = []
    for t, i in enumerate(todo.tolist()):
        key = fams[i].tobytes()
        f = keys.get(key)
        if f is None:
            f = keys[key] = len(uniq)
            uniq.append(fams[i])
        fam_of[t] = f
    stats.n_families += len(uniq)
    offsets = np.zeros(len(uniq) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(f) for f in uniq])
    flat = np.concatenate(uniq) if uniq else np.zeros(0, np.uint64)
    fm = np.zeros(len(uniq), np.uint64)
    fc = np.zeros(len(uniq))
    fl = np.zeros(len(uniq))
    fp = np.zeros(len(uniq), np.bool_)
    run_parallel(solve_families, flat, offsets, costs, node_limit, fm, fc, fl, fp)
    hard = np.flatnonzero(~fp)
    if len(hard):
        stats.n_hard += len(hard)
        if batch_solver is not None:
            weight = np.bincount(fam_of, minlength=len(uniq))
            blocks = [Block("cover", uniq[f], int(fm[f]), float(fl[f]), weight=int(weight[f])) for f in hard.tolist()]
            res = batch_solver(blocks)
            before = float(sum(b.weight * b.lower for b in blocks))
            for f, m, c in zip(hard.tolist(), res.masks, res.costs, strict=True):
                fm[f], fc[f] = m, c
                if res.proven:
                    fl[f], fp[f] = c, True
            if not res.proven:
                stats.extra_lower += max(0.0, res.lower - before)
    out.masks[todo] = fm[fam_of]
    out.cost[todo] = fc[fam_of]
    out.lower[todo] = fl[fam_of]
    out.status[todo] = np.where(fp[fam_of], EXACT, HARD)


def _raise_protected(n_bad: int, k: int) -> None:
    raise InfeasibleError(
        f"{n_bad} record(s) cannot reach k={k}: their values on the protected variables alone occur "
        f"fewer than {k} times. Unprotect a variable (or recode it) to make suppression possible."
    )


__all__ = ["solve_hitting", "HittingStats", "hitting_bnb", "INFEASIBLE"]
