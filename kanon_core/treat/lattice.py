"""Optimal full-domain generalization: the best lattice node, exactly, with record suppression.

The lattice (Samarati; Sweeney's MinGen, 2002) has one node per choice of a level for every QI;
node A is below node B when A is at most as general as B on every QI. A node is *k-anonymous* when the
records in classes smaller than k are at most the suppression limit (ARX's rule: those records are
then suppressed). Both properties used below are exact:

1. **Monotonicity of anonymity.** Generalizing maps equal values to equal values, so a record's class
   can only grow (also under wildcard semantics: a match stays a match). Hence if a node is anonymous,
   every node above it is; if it is not, no node below it is. The search classifies every node by
   evaluating only a few: Flash's strategy (Kohlmayer et al. 2012) — walk the lattice bottom-up, build
   a path of unclassified nodes upwards, binary-search the path and *tag* the up-set of each anonymous
   node and the down-set of each non-anonymous one. No node's status is guessed, so the classification
   is that of an exhaustive check.
2. **Monotone lower bounds.** Each metric's loss without suppression is monotone along the lattice and
   never exceeds the loss with suppression (:mod:`.metrics`). Without suppression the optimum is
   therefore a k-minimal node. With suppression the anonymous nodes are examined in increasing order of
   a lower bound (exact from the levels for Prec and entropy, inherited from evaluated nodes below for
   DM and AECS) until the bound exceeds the best loss found — every skipped node is provably no better.

Class sizes are computed on integer codes: each QI's codes go through a per-level lookup table, the
generalized columns are packed into one int64 key, and the classes counted with ``np.bincount`` (small
key ranges) or ``np.unique``. Identical input rows are collapsed first. Under wildcard semantics with
missing values the exact wildcard counter of :mod:`kanon_core.risk.classes` is used instead.

sdcMicro's ``alpha`` (``LatticeProblem.alpha``) enters only the anonymity test: a record is small when its
alpha-weighted fk is below k. Monotonicity still holds: generalizing keeps every match and every
complete record complete, and can only turn a different key into the same key, so each match's weight
(alpha or 1) never decreases. The losses keep counting every match in full.

Datafly (Sweeney 2002) is provided as the classic heuristic for comparison.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..dataset import Dataset, MissingSemantics, check_semantics
from ..errors import InfeasibleError, InputError
from ..progress import Progress, report
from ..risk.keys import group_ids, pack_rows
from .hierarchy import Hierarchy, LevelTables
from .metrics import (
    LEVEL_BOUNDED,
    MetricContext,
    MetricName,
    NodeStats,
    check_metric,
    level_bounds,
    lower_bound,
    n_suppressed,
)
from .metrics import loss as metric_loss

MAX_NODES = 2_000_000
"""Largest lattice searched exactly (the status of every node is held in memory)."""

_KEY_LIMIT = 2**62
_DIRECT_BINCOUNT = 1 << 22


# -- the problem ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LatticeProblem:
    """QI codes, the per-level lookup tables of each QI and the missing semantics.

    ``tables[j][l, c]`` is the generalized code of data code c of QI j at level l (dense, -1 never
    occurs: missing codes stay missing at every level). ``level_labels[j][l]`` names those codes.
    """

    qis: tuple[str, ...]
    codes: np.ndarray
    tables: tuple[np.ndarray, ...]
    missing: MissingSemantics = "wildcard"
    level_labels: tuple[tuple[tuple[str, ...], ...], ...] = ()
    hierarchies: tuple[Hierarchy, ...] = ()
    alpha: float = 1.0
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ..risk.classes import check_alpha

        check_semantics(self.missing)
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        codes = np.ascontiguousarray(self.codes, dtype=np.int32)
        object.__setattr__(self, "codes", codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.tables) or codes.shape[1] != len(self.qis):
            raise InputError("The codes, tables and QI names do not agree.")
        if codes.shape[0] == 0:
            raise InputError("The data has no records.")
        for j, t in enumerate(self.tables):
            if t.ndim != 2 or t.shape[0] < 1 or (codes[:, j].max() >= t.shape[1]):
                raise InputError(f"The lookup table of '{self.qis[j]}' does not cover its codes.")

    @property
    def n_records(self) -> int:
        return int(self.codes.shape[0])

    @property
    def heights(self) -> np.ndarray:
        """Number of levels of each QI (0 .. height - 1)."""
        return np.array([t.shape[0] for t in self.tables], dtype=np.int64)

    @property
    def n_nodes(self) -> int:
        return int(math.prod(int(h) for h in self.heights))

    def distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct input rows and their record counts (cached)."""
        if "distinct" not in self._derived:
            gid, mult = group_ids(self.codes)
            first = np.zeros(len(mult), dtype=np.int64)
            first[gid[::-1]] = np.arange(len(gid) - 1, -1, -1)
            self._derived["distinct"] = (self.codes[first], mult.astype(np.int64))
        return self._derived["distinct"]

    def metric_context(self) -> MetricContext:
        if "ctx" not in self._derived:
            uniq, weight = self.distinct()
            self._derived["ctx"] = MetricContext.build(uniq, weight, self.tables)
        return self._derived["ctx"]

    def check_levels(self, levels: Sequence[int]) -> tuple[int, ...]:
        lv = tuple(int(x) for x in levels)
        if len(lv) != len(self.qis):
            raise InputError(f"Give one level per quasi-identifier ({len(self.qis)}).")
        for q, x, h in zip(self.qis, lv, self.heights, strict=True):
            if not 0 <= x < h:
                raise InputError(f"'{q}' has levels 0 to {h - 1}; level {x} does not exist.")
        return lv


