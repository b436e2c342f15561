"""Integer programmes for the instances both compiled exact searches gave up on.

These are rare (none on survey-like data at the default node limits): each becomes a small model of its
own (see :func:`solve_blocks` for why apart, not together), solved by HiGHS in-process through highspy
(default) or CBC (bundled with pulp). Two block types, one per record-wise formulation:

* ``cover`` (Wilson et al.): binary t_v per position, Σ_{v∈M} t_v ≥ 1 for every MINUC M;
* ``union`` (neighbour formulation, :mod:`suppress_direct`): binary t_v, and z_D ∈ [0, 1] per
  disagreement mask D with z_D ≤ t_v (v ∈ D) and Σ m_D z_D ≥ need. z_D may stay continuous: it can be
  positive only when every t_v of D is 1.

A time limit returns the best solution (never worse than the incumbent from the compiled search, which
also warm-starts CBC) and a lower bound: HiGHS's dual bound, or the compiled search's bounds for CBC,
which does not report its own through pulp.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pulp

from ..errors import InputError

SOLVERS = ("cbc", "highs")


@dataclass(frozen=True)
class Block:
    """One hard instance: ``kind`` 'cover' (masks = MINUCs) or 'union' (masks, mult, need)."""

    kind: str
    masks: np.ndarray
    incumbent: int
    lower: float
    mult: np.ndarray | None = None
    need: int = 1
    weight: int = 1  # records sharing this instance: the objective counts each of them


@dataclass(frozen=True)
class BatchResult:
    """Per block mask and cost; ``lower`` bounds the weighted total; ``proven`` = all blocks optimal."""

    masks: list[int]
    costs: list[float]
    lower: float
    proven: bool


def _bits(mask: int) -> list[int]:
    return [v for v in range(64) if (mask >> v) & 1]


def solve_blocks(blocks: list[Block], costs: np.ndarray, solver: str = "highs",
                 time_limit: float | None = None) -> BatchResult:
    """Solve the hard blocks one model each; per block the better of the solver's and the incumbent.

    Independent blocks in one model make the solver's branch and bound interleave them, which is far
    slower than solving them apart (measured: 30 blocks of 16 positions, one model: no proof in 60 s with
    either solver; apart: 0.15-0.4 s each with HiGHS in-process, about 1 s each with CBC, a subprocess).
    Blocks only reach this point after both compiled exact searches ran out of nodes, which does not
    happen on survey-like data at the default limits, so the per-block cost is paid rarely. The time
    limit is shared by all blocks.
    """
    if solver not in SOLVERS:
        raise InputError(f"Solver must be one of {', '.join(SOLVERS)}, not '{solver}'.")
    if not blocks:
        return BatchResult([], [], 0.0, True)
    import time

    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    parts = []
    for blk in blocks:
        left = None if deadline is None else max(0.05, deadline - time.monotonic())
        parts.append(_solve_model([blk], costs, solver, left))
    total = float(sum(b.weight * p.costs[0] for b, p in zip(blocks, parts, strict=True)))
    lower = float(sum(p.lower for p in parts))
    return BatchResult([p.masks[0] for p in parts], [p.costs[0] for p in parts], min(lower, total),
                       all(p.proven for p in parts))


def _solve_model(blocks: list[Block], costs: np.ndarray, solver: str, time_limit: float | None) -> BatchResult:
    """One pulp model holding the given blocks."""
    prob = pulp.LpProblem("local_suppression", pulp.LpMinimize)
    tvars: list[dict[int, pulp.LpVariable]] = []
    objective = []
    for b, blk in enumerate(blocks):
        union = 0
        for m in blk.masks.tolist():
            union |= int(m)
        tv = {v: pulp.LpVariable(f"t_{b}_{v}", cat="Binary") for v in _bits(union)}
        tvars.append(tv)
        objective += [blk.weight * float(costs[v]) * x for v, x in tv.items()]
        for v, x in tv.items():
            x.setInitialValue(1 if (blk.incumbent >> v) & 1 else 0)
        if blk.kind == "cover":
            for c, m in enumerate(blk.masks.tolist()):
                prob += pulp.lpSum(tv[v] for v in _bits(int(m))) >= 1, f"hit_{b}_{c}"
        else:
            zs = []
            for c, (m, mult) in enumerate(zip(blk.masks.tolist(), blk.mult.tolist(), strict=True)):
                z = pulp.LpVariable(f"z_{b}_{c}", lowBound=0, upBound=1)
                for v in _bits(int(m)):
                    prob += z <= tv[v], f"link_{b}_{c}_{v}"
                zs.append(int(mult) * z)
            prob += pulp.lpSum(zs) >= blk.need, f"need_{b}"
    prob += pulp.lpSum(objective)
    if solver == "highs":
        engine = pulp.HiGHS(msg=False, timeLimit=time_limit)
    else:
        engine = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, warmStart=True)
    prob.solve(engine)
    proven = pulp.LpStatus[prob.status] == "Optimal" and prob.sol_status == pulp.LpSolutionOptimal
    have_solution = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    masks: list[int] = []
    out_costs: list[float] = []
    for blk, tv in zip(blocks, tvars, strict=True):
        inc_cost = float(sum(costs[v] for v in _bits(blk.incumbent)))
        m = 0
        if have_solution:
            for v, x in tv.items():
                if (x.value() or 0) > 0.5:
                    m |= 1 << v
        c = float(sum(costs[v] for v in _bits(m)))
        if not have_solution or not _feasible(blk, m) or c > inc_cost:
            m, c = blk.incumbent, inc_cost
        masks.append(m)
        out_costs.append(c)
    total = float(sum(b.weight * c for b, c in zip(blocks, out_costs, strict=True)))
    if proven:
        lower = total
    else:
        lower = float(sum(b.weight * b.lower for b in blocks))
        if solver == "highs":
            try:
                bound = float(prob.solverModel.getInfo().mip_dual_bound)
                if np.isfinite(bound):
                    lower = max(lower, bound)
            except AttributeError:  # pragma: no cover - depends on the highspy version
                pass
        lower = min(lower, total)
    return BatchResult(masks, out_costs, lower, proven or lower >= total - 1e-9)


def _feasible(blk: Block, m: int) -> bool:
    """Re-check a solver answer against the block itself (numerical tolerances must not leak out)."""
    if blk.kind == "cover":
        return all(int(x) & m for x in blk.masks.tolist())
    got = sum(int(c) for x, c in zip(blk.masks.tolist(), blk.mult.tolist(), strict=True) if int(x) & ~m == 0)
    return got >= blk.need
