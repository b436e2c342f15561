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
* ``aecs`` — average equivalence class size: records / classes, the suppressed records forming one class
  (LeFevre et al. 2006's C_avg without its division by k, which does not change the ranking at a fixed k).
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
BANDED: frozenset[str] = LEVEL_BOUNDED | {"aecs"}
"""Metrics whose optimal search classifies only the nodes whose bound may still win: the level-bounded ones,
and average class size, whose bound (records / classes) follows from any class table at or below a node."""


def check_metric(metric: str) -> MetricName:
    from ..errors import InputError

    if metric not in METRICS:
        raise InputError(f"Metric must be one of {', '.join(METRICS)}, not '{metric}'.")
    return metric  # type: ignore[return-value]


@dataclass(frozen=True)
class NodeStats:
    """One node's class table and which of its classes are suppressed.

    ``codes`` are the generalized codes of each class (-1 missing, rows distinct), ``count`` its records and
    ``small`` marks the classes whose records are suppressed (failing a criterion). ``fk`` is the number of
    records matching each class (its own count under category semantics; more under wildcard semantics),
    needed by discernibility only; None means ``count``. A class's missing cells are exactly its records'
    missing input cells (a recode never makes a value missing), which is what lets every metric be computed
    on the classes instead of the records.
    """

    levels: tuple[int, ...]
    codes: np.ndarray
    count: np.ndarray
    small: np.ndarray
    fk: np.ndarray | None = None

    @property
    def n_patterns(self) -> int:
        return int(len(self.count))

    @property
    def n_patterns_kept(self) -> int:
        return int(len(self.count) - np.count_nonzero(self.small))

    @property
    def sizes(self) -> np.ndarray:
        return self.count if self.fk is None else self.fk


@dataclass(frozen=True)
class MetricContext:
    """What the metrics need about the data, computed once per search.

    ``max_levels[j]`` is the top level of QI j; ``observed[j]`` the records with QI j observed (Prec's
    cells); ``entropy_level[j][l]`` the bits lost over all records with QI j at level l, and
    ``root_bits[j][l][g]`` the bits a value with level-l code g loses more when it goes to the root
    (suppression): ``log2(count of its root group / count of g)``, a function of g alone because the levels
    nest.
    """

    n_records: int
    max_levels: np.ndarray
    observed: np.ndarray
    entropy_level: tuple[np.ndarray, ...]
    root_bits: tuple[tuple[np.ndarray, ...], ...]

    @classmethod
    def build(cls, uniq: np.ndarray, weight: np.ndarray, tables: Sequence[np.ndarray]) -> MetricContext:
        """``uniq`` distinct input rows (codes, -1 missing) with ``weight`` records each; ``tables[j][l, c]``
        the generalized code at level l of data code c of QI j."""
        max_levels = np.array([t.shape[0] - 1 for t in tables], dtype=np.int64)
        weight = np.asarray(weight, dtype=np.float64)
        totals, roots = [], []
        for j, t in enumerate(tables):
            col = uniq[:, j]
            ok = col >= 0
            card = t.shape[1]
            cnt = np.bincount(col[ok], weights=weight[ok], minlength=card).astype(np.float64)
            total = np.zeros(t.shape[0], dtype=np.float64)
            gcnts = []
            for lv in range(t.shape[0]):
                g = t[lv]
                gcnt = np.bincount(g, weights=cnt, minlength=int(g.max()) + 1 if card else 0)
                gcnts.append(gcnt)
                with np.errstate(divide="ignore", invalid="ignore"):
                    c = np.where(cnt > 0, np.log2(gcnt[g] / np.where(cnt > 0, cnt, 1.0)), 0.0)
                total[lv] = float((c * cnt).sum())
            top = t[-1]
            per_level = []
            for lv in range(t.shape[0]):
                # root group of each level-lv code (nested levels: any data code of the group tells it)
                n_g = len(gcnts[lv])
                root_of = np.zeros(n_g, dtype=np.int64)
                if card:
                    root_of[t[lv]] = top
                with np.errstate(divide="ignore", invalid="ignore"):
                    bits = np.where(gcnts[lv] > 0, np.log2(gcnts[-1][root_of] / np.where(gcnts[lv] > 0, gcnts[lv],
                                                                                             1.0)), 0.0)
                per_level.append(bits)
            totals.append(total)
            roots.append(tuple(per_level))
        observed = ((uniq >= 0) * weight[:, None]).sum(axis=0).astype(np.float64) if len(uniq) else np.zeros(
            len(tables))
        return cls(int(round(weight.sum())), max_levels, observed, tuple(totals), tuple(roots))

    @property
    def n_qis(self) -> int:
        return len(self.max_levels)


def n_suppressed(ctx: MetricContext, stats: NodeStats) -> int:
    return int(stats.count[stats.small].sum())


def suppressed_observed(stats: NodeStats) -> np.ndarray:
    """Per QI, the observed input cells of the suppressed records (their classes' records with the QI observed)."""
    from ._lattice_kernel import observed_of

    return observed_of(stats.codes, stats.count, np.asarray(stats.small, dtype=np.bool_))


def lower_bound(metric: MetricName, ctx: MetricContext, stats: NodeStats) -> float:
    """The loss of the node if no record were suppressed (monotone, <= :func:`loss`)."""
    if metric in LEVEL_BOUNDED:
        return float(level_bounds(metric, ctx, np.asarray([stats.levels]))[0])
    if metric == "dm":
        return float((stats.count * stats.sizes).sum())
    return ctx.n_records / max(1, stats.n_patterns)  # aecs


def loss(metric: MetricName, ctx: MetricContext, stats: NodeStats) -> float:
    """The loss of the node with the records of the ``small`` classes suppressed."""
    n = ctx.n_records
    sup = n_suppressed(ctx, stats)
    if metric == "prec":
        sup_obs = suppressed_observed(stats) if sup else 0.0
        return float(precision_loss(full_domain_generalized(stats.levels, ctx.max_levels, ctx.observed, sup_obs),
                                    ctx.observed))
    if metric == "dm":
        return discernibility(stats.count, stats.sizes, stats.small, n)
    if metric == "aecs":
        return average_class_size(n, stats.n_patterns_kept, sup > 0)
    # entropy: the bound plus, for suppressed cells, the extra bits of going to the root
    base = float(level_bounds("entropy", ctx, np.asarray([stats.levels]))[0])
    return base + (suppression_bits(ctx, stats) if sup else 0.0)


def discernibility(count: np.ndarray, sizes: np.ndarray, suppressed: np.ndarray, n_records: int) -> float:
    """Discernibility (Bayardo & Agrawal 2005), the one definition in kanon: each kept record is charged the
    size of its class (``sizes``, fk: under wildcard semantics the records it matches before suppression),
    each suppressed record the number of records ``n_records``. ``count`` records share each entry (a class
    table's classes, or 1 per record); ``suppressed`` marks the suppressed entries.
    :mod:`kanon_core.utility.info_loss` (the Compare page and the report) calls it too."""
    count = np.asarray(count, dtype=np.float64)
    sup = np.asarray(suppressed, dtype=np.bool_)
    kept = ~sup
    return float((count[kept] * np.asarray(sizes, dtype=np.float64)[kept]).sum()) + float(count[sup].sum()) * n_records


def average_class_size(n_records: int, n_kept_classes: int, any_suppressed: bool) -> float:
    """Records per class, the suppressed records forming one class: ``n / (kept classes + 1 if any suppressed)``,
    the one definition in kanon (the lattice's ``aecs`` and :mod:`kanon_core.utility.info_loss`). This is
    LeFevre et al.'s C_avg without their division by k, so it compares releases at the same k only."""
    return n_records / max(1, n_kept_classes + (1 if any_suppressed else 0))


def suppression_bits(ctx: MetricContext, stats: NodeStats) -> float:
    """Non-uniform entropy added by suppressing the ``small`` classes (their observed cells go to the root)."""
    rows = stats.codes[stats.small]
    w = stats.count[stats.small].astype(np.float64)
    extra = 0.0
    for j, lv in enumerate(stats.levels):
        col = rows[:, j]
        ok = col >= 0
        extra += float((ctx.root_bits[j][lv][col[ok]] * w[ok]).sum())
    return extra


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
