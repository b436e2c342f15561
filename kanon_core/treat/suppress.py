"""Local suppression to a named protection model, at minimum cost, with per-variable costs.

The problem (after Wilson et al., RTI): choose QI cells to blank so that the release meets a protection
model at minimum total cost (cost of a cell = importance of its variable; protected variables are never
suppressed). The model decides what "meets k" means (:mod:`kanon_core.treat.protection`):

* ``strict`` (default): suppressed cells are values; every released class has k records. Exact by the
  class programme of :mod:`kanon_core.treat.strict` (proven optimal or with a reported gap), greedy by
  :mod:`suppress_category`. The exact result is never worse than the greedy one: both are computed and
  the cheaper is kept.
* ``record`` (Wilson et al.): each released record is consistent with k input records. Exact, record by
  record: ``engine="direct"`` (default) finds each record's cheapest union of disagreement masks with k - 1
  other records (:mod:`suppress_direct`); ``engine="minucs"`` hits all of its MINUCs
  (:mod:`suppress_hitting`). Instances the compiled searches cannot close go to an integer programme per
  instance (:mod:`suppress_ilp`).
* ``release`` (sdcMicro's criterion): the release is k-anonymous under wildcard matching, with sdcMicro's
  alpha; greedy only (:mod:`suppress_greedy`), for comparison.

Every run then recounts its model's criterion on the output with independent code (a failure stops the
run), and counts ``findable_below_k``: the people of the input with fewer than k consistent released
records (:mod:`kanon_core.risk.intruder`), the intruder's view, whatever the model. ``lower_bound`` is a
valid bound for the named model, and ``optimal`` holds only when it equals the cost. Limits are counted
in search nodes, never in seconds, so a replay on the same file gives the same cells.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from ..dataset import Dataset, MissingSemantics, QIMatrix, check_semantics
from ..errors import InfeasibleError, InputError, fewer_records_than_k
from ..progress import Progress, report
from ..risk.classes import check_alpha, class_sizes
from ..risk.intruder import findable_below_k, released_codes
from ..risk.keys import unique_rows
from ..steps import Step, register_step
from ..threads import run_parallel
from .protection import DEFAULT_MODEL, get_model
from .strict import infeasible, missing_as_value, solve_strict, strict_infeasible_rows
from .strict.solve import BOUND_CLASSES, BOUND_RECORD_WISE, BOUND_RECORDS_BELOW_K, UNPROVEN_WILDCARD
from .suppress_bits import MAX_QIS, masks_to_bool
from .suppress_category import category_suppress
from .suppress_direct import EXACT, HARD, INFEASIBLE, RowSolutions, code_columns, row_candidates, solve_rows
from .suppress_greedy import greedy
from .suppress_hitting import solve_hitting
from .suppress_ilp import SOLVERS, Block, solve_blocks
from .suppress_result import Optimality, SuppressionResult

Method = Literal["exact", "greedy"]
Engine = Literal["auto", "direct", "minucs"]
METHODS: tuple[str, ...] = ("exact", "greedy")
ENGINES: tuple[str, ...] = ("auto", "direct", "minucs")
NODE_LIMIT = 200_000
MAX_NODE_LIMIT = 2**31 - 1
"""The largest node limit the solvers honour: HiGHS counts nodes in a 32-bit integer (it ignores a larger
limit), and the compiled searches multiply the limit by 20 in 64-bit integers."""
MIN_IMPORTANCE = 0.001
MAX_IMPORTANCE = 1_000_000.0
"""The range of an importance. The solvers compare costs with absolute tolerances (1e-9; HiGHS stops within
1e-6), so costs far below 1 would let a worse release pass as proven optimal; costs far above 1 overflow the
totals (1e308 gave an infinite cost). A variable that must never be suppressed is protected instead."""
RECORD_WISE_BOUND_MAX_ROWS = 50_000
"""The record-wise bound compares every distinct row with every other (quadratic): computed for the strict
model only up to this many distinct rows (200,000 rows with a 100,000-level QI: 7 minutes)."""
Importance = Mapping[str, float] | Sequence[tuple[str, float]] | None


@dataclasses.dataclass(frozen=True)
class Problem:
    """A validated suppression problem on integer codes."""

    names: tuple[str, ...]
    codes: np.ndarray
    k: int
    missing: MissingSemantics
    costs: np.ndarray
    protected: np.ndarray  # bool per QI

    @property
    def protected_mask(self) -> int:
        return int(sum(1 << v for v in np.flatnonzero(self.protected).tolist()))

    @property
    def protected_names(self) -> tuple[str, ...]:
        return tuple(n for n, p in zip(self.names, self.protected.tolist(), strict=True) if p)


def resolve_costs(names: Sequence[str], importance: Importance = None, protected: Sequence[str] = ()
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per-QI costs (default 1) and protected flags, validated against the QI names."""
    names = list(names)
    costs = np.ones(len(names), dtype=np.float64)
    items = list(importance.items()) if isinstance(importance, Mapping) else list(importance or ())
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise InputError("Importance must be pairs of (variable, cost).")
        var, cost = item
        if var not in names:
            raise InputError(f"Importance given for '{var}', which is not a quasi-identifier.")
        try:
            c = float(cost)
        except (TypeError, ValueError):
            raise InputError(f"The importance of '{var}' must be a number.") from None
        if not np.isfinite(c) or c <= 0:
            raise InputError(f"The importance of '{var}' must be a positive number (protect it instead).")
        costs[names.index(var)] = c
    prot = np.zeros(len(names), dtype=bool)
    for var in protected:
        if var not in names:
            raise InputError(f"Protected variable '{var}' is not a quasi-identifier.")
        prot[names.index(var)] = True
    return costs, prot


