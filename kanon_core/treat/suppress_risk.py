"""Risk-targeted local suppression: blank QI cells of the classes whose individual risk is too high.

sdcMicro's "suppress values with high risks" (``localSupp``, Templ, Kowarik & Meindl) sets *one* key
variable, chosen by the user, to missing in every record whose individual risk exceeds a threshold, once,
and does not check what risk remains. This module does the same job with three differences:

* **cells are chosen per class, by importance and by effect on risk.** The records of one class (equal
  QI values) share their fk, Fk and Benedetti–Franconi risk (:mod:`kanon_core.risk.individual`), so they
  are treated alike: for a risky class every QI that may be suppressed (not protected, not already
  missing) is tried, the class's fk and Fk with that cell blank in all its records are counted against
  the current release (under the data set's missing semantics and sdcMicro's alpha), and its risk
  recomputed. If some cells bring the class to the threshold, the cheapest is taken (cost = the
  variable's importance, ties broken by the lower resulting risk, then variable order); otherwise the
  cell with the largest risk reduction per unit of cost (a rise is never chosen over a fall).
* **it repeats until no class is above the threshold**, or nothing more can be done. Every risky class
  takes one cell per pass, all chosen on the same release, and then the risks of all classes are
  recounted: blanking changes other classes too (under wildcard semantics it only adds matches; under
  category semantics a class that moves joins another, so that one's risk can change either way), and a
  class still above the threshold is treated again in the next pass. Each pass blanks at least one cell
  or stops, so the passes end.
* **the result is recounted independently** — fk and Fk of the released table by the exact class-size
  kernels (:func:`kanon_core.risk.classes.class_sizes_of_table`), not by the per-candidate count used
  to choose cells — and the records that remain above the threshold (every cell protected or already
  missing) are reported with their number, never hidden.

Working on classes rather than records makes the result independent of the records' order and lets the
same code run on a census's class table aggregated by an out-of-core engine
(:func:`suppress_table_to_risk`; ``kanon suppress --max-risk --engine duckdb``): a release at scale blanks
whole classes, which an engine writes without numbering records. The choice is greedy: it is not claimed
to be minimal.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..classtable import ClassTable
from ..dataset import Dataset, MissingSemantics, check_semantics
from ..errors import InputError
from ..progress import Progress, report
from ..risk.classes import alpha_count, check_alpha
from ..risk.individual import DEFAULT_MAX_RISK, RISK_METHODS, check_max_risk, global_risk, individual_risk
from ..risk.keys import group_ids
from ..steps import Step, register_step
from .suppress import Importance, apply_mask, resolve_costs

MAX_PASSES = 100
"""A guard only: each pass blanks at least one cell, so the passes end by themselves."""
CANDIDATE_BATCH = 1 << 20
"""Candidate cells sized in one count (with the table): bounds the memory of a round."""


@dataclass(frozen=True, eq=False)
class RiskSuppressionResult:
    """Cells suppressed to bring every record's individual risk to at most ``threshold``.

    One row per record, or per class of a class table at scale, with ``count`` the records each row stands
    for (None: one each); every total weighs the rows by it. ``risk_before``/``risk_after`` are per row
    (the latter recounted independently on the release); ``remaining`` the rows still above the threshold
    (their free cells are all used up).
    """

    names: tuple[str, ...]
    threshold: float
    method: str
    missing: str
    alpha: float
    weighted: bool
    mask: np.ndarray = field(repr=False)
    costs: np.ndarray = field(repr=False)
    protected: tuple[str, ...]
    risk_before: np.ndarray = field(repr=False)
    risk_after: np.ndarray = field(repr=False)
    passes: int
    seconds: float
    count: np.ndarray | None = field(default=None, repr=False)

    @property
    def _records(self) -> np.ndarray:
        return np.ones(len(self.mask), np.int64) if self.count is None else np.asarray(self.count, np.int64)

    @property
    def n_suppressed(self) -> int:
        return int((self.mask.sum(axis=1) * self._records).sum())

    @property
    def cost(self) -> float:
        return float(((self.mask * self.costs[None, :]).sum(axis=1) * self._records).sum())

    @property
    def records_touched(self) -> int:
        return int(self._records[self.mask.any(axis=1)].sum())

    @property
    def remaining(self) -> np.ndarray:
        return np.flatnonzero(self.risk_after > self.threshold)

    @property
    def records_remaining(self) -> int:
        return int(self._records[self.remaining].sum())

    @property
    def per_variable(self) -> dict[str, int]:
        per = (self.mask * self._records[:, None]).sum(axis=0)
        return {n: int(c) for n, c in zip(self.names, per.tolist(), strict=True)}

    def summary(self) -> dict[str, Any]:
        before = global_risk(self.risk_before, self._records, threshold=self.threshold)
        after = global_risk(self.risk_after, self._records, threshold=self.threshold)
        return {
            "target": "max_individual_risk", "max_risk": self.threshold, "risk_method": self.method,
            "missing": self.missing, "alpha": self.alpha, "risk_weighted": self.weighted,
            "n_suppressed": self.n_suppressed, "cost": self.cost, "records_touched": self.records_touched,
            "per_variable": self.per_variable, "protected": list(self.protected),
            "records_above_before": before.n_above, "records_above_after": after.n_above,
            "expected_reidentifications_before": before.expected_reidentifications,
            "expected_reidentifications_after": after.expected_reidentifications,
            "highest_risk_after": after.max_risk, "passes": self.passes, "seconds": round(self.seconds, 4),
            "optimal": False,
        }


def class_risk(table: ClassTable, codes: np.ndarray, missing: MissingSemantics, alpha: float,
               method: str) -> tuple[np.ndarray, np.ndarray, ClassTable]:
    """Individual risk of each class of ``table`` when its QI codes are ``codes`` (classes equal after
    blanking merged): per class the risk, the released class it falls in, and the released table."""
    gid, _ = group_ids(codes)
    released = ClassTable(table.qis, codes, table.count, table.weight)._merge(gid, codes)
    sizes = released.class_sizes(missing, alpha)
    return individual_risk(sizes.fk, sizes.Fk, method)[gid], gid, released


def released_risk(table: ClassTable, blank: np.ndarray, missing: MissingSemantics, alpha: float,
                  method: str) -> np.ndarray:
    """Each class's individual risk in the release that blanks ``blank`` (the independent recount)."""
    return class_risk(table, np.where(blank, np.int32(-1), table.codes), missing, alpha, method)[0]


