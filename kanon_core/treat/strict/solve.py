"""Strict local suppression: every released class (same visible values, same suppressed QIs) has k records.

The model (issue: protection of people, not of a count). A suppressed cell is a value of its own, as in
classic k-anonymity with suppression (Samarati 2001; Sweeney 2002). A released record can only be
confused with records released with the same QIs suppressed and the same values elsewhere, so no person
can be narrowed down to fewer than k released records, and blanked records protect nobody but each
other. Cells missing in the input stay missing (they are not "suppressed"); with ``category`` semantics
missing is a value, with ``wildcard`` semantics it matches anything.

The method is exact for files whose QIs are complete, or under ``category`` semantics:

1. distinct rows with their multiplicities; *unsafe* rows are those whose input class is below k;
2. candidate classes per unsafe row and the charge bound LB (:mod:`.candidates`);
3. an upper bound UB: the greedy classes of :mod:`kanon_core.treat.suppress_category`, improved by the
   class programme restricted to each row's cheapest candidates when that programme is small enough;
4. pruning with LB and UB until nothing changes (each row's bound rises to its cheapest surviving
   candidate), listing larger patterns when the budget allows them;
5. the class programme over the survivors (:mod:`.mip`), whose optimum, or UB, is the optimum.

``lower_bound`` is max(LB, min(UB, the programme's dual bound)) and the result is ``optimal`` only when
it equals the cost. Steps 2-5 see only distinct rows and their multiplicities (:func:`_search`), so the
same search serves records in memory (:func:`solve_strict`, a mask over the records) and a class table
out of core (:func:`solve_strict_classes`, copies of each class per pattern; its greedy bound is built
on a reduced copy file, valid for the full file as proven there). Under ``wildcard`` semantics with missing input cells, records with missing values
may also match records with other values, so the search above (missing treated as a value) gives a valid
release but not necessarily the cheapest; the bound is then the record-wise bound of Wilson et al.
(RTI), which holds for this model too (every record's class is consistent with k input records), and
the gap is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...errors import InfeasibleError
from ...progress import Progress, report
from ...risk.keys import unique_rows
from ..suppress_category import category_suppress
from .candidates import (
    FULL_ENUMERATION_MAX,
    PATTERN_LIMIT,
    SMALL_PATTERN_SIZE,
    Pairs,
    cheapest_outside,
    evaluate,
    patterns_below,
    row_minimum,
    small_patterns,
)
from .mip import Assignment, MipOutcome, solve_classes

EPS = 1e-9
FIRST_CANDIDATES = 6
"""Candidates per unsafe row in the programme that gives the first upper bound."""
FIRST_NODE_LIMIT = 2_000
FIRST_MAX_FREE = 6
"""The restricted first programme is tried with at most this many free QIs: there its root solves in
seconds and improves the greedy classes (EU-SILC, 6 QIs, k = 2: 4,642 -> 4,292 cells); with more QIs it
took 14 s (ELS-like sample, 8 QIs, k = 3) to a minute (11,204 records x 10 QIs) without improving them."""
FIRST_MAX_VARIABLES = 80_000
MIP_MAX_VARIABLES = 80_000
"""Programmes with more variables are not attempted (HiGHS's root alone can take minutes on them); the
best solution found so far is returned with its proven gap."""
MIP_SECONDS = 20.0
"""Time limit of each programme (the first one and the full one). A programme still running then gives
nothing and the solution found before it is kept, with its gap (:mod:`.mip`): every run on every machine
gives the same release unless a programme ends within a moment of its limit."""


BOUND_CLASSES = "the charge bound and the class programme"
BOUND_RECORDS_BELOW_K = ("every record below k loses at least one value: the records below k times the cheapest "
                         "value")
BOUND_RECORD_WISE = "Wilson et al.'s record-wise optimum, which the strict optimum cannot be below"
"""How a strict suppression's lower bound was proven (the statistics' ``bound``, shown with its gap)."""
UNPROVEN_WILDCARD = ("values missing in the file are read as wildcards, where the class programme, which reads "
                     "them as values, would not give a valid bound, so it is not run")


@dataclass(frozen=True)
class StrictSolution:
    """Suppressed cells (mask over the input's cells), their cost, a lower bound and the proof flag."""

    mask: np.ndarray
    cost: float
    lower_bound: float
    optimal: bool
    stats: dict[str, Any] = field(default_factory=dict)


def missing_as_value(codes: np.ndarray) -> np.ndarray:
    """Codes where a missing cell (-1) is a value of its own (one new code per column)."""
    X = np.array(codes, dtype=np.int32, copy=True)
    for j in range(X.shape[1]):
        col = X[:, j]
        col[col < 0] = int(col.max()) + 1 if len(col) else 0
    return X


def strict_infeasible_rows(codes: np.ndarray, protected: np.ndarray, k: int,
                           missing_matches: bool = False, mult: np.ndarray | None = None) -> np.ndarray:
    """Rows that cannot reach k: fewer than k records share their protected values and missing cells.

    With every free observed QI suppressed, a record can only share a class with records that have the
    same protected values and the same input-missing QIs (those cannot be suppressed), so such a group
    below k cannot be fixed by suppression. With ``mult``, the rows are distinct rows standing for
    ``mult`` records each.
    """
    from ...risk.keys import group_ids

    if missing_matches:
        key = np.where(protected[None, :], codes, 0)
    else:
        key = np.where(protected[None, :], codes, (codes < 0).astype(np.int32))
    gid, size = group_ids(key)
    if mult is not None:
        size = np.bincount(gid, weights=np.asarray(mult, dtype=np.float64), minlength=len(size))
    return size[gid] < k


def infeasible(n_records: int, k: int) -> InfeasibleError:
    """The one message for records that no suppression can bring to k (see :func:`strict_infeasible_rows`)."""
    return InfeasibleError(
        f"{n_records} record(s) cannot reach k={k} by suppression: fewer than {k} records share their protected "
        "values and their missing cells. Unprotect or recode a variable, or treat missing values as wildcards.")


GreedyClasses = Callable[..., tuple[np.ndarray, float]]
"""The greedy class builder's signature (:func:`~kanon_core.treat.suppress_category.category_suppress`)."""


class _Solutions(Protocol):
    """How one caller holds a solution: a mask over records (in memory) or an assignment per class.

    The search (:func:`_search`) works on distinct rows only; it asks its caller for the greedy classes,
    for the solution an assignment of the class programme stands for, and for the cost of a solution.
    """

    def empty(self) -> Any: ...

    def greedy(self) -> Any: ...

    def from_assignment(self, assign: Assignment) -> Any: ...

    def cost(self, solution: Any) -> float: ...


@dataclass(frozen=True)
class _Found:
    solution: Any
    cost: float
    lower_bound: float
    optimal: bool
    stats: dict[str, Any]


def solve_strict(codes: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int,
                 node_limit: int = 200_000, progress: Progress | None = None,
                 missing_matches: bool = False, force: np.ndarray | None = None,
                 greedy: GreedyClasses = category_suppress) -> StrictSolution:
    """Strict suppression on the input ``codes`` (missing = -1); see the module docstring.

    With ``missing_matches`` (``wildcard`` semantics) a cell missing in the input may be *marked* as part
    of a record's suppressed pattern at no cost: the release shows it missing, which under wildcard
    matching matches everything the suppressed marker would, so every class the search builds still has
    k records (and more). Without it (``category``), such a cell is a value that cannot be hidden.
    ``greedy`` builds the greedy classes (a caller that also needs them alone passes a memoised one, so
    the same classes are not built twice).
    """
    t0 = time.perf_counter()
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    n, q = codes.shape
    missing_matches = bool(missing_matches and (codes < 0).any())  # without missing cells: a partition
    X = missing_as_value(codes)
    uniq, inv, mult = unique_rows(X, return_inverse=True, return_counts=True)
    mult = mult.astype(np.int64)
    uniq = np.ascontiguousarray(uniq)
    first = np.zeros(len(uniq), dtype=np.int64)
    first[inv[::-1]] = np.arange(n)[::-1]
    unsafe = mult < k if force is None else np.asarray(force, dtype=bool)[first]

    class Records:
        """Solutions as masks over the records (the records' own greedy classes)."""

        def empty(self) -> np.ndarray:
            return np.zeros((n, q), dtype=bool)

        def greedy(self) -> np.ndarray:
            g_out, _ = greedy(X, costs, protected, k, None if missing_matches else codes >= 0, force)
            return (g_out < 0) & (codes >= 0)

        def from_assignment(self, assign: Assignment) -> np.ndarray:
            return _to_mask(assign, inv, n, q) & (codes >= 0)

        def cost(self, mask: np.ndarray) -> float:
            return float((mask * costs[None, :]).sum())

    found = _search(uniq, codes[first], mult, unsafe, costs, protected, k, node_limit, progress,
                    missing_matches, Records(), t0)
    return StrictSolution(found.solution, found.cost, found.lower_bound, found.optimal, found.stats)


@dataclass(frozen=True)
class StrictClasses:
    """Strict suppression of a class table: the copies of each class released under each pattern.

    ``assignment`` lists (class row, pattern bit mask, copies); copies of a class not listed stay as they
    are. Patterns hold only cells observed in the input (cells missing in the input stay missing).
    ``cost``, ``lower_bound`` and ``optimal`` are for the full file (every class with all its records).
    """

    assignment: Assignment
    cost: float
    lower_bound: float
    optimal: bool
    stats: dict[str, Any] = field(default_factory=dict)


GREEDY_CAP_FACTOR = 2
"""The greedy classes of a class table are built on at most ``CAP = 2k`` copies of a large class (see
:func:`solve_strict_classes`)."""


def solve_strict_classes(codes: np.ndarray, mult: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int,
                         node_limit: int = 200_000, progress: Progress | None = None,
                         missing_matches: bool = False, force: np.ndarray | None = None,
                         greedy: GreedyClasses = category_suppress) -> StrictClasses:
    """Strict suppression of a class table: distinct rows ``codes`` (missing = -1) with ``mult`` records.

    The same search as :func:`solve_strict` (charge bound, pruning, class programme: all of it works on
    distinct rows with their multiplicities), without ever expanding the records. ``force`` (per row)
    overrides which rows must move, as in :func:`solve_strict`.

    The greedy upper bound needs records: it is built on a *reduced* file holding ``c_r`` copies of row
    r, where ``c_r = mult_r`` when ``mult_r < CAP + k`` or row r must move, and ``c_r = CAP`` otherwise
    (``CAP = 2k >= k``). Any release of the reduced file is a release of the full file with the same cost,
    the extra ``mult_r - c_r`` copies of each row left as they are:

    * a row is below k (must move) in the reduced file exactly when it is in the full file, since
      ``c_r = mult_r`` whenever ``mult_r < k`` and ``c_r = CAP >= k`` otherwise;
    * classes of suppressed copies are the same in both files (the extra copies are not suppressed);
    * the untouched copies of row r form a class of their own (two distinct rows differ somewhere, and
      a suppressed copy differs from an untouched one), of size ``u_r`` in the reduced file, which is 0 or
      >= k since that release is valid; in the full file it holds ``u_r + mult_r - c_r`` copies, where
      ``mult_r - c_r`` is 0 or ``>= k`` (``c_r = CAP`` only when ``mult_r >= CAP + k``): 0 or >= k again.

    The charge bound and the class programme use the full multiplicities, so ``lower_bound`` bounds the
    cost of every release of the full file and ``optimal`` means optimal for the full file.
    """
    t0 = time.perf_counter()
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    mult = np.asarray(mult, dtype=np.int64)
    n_u, q = codes.shape
    if len(mult) != n_u or (mult < 1).any():
        raise ValueError("one multiplicity (>= 1) per distinct row is needed")
    missing_matches = bool(missing_matches and (codes < 0).any())
    X = missing_as_value(codes)
    if n_u and len(unique_rows(X)) != n_u:
        raise ValueError("the rows of a class table must be distinct")
    observed = codes >= 0
    unsafe = mult < k if force is None else np.asarray(force, dtype=bool)
    obs_bits = _row_bits(observed)

    class Classes:
        """Solutions as assignments of each class's copies to patterns."""

        def empty(self) -> Assignment:
            e = np.zeros(0, dtype=np.int64)
            return Assignment(e, e.copy(), e.copy())

        def greedy(self) -> Assignment:
            cap = GREEDY_CAP_FACTOR * k
            copies = np.where((mult < cap + k) | unsafe, mult, cap)
            rec_row = np.repeat(np.arange(n_u), copies)
            obs_r = observed[rec_row]
            g_out, _ = greedy(X[rec_row], costs, protected, k, None if missing_matches else obs_r,
                              None if force is None else unsafe[rec_row])
            return _records_to_assignment(rec_row, _row_bits((g_out < 0) & obs_r))

        def from_assignment(self, assign: Assignment) -> Assignment:
            return Assignment(assign.row, assign.pattern & obs_bits[assign.row], assign.copies)

        def cost(self, assign: Assignment) -> float:
            return assignment_cost(assign, costs, q)

    found = _search(X, codes, mult, unsafe, costs, protected, k, node_limit, progress, missing_matches,
                    Classes(), t0)
    found.stats["greedy_copies"] = int(np.where((mult < GREEDY_CAP_FACTOR * k + k) | unsafe, mult,
                                                GREEDY_CAP_FACTOR * k).sum())
    return StrictClasses(found.solution, found.cost, found.lower_bound, found.optimal, found.stats)


def _row_bits(cells: np.ndarray) -> np.ndarray:
    """Per row, the bit mask of its true cells (QI j is bit j)."""
    q = cells.shape[1]
    return (np.asarray(cells, dtype=np.int64) << np.arange(q, dtype=np.int64)[None, :]).sum(axis=1,
                                                                                          dtype=np.int64)


def _records_to_assignment(rec_row: np.ndarray, rec_pattern: np.ndarray) -> Assignment:
    """Records (their row and pattern) as (row, pattern, copies), in order of first appearance."""
    touched = np.flatnonzero(rec_pattern != 0)
    if len(touched) == 0:
        e = np.zeros(0, dtype=np.int64)
        return Assignment(e, e.copy(), e.copy())
    pairs = np.stack([rec_row[touched], rec_pattern[touched]], axis=1)
    uniq, first, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    return Assignment(uniq[order, 0].astype(np.int64), uniq[order, 1].astype(np.int64),
                      counts[order].astype(np.int64))


def assignment_cost(assign: Assignment, costs: np.ndarray, q: int) -> float:
    """The cost of an assignment: per entry, its copies times the costs of its pattern's QIs."""
    bits = (np.asarray(assign.pattern, dtype=np.int64)[:, None] >> np.arange(q)[None, :]) & 1
    return float((assign.copies * (bits * np.asarray(costs, dtype=np.float64)[None, :]).sum(axis=1)).sum())


def _search(uniq: np.ndarray, row_codes: np.ndarray, mult: np.ndarray, unsafe: np.ndarray, costs: np.ndarray,
            protected: np.ndarray, k: int, node_limit: int, progress: Progress | None, missing_matches: bool,
            way: _Solutions, t0: float) -> _Found:
    """Steps 2-5 of the module docstring on distinct rows ``uniq`` (missing as a value; ``row_codes``:
    the same rows with -1 where missing in the input) with multiplicities ``mult``."""
    q = uniq.shape[1]
    observed = row_codes >= 0
    able_cells = np.ones_like(observed) if missing_matches else observed
    cell_costs = costs[None, :] * observed
    stats: dict[str, Any] = {"distinct_rows": len(uniq), "unsafe_rows": int(unsafe.sum()),
                             "unsafe_records": int(mult[unsafe].sum())}
    if not unsafe.any():
        return _Found(way.empty(), 0.0, 0.0, True, stats)
    bad = strict_infeasible_rows(row_codes, protected, k, missing_matches, mult) & unsafe
    if bad.any():
        raise infeasible(int(mult[bad].sum()), k)
    free = [v for v in range(q) if not protected[v]]
    complete_list = len(free) <= FULL_ENUMERATION_MAX
    patterns = small_patterns(free)
    free_bits = np.zeros(len(uniq), dtype=np.uint64)
    for v in free:  # each unsafe row's all-free pattern, as a bit mask
        free_bits |= able_cells[:, v].astype(np.uint64) << np.uint64(v)
    fulls = {int(m) for m in np.unique(free_bits[unsafe]).tolist()}
    patterns += sorted(fulls - set(patterns) - {0})
    outside = float("inf") if complete_list else cheapest_outside(free, costs, SMALL_PATTERN_SIZE)
    if missing_matches and len(free) > FIRST_MAX_FREE:
        # Nothing below would use the candidate classes: the first programme needs few free QIs and
        # the full programme is not run when missing values match anything. Skip listing them.
        return _greedy_only(way, costs, cell_costs, able_cells, mult, unsafe, free, stats, t0, progress)
    report(progress, 0.1, f"Evaluating {len(patterns):,} suppression patterns")
    share = not missing_matches
    pairs = evaluate(uniq, able_cells, cell_costs, mult, unsafe, patterns, k, share)
    n_u = len(uniq)
    lb_row = row_minimum(pairs, n_u, np.full(n_u, outside))
    lb_row[~unsafe] = 0.0
    lower = float((lb_row * mult).sum())

    stats["seconds_bound"] = round(time.perf_counter() - t0, 3)
    report(progress, 0.2, "Greedy classes")
    best_sol = way.greedy()
    ub = way.cost(best_sol)
    stats["greedy_cost"] = ub
    if len(free) <= FIRST_MAX_FREE:
        report(progress, 0.3, "First solution")
        first = _first_solution(uniq, able_cells, cell_costs, mult, unsafe, patterns, pairs, k)
        stats["first_variables"] = first.n_variables
        if first.assignment is not None and first.objective < ub - EPS:
            best_sol, ub = way.from_assignment(first.assignment), first.objective
        if first.timed_out:
            stats["first_timed_out"] = MIP_SECONDS
    stats["first_cost"] = ub
    stats["seconds_first"] = round(time.perf_counter() - t0, 3)
    proven_list = complete_list
    for _round in range(20):
        budget = ub - (lower - lb_row)  # per copy of each row
        if not proven_list:
            listed = patterns_below(free, costs, float(budget[unsafe].max()), PATTERN_LIMIT)
            if listed is not None:
                new = sorted(set(listed) - set(patterns))
                if new:
                    start = len(patterns)
                    patterns += new
                    more = evaluate(uniq, able_cells, cell_costs, mult, unsafe, new, k, share)
                    more.pattern += start
                    pairs = _concat(pairs, more)
                proven_list = True
                outside = float("inf")
        keep = pairs.charge < budget[pairs.row] - EPS
        pairs = pairs.take(keep)
        new_lb = row_minimum(pairs, n_u, np.full(n_u, outside if not proven_list else np.inf))
        new_lb[~unsafe] = 0.0
        if np.isinf(new_lb[unsafe]).any():  # some row has no candidate that could beat UB
            lower = ub
            break
        new_lb = np.maximum(new_lb, lb_row)
        changed = not np.allclose(new_lb, lb_row)
        lb_row = new_lb
        lower = float((lb_row * mult).sum())
        if not changed or lower >= ub - EPS:
            break
    stats.update({"patterns": len(patterns), "candidates": len(pairs), "charge_bound": lower})
    best = ub
    if lower < ub - EPS and proven_list and missing_matches:
        stats["unproven"] = UNPROVEN_WILDCARD
    elif lower < ub - EPS and proven_list:
        report(progress, 0.6, f"Integer programme over {len(pairs):,} candidate classes")
        res = solve_classes(uniq, able_cells, cell_costs, mult, unsafe, patterns, pairs, k, node_limit,
                            MIP_MAX_VARIABLES, MIP_SECONDS)
        stats.update({"mip_variables": res.n_variables, "mip_constraints": res.n_constraints,
                      "mip_nodes": res.nodes})
        if res.nodes < 0:
            stats["unproven"] = f"the class programme, of {res.n_variables:,} variables, was too large to attempt"
        elif res.timed_out:
            stats["unproven"] = (f"the class programme, of {res.n_variables:,} variables, stopped at its time limit "
                                 f"of {MIP_SECONDS:g} s, and the solution found before it is kept")
        if res.assignment is not None and res.objective < best - EPS:
            best_sol, best = way.from_assignment(res.assignment), res.objective
        lower = max(lower, min(best, res.dual_bound))
    elif lower < ub - EPS:
        stats["unproven"] = "there were too many candidate patterns to list them all"
    if _integral(costs):
        lower = float(np.ceil(lower - 1e-6))
    lower = min(lower, best)
    cost = way.cost(best_sol)
    stats["seconds_total"] = round(time.perf_counter() - t0, 3)
    report(progress, 0.95, "Strict suppression done")
    return _Found(best_sol, cost, float(lower), bool(lower >= cost - 1e-6), stats)


def _greedy_only(way: _Solutions, costs: np.ndarray, cell_costs: np.ndarray, able_cells: np.ndarray,
                 mult: np.ndarray, unsafe: np.ndarray, free: list[int], stats: dict[str, Any], t0: float,
                 progress: Progress | None) -> _Found:
    """The greedy classes with the bound that needs no candidate classes.

    Every unsafe row must take a non-empty pattern of its able free cells, which costs at least its
    cheapest such cell (0 for a cell missing in the input, which is only marked).
    """
    report(progress, 0.2, "Greedy classes")
    sol = way.greedy()
    cost = way.cost(sol)
    if free:
        cheapest = np.where(able_cells[:, free], cell_costs[:, free], np.inf).min(axis=1)
    else:
        cheapest = np.zeros(len(mult))
    lower = float((np.where(unsafe, cheapest, 0.0) * mult).sum())
    if _integral(costs):
        lower = float(np.ceil(lower - 1e-6))
    lower = min(lower, cost)
    stats.update({"greedy_cost": cost, "first_cost": cost, "charge_bound": lower,
                  "unproven": "missing values read as wildcards: the class programme is not run (its bound "
                              "would not hold)",
                  "seconds_total": round(time.perf_counter() - t0, 3)})
    report(progress, 0.95, "Strict suppression done")
    return _Found(sol, cost, lower, bool(lower >= cost - 1e-6), stats)


def _integral(costs: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(costs)) and np.all(np.abs(costs - np.rint(costs)) < 1e-12))