def make_problem(data: Dataset | QIMatrix | np.ndarray, k: int, *, qis: Sequence[str] | None = None,
                 importance: Importance = None, protected: Sequence[str] = (),
                 missing: MissingSemantics | None = None) -> tuple[Problem, QIMatrix | None]:
    if isinstance(data, Dataset):
        qm: QIMatrix | None = data.qi_matrix(qis)
        missing = missing or data.missing
    elif isinstance(data, QIMatrix):
        qm = data.subset(qis) if qis else data
    else:
        arr = np.asarray(data)
        if arr.ndim != 2:
            raise InputError("Codes must be a 2-D array (records x quasi-identifiers).")
        qm = None
        names = tuple(qis) if qis else tuple(f"q{j}" for j in range(arr.shape[1]))
        if len(names) != arr.shape[1]:
            raise InputError("Give one name per column of the codes.")
    if qm is not None:
        names, codes = qm.names, qm.codes
    else:
        codes = np.ascontiguousarray(arr, dtype=np.int32)
        if (codes < -1).any():
            raise InputError("Codes must be >= 0, or -1 for missing.")
    missing = check_semantics(missing or "wildcard")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError("k must be a whole number of at least 1.")
    if codes.shape[1] == 0:
        raise InputError("Choose at least one quasi-identifier.")
    if codes.shape[1] > MAX_QIS:
        raise InputError(f"At most {MAX_QIS} quasi-identifiers can be treated at once.")
    costs, prot = resolve_costs(names, importance, protected)
    return Problem(tuple(names), np.ascontiguousarray(codes, dtype=np.int32), int(k), missing, costs, prot), qm


def check_feasible(p: Problem, fk: np.ndarray) -> None:
    """Refuse clearly when some unsafe record cannot reach k even with every free value suppressed."""
    n = len(p.codes)
    unsafe = fk < p.k
    if not unsafe.any():
        return
    if p.k > n:
        raise InfeasibleError(fewer_records_than_k(n, p.k))
    if p.protected.all():
        raise InfeasibleError(
            f"{int(unsafe.sum())} record(s) are below k={p.k} and every quasi-identifier is protected: "
            "unprotect at least one variable.")
    if p.protected.any():
        fkp = class_sizes(p.codes[:, p.protected], p.missing)
        bad = int((unsafe & (fkp < p.k)).sum())
        if bad:
            raise InfeasibleError(
                f"{bad} record(s) cannot reach k={p.k}: their values on the protected variable(s) "
                f"{', '.join(p.protected_names)} alone occur fewer than {p.k} times. Unprotect (or recode) "
                "one of them.")