def _candidate_risk(released: ClassTable, rows: np.ndarray, js: np.ndarray, missing: MissingSemantics,
                    alpha: float, method: str) -> np.ndarray:
    """The risk of released class ``rows[i]`` if QI ``js[i]`` were blanked in all its records, for every i.

    The blanked rows are added to the table with no records and sized with it by the class-size kernels,
    all candidates of a round in one count (the table's own pairs of missing patterns are then matched once,
    not once per QI).
    The class's own records then join the blanked row: under category semantics they add their count and
    weight to it; under wildcard semantics the class matches its blanked row and is counted already, as a
    wildcard match when it has a missing QI, which ``alpha`` would discount, so that part is given back
    (the records become identical to the row, and a record counts in full for its own key).
    """
    cand = released.codes[rows].copy()
    cand[np.arange(len(rows)), js] = -1
    both = np.vstack([released.codes, cand])
    n = released.n_classes
    count = np.concatenate([released.count, np.zeros(len(rows), np.int64)])
    weight = None if released.weight is None else np.concatenate([released.weight, np.zeros(len(rows))])
    gid, _ = group_ids(both)
    merged = ClassTable(released.qis, both, count, weight)._merge(gid, both)
    sizes = merged.class_sizes(missing, 1.0, wildcard_split=alpha < 1.0)
    at = gid[n:]
    own_n = released.count[rows]
    own_w = None if released.weight is None else released.weight[rows]
    if missing == "category":
        fk = sizes.fk_all[at] + own_n
        Fk = None if own_w is None else sizes.Fk_all[at] + own_w  # noqa: N806
    else:
        wild = (released.codes[rows] < 0).any(axis=1)
        fk = alpha_count(sizes.fk_all[at], sizes.fk_wild[at] - own_n * wild, alpha) if alpha < 1.0 \
            else sizes.fk_all[at]
        Fk = None if own_w is None else (  # noqa: N806
            sizes.Fk_all[at] - (1.0 - alpha) * (sizes.Fk_wild[at] - own_w * wild) if alpha < 1.0
            else sizes.Fk_all[at])
    return individual_risk(fk, Fk, method)