def build_problem(ds: Dataset, hierarchies: Mapping[str, Hierarchy], qis: Sequence[str] | None = None,
                  alpha: float = 1.0) -> LatticeProblem:
    """The lattice problem of ``ds`` on ``qis`` (default: the QI role), with the dataset's missing semantics
    and sdcMicro's ``alpha`` for the anonymity test."""
    qis = tuple(ds.roles.qis if qis is None else qis)
    if not qis:
        raise InputError("Choose at least one quasi-identifier.")
    missing_h = [q for q in qis if q not in hierarchies]
    if missing_h:
        raise InputError(f"No hierarchy for {', '.join(missing_h)}.")
    qm = ds.qi_matrix(qis)
    hs, tabs = [], []
    for j, q in enumerate(qis):
        h = hierarchies[q] if hierarchies[q].name else hierarchies[q].with_name(q)
        t: LevelTables = h.tables(qm.values[j], qm.labels[j])
        hs.append(h)
        tabs.append(t)
    return LatticeProblem(
        qis=qis,
        codes=qm.codes,
        tables=tuple(t.table for t in tabs),
        missing=ds.missing,
        level_labels=tuple(t.labels for t in tabs),
        hierarchies=tuple(hs),
        alpha=alpha,
    )


# -- evaluating one node -------------------------------------------------------------------------------------
class NodeEvaluator:
    """Class sizes of lattice nodes on the distinct rows of a problem (the hot loop of every search)."""

    def __init__(self, problem: LatticeProblem, k: int):
        self.problem = problem
        self.k = int(k)
        uniq, weight = problem.distinct()
        self.uniq, self.weight = uniq, weight
        # Index of each cell into an extended table whose last column maps "missing" to -1.
        self.idx = [np.where(uniq[:, j] < 0, t.shape[1], uniq[:, j]) for j, t in enumerate(problem.tables)]
        self.ext = [np.hstack([t, np.full((t.shape[0], 1), -1, dtype=np.int32)]) for t in problem.tables]
        self.n_groups = [t.max(axis=1, initial=-1).astype(np.int64) + 1 for t in problem.tables]
        self.wildcard = problem.missing == "wildcard" and bool((uniq < 0).any())
        self.evaluations = 0

    def generalized(self, levels: Sequence[int]) -> np.ndarray:
        cols = [self.ext[j][lv][self.idx[j]] for j, lv in enumerate(levels)]
        return np.column_stack(cols) if cols else np.empty((len(self.uniq), 0), np.int32)

    def evaluate(self, levels: Sequence[int]) -> NodeStats:
        self.evaluations += 1
        levels = tuple(int(x) for x in levels)
        key, space = self._key(levels)
        w = self.weight
        if self.wildcard:
            from ..risk.classes import alpha_count, compute_class_sizes

            alpha = self.problem.alpha
            sizes = compute_class_sizes(self.generalized(levels), "wildcard", weights=w,  # w: records per row
                                        wildcard_split=alpha < 1.0)
            fk = np.rint(sizes.Fk_all).astype(np.int64)
            if alpha < 1.0:
                small = alpha_count(fk, np.rint(sizes.Fk_wild).astype(np.int64), alpha) < self.k
            else:
                small = fk < self.k
            n_pat = int(len(np.unique(key)))
            n_kept = int(len(np.unique(key[~small])))
            return NodeStats(levels, fk, small, n_pat, n_kept)
        if space is not None and space <= max(_DIRECT_BINCOUNT, 8 * len(key)):
            counts = np.bincount(key, weights=w, minlength=space)
            fk = counts[key].astype(np.int64)
            n_pat = int(np.count_nonzero(counts))
            n_kept = int(np.count_nonzero(counts >= self.k))
        else:
            _, inv = np.unique(key, return_inverse=True)
            inv = inv.reshape(-1)
            sizes = np.bincount(inv, weights=w).astype(np.int64)
            fk = sizes[inv]
            n_pat = int(len(sizes))
            n_kept = int(np.count_nonzero(sizes >= self.k))
        return NodeStats(levels, fk, fk < self.k, n_pat, n_kept)

    def _key(self, levels: tuple[int, ...]) -> tuple[np.ndarray, int | None]:
        """One int64 per distinct row identifying its generalized pattern (-1 is a value here)."""
        key = np.zeros(len(self.uniq), dtype=np.int64)
        span = 1
        for j, lv in enumerate(levels):
            radix = int(self.n_groups[j][lv]) + 1
            if span * radix >= _KEY_LIMIT:
                return pack_rows(self.generalized(levels)), None
            key = key * radix + (self.ext[j][lv][self.idx[j]].astype(np.int64) + 1)
            span *= radix
        return key, span


