"""The integer programme over candidate classes (HiGHS in-process, through highspy).

Variables, for the pairs left after pruning (:mod:`.candidates`):

* x[u, c] in 0..mult_u: copies of unsafe row u released in class c = (pattern P, values off P);
* d[v, c] in 0..mult_v: copies of a *safe* row v (input class >= k) moved into class c as donors;
* y[c] binary: class c is used; w[v] binary: safe row v gives up all its copies.

    minimise   Σ c_u(P)·x[u, c] + Σ c_v(P)·d[v, c]      (c_u(P): the cost of u's cells on P)
    subject to Σ_c x[u, c] = mult_u                       every unsafe copy moves (its class is < k)
               Σ_u x[u, c] + Σ_v d[v, c] >= k·y[c]        a used class has k records
               x[u, c] <= mult_u·y[c],  d[v, c] <= mult_v·y[c]
               m_v - k + k·w[v] >= Σ_c d[v, c] >= mult_v·w[v]   what stays of v is 0 or >= k

Records that stay unsuppressed keep their input class, so only classes holding moved records need a
constraint. Limits are counted in branch-and-bound nodes, so a result does not depend on the machine's
speed; HiGHS runs single-threaded and is deterministic for the same model. A node limit does not bound the
time, though: on 200 records of Adult (8 QIs, k = 5, category semantics) the root alone of a programme of
16,500 variables took 22 s, and 600 records gave one of 69,000 that had not finished after five minutes.
Each programme therefore also has a time limit (``seconds``); a programme stopped by it gives *nothing*
(no solution and no bound: :attr:`MipOutcome.timed_out`), so the caller keeps what it had before the
programme, the same on every run and machine, rather than a partial result that would depend on where the
clock stopped it. Only a programme finishing close to its limit can end on one machine and not another.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse

from .candidates import Pairs, class_members


@dataclass(frozen=True)
class Assignment:
    """Copies of distinct rows released under a pattern: (row, pattern mask, copies)."""

    row: np.ndarray
    pattern: np.ndarray
    copies: np.ndarray


@dataclass(frozen=True)
class MipOutcome:
    assignment: Assignment | None
    objective: float
    dual_bound: float
    proven: bool
    n_variables: int
    n_constraints: int
    nodes: int
    timed_out: bool = False


def solve_classes(uniq: np.ndarray, able_cells: np.ndarray, cell_costs: np.ndarray, mult: np.ndarray,
                  unsafe: np.ndarray, patterns: list[int], pairs: Pairs, k: int, node_limit: int,
                  max_variables: int | None = None, seconds: float | None = None) -> MipOutcome:
    """Build and solve the class programme over ``pairs``; None assignment when no solution was found.

    With ``max_variables``, a programme with more variables is not solved (``nodes`` = -1): its root
    alone can take minutes, and the caller keeps its heuristic solution and reports the gap. With
    ``seconds``, a programme still running after that long stops and gives nothing (``timed_out``; see the
    module docstring).
    """
    # classes: one per (pattern, group) among the pairs
    cls_key = pairs.pattern * (int(pairs.group.max()) + 2 if len(pairs) else 1) + pairs.group
    cls_ids, x_cls = np.unique(cls_key, return_inverse=True)
    x_cls = x_cls.reshape(-1)
    n_cls = len(cls_ids)
    cls_pattern = np.zeros(n_cls, dtype=np.int64)
    cls_group = np.zeros(n_cls, dtype=np.int64)
    cls_pattern[x_cls] = pairs.pattern
    cls_group[x_cls] = pairs.group
    safe_rows = np.flatnonzero(~unsafe)
    d_row, d_cls = [], []
    for p_idx in np.unique(cls_pattern).tolist():
        these = np.flatnonzero(cls_pattern == p_idx)
        _, safe_group = class_members(uniq, able_cells, patterns[p_idx], safe_rows)
        lookup = {int(g): int(c) for g, c in zip(cls_group[these].tolist(), these.tolist(), strict=True)}
        for v, g in zip(safe_rows.tolist(), safe_group.tolist(), strict=True):
            c = lookup.get(g)
            if c is not None and g >= 0:
                d_row.append(v)
                d_cls.append(c)
    d_row_a = np.asarray(d_row, dtype=np.int64)
    d_cls_a = np.asarray(d_cls, dtype=np.int64)
    donors, d_donor = np.unique(d_row_a, return_inverse=True)
    d_donor = d_donor.reshape(-1)
    nx, nd, ny, nw = len(pairs), len(d_row_a), n_cls, len(donors)
    ox, od, oy, ow = 0, nx, nx + nd, nx + nd + ny
    n_var = nx + nd + ny + nw
    if max_variables is not None and n_var > max_variables:
        return MipOutcome(None, float("inf"), -float("inf"), False, n_var, 0, -1)
    q = uniq.shape[1]
    pat_bits = np.array([[(m >> v) & 1 for v in range(q)] for m in patterns], dtype=np.float64).reshape(-1, q)
    x_cost = (cell_costs[pairs.row] * pat_bits[pairs.pattern]).sum(axis=1)
    d_cost = (cell_costs[d_row_a] * pat_bits[cls_pattern[d_cls_a]]).sum(axis=1) if nd else np.zeros(0)
    col_cost = np.concatenate([x_cost, d_cost, np.zeros(ny + nw)])
    upper = np.concatenate([mult[pairs.row], mult[d_row_a], np.ones(ny + nw)]).astype(np.float64)

    rows_i, cols_j, vals = [], [], []
    lo, hi = [], []
    r = 0
    # every unsafe copy moves
    u_rows, u_pos = np.unique(pairs.row, return_inverse=True)
    rows_i.append(r + u_pos.reshape(-1))
    cols_j.append(ox + np.arange(nx))
    vals.append(np.ones(nx))
    lo.append(mult[u_rows].astype(float))
    hi.append(mult[u_rows].astype(float))
    r += len(u_rows)
    # class size >= k when used
    rows_i += [r + x_cls, r + d_cls_a, r + np.arange(ny)]
    cols_j += [ox + np.arange(nx), od + np.arange(nd), oy + np.arange(ny)]
    vals += [np.ones(nx), np.ones(nd), np.full(ny, -float(k))]
    lo.append(np.zeros(ny))
    hi.append(np.full(ny, np.inf))
    r += ny
    # linking: x <= mult y, d <= mult y
    rows_i += [r + np.arange(nx), r + np.arange(nx)]
    cols_j += [ox + np.arange(nx), oy + x_cls]
    vals += [np.ones(nx), -mult[pairs.row].astype(float)]
    lo.append(np.full(nx, -np.inf))
    hi.append(np.zeros(nx))
    r += nx
    rows_i += [r + np.arange(nd), r + np.arange(nd)]
    cols_j += [od + np.arange(nd), oy + d_cls_a]
    vals += [np.ones(nd), -mult[d_row_a].astype(float)]
    lo.append(np.full(nd, -np.inf))
    hi.append(np.zeros(nd))
    r += nd
    # donors: what stays is 0 or >= k
    mv = mult[donors].astype(float)
    rows_i += [r + d_donor, r + np.arange(nw)]
    cols_j += [od + np.arange(nd), ow + np.arange(nw)]
    vals += [np.ones(nd), -float(k) * np.ones(nw)]
    lo.append(np.full(nw, -np.inf))
    hi.append(mv - k)
    r += nw
    rows_i += [r + d_donor, r + np.arange(nw)]
    cols_j += [od + np.arange(nd), ow + np.arange(nw)]
    vals += [np.ones(nd), -mv]
    lo.append(np.zeros(nw))
    hi.append(np.full(nw, np.inf))
    r += nw

    A = sparse.csc_matrix((np.concatenate(vals), (np.concatenate(rows_i), np.concatenate(cols_j))),
                          shape=(r, n_var))
    A.sort_indices()
    lp = highspy.HighsLp()
    lp.num_col_ = n_var
    lp.num_row_ = r
    lp.col_cost_ = col_cost
    lp.col_lower_ = np.zeros(n_var)
    lp.col_upper_ = upper
    inf = highspy.kHighsInf
    lp.row_lower_ = np.where(np.isinf(np.concatenate(lo)), -inf, np.concatenate(lo))
    lp.row_upper_ = np.where(np.isinf(np.concatenate(hi)), inf, np.concatenate(hi))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n_var
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-6)
    h.setOptionValue("mip_max_nodes", int(node_limit))
    if seconds is not None:
        h.setOptionValue("time_limit", float(seconds))
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    nodes = int(getattr(info, "mip_node_count", 0))
    if h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:  # nothing kept: see the module docstring
        return MipOutcome(None, float("inf"), float("-inf"), False, n_var, r, nodes, timed_out=True)
    if status == "Infeasible":  # no release cheaper than the bound the pairs were pruned with
        return MipOutcome(None, float("inf"), float("inf"), True, n_var, r, nodes)
    if info.primal_solution_status != 2:  # no feasible solution found within the node limit
        return MipOutcome(None, float("inf"), float(info.mip_dual_bound), False, n_var, r, nodes)
    val = np.rint(np.asarray(h.getSolution().col_value)).astype(np.int64)
    xs, ds = val[ox: ox + nx], val[od: od + nd]
    sel_x, sel_d = np.flatnonzero(xs > 0), np.flatnonzero(ds > 0)
    pat_masks = np.asarray(patterns, dtype=np.int64)
    assignment = Assignment(
        row=np.concatenate([pairs.row[sel_x], d_row_a[sel_d]]),
        pattern=np.concatenate([pat_masks[pairs.pattern[sel_x]], pat_masks[cls_pattern[d_cls_a[sel_d]]]]),
        copies=np.concatenate([xs[sel_x], ds[sel_d]]))
    objective = float((col_cost * val).sum())
    proven = status == "Optimal"
    dual = objective if proven else float(info.mip_dual_bound)
    return MipOutcome(assignment, objective, dual, proven, n_var, r, nodes)