def _candidate_risk_by_projection(released: ClassTable, rows: np.ndarray, j: int, method: str) -> np.ndarray:
    """:func:`_candidate_risk` under wildcard semantics with every match counted in full (alpha = 1), for QI
    ``j`` of the classes ``rows``, by one class-size count of a table no larger than the table itself.

    A record matches class c with QI j blanked exactly when it agrees with c, or is missing, on every other
    QI (a blank matches anything): so the blanked class's matches are c's matches on the table projected
    on the QIs other than j, c's own records (which move to the blanked row) among them. At alpha = 1 every
    match counts in full, so its fk and Fk are the wildcard sizes of c's row in that projected table.
    """
    idx = [i for i in range(len(released.qis)) if i != j]
    if not idx:  # the class's only QI blanked: it matches every record
        fk = np.full(len(rows), released.n_records, np.int64)
        Fk = None if released.weight is None else np.full(len(rows), float(released.weight.sum()))  # noqa: N806
        return individual_risk(fk, Fk, method)
    proj_codes = released.codes[:, idx]
    gid, _ = group_ids(proj_codes)
    proj = ClassTable(tuple(released.qis[i] for i in idx), proj_codes, released.count,
                      released.weight)._merge(gid, proj_codes)
    sizes = proj.class_sizes("wildcard")
    of = gid[rows]
    return individual_risk(sizes.fk[of], None if sizes.Fk is None else sizes.Fk[of], method)


def _risk_if_blanked(released: ClassTable, rows: np.ndarray, j: int, missing: MissingSemantics, alpha: float,
                     method: str) -> np.ndarray:
    """The risk of each class in ``rows`` with QI ``j`` blanked in all its records: by projection where that
    is the same count (wildcard, alpha = 1), else with the blanked rows sized beside the table, in batches."""
    if missing == "wildcard" and alpha == 1.0:
        return _candidate_risk_by_projection(released, rows, j, method)
    out = np.empty(len(rows))
    for lo in range(0, len(rows), CANDIDATE_BATCH):
        hi = lo + CANDIDATE_BATCH
        out[lo:hi] = _candidate_risk(released, rows[lo:hi], np.full(len(rows[lo:hi]), j), missing, alpha, method)
    return out