# -- results ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeSummary:
    """One evaluated node: levels, records needing suppression, whether within the limit, its losses."""

    levels: tuple[int, ...]
    n_small: int
    anonymous: bool
    loss: float
    lower_bound: float
    n_patterns: int


@dataclass(frozen=True)
class SearchResult:
    """The chosen node and what the search saw.

    ``k_minimal``: every k-minimal node (anonymous, no anonymous direct specialization), with its loss
    and suppression — the candidates an officer may prefer to the optimum. ``evaluated``: every node
    whose classes were counted (anonymous or not), for the loss-versus-suppression trade-off.
    """

    algorithm: str
    qis: tuple[str, ...]
    levels: dict[str, int]
    metric: MetricName
    loss: float
    n_suppressed_records: int
    n_records: int
    k: int
    max_suppression: float
    nodes_evaluated: int
    n_nodes: int
    seconds: float
    k_minimal: pd.DataFrame
    evaluated: pd.DataFrame
    hierarchies: tuple[Hierarchy, ...] = ()
    n_anonymous: int | None = None

    @property
    def level_tuple(self) -> tuple[int, ...]:
        return tuple(self.levels[q] for q in self.qis)

    def step(self):
        """The :class:`~kanon_core.treat.recode.GeneralizeStep` that applies this result, suppression included."""
        from .recode import GeneralizeStep

        if not self.hierarchies:
            raise InputError("This result has no hierarchies attached; build the problem from a dataset.")
        hs = {q: h for q, h in zip(self.qis, self.hierarchies, strict=True)}
        return GeneralizeStep.build(self.levels, hs, suppress_k=self.k if self.n_suppressed_records else 0,
                                    qis=self.qis)

    def tradeoff(self) -> pd.DataFrame:
        """Evaluated nodes on the Pareto front of (records suppressed, loss): the plot of the trade-off."""
        return pareto_front(self.evaluated)

    def to_json(self) -> dict:
        from .metrics import precision_from_loss

        return {
            "algorithm": self.algorithm,
            "qis": list(self.qis),
            "levels": dict(self.levels),
            "metric": self.metric,
            "loss": self.loss,
            "precision": precision_from_loss(self.metric, self.loss),
            "k": self.k,
            "max_suppression": self.max_suppression,
            "n_records": self.n_records,
            "n_suppressed_records": self.n_suppressed_records,
            "nodes_evaluated": self.nodes_evaluated,
            "n_nodes": self.n_nodes,
            "n_anonymous_nodes": self.n_anonymous,
            "seconds": self.seconds,
            "k_minimal": self.k_minimal.to_dict(orient="records"),
        }


