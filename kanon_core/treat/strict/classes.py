"""Strict local suppression of a class table: the plan an out-of-core engine applies to the records.

A file too large for memory reaches kanon as its class table (distinct QI rows with their record
counts, :mod:`kanon_core.engines.table`). :func:`suppress_classes` solves the strict model on that table
(:func:`.solve.solve_strict_classes`) and returns, per class, how many of its records take which
suppression pattern. The engine then writes the release: the records of a class are numbered in input
order, and ranks ``[lo, hi)`` take a pattern (:func:`rank_ranges`), exactly as the in-memory mask gives
a distinct row's copies their patterns in input order, so on the same file both releases are the same.

Semantics of missing values (as in memory, :func:`kanon_core.treat.suppress._strict_solve`):

* ``category``: the classes are a partition; every class below k moves, and the search is exact.
* ``wildcard``: only the classes whose wildcard class size is below k must move. Moving them can leave
  others that relied on them below k; those join the forced set and the search runs again (a few
  rounds). If the rounds do not settle, every class that is below k when missing is read as a value is
  forced: each then moves into a class of at least k identical released rows, which a release read
  with wildcards keeps (identical rows match each other, a missing cell matches anything), so this last
  round is valid by construction. Rows that no class of identical released rows can hold (fewer than k
  records share their protected values) stay out of the search and are placed afterwards with whatever
  is still below k, by the in-memory placing rule on the class table (:func:`place_rest`).

The check (:func:`check_release`) is independent of the search: it builds the released class table from
the assignment alone (a suppressed cell is a value of its own), recounts every released class with the
class-size kernels of :mod:`kanon_core.risk.classes`, and counts the people findable among fewer than k
released records with the intruder's kernel (:mod:`kanon_core.risk.intruder`), both weighted by
multiplicities, so nothing is expanded to records.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...dataset import MissingSemantics, check_semantics
from ...errors import InfeasibleError, fewer_records_than_k
from ...progress import Progress, report
from ...risk.intruder import SUPPRESSED, findable_below_k
from ...risk.keys import group_ids
from ..suppress_result import Optimality, optimality_of
from .mip import Assignment
from .solve import (
    BOUND_CLASSES,
    BOUND_RECORDS_BELOW_K,
    UNPROVEN_WILDCARD,
    StrictClasses,
    missing_as_value,
    solve_strict_classes,
    strict_infeasible_rows,
)

WILDCARD_ROUNDS = 4
"""Rounds of the wildcard search before every class below k (missing read as a value) is forced."""


@dataclass(frozen=True)
class ReleaseCheck:
    """The independent recount of a release given as an assignment (see the module docstring)."""

    violations: int
    """Records in released classes smaller than k."""
    min_class: float
    findable_below_k: int
    """People of the input with fewer than k consistent released records."""


@dataclass(frozen=True)
class ClassSuppression:
    """The strict suppression of a class table, checked: what the engine needs to write the release."""

    assignment: Assignment
    cost: float
    lower_bound: float
    optimal: bool
    check: ReleaseCheck
    unsafe_records: int
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def n_suppressed(self) -> int:
        return int((self.assignment.copies * _popcount(self.assignment.pattern)).sum())

    @property
    def records_touched(self) -> int:
        return int(self.assignment.copies[self.assignment.pattern != 0].sum())

    def optimality(self) -> Optimality:
        """What is proven of this result's cost (the exact method's :class:`Optimality`)."""
        return optimality_of(self.cost, self.lower_bound, self.optimal, "exact", self.stats)

    def per_variable(self, q: int) -> np.ndarray:
        """Suppressed cells per QI."""
        bits = (self.assignment.pattern[:, None] >> np.arange(q)[None, :]) & 1
        return (bits * self.assignment.copies[:, None]).sum(axis=0).astype(np.int64)


def _popcount(patterns: np.ndarray) -> np.ndarray:
    """Set bits of each (non-negative) pattern, vectorised (millions of classes at scale)."""
    from ...risk.minucs import popcount

    return popcount(np.asarray(patterns, dtype=np.int64).astype(np.uint64))


def suppress_classes(codes: np.ndarray, mult: np.ndarray, k: int, costs: np.ndarray, protected: np.ndarray,
                     missing: MissingSemantics, node_limit: int = 200_000,
                     progress: Progress | None = None) -> ClassSuppression:
    """The strict model on a class table (distinct rows ``codes``, -1 missing, ``mult`` records each).

    Raises InfeasibleError when k cannot be reached, RuntimeError when the independent check fails.
    """
    missing = check_semantics(missing)
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    mult = np.asarray(mult, dtype=np.int64)
    protected = np.asarray(protected, dtype=bool)
    costs = np.asarray(costs, dtype=np.float64)
    n = int(mult.sum())
    report(progress, 0.0, "Counting classes")
    wild = missing == "wildcard" and bool((codes < 0).any())
    fk0 = _sizes(codes, mult, missing)
    unsafe = fk0 < k
    if unsafe.any():
        if k > n:
            raise InfeasibleError(fewer_records_than_k(n, k))
        if protected.all():
            raise InfeasibleError(f"{int(mult[unsafe].sum())} record(s) are below k={k} and every "
                                  "quasi-identifier is protected: unprotect at least one variable.")
    if not wild:
        sol = solve_strict_classes(codes, mult, costs, protected, k, node_limit, progress)
        rounds = 0
    else:
        sol, rounds = _wildcard_rounds(codes, mult, costs, protected, k, unsafe, node_limit, progress)
    report(progress, 0.95, "Verifying the release independently")
    check = check_release(codes, mult, sol.assignment, k, missing)
    if check.violations:
        raise RuntimeError(f"internal error: {check.violations} record(s) below k={k} under the strict model "
                           "after suppression")
    stats = dict(sol.stats)
    lower = sol.lower_bound
    if wild:
        # missing values as wildcards: the class programme read them as values, so its bound does not hold;
        # what holds is that every record below k loses at least one value (its class can only shrink)
        free = ~protected
        cheapest = float(costs[free].min()) if free.any() else 0.0
        lower = min(sol.cost, float(mult[unsafe].sum()) * cheapest)
        stats["bound"] = BOUND_RECORDS_BELOW_K
        stats["unproven"] = UNPROVEN_WILDCARD  # whatever stopped the class search: its bound is not this model's
        stats["wildcard_rounds"] = rounds
    else:
        stats["bound"] = BOUND_CLASSES
    report(progress, 1.0, "Done")
    return ClassSuppression(sol.assignment, sol.cost, float(lower), bool(lower >= sol.cost - 1e-9), check,
                            int(mult[unsafe].sum()), stats)


def _wildcard_rounds(codes, mult, costs, protected, k, unsafe, node_limit, progress):
    """The forced rounds of the module docstring; returns the solution and the number of rounds run.

    Rows that no class of identical released rows can hold (fewer than k records share their protected
    values: :func:`.solve.strict_infeasible_rows`) stay out of the search, as in memory, and count only as
    the records others may match; whatever is still below k after the rounds is placed by
    :func:`place_rest`, which only adds suppressions.
    """
    bad = strict_infeasible_rows(codes, protected, k, True, mult)
    keep = np.flatnonzero(~bad)

    def solve(force: np.ndarray) -> Any:
        """The class search on the rows it can hold, its assignment in the full table's row numbers."""
        if len(keep) == 0:
            return StrictClasses(_empty_assignment(), 0.0, 0.0, True, {})
        sol = solve_strict_classes(codes[keep], mult[keep], costs, protected, k, node_limit, progress,
                                   missing_matches=True, force=force[keep])
        a = sol.assignment
        return dataclasses.replace(sol, assignment=Assignment(keep[np.asarray(a.row, dtype=np.int64)],
                                                              np.asarray(a.pattern), np.asarray(a.copies)))

    force = unsafe & ~bad
    for rounds in range(1, WILDCARD_ROUNDS + 1):
        sol = solve(force)
        below = _rows_below(codes, mult, sol.assignment, k, "wildcard")
        if not below.any():
            return sol, rounds
        if not (below & ~force & ~bad).any():
            break
        force |= below & ~bad
    # last round: every class below k with missing read as a value moves (valid by construction)
    X = missing_as_value(codes)
    force |= (_sizes(X, mult, "category") < k) & ~bad
    sol = solve(force)
    if _rows_below(codes, mult, sol.assignment, k, "wildcard").any():
        report(progress, 0.9, "Placing the records no class can hold")
        assignment = place_rest(codes, mult, costs, protected, k, sol.assignment)
        sol = dataclasses.replace(sol, assignment=assignment, cost=assignment_cost(codes, costs, assignment),
                                  optimal=False)
    return sol, WILDCARD_ROUNDS + 1