class _Choice:
    """The cell chosen so far for each risky class, folded in one QI at a time, so that a round never holds
    every candidate cell at once (18.5 million on a census's table).

    The rule: among the cells that bring the class to the threshold the cheapest, then the lower risk; for a
    class none brings there, the largest reduction per unit of cost (a rise is never chosen over a fall),
    then the cost, then the risk. QIs are folded in increasing order and only a strictly better cell
    replaces the one kept, so a tie on every key keeps the earlier QI. Risks are compared to 12 decimals,
    so that weight sums added up in another order (an engine's aggregate) break ties the same way; an
    undefined risk ranks after every defined one.
    """

    def __init__(self, current: np.ndarray, threshold: float) -> None:
        n = len(current)
        self.current, self.threshold = np.round(current, 12), threshold
        self.reach_j, self.other_j = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        self.reach = (np.full(n, np.inf), np.full(n, np.inf))  # cost, risk
        self.other = (np.full(n, np.inf), np.full(n, np.inf), np.full(n, np.inf))  # -gain per cost, cost, risk

    def fold(self, at: np.ndarray, j: int, cost: float, risk: np.ndarray) -> None:
        """Candidates: QI ``j`` (importance ``cost``) of the classes ``at`` (positions), with these risks."""
        risk = np.round(risk, 12)
        risk = np.where(np.isnan(risk), np.inf, risk)
        enough = risk <= self.threshold
        a, r = at[enough], risk[enough]
        c0, r0 = self.reach[0][a], self.reach[1][a]
        better = (cost < c0) | ((cost == c0) & (r < r0))
        self._keep(self.reach_j, self.reach, a[better], j, (cost, r[better]))
        b, r = at[~enough], risk[~enough]
        gain = -(self.current[b] - r) / cost
        gain = np.where(np.isnan(gain), np.inf, gain)
        g0, c0, r0 = self.other[0][b], self.other[1][b], self.other[2][b]
        better = (gain < g0) | ((gain == g0) & ((cost < c0) | ((cost == c0) & (r < r0))))
        self._keep(self.other_j, self.other, b[better], j, (gain[better], cost, r[better]))

    @staticmethod
    def _keep(chosen: np.ndarray, keys: tuple, where: np.ndarray, j: int, values: tuple) -> None:
        chosen[where] = j
        for key, value in zip(keys, values, strict=True):
            key[where] = value

    def chosen(self) -> np.ndarray:
        """Per class, the QI chosen (a cell reaching the threshold first)."""
        return np.where(self.reach_j >= 0, self.reach_j, self.other_j)


def suppress_table_to_risk(table: ClassTable, threshold: float = DEFAULT_MAX_RISK, *,
                           costs: np.ndarray | None = None, protected: np.ndarray | None = None,
                           method: str = "approx", alpha: float = 1.0, missing: MissingSemantics = "wildcard",
                           progress: Progress | None = None) -> RiskSuppressionResult:
    """Blank cells class by class until no class's individual risk exceeds ``threshold`` (module docstring).

    ``table`` is a class table (records aggregated on the QIs, with weight sums when weighted); ``costs``
    the QIs' importances (default 1), ``protected`` flags QIs never blanked. The result has one row per
    class (``mask[c, j]``: QI j blanked in every record of class c), weighed by the classes' counts.
    """
    t0 = time.perf_counter()
    threshold = check_max_risk(threshold)
    if method not in RISK_METHODS:
        raise InputError(f"The individual risk method must be one of {', '.join(RISK_METHODS)}.")
    alpha = check_alpha(alpha)
    missing = check_semantics(missing)
    q = len(table.qis)
    costs = np.ones(q) if costs is None else np.asarray(costs, dtype=np.float64)
    prot = np.zeros(q, dtype=bool) if protected is None else np.asarray(protected, dtype=bool)
    codes = np.array(table.codes, dtype=np.int32, copy=True)
    report(progress, 0.0, "Counting individual risks")
    risk, gid, released = class_risk(table, codes, missing, alpha, method)
    before = risk
    passes = 0
    while passes < MAX_PASSES:
        row_risk = np.zeros(released.n_classes)
        row_risk[gid] = risk
        free = (released.codes >= 0) & ~prot[None, :]
        rows = np.flatnonzero((row_risk > threshold) & free.any(axis=1))
        if not len(rows):
            break
        passes += 1
        choice = _Choice(row_risk[rows], threshold)
        for j in np.flatnonzero(~prot):
            at = np.flatnonzero(free[rows, j])
            report(progress, min(0.9, 0.05 * passes), f"Round {passes}: {len(rows):,} classes above the limit, "
                                                      f"trying {table.qis[j]}")
            if len(at):
                choice.fold(at, int(j), float(costs[j]), _risk_if_blanked(released, rows[at], int(j), missing,
                                                                         alpha, method))
        chosen_rows, chosen_j = rows, choice.chosen()
        j_of_row = np.full(released.n_classes, -1, np.int64)
        j_of_row[chosen_rows] = chosen_j
        jj = j_of_row[gid]
        hit = np.flatnonzero(jj >= 0)
        codes[hit, jj[hit]] = -1
        risk, gid, released = class_risk(table, codes, missing, alpha, method)
    report(progress, 0.95, "Recounting the risks independently")
    blank = (codes < 0) & (table.codes >= 0)
    after = released_risk(table, blank, missing, alpha, method)
    report(progress, 1.0, "Done")
    return RiskSuppressionResult(
        names=tuple(table.qis), threshold=threshold, method=method, missing=missing, alpha=alpha,
        weighted=table.weight is not None, mask=blank, costs=costs,
        protected=tuple(n for n, p in zip(table.qis, prot.tolist(), strict=True) if p),
        risk_before=before, risk_after=after, passes=passes, seconds=time.perf_counter() - t0,
        count=np.asarray(table.count, np.int64))