def check_importance(importance: Importance) -> None:
    """Refuse an importance given twice for one variable (which value would count?) or outside
    [:data:`MIN_IMPORTANCE`, :data:`MAX_IMPORTANCE`]; names and numbers are checked by :func:`resolve_costs`."""
    items = list(importance.items()) if isinstance(importance, Mapping) else list(importance or ())
    seen: set[Any] = set()
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise InputError("Importance must be pairs of (variable, cost).")
        var, cost = item
        if var in seen:
            raise InputError(f"The importance of '{var}' is given twice; give it once.")
        seen.add(var)
        try:
            c = float(cost)
        except (TypeError, ValueError):
            raise InputError(f"The importance of '{var}' must be a number.") from None
        if not MIN_IMPORTANCE <= c <= MAX_IMPORTANCE:  # also refuses NaN
            raise InputError(f"The importance of '{var}' must be between {MIN_IMPORTANCE:g} and "
                             f"{MAX_IMPORTANCE:,.0f} (protect a variable that must never be suppressed).")


def suppress(data: Dataset | QIMatrix | np.ndarray, k: int = 2, *, qis: Sequence[str] | None = None,
             importance: Importance = None, protected: Sequence[str] = (), model: str = DEFAULT_MODEL,
             method: Method = "exact", missing: MissingSemantics | None = None, alpha: float = 1.0,
             engine: Engine = "auto", minucs: Any = None, minuc_max_size: int | None = None,
             solver: str = "highs", node_limit: int = NODE_LIMIT, progress: Progress | None = None
             ) -> SuppressionResult:
    """Suppress QI values so that the release meets ``model`` at k, at minimum cost (module docstring).

    ``importance`` gives the cost of suppressing one value of a variable (default 1 each);
    ``protected`` variables are never suppressed. ``alpha`` is sdcMicro's weight of a matching record
    with missing values (``release`` and ``strict`` count with it). ``minucs`` (a MinucResult for the same
    codes, k and semantics) selects the MINUC engine of the ``record`` model. Raises InfeasibleError when
    protected variables (or missing cells under ``strict``) make k unreachable.
    """
    t0 = time.perf_counter()
    if method not in METHODS:
        raise InputError(f"Method must be one of {', '.join(METHODS)}, not '{method}'.")
    pm = get_model(model)
    pm.check_method(method)
    if engine not in ENGINES:
        raise InputError(f"Engine must be one of {', '.join(ENGINES)}, not '{engine}'.")
    if solver not in SOLVERS:
        raise InputError(f"Solver must be one of {', '.join(SOLVERS)}, not '{solver}'.")
    if isinstance(node_limit, bool) or not isinstance(node_limit, (int, np.integer)) \
            or not 1 <= node_limit <= MAX_NODE_LIMIT:
        raise InputError(f"The node limit must be a whole number from 1 to {MAX_NODE_LIMIT:,}.")
    check_importance(importance)
    alpha = check_alpha(alpha)
    p, _qm = make_problem(data, k, qis=qis, importance=importance, protected=protected, missing=missing)
    if pm.name == "record" and p.missing == "category" and (p.codes < 0).any():
        raise InputError("The record-wise model reads missing values as wildcards (Wilson et al.); with "
                         "missing values as a category use the strict model.")
    timings: dict[str, float] = {}
    report(progress, 0.0, "Counting classes")
    empty = np.zeros(p.codes.shape, dtype=bool)
    fk0 = pm.counts(p.codes, empty, p.missing, alpha)
    unsafe = fk0 < p.k - 1e-9
    check_feasible(p, fk0)
    stats: dict[str, Any] = {"unsafe_records": int(unsafe.sum())}
    timings["count"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    if not unsafe.any():
        mask, lower, used_engine = empty, 0.0, "none"
    else:
        solver_fn = _SOLVERS[(pm.name, method)]
        mask, lower, used_engine, st = solver_fn(p, unsafe, alpha=alpha, engine=engine, minucs=minucs,
                                                 minuc_max_size=minuc_max_size, solver=solver,
                                                 node_limit=node_limit, progress=progress, timings=timings)
        stats.update(st)
    timings["solve"] = time.perf_counter() - t1
    report(progress, 0.95, "Verifying the protection model independently")
    t3 = time.perf_counter()
    after = pm.counts(p.codes, mask, p.missing, alpha)
    violations = int((after < p.k - 1e-9).sum())
    if violations:
        raise RuntimeError(f"internal error: {violations} record(s) below k={p.k} under the {pm.name} model "
                           "after suppression")
    if (mask & p.protected[None, :]).any() or (mask & (p.codes < 0)).any():
        raise RuntimeError("internal error: a protected or missing cell was suppressed")
    findable = findable_below_k(p.codes, released_codes(p.codes, mask), p.k, p.missing)
    timings["verify"] = time.perf_counter() - t3
    cost = float((mask * p.costs[None, :]).sum())
    lower = min(float(lower), cost)
    report(progress, 1.0, "Done")
    return SuppressionResult(
        names=p.names, k=p.k, missing=p.missing, model=pm.name, alpha=alpha, method=method,
        engine=used_engine, codes=p.codes, mask=mask, costs=p.costs, protected=p.protected_names, cost=cost,
        lower_bound=lower, optimal=bool(lower >= cost - 1e-9), seconds=time.perf_counter() - t0,
        violations_after=violations, min_class_after=float(after.min()) if len(after) else 0.0,
        findable_below_k=findable, timings=timings, stats=stats)


def _min_free_cost(p: Problem) -> float:
    free = ~p.protected
    return float(p.costs[free].min()) if free.any() else 0.0


def _strict_solve(p: Problem, unsafe: np.ndarray, alpha: float, solve: Any) -> np.ndarray:
    """Run ``solve(codes, force) -> mask`` where the class search applies, and place the other records.

    The class search builds classes of identical released rows, reading a missing input cell as a value
    that it may *mark* into a suppressed pattern under ``wildcard`` semantics (a cell released missing
    matches at least what a suppressed cell matches). Under ``wildcard`` only the records below k must
    move (``force``); as moving records can leave others that relied on them below k, those join the
    forced set and the search runs again (a few rounds), and whatever is still below k is placed by
    :func:`_place_wildcard_rest`, which only adds suppressions. Records whose protected values and
    missing cells are shared by fewer than k records cannot be placed by the search: under ``category``
    they are infeasible; under ``wildcard`` they are left to the placing step.
    """
    from .protection import MODELS

    wild = p.missing == "wildcard"
    bad = strict_infeasible_rows(p.codes, p.protected, p.k, wild)
    if not wild:
        if (bad & unsafe).any():
            raise infeasible(int((bad & unsafe).sum()), p.k)
        return solve(p.codes, None)
    strict = MODELS["strict"]
    keep = ~bad
    force = unsafe.copy()
    mask = np.zeros(p.codes.shape, dtype=bool)
    # identical records must be forced together (they share their counts anyway)
    inv = unique_rows(p.codes[keep], return_inverse=True)[1] if keep.any() else None
    for _round in range(WILDCARD_ROUNDS):
        mask[:] = False
        if inv is not None:
            row_force = np.bincount(inv, weights=force[keep]) > 0
            mask[keep] = solve(p.codes[keep], row_force[inv])
        below = strict.counts(p.codes, mask, "wildcard", alpha) < p.k - 1e-9
        if not (below & keep & ~force).any():
            break
        force |= below & keep
    return _place_wildcard_rest(p, mask, alpha)


WILDCARD_ROUNDS = 4


def _place_wildcard_rest(p: Problem, mask: np.ndarray, alpha: float) -> np.ndarray:
    """Suppress every free value of each record still below k, and of the cheapest records that agree
    with it on the protected values, until it reaches k (wildcard semantics; always possible once the
    protected values are feasible, checked before)."""
    from .protection import MODELS

    strict = MODELS["strict"]
    free_obs = (p.codes >= 0) & ~p.protected[None, :]
    for _round in range(len(p.codes) + 1):
        counts = strict.counts(p.codes, mask, "wildcard", alpha)
        below = np.flatnonzero(counts < p.k - 1e-9)
        if len(below) == 0:
            return mask
        r = int(below[np.argmin(counts[below])])
        if not (free_obs[r] & ~mask[r]).any():
            prot = p.protected
            agree = ((p.codes[:, prot] == p.codes[r, prot]) | (p.codes[:, prot] < 0)
                     | (p.codes[r, prot] < 0)).all(axis=1)
            open_cost = ((free_obs & ~mask) * p.costs[None, :]).sum(axis=1)
            cand = np.flatnonzero(agree & (open_cost > 0))
            if len(cand) == 0:
                raise InfeasibleError(f"A record cannot reach k={p.k} by suppression under the strict model.")
            s_ = int(cand[np.argmin(open_cost[cand])])
            mask[s_] |= free_obs[s_]
        mask[r] |= free_obs[r]
    raise RuntimeError("internal error: placing records below k did not settle")  # pragma: no cover


class GreedyMemo:
    """:func:`category_suppress` remembered by its exact inputs, for one suppression run.

    The exact strict method builds the greedy classes inside every round of its search and then again on
    its own (to keep whichever is cheaper); with the same inputs the greedy classes are the same, so the
    second build is a lookup. Inputs are keyed by a digest of their bytes; ``observed`` all true is the
    same as ``None``.
    """

    def __init__(self) -> None:
        self._seen: dict[bytes, tuple[np.ndarray, float]] = {}

    def __call__(self, codes: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int,
                 observed: np.ndarray | None = None, force: np.ndarray | None = None
                 ) -> tuple[np.ndarray, float]:
        codes = np.ascontiguousarray(codes, dtype=np.int32)
        if observed is not None and np.asarray(observed, dtype=bool).all():
            observed = None
        h = hashlib.blake2b(digest_size=20)
        h.update(repr((codes.shape, int(k))).encode())
        for part in (codes, np.asarray(costs, dtype=np.float64), np.asarray(protected, dtype=bool)):
            h.update(np.ascontiguousarray(part).tobytes())
        for part in (observed, force):
            h.update(b"-" if part is None else b"+" + np.packbits(np.asarray(part, dtype=bool)).tobytes())
        key = h.digest()
        if key not in self._seen:
            self._seen[key] = category_suppress(codes, costs, protected, k, observed, force)
        out, lower = self._seen[key]
        return out.copy(), lower


def _strict_greedy(p: Problem, unsafe: np.ndarray, alpha: float = 1.0, greedy: Any = category_suppress,
                   **_: Any) -> tuple[np.ndarray, float, str, dict[str, Any]]:
    """Class-building heuristic; bound: every record below k must lose a value (its class only shrinks)."""
    wild = p.missing == "wildcard"

    def solve(codes: np.ndarray, force: np.ndarray | None) -> np.ndarray:
        observed = codes >= 0
        out, _ = greedy(missing_as_value(codes), p.costs, p.protected, p.k, None if wild else observed, force)
        return (out < 0) & observed

    mask = _strict_solve(p, unsafe, alpha, solve)
    return mask, float(unsafe.sum()) * _min_free_cost(p), "greedy", {"bound": BOUND_RECORDS_BELOW_K}


def _strict_exact(p: Problem, unsafe: np.ndarray, *, alpha: float, node_limit: int, progress: Progress | None,
                  timings: dict[str, float], **_: Any) -> tuple[np.ndarray, float, str, dict[str, Any]]:
    """The class programme, kept only where it beats the greedy classes (so exact <= greedy always)."""
    t = time.perf_counter()
    found: dict[str, Any] = {}
    memo = GreedyMemo()

    def solve(codes: np.ndarray, force: np.ndarray | None) -> np.ndarray:
        sol = solve_strict(codes, p.costs, p.protected, p.k, node_limit=node_limit, progress=progress,
                           missing_matches=p.missing == "wildcard", force=force, greedy=memo)
        found["sol"] = sol
        return sol.mask

    mask = _strict_solve(p, unsafe, alpha, solve)
    timings["strict"] = time.perf_counter() - t
    sol = found.get("sol")
    stats = dict(sol.stats) if sol is not None else {}
    cost = float((mask * p.costs[None, :]).sum())
    g_mask, g_lower, _, _ = _strict_greedy(p, unsafe, alpha, greedy=memo)
    g_cost = float((g_mask * p.costs[None, :]).sum())
    stats["greedy_cost"] = g_cost
    if g_cost < cost - 1e-9:
        mask, cost = g_mask, g_cost
    if (p.missing == "wildcard" and (p.codes < 0).any()) or sol is None:
        # missing cells as wildcards: the class programme read them as values, so its bound does not
        # hold; what holds is that every record below k loses a value
        lower = g_lower
        stats["bound"] = BOUND_RECORDS_BELOW_K
        stats["unproven"] = UNPROVEN_WILDCARD  # whatever stopped the class search: its bound is not this model's
    else:
        lower = sol.lower_bound
        stats["bound"] = BOUND_CLASSES
    distinct = stats["distinct_rows"] if "distinct_rows" in stats else len(unique_rows(p.codes))
    if lower < cost - 1e-9 and distinct <= RECORD_WISE_BOUND_MAX_ROWS:
        # Wilson et al.'s record-wise optimum bounds the strict one too: a record's strict class is
        # made of input records consistent with its retained values (missing read as wildcards, the
        # looser reading, so the bound holds under either semantics and at any alpha)
        t = time.perf_counter()
        rw = _exact_direct(p, "highs", None, node_limit, None)[1]
        timings["record_wise_bound"] = time.perf_counter() - t
        stats["record_wise_bound"] = rw
        if rw > lower:
            lower = rw
            stats["bound"] = BOUND_RECORD_WISE
    return mask, lower, "classes", stats


def _record_exact(p: Problem, unsafe: np.ndarray, *, engine: str, minucs: Any, minuc_max_size: int | None,
                  solver: str, node_limit: int, progress: Progress | None, timings: dict[str, float],
                  **_: Any) -> tuple[np.ndarray, float, str, dict[str, Any]]:
    """Wilson et al.'s record-wise programmes (each record's cheapest way to k consistent records)."""
    fk0 = class_sizes(p.codes, "wildcard")
    use_minucs = engine == "minucs" or (engine == "auto" and minucs is not None)
    if use_minucs:
        masks, lower, _proven, st = _exact_minucs(p, fk0, minucs, minuc_max_size, solver, None, node_limit,
                                                  progress, timings)
    else:
        masks, lower, _proven, st = _exact_direct(p, solver, None, node_limit, progress)
    mask = masks_to_bool(masks, p.codes.shape[1]) & (p.codes >= 0)
    return mask, lower, "minucs" if use_minucs else "direct", {"bound": BOUND_PER_RECORD, **st}


def _release_greedy(p: Problem, unsafe: np.ndarray, *, alpha: float, **_: Any
                    ) -> tuple[np.ndarray, float, str, dict[str, Any]]:
    """sdcMicro-style greedy; its only valid bound is one cell (others' blanks can make a record safe)."""
    fk0 = class_sizes(p.codes, "wildcard", alpha=alpha)
    out = greedy(p.codes, fk0, p.costs, p.protected, p.k, alpha)
    return (out < 0) & (p.codes >= 0), _min_free_cost(p), "greedy", {"bound": BOUND_ONE_VALUE}


BOUND_ONE_VALUE = "some value must be suppressed: the cheapest one (others' blanks can make the rest safe)"
BOUND_PER_RECORD = "the sum of each record's own optimum or the bound its programme proved"
"""How the release greedy and the record-wise programmes bound their cost (the statistics' ``bound``)."""

_SOLVERS = {("strict", "exact"): _strict_exact, ("strict", "greedy"): _strict_greedy,
            ("record", "exact"): _record_exact, ("release", "greedy"): _release_greedy}


def _cost(p: Problem, out: np.ndarray) -> float:
    mask = (out < 0) & (p.codes >= 0)
    return float((mask * p.costs[None, :]).sum())


def _exact_direct(p: Problem, solver: str, time_limit: float | None, node_limit: int,
                  progress: Progress | None) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
    """Neighbour formulation on collapsed rows; returns per-record masks, lower bound, proven flag."""
    uniq, inv, mult = unique_rows(p.codes, return_inverse=True, return_counts=True)
    uniq = np.ascontiguousarray(uniq, dtype=np.int32)
    mult = mult.astype(np.int64)
    n_u = len(uniq)
    sol = RowSolutions(np.zeros(n_u, np.uint64), np.zeros(n_u), np.zeros(n_u), np.zeros(n_u, np.int8))
    chunk = max(256, n_u // 40)
    prot = np.uint64(p.protected_mask)
    cols, bitvals = code_columns(uniq)
    for lo in range(0, n_u, chunk):
        report(progress, 0.05 + 0.75 * lo / n_u, f"Solving record instances ({lo:,} of {n_u:,})")
        hi = min(n_u, lo + chunk)
        run_parallel(solve_rows, uniq, mult, p.costs, prot, p.k, lo, hi, node_limit, sol.masks, sol.cost,
                     sol.lower, sol.status, cols, bitvals)
    if (sol.status == INFEASIBLE).any():  # pragma: no cover - check_feasible refuses these first
        raise InfeasibleError(f"{int(mult[sol.status == INFEASIBLE].sum())} record(s) cannot reach k={p.k}.")
    hard = np.flatnonzero(sol.status == HARD)
    extra = 0.0
    proven = True
    if len(hard):
        report(progress, 0.8, f"Integer programme for {len(hard)} hard instance(s)")
        blocks = []
        for u in hard.tolist():
            cd, cm, need = row_candidates(uniq, mult, p.costs, p.protected_mask, p.k, u)
            blocks.append(Block("union", cd, int(sol.masks[u]), float(sol.lower[u]), mult=cm, need=need,
                                weight=int(mult[u])))
        res = solve_blocks(blocks, p.costs, solver, time_limit)
        before = float(sum(b.weight * b.lower for b in blocks))
        for u, m, c in zip(hard.tolist(), res.masks, res.costs, strict=True):
            sol.masks[u], sol.cost[u] = m, c
            if res.proven:
                sol.lower[u], sol.status[u] = c, EXACT
        proven = res.proven
        if not proven:
            extra = max(0.0, res.lower - before)
    lower = float((sol.lower * mult).sum()) + extra
    stats = {"instances": n_u, "instances_solved": int((sol.status != 0).sum()), "hard_instances": len(hard)}
    return sol.masks[inv], lower, bool(proven and not (sol.status == HARD).any()), stats


def _exact_minucs(p: Problem, fk0: np.ndarray, minucs: Any, max_size: int | None, solver: str,
                  time_limit: float | None, node_limit: int, progress: Progress | None,
                  timings: dict[str, float]) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
    """Wilson et al.'s hitting sets of MINUCs (given or computed), lazily completed when truncated."""
    if minucs is None:
        try:
            from ..risk.minucs import find_minucs
        except ModuleNotFoundError as exc:  # pragma: no cover - the engine ships with the package
            raise InputError("The MINUC engine is not available; use engine='direct'.") from exc
        t = time.perf_counter()
        report(progress, 0.02, "Finding MINUCs")
        minucs = find_minucs(p.codes, k=p.k, missing=p.missing, max_size=max_size, progress=None)
        timings["minucs"] = time.perf_counter() - t
    if int(getattr(minucs, "k", p.k)) != p.k or getattr(minucs, "missing", p.missing) != p.missing:
        raise InputError("The MINUCs were computed for another k or missing-value semantics.")
    if getattr(minucs, "n_records", len(p.codes)) != len(p.codes):
        raise InputError("The MINUCs were computed on another file.")
    rec = np.asarray(minucs.record, dtype=np.int64)
    msk = np.asarray(minucs.mask).astype(np.uint64)
    order = np.argsort(rec, kind="stable")
    rec, msk = rec[order], msk[order]
    starts = np.flatnonzero(np.r_[True, rec[1:] != rec[:-1]]) if len(rec) else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], len(rec)] if len(rec) else np.zeros(0, np.int64)
    record_masks = {int(rec[s]): msk[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)}
    ms = getattr(minucs, "max_size", None)
    complete = ms is None or ms >= p.codes.shape[1]
    unsafe = np.flatnonzero(fk0 < p.k)

    def batch(blocks: list[Block]):
        return solve_blocks(blocks, p.costs, solver, time_limit)

    sol, st = solve_hitting(p.codes, record_masks, unsafe, p.costs, p.protected_mask, p.k, complete,
                            node_limit=node_limit, batch_solver=batch, progress=progress)
    lower = float(sol.lower.sum()) + st.extra_lower
    stats = {"instances": st.n_families, "hard_instances": st.n_hard, "lazy_rounds": st.lazy_rounds,
             "lazy_cuts": st.lazy_cuts, "minucs": int(len(rec))}
    return sol.masks, lower, bool(not (sol.status == HARD).any()), stats