def pareto_front(evaluated: pd.DataFrame) -> pd.DataFrame:
    """Rows not dominated in (``n_suppressed``, ``loss``): fewer suppressions or less loss, never both worse."""
    if evaluated.empty:
        return evaluated
    df = evaluated.sort_values(["n_suppressed", "loss"], kind="stable")
    best = math.inf
    keep = []
    for i, loss_v in zip(df.index, df["loss"], strict=True):
        if loss_v < best - 1e-12 * max(1.0, abs(best) if math.isfinite(best) else 1.0):
            keep.append(i)
            best = loss_v
    return df.loc[keep].reset_index(drop=True)


def _frame(problem: LatticeProblem, summaries: Sequence[NodeSummary], n_records: int) -> pd.DataFrame:
    cols: dict[str, list] = {q: [] for q in problem.qis}
    extra: dict[str, list] = {"anonymous": [], "n_suppressed": [], "pct_suppressed": [], "loss": [],
                              "lower_bound": [], "classes": []}
    for s in summaries:
        for q, lv in zip(problem.qis, s.levels, strict=True):
            cols[q].append(lv)
        extra["anonymous"].append(s.anonymous)
        extra["n_suppressed"].append(s.n_small)
        extra["pct_suppressed"].append(100.0 * s.n_small / n_records)
        extra["loss"].append(s.loss)
        extra["lower_bound"].append(s.lower_bound)
        extra["classes"].append(s.n_patterns)
    return pd.DataFrame({**cols, **extra})


# -- the exact search -------------------------------------------------------------------------------------------
def suppression_limit(n_records: int, max_suppression: float) -> int:
    """Records that may be suppressed: ``floor(max_suppression * n)`` (a fraction in [0, 1])."""
    if not 0.0 <= max_suppression <= 1.0:
        raise InputError("The suppression limit is a fraction between 0 and 1 (e.g. 0.01 for 1 %).")
    return int(math.floor(max_suppression * n_records + 1e-9))


class _Lattice:
    """All nodes as level vectors (row-major ids), with up-/down-set masks and node statuses."""

    UNKNOWN, ANON, NOT = 0, 1, 2

    def __init__(self, heights: np.ndarray):
        self.heights = heights
        self.q = len(heights)
        self.n = int(np.prod(heights))
        if self.n > MAX_NODES:
            raise InputError(
                f"The lattice has {self.n:,} nodes (more than {MAX_NODES:,}). Use fewer quasi-identifiers or "
                "hierarchies with fewer levels, or the Datafly heuristic."
            )
        grids = np.indices(tuple(int(h) for h in heights), dtype=np.int16)
        self.nodes = grids.reshape(self.q, -1).T.copy()
        self.strides = np.array([int(np.prod(heights[j + 1:])) for j in range(self.q)], dtype=np.int64)
        self.level_sum = self.nodes.sum(axis=1, dtype=np.int64)
        self.status = np.zeros(self.n, dtype=np.int8)
        self.frac = (self.nodes / np.maximum(heights - 1, 1)).sum(axis=1)

    def node_id(self, levels: Sequence[int]) -> int:
        return int(np.dot(np.asarray(levels, dtype=np.int64), self.strides))

    def up(self, i: int) -> np.ndarray:
        return np.all(self.nodes >= self.nodes[i], axis=1)

    def down(self, i: int) -> np.ndarray:
        return np.all(self.nodes <= self.nodes[i], axis=1)

    def successors(self, i: int) -> list[int]:
        v = self.nodes[i]
        return [i + int(self.strides[j]) for j in range(self.q) if v[j] < self.heights[j] - 1]

    def k_minimal(self) -> np.ndarray:
        """Anonymous nodes none of whose direct specializations is anonymous."""
        anon = self.status == self.ANON
        mask = anon.copy()
        ids = np.arange(self.n)
        for j in range(self.q):
            has_pred = self.nodes[:, j] > 0
            pred = ids[has_pred] - self.strides[j]
            mask[has_pred] &= ~anon[pred]
        return np.flatnonzero(mask)