def suppress_to_risk(ds: Dataset, threshold: float = DEFAULT_MAX_RISK, *, qis: Sequence[str] | None = None,
                     importance: Importance = None, protected: Sequence[str] = (), method: str = "approx",
                     alpha: float = 1.0, missing: MissingSemantics | None = None,
                     progress: Progress | None = None) -> RiskSuppressionResult:
    """Suppress QI cells until no record's individual risk exceeds ``threshold`` (module docstring): the
    records aggregated into their class table, treated by :func:`suppress_table_to_risk`."""
    t0 = time.perf_counter()
    qm = ds.qi_matrix(qis)
    names = qm.names
    costs, prot = resolve_costs(names, importance, protected)
    table = ClassTable.from_codes(qm.codes, names, weights=ds.weights())
    res = suppress_table_to_risk(table, threshold, costs=costs, protected=prot, method=method, alpha=alpha,
                                 missing=missing or ds.missing, progress=progress)
    of = table.record_class if table.n_records else np.zeros(0, np.int64)
    return dataclasses.replace(res, mask=res.mask[of], risk_before=res.risk_before[of],
                               risk_after=res.risk_after[of], seconds=time.perf_counter() - t0, count=None)


@register_step
@dataclasses.dataclass(frozen=True)
class RiskSuppressStep(Step):
    """Local suppression until no record's individual risk exceeds ``max_risk`` (sdcMicro's localSupp, made
    iterative and checked)."""

    kind: ClassVar[str] = "risk_suppression"
    qis: tuple[str, ...] = ()
    max_risk: float = DEFAULT_MAX_RISK
    importance: tuple[tuple[str, float], ...] = ()
    protected: tuple[str, ...] = ()
    method: str = "approx"
    alpha: float = 1.0

    def run(self, ds: Dataset, progress: Progress | None = None) -> RiskSuppressionResult:
        return suppress_to_risk(ds, self.max_risk, qis=self.qis or None, importance=self.importance,
                                protected=self.protected, method=self.method, alpha=self.alpha, progress=progress)

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        res = self.run(ds, progress)
        if res.n_suppressed == 0:
            return ds.with_frame(ds.frame.copy())
        return ds.with_frame(apply_mask(ds.frame, list(res.names), res.mask))

    def describe(self) -> str:
        extra = f", protected {', '.join(self.protected)}" if self.protected else ""
        alpha = f", alpha {self.alpha:g}" if self.alpha != 1.0 else ""
        return (f"Local suppression to individual risk <= {self.max_risk:g} (Benedetti & Franconi, "
                f"{self.method}{alpha}{extra})")