_NULLABLE_INT = {f"{p}int{b}": f"{P}Int{b}" for p, P in (("", ""), ("u", "U")) for b in (8, 16, 32, 64)}


def apply_mask(frame: pd.DataFrame, names: Sequence[str], mask: np.ndarray) -> pd.DataFrame:
    """A copy of ``frame`` with the masked cells of the QI columns set to missing.

    Integer and boolean columns become pandas' nullable types (pd.NA), so the other values keep their
    type; float, object, categorical and datetime columns take their own missing marker.
    """
    out = frame.copy()
    for j, col in enumerate(names):
        rows = np.flatnonzero(mask[:, j])
        if len(rows) == 0:
            continue
        s = out[col]
        dt = s.dtype
        if isinstance(dt, np.dtype) and dt.kind in "iu":
            s = s.astype(_NULLABLE_INT[dt.name])
        elif isinstance(dt, np.dtype) and dt.kind == "b":
            s = s.astype("boolean")
        else:
            s = s.copy()
        nullable = isinstance(s.dtype, pd.api.extensions.ExtensionDtype) and not isinstance(s.dtype, pd.CategoricalDtype)
        s.iloc[rows] = pd.NA if nullable else None
        out[col] = s
    return out


@register_step
@dataclasses.dataclass(frozen=True)
class SuppressStep(Step):
    """Local suppression to a protection model at k (Wilson et al.'s optimal local suppression, made strict)."""

    kind: ClassVar[str] = "local_suppression"
    qis: tuple[str, ...] = ()
    k: int = 2
    importance: tuple[tuple[str, float], ...] = ()
    protected: tuple[str, ...] = ()
    model: str = DEFAULT_MODEL
    method: str = "exact"
    alpha: float = 1.0
    solver: str = "highs"
    node_limit: int = NODE_LIMIT
    by: tuple[str, ...] = ()
    linked: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def problem_qis(self, ds: Dataset) -> tuple[str, ...]:
        """The QIs of the problem: the step's (or the dataset's) plus the ``by`` variables.

        k-anonymity within groups (sdcMicro's ``strataVars``) is k-anonymity with the group variable as a
        protected quasi-identifier: no class mixes groups, and the group is never suppressed.
        """
        qis = tuple(self.qis or ds.roles.qis)
        return qis + tuple(b for b in self.by if b not in qis)

    def run(self, ds: Dataset, progress: Progress | None = None) -> SuppressionResult:
        """The full result (tables, bounds) of this step on ``ds``."""
        self._check_links(ds)
        return suppress(ds, self.k, qis=self.problem_qis(ds), importance=self.importance,
                        protected=tuple(self.protected) + tuple(self.by), model=self.model,
                        method=self.method, alpha=self.alpha,  # type: ignore[arg-type]
                        solver=self.solver, node_limit=self.node_limit, progress=progress)

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        return self.apply_with_outcome(ds, progress)[0]

    def apply_with_outcome(self, ds: Dataset, progress: Progress | None = None) -> tuple[Dataset, Optimality]:
        """The release and what is proven of its cost (the report states it per suppression step)."""
        res = self.run(ds, progress)
        return self.release_of(ds, res), res.optimality()

    def release_of(self, ds: Dataset, res: SuppressionResult) -> Dataset:
        """``ds`` with the cells of ``res`` blanked (:meth:`release_mask`); a copy when none is."""
        if res.n_suppressed == 0:
            return ds.with_frame(ds.frame.copy())
        return ds.with_frame(apply_mask(ds.frame, *self.release_mask(res)))

    def release_mask(self, res: SuppressionResult) -> tuple[list[str], np.ndarray]:
        """The cells to blank in the release: the suppressed QI cells, and the variables linked to a QI
        (sdcMicro's ``ghostVars``: a suppressed region also blanks the district) wherever it is suppressed."""
        names = list(res.names)
        cols = [res.mask]
        for key, others in self.linked:
            j = names.index(key)
            for other in others:
                cols.append(res.mask[:, j:j + 1])
                names.append(other)
        return names, np.hstack(cols)

    def _check_links(self, ds: Dataset) -> None:
        qis = self.problem_qis(ds)
        for name in self.by:
            if name not in ds.columns:
                raise InputError(f"The group variable '{name}' is not in the data.")
        seen: set[str] = set()
        for key, others in self.linked:
            if key not in qis:
                raise InputError(f"Linked variables need a quasi-identifier as key; '{key}' is not one.")
            for other in others:
                if other not in ds.columns:
                    raise InputError(f"The linked variable '{other}' is not in the data.")
                if other == ds.roles.weight:
                    raise InputError(f"'{other}' is the weight: every record keeps its weight, so it cannot be "
                                     "linked (blanked with a quasi-identifier).")
                if other in qis or other in seen:
                    raise InputError(f"'{other}' is a quasi-identifier or linked twice; link it to one key only.")
                seen.add(other)

    def describe(self) -> str:
        extra = f", protected {', '.join(self.protected)}" if self.protected else ""
        alpha = f", alpha {self.alpha:g}" if self.alpha != 1.0 else ""
        by = f", within {', '.join(self.by)}" if self.by else ""
        linked = "".join(f", {key} blanks {', '.join(others)}" for key, others in self.linked)
        return f"Local suppression to k={self.k} ({self.model} model, {self.method}{alpha}{extra}{by}{linked})"


# the risk-targeted suppression step (--max-risk) is a recipe step too: importing it registers its kind
from . import suppress_risk as _suppress_risk  # noqa: E402, F401