def search_optimal(
    problem: LatticeProblem,
    k: int,
    max_suppression: float = 0.0,
    metric: str = "prec",
    progress: Progress | None = None,
) -> SearchResult:
    """The k-anonymous node of least loss, provably optimal (see the module docstring).

    Ties (losses equal within 1e-9 relative) are broken deterministically, by fewer levels in all, then lattice order.
    Raises :class:`InfeasibleError` when even the top node needs more suppression than allowed.
    """
    t0 = time.perf_counter()
    metric_name = check_metric(metric)
    k = _check_k(k)
    n = problem.n_records
    limit = suppression_limit(n, max_suppression)
    lat = _Lattice(problem.heights)
    ev = NodeEvaluator(problem, k)
    ctx = problem.metric_context()
    known: dict[int, NodeSummary] = {}

    def evaluate(i: int) -> NodeSummary:
        st = ev.evaluate(lat.nodes[i])
        n_small = n_suppressed(ctx, st)
        s = NodeSummary(st.levels, n_small, n_small <= limit, metric_loss(metric_name, ctx, st),
                        lower_bound(metric_name, ctx, st), st.n_patterns)
        known[i] = s
        return s

    top = lat.n - 1
    if not evaluate(top).anonymous:
        raise InfeasibleError(
            f"Even generalizing every quasi-identifier to its top level leaves {known[top].n_small} record(s) in "
            f"classes smaller than {k}, more than the {limit} allowed. Allow more suppression or lower k."
        )
    lat.status[lat.up(top)] = lat.ANON

    # Phase 1: classify every node (Flash-style paths, binary search, predictive tagging).
    order = np.lexsort((np.arange(lat.n), lat.level_sum))
    for start in order:
        if lat.status[start] != lat.UNKNOWN:
            continue
        report(progress, 0.7 * float((lat.status != lat.UNKNOWN).mean()), "Classifying lattice nodes")
        path = _path_up(lat, int(start))
        lo, hi = 0, len(path) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            i = path[mid]
            st = lat.status[i]
            if st == lat.UNKNOWN:
                anon = evaluate(i).anonymous
                if anon:
                    lat.status[lat.up(i) & (lat.status == lat.UNKNOWN)] = lat.ANON
                else:
                    lat.status[lat.down(i) & (lat.status == lat.UNKNOWN)] = lat.NOT
                st = lat.status[i]
            if st == lat.ANON:
                hi = mid - 1
            else:
                lo = mid + 1

    # Phase 2: the optimum among anonymous nodes, by increasing lower bound.
    kmin = lat.k_minimal()
    for i in kmin:
        if int(i) not in known:
            evaluate(int(i))
    report(progress, 0.75, "Comparing k-minimal nodes")
    # Every anonymous node evaluated so far is a candidate, not only the k-minimal ones: with suppression a
    # node tagged above a k-minimal one may have the least loss, and evaluated nodes are not searched again.
    best_id = min((i for i, s in known.items() if s.anonymous), key=lambda i: (known[i].loss, lat.level_sum[i], i))
    anon_mask = lat.status == lat.ANON
    if metric_name in LEVEL_BOUNDED:
        bound = level_bounds(metric_name, ctx, lat.nodes)
    else:
        bound = np.zeros(lat.n, dtype=np.float64)
        for i, s in sorted(known.items()):
            up = lat.up(i)
            bound[up] = np.maximum(bound[up], s.lower_bound)
    open_mask = anon_mask.copy()
    open_mask[list(known)] = False
    best = known[best_id].loss
    n_open0 = max(1, int(open_mask.sum()))
    while True:
        tol = 1e-9 * max(1.0, abs(best))
        cand = np.flatnonzero(open_mask & (bound < best - tol))
        if len(cand) == 0:
            break
        i = int(cand[np.lexsort((cand, lat.level_sum[cand], bound[cand]))[0]])
        open_mask[i] = False
        s = evaluate(i)
        if s.anonymous and (s.loss < best - tol):
            best, best_id = s.loss, i
        if metric_name not in LEVEL_BOUNDED:
            up = lat.up(i)
            bound[up] = np.maximum(bound[up], s.lower_bound)
        report(progress, 0.75 + 0.25 * (1 - int(open_mask.sum()) / n_open0), "Searching for the optimum")
    report(progress, 1.0, "Done")

    b = known[best_id]
    summaries = [known[i] for i in sorted(known)]
    kmin_rows = [known[int(i)] for i in kmin]
    return SearchResult(
        algorithm="optimal",
        qis=problem.qis,
        levels={q: int(lv) for q, lv in zip(problem.qis, b.levels, strict=True)},
        metric=metric_name,
        loss=float(b.loss),
        n_suppressed_records=int(b.n_small),
        n_records=n,
        k=k,
        max_suppression=float(max_suppression),
        nodes_evaluated=ev.evaluations,
        n_nodes=lat.n,
        seconds=time.perf_counter() - t0,
        k_minimal=_frame(problem, kmin_rows, n).sort_values("loss", kind="stable").reset_index(drop=True),
        evaluated=_frame(problem, summaries, n),
        hierarchies=problem.hierarchies,
        n_anonymous=int(anon_mask.sum()),
    )


