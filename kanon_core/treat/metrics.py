"""Information-loss metrics of a full-domain generalization with record suppression.

Every metric is a loss (lower is better) of one lattice node (a level per QI) after the records still
in classes smaller than k are suppressed. A suppressed record counts as fully generalized (Sweeney's
convention for Prec; ARX's for the others). Four metrics, as in ARX:

* ``prec`` — 1 - Prec (Sweeney 2002): the mean over the *observed* input cells of ``level / height`` of
  the variable's hierarchy, height = number of levels above the original. 0 = original data, 1 = all
  ``*``. A cell already missing in the input carries no information, so generalizing or suppressing it
  loses none: it is in neither the numerator nor the denominator. :func:`precision_loss` is this one
  definition; :mod:`kanon_core.utility.info_loss` (the Compare page and the report) calls it too.
* ``dm`` — discernibility (Bayardo & Agrawal 2005): each kept record is charged the size of its class,
  each suppressed record the size of the data set. Under wildcard semantics "its class" is fk, the
  number of records it matches.
* ``aecs`` — average equivalence class size (LeFevre et al. 2006): records / classes, the suppressed
  records forming one class.
* ``entropy`` — non-uniform entropy (Gionis & Tassa 2009): sum over cells of
  ``log2(count of the generalized value / count of the original value)`` in that variable, the bits an
  attacker lacks to recover the original value; a suppressed cell is generalized to the root.

The search needs *lower bounds*: the loss as if nothing were suppressed. Each bound is monotone along
the lattice (coarser nodes never have a smaller bound) and never exceeds the loss with suppression,
which is what lets the optimal search skip nodes without evaluating them (see ``lattice``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

MetricName = Literal["prec", "dm", "aecs", "entropy"]
METRICS: tuple[MetricName, ...] = ("prec", "dm", "aecs", "entropy")
METRIC_LABELS = {
    "prec": "Precision loss (1 - Prec, Sweeney)",
    "dm": "Discernibility",
    "aecs": "Average equivalence class size",
    "entropy": "Non-uniform entropy (bits)",
}
LEVEL_BOUNDED: frozenset[str] = frozenset({"prec", "entropy"})
"""Metrics whose lower bound follows from the levels alone (no class counting needed)."""


def check_metric(metric: str) -> MetricName:
    from ..errors import InputError

    if metric not in METRICS:
        raise InputError(f"Metric must be one of {', '.join(METRICS)}, not '{metric}'.")
    return metric  # type: ignore[return-value]


@dataclass(frozen=True)
class NodeStats:
    """Class sizes at one node, per distinct input row (``weight`` records each).

    ``fk[i]`` is the size of row i's class at this node (records matching it); ``small`` marks the rows
    to suppress (fk < k). ``n_patterns`` counts distinct generalized rows, ``n_patterns_kept`` those
    not suppressed.
    """

    levels: tuple[int, ...]
    fk: np.ndarray
    small: np.ndarray
    n_patterns: int
    n_patterns_kept: int

    @property
    def n_small_rows(self) -> int:
        return int(self.small.sum())


@dataclass(frozen=True)
class MetricContext:
    """What the metrics need about the data, computed once per search.

    ``uniq`` are the distinct input rows (codes, -1 missing) and ``weight`` their record counts;
    ``max_levels[j]`` the top level of QI j; ``entropy_cost[j][l, c]`` the bits lost on a value with
    code c of QI j at level l, and ``entropy_level[j][l]`` their total over the records; ``observed[j]``
    the records with QI j observed (Prec's cells) and ``observed_rows[i, j]`` whether row i has it.
    """

    n_records: int
    uniq: np.ndarray
    weight: np.ndarray
    max_levels: np.ndarray
    entropy_cost: tuple[np.ndarray, ...]
    entropy_level: tuple[np.ndarray, ...]
    observed: np.ndarray
    observed_rows: np.ndarray

    @classmethod
    def build(cls, uniq: np.ndarray, weight: np.ndarray, tables: Sequence[np.ndarray]) -> MetricContext:
        """``tables[j][l, c]`` is the generalized code at level l of data code c of QI j."""
        max_levels = np.array([t.shape[0] - 1 for t in tables], dtype=np.int64)
        costs, totals = [], []
        for j, t in enumerate(tables):
            col = uniq[:, j]
            ok = col >= 0
            card = t.shape[1]
            cnt = np.bincount(col[ok], weights=weight[ok], minlength=card).astype(np.float64)
            cost = np.zeros((t.shape[0], card), dtype=np.float64)
            total = np.zeros(t.shape[0], dtype=np.float64)
            for lv in range(t.shape[0]):
                g = t[lv]
                gcnt = np.bincount(g, weights=cnt, minlength=int(g.max()) + 1 if card else 0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    c = np.where(cnt > 0, np.log2(gcnt[g] / np.where(cnt > 0, cnt, 1.0)), 0.0)
                cost[lv] = c
                total[lv] = float((c * cnt).sum())
            costs.append(cost)
            totals.append(total)
        obs_rows = uniq >= 0
        observed = (obs_rows * weight[:, None]).sum(axis=0).astype(np.float64) if len(uniq) else np.zeros(
            len(tables))
        return cls(int(weight.sum()), uniq, weight.astype(np.int64), max_levels, tuple(costs), tuple(totals),
                   observed, obs_rows)

    @property
    def n_qis(self) -> int:
        return len(self.max_levels)


def n_suppressed(ctx: MetricContext, stats: NodeStats) -> int:
    return int(ctx.weight[stats.small].sum())


def lower_bound(metric: MetricName, ctx: MetricContext, stats: NodeStats) -> float:
    """The loss of the node if no record were suppressed (monotone, <= :func:`loss`)."""
    if metric in LEVEL_BOUNDED:
        return float(level_bounds(metric, ctx, np.asarray([stats.levels]))[0])
    if metric == "dm":
        return float((ctx.weight * stats.fk).sum())
    return ctx.n_records / max(1, stats.n_patterns)  # aecs


def loss(metric: MetricName, ctx: MetricContext, stats: NodeStats) -> float:
    """The loss of the node with the records of classes smaller than k suppressed."""
    n = ctx.n_records
    sup = n_suppressed(ctx, stats)
    if metric == "prec":
        sup_obs = (ctx.observed_rows[stats.small] * ctx.weight[stats.small, None]).sum(axis=0) if sup else 0.0
        return float(precision_loss(full_domain_generalized(stats.levels, ctx.max_levels, ctx.observed, sup_obs),
                                    ctx.observed))
    if metric == "dm":
        kept = ~stats.small
        return float((ctx.weight[kept] * stats.fk[kept]).sum()) + float(sup) * n
    if metric == "aecs":
        return n / max(1, stats.n_patterns_kept + (1 if sup else 0))
    # entropy: the bound plus, for suppressed rows, the extra bits of going to the root
    base = float(level_bounds("entropy", ctx, np.asarray([stats.levels]))[0])
    if sup == 0:
        return base
    rows = ctx.uniq[stats.small]
    w = ctx.weight[stats.small]
    extra = 0.0
    for j, lv in enumerate(stats.levels):
        col = rows[:, j]
        ok = col >= 0
        cost = ctx.entropy_cost[j]
        extra += float(((cost[-1][col[ok]] - cost[lv][col[ok]]) * w[ok]).sum())
    return base + extra


def level_bounds(metric: MetricName, ctx: MetricContext, nodes: np.ndarray) -> np.ndarray:
    """Lower bounds of many nodes at once (``nodes``: one row of levels per node), prec and entropy only."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if metric == "prec":
        return precision_loss(full_domain_generalized(nodes, ctx.max_levels, ctx.observed), ctx.observed)
    if metric == "entropy":
        out = np.zeros(len(nodes), dtype=np.float64)
        for j, tot in enumerate(ctx.entropy_level):
            out += tot[nodes[:, j]]
        return out
    raise ValueError(f"{metric} has no level-only bound")


def full_domain_generalized(levels: np.ndarray | Sequence[int], max_levels: np.ndarray, observed: np.ndarray,
                            suppressed: np.ndarray | float = 0.0) -> np.ndarray:
    """Per QI, the sum over its observed cells of ``level / height`` at a full-domain node (the last axis
    runs over QIs; ``levels`` may hold many nodes): kept cells sit at the node's level, ``suppressed``
    observed cells at the top (1 each)."""
    frac = np.asarray(levels, dtype=np.float64) / np.maximum(max_levels, 1)
    return (observed - suppressed) * frac + suppressed


def precision_loss(generalized: np.ndarray, observed: np.ndarray) -> np.ndarray | float:
    """1 - Prec (Sweeney 2002), the one definition in kanon: ``generalized[..., j]`` is the sum over QI j's
    observed input cells of ``h / |DGH|`` (a suppressed cell counts 1) and ``observed[..., j]`` their number.
    Cells missing in the input are in neither (they carry no information to lose); without any observed
    cell nothing can be lost (0)."""
    total = np.sum(observed, axis=-1)
    gen = np.sum(generalized, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, gen / np.where(total > 0, total, 1.0), 0.0 * gen)


def precision_from_loss(metric: MetricName, value: float) -> float | None:
    """Sweeney's Prec (higher is better) for the ``prec`` metric, None for the others."""
    return 1.0 - value if metric == "prec" else None