def _concat(a: Pairs, b: Pairs) -> Pairs:
    return Pairs(np.concatenate([a.row, b.row]), np.concatenate([a.pattern, b.pattern]),
                 np.concatenate([a.group, b.group]), np.concatenate([a.charge, b.charge]))


def _first_solution(uniq, able_cells, cell_costs, mult, unsafe, patterns, pairs, k) -> MipOutcome:
    """The class programme on each unsafe row's cheapest candidates and its all-free pattern."""
    order = np.lexsort((pairs.charge, pairs.row))
    rank = np.empty(len(order), dtype=np.int64)
    row_sorted = pairs.row[order]
    starts = np.r_[0, np.flatnonzero(row_sorted[1:] != row_sorted[:-1]) + 1]
    pos = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    rank[order] = pos
    pat_arr = np.asarray(patterns, dtype=np.int64)
    free_full = np.array([int(sum(1 << v for v in range(uniq.shape[1]) if able_cells[u, v]))
                          for u in range(len(uniq))], dtype=np.int64)
    is_full = (pat_arr[pairs.pattern] & free_full[pairs.row]) == pat_arr[pairs.pattern]
    widest = np.zeros(len(pairs), dtype=bool)
    best_width: dict[int, int] = {}
    widths = np.array([bin(int(m)).count("1") for m in pat_arr])
    for i in np.flatnonzero(is_full).tolist():
        r = int(pairs.row[i])
        if r not in best_width or widths[pairs.pattern[i]] > widths[pairs.pattern[best_width[r]]]:
            best_width[r] = i
    widest[list(best_width.values())] = True
    keep = (rank < FIRST_CANDIDATES) | widest
    return solve_classes(uniq, able_cells, cell_costs, mult, unsafe, patterns, pairs.take(keep), k,
                         FIRST_NODE_LIMIT, FIRST_MAX_VARIABLES, MIP_SECONDS)


def _to_mask(assign: Assignment, inv: np.ndarray, n: int, q: int) -> np.ndarray:
    """Suppression mask per record: each distinct row's copies take their patterns in input order."""
    mask = np.zeros((n, q), dtype=bool)
    order = np.argsort(inv, kind="stable")
    counts = np.bincount(inv)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    taken = np.zeros(len(counts), dtype=np.int64)
    for row, pat, copies in zip(assign.row.tolist(), assign.pattern.tolist(), assign.copies.tolist(), strict=True):
        recs = order[starts[row] + taken[row]: starts[row] + taken[row] + copies]
        taken[row] += copies
        cols = [v for v in range(q) if (pat >> v) & 1]
        mask[np.ix_(recs, cols)] = True
    return mask