def _path_up(lat: _Lattice, start: int) -> list[int]:
    """A chain of unclassified nodes from ``start`` upwards, taking the least-generalizing step each time.

    The step that adds the least relative height (ties: lowest QI position) keeps the path close to the
    specific end of the lattice, where the optimum of monotone metrics lies.
    """
    path = [start]
    cur = start
    while True:
        succ = [s for s in lat.successors(cur) if lat.status[s] == lat.UNKNOWN]
        if not succ:
            return path
        cur = min(succ, key=lambda s: (lat.frac[s], s))
        path.append(cur)


def _check_k(k: int) -> int:
    if int(k) != k or k < 1:
        raise InputError("k must be a whole number of at least 1.")
    return int(k)


def evaluate_node(
    problem: LatticeProblem, levels: Sequence[int], k: int, max_suppression: float = 0.0, metric: str = "prec"
) -> NodeSummary:
    """Loss and suppression of one chosen node (the officer's manual level choice)."""
    lv = problem.check_levels(levels)
    metric_name = check_metric(metric)
    ev = NodeEvaluator(problem, _check_k(k))
    ctx = problem.metric_context()
    st = ev.evaluate(lv)
    n_small = n_suppressed(ctx, st)
    limit = suppression_limit(problem.n_records, max_suppression)
    return NodeSummary(lv, n_small, n_small <= limit, metric_loss(metric_name, ctx, st),
                       lower_bound(metric_name, ctx, st), st.n_patterns)


def exhaustive_search(
    problem: LatticeProblem, k: int, max_suppression: float = 0.0, metric: str = "prec"
) -> pd.DataFrame:
    """Every node evaluated (MinGen, Sweeney 2002): the reference for small lattices and for plots."""
    lat = _Lattice(problem.heights)
    metric_name = check_metric(metric)
    ev = NodeEvaluator(problem, _check_k(k))
    ctx = problem.metric_context()
    limit = suppression_limit(problem.n_records, max_suppression)
    rows = []
    for i in range(lat.n):
        st = ev.evaluate(lat.nodes[i])
        n_small = n_suppressed(ctx, st)
        rows.append(NodeSummary(st.levels, n_small, n_small <= limit, metric_loss(metric_name, ctx, st),
                                lower_bound(metric_name, ctx, st), st.n_patterns))
    return _frame(problem, rows, problem.n_records)