def _empty_assignment() -> Assignment:
    return Assignment(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


def assignment_cost(codes: np.ndarray, costs: np.ndarray, assign: Assignment) -> float:
    """The cost of an assignment: per entry, its copies times the costs of the observed cells it blanks."""
    q = codes.shape[1]
    row = np.asarray(assign.row, dtype=np.int64)
    bits = ((np.asarray(assign.pattern, dtype=np.int64)[:, None] >> np.arange(q)) & 1).astype(bool)
    blanked = bits & (codes[row] >= 0)
    return float((np.asarray(assign.copies, dtype=np.float64) * (blanked * costs[None, :]).sum(axis=1)).sum())


def place_rest(codes: np.ndarray, mult: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int,
               assign: Assignment) -> Assignment:
    """Suppress every free value of each released record still below k, and of the cheapest records that
    agree with it on the protected values, until none is below k (wildcard semantics).

    The rule of the in-memory placing step (:func:`kanon_core.treat.suppress._place_wildcard_rest`) on a
    class table, in rounds: every released row below k that has a free value left is blanked on all of them
    at once, so the number of rounds does not grow with the number of such rows (in memory they are taken
    one by one, most exposed first, and blanking one can lift another that is missing where the first was
    blanked, sparing it: the rounds may blank a few cells more than the in-memory step, never leave a row
    below k); when no row below k has anything left to suppress, one copy of the cheapest row agreeing
    with the most exposed one is split off and blanked. It only adds suppressions and
    terminates: each step blanks at least one more observed free cell, and there are finitely many. It
    always succeeds once the protected values are feasible: a record blanked on every free value matches
    every record that agrees with it on the protected values and is blanked there too, and at least k
    records agree (checked before the search).
    """
    q = codes.shape[1]
    mult = np.asarray(mult, dtype=np.int64)
    free_obs = (codes >= 0) & ~np.asarray(protected, dtype=bool)[None, :]
    full = (free_obs.astype(np.int64) << np.arange(q, dtype=np.int64)).sum(axis=1)  # per row: every free cell
    row = list(np.asarray(assign.row, dtype=np.int64).tolist())
    pat = list(np.asarray(assign.pattern, dtype=np.int64).tolist())
    cop = list(np.asarray(assign.copies, dtype=np.int64).tolist())
    used = np.bincount(np.asarray(row, dtype=np.int64), weights=np.asarray(cop, dtype=np.float64),
                       minlength=len(mult)).astype(np.int64)
    for r in np.flatnonzero(mult > used).tolist():  # every record listed: the untouched copies too
        row.append(r)
        pat.append(0)
        cop.append(int(mult[r] - used[r]))
    prot = np.flatnonzero(protected)
    limit = int(mult.sum()) + len(row) + 1
    for _ in range(limit):
        listed = [i for i, c in enumerate(cop) if c > 0]  # entries left without copies drop out
        row, pat, cop = [row[i] for i in listed], [pat[i] for i in listed], [cop[i] for i in listed]
        rows_a, pats_a, cops_a = (np.asarray(x, dtype=np.int64) for x in (row, pat, cop))
        rel, counts, _ = released_table(codes, mult, Assignment(rows_a, pats_a, cops_a))
        size = _released_sizes(rel, counts, "wildcard")
        below = np.flatnonzero(size < k)
        if len(below) == 0:
            return Assignment(rows_a, pats_a, cops_a)
        opened = below[(full[rows_a[below]] & ~pats_a[below]) != 0]
        if len(opened):  # every row below k with a free value left is blanked on all of them at once
            for e in opened.tolist():
                pat[e] |= int(full[row[e]])
            continue
        e = int(below[np.argmin(size[below])])
        r = row[e]
        agree = np.ones(len(row), dtype=bool)
        for j in prot.tolist():
            a, b = codes[rows_a, j], codes[r, j]
            agree &= (a == b) | (a < 0) | (b < 0)
        open_bits = full[rows_a] & ~pats_a
        open_cost = (((open_bits[:, None] >> np.arange(q)) & 1) * costs[None, :]).sum(axis=1)
        cand = np.flatnonzero(agree & (open_cost > 0))
        if len(cand) == 0:
            raise InfeasibleError(f"A record cannot reach k={k} by suppression under the strict model.")
        s_ = int(cand[np.argmin(open_cost[cand])])
        cop[s_] -= 1  # one copy of the cheapest agreeing row, blanked on every free value
        row.append(row[s_])
        pat.append(int(full[row[s_]]))
        cop.append(1)
    raise RuntimeError("internal error: placing records below k did not settle")  # pragma: no cover


def _sizes(codes: np.ndarray, mult: np.ndarray, missing: MissingSemantics) -> np.ndarray:
    """Class size of each distinct row (records matching it), from the class-size kernels."""
    from ...classtable import ClassTable

    if len(codes) == 0:
        return np.zeros(0, dtype=np.int64)
    q = codes.shape[1]
    table = ClassTable(tuple(f"q{j}" for j in range(q)), codes, mult)
    return np.asarray(table.class_sizes(missing).fk)


def released_table(codes: np.ndarray, mult: np.ndarray, assign: Assignment
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The released class table of an assignment: rows (``SUPPRESSED`` where suppressed, -1 where missing
    in the input), their record counts, and the input row each comes from.

    Each assignment entry releases ``copies`` records of its row with its pattern's observed cells
    suppressed; what is left of each row is released as it is.
    """
    codes = np.asarray(codes, dtype=np.int32)
    mult = np.asarray(mult, dtype=np.int64)
    n_u, q = codes.shape
    row = np.asarray(assign.row, dtype=np.int64)
    copies = np.asarray(assign.copies, dtype=np.int64)
    if (copies < 0).any() or ((row < 0) | (row >= n_u)).any():
        raise RuntimeError("internal error: an assignment names a class that does not exist")
    used = np.bincount(row, weights=copies, minlength=n_u).astype(np.int64)
    if (used > mult).any():
        raise RuntimeError("internal error: an assignment uses more records than a class has")
    rest = mult - used
    left = np.flatnonzero(rest > 0)
    rows = np.concatenate([row, left])
    pats = np.concatenate([np.asarray(assign.pattern, dtype=np.int64), np.zeros(len(left), np.int64)])
    counts = np.concatenate([copies, rest[left]])
    rel = codes[rows].copy()
    bits = ((pats[:, None] >> np.arange(q)[None, :]) & 1).astype(bool)
    rel[bits & (rel >= 0)] = SUPPRESSED
    keep = counts > 0
    return rel[keep], counts[keep], rows[keep]


def _rows_below(codes, mult, assign, k, missing) -> np.ndarray:
    """Input rows some of whose released records are in a released class below k."""
    rel, counts, rows = released_table(codes, mult, assign)
    size = _released_sizes(rel, counts, missing)
    out = np.zeros(len(codes), dtype=bool)
    out[rows[size < k]] = True
    return out


def _released_sizes(rel: np.ndarray, counts: np.ndarray, missing: MissingSemantics) -> np.ndarray:
    """Class size of each released row: a suppressed cell is a value of its own (one past the column's
    largest code), a missing one keeps the semantics."""
    val = rel.copy()
    for j in range(val.shape[1]):
        col = val[:, j]
        col[col == SUPPRESSED] = int(np.max(col, initial=-1)) + 1
    if len(val) == 0:
        return np.zeros(0, dtype=np.int64)
    gid, _ = group_ids(val)
    merged = np.bincount(gid, weights=counts).astype(np.int64)
    first = np.zeros(len(merged), dtype=np.int64)
    first[gid[::-1]] = np.arange(len(gid))[::-1]
    return _sizes(val[first], merged, missing)[gid]


def check_release(codes: np.ndarray, mult: np.ndarray, assign: Assignment, k: int,
                  missing: MissingSemantics) -> ReleaseCheck:
    """Recount a release given by ``assign`` on the class table (``codes``, ``mult``): records in released
    classes below k, the smallest released class, and the people findable among fewer than k.

    The intruder's count compares people with released rows (quadratic in distinct rows), so it is run
    for the people of input rows that keep fewer than k untouched copies only: the others have at least
    k consistent released records already (their own row's untouched copies, identical to them).
    """
    rel, counts, rows = released_table(codes, mult, assign)
    size = _released_sizes(rel, counts, missing)
    violations = int(counts[size < k].sum())
    untouched = np.zeros(len(codes), dtype=np.int64)
    plain = (rel != SUPPRESSED).all(axis=1) & (rel == np.asarray(codes)[rows]).all(axis=1)
    np.add.at(untouched, rows[plain], counts[plain])
    ask = untouched < k
    findable = findable_below_k(np.asarray(codes, dtype=np.int32)[ask], rel, k, missing,
                                original_mult=np.asarray(mult, dtype=np.int64)[ask], released_mult=counts)
    return ReleaseCheck(violations, float(size.min()) if len(size) else 0.0, findable)


def rank_ranges(assign: Assignment, n_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(row, lo, hi, pattern) per assignment entry: the records of each row, numbered 0, 1, ... in input
    order, take the entries' patterns in the assignment's order (ranks ``[lo, hi)``), as
    :func:`.solve._to_mask` does in memory. Entries whose pattern is empty still use up their ranks."""
    row = np.asarray(assign.row, dtype=np.int64)
    copies = np.asarray(assign.copies, dtype=np.int64)
    lo = np.zeros(len(row), dtype=np.int64)
    taken = np.zeros(n_rows, dtype=np.int64)
    for i, (r, c) in enumerate(zip(row.tolist(), copies.tolist(), strict=True)):
        lo[i] = taken[r]
        taken[r] += c
    return row, lo, lo + copies, np.asarray(assign.pattern, dtype=np.int64)