# -- Datafly -----------------------------------------------------------------------------------------------------
def datafly(
    problem: LatticeProblem,
    k: int,
    max_suppression: float | None = None,
    metric: str = "prec",
    progress: Progress | None = None,
) -> SearchResult:
    """Sweeney's Datafly (Sweeney 2002): generalize the QI with the most distinct values until few remain.

    Stops when the records in classes smaller than k are within the limit: ``max_suppression`` as a
    fraction, or Sweeney's rule (at most k records) when None. A heuristic: fast, k-anonymous, not
    minimal in general.
    """
    t0 = time.perf_counter()
    metric_name = check_metric(metric)
    k = _check_k(k)
    n = problem.n_records
    limit = k if max_suppression is None else suppression_limit(n, max_suppression)
    ev = NodeEvaluator(problem, k)
    ctx = problem.metric_context()
    heights = problem.heights
    levels = [0] * len(problem.qis)
    present = [np.unique(problem.codes[:, j][problem.codes[:, j] >= 0]) for j in range(len(problem.qis))]
    summaries = []
    max_steps = int((heights - 1).sum())
    while True:
        st = ev.evaluate(levels)
        n_small = n_suppressed(ctx, st)
        s = NodeSummary(st.levels, n_small, n_small <= limit, metric_loss(metric_name, ctx, st),
                        lower_bound(metric_name, ctx, st), st.n_patterns)
        summaries.append(s)
        report(progress, sum(levels) / max(1, max_steps), "Datafly: generalizing")
        if s.anonymous:
            break
        distinct = [len(np.unique(problem.tables[j][lv][present[j]])) if lv < heights[j] - 1 else -1
                    for j, lv in enumerate(levels)]
        j = int(np.argmax(distinct))
        if distinct[j] < 0:
            raise InfeasibleError(
                f"Even at the top levels {n_small} record(s) remain in classes smaller than {k}, more than the "
                f"{limit} allowed."
            )
        levels[j] += 1
    report(progress, 1.0, "Done")
    return SearchResult(
        algorithm="datafly",
        qis=problem.qis,
        levels={q: int(lv) for q, lv in zip(problem.qis, levels, strict=True)},
        metric=metric_name,
        loss=float(s.loss),
        n_suppressed_records=int(s.n_small),
        n_records=n,
        k=k,
        max_suppression=float(limit / n),
        nodes_evaluated=ev.evaluations,
        n_nodes=int(np.prod(heights)),
        seconds=time.perf_counter() - t0,
        k_minimal=_frame(problem, [], n),
        evaluated=_frame(problem, summaries, n),
        hierarchies=problem.hierarchies,
    )


# -- the trade-off curve ---------------------------------------------------------------------------------------
def tradeoff(
    problem: LatticeProblem,
    k: int,
    limits: Sequence[float] = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1),
    metric: str = "prec",
    progress: Progress | None = None,
) -> pd.DataFrame:
    """The optimal loss for each suppression limit: one exact search per limit (a plot-ready table)."""
    rows = []
    for i, lim in enumerate(limits):
        report(progress, i / max(1, len(limits)), "Trade-off: searching")
        try:
            r = search_optimal(problem, k, lim, metric)
        except InfeasibleError:
            rows.append({"max_suppression": lim, "feasible": False})
            continue
        rows.append({"max_suppression": lim, "feasible": True, "loss": r.loss,
                     "n_suppressed": r.n_suppressed_records,
                     "pct_suppressed": 100.0 * r.n_suppressed_records / r.n_records,
                     "levels": ", ".join(f"{q}={lv}" for q, lv in r.levels.items()),
                     "nodes_evaluated": r.nodes_evaluated})
    report(progress, 1.0, "Done")
    return pd.DataFrame(rows)
