"""Risk-targeted local suppression: blank QI cells of the records whose individual risk is too high.

sdcMicro's "suppress values with high risks" (``localSupp``, Templ, Kowarik & Meindl) sets *one* key
variable, chosen by the user, to missing in every record whose individual risk exceeds a threshold, once,
and does not check what risk remains. This module does the same job with three differences:

* **cells are chosen per record, by importance and by effect on risk.** For a risky record every cell
  that may be suppressed (not protected, not already missing) is tried: the record's fk and Fk with
  that cell blank are counted against the current release (under the data set's missing semantics and
  sdcMicro's alpha) and its Benedetti–Franconi risk recomputed (:mod:`kanon_core.risk.individual`).
  If some cells bring the record to the threshold, the cheapest of them is taken (cost = the variable's
  importance, ties broken by the lower resulting risk); otherwise the cell with the largest risk
  reduction per unit of cost, and the search goes on for that record. Records are treated highest risk
  first.
* **it repeats until no record is above the threshold**, or nothing more can be done: blanking a cell
  changes other records' classes too (under wildcard semantics it only adds matches; under category
  semantics a record's former class loses a member, so its risk can rise), so after each pass the risks
  of all records are recounted and the records still above the threshold are treated again.
* **the result is recounted independently** — fk and Fk by the exact class-size kernels of
  :mod:`kanon_core.risk.classes`, not by the per-record count used to choose cells — and the records that
  remain above the threshold (every cell protected or already missing) are reported with their number,
  never hidden.

The choice is greedy: it is not claimed to be minimal. Ties are broken by variable order, so a replay on
the same file gives the same cells.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..dataset import Dataset, MissingSemantics, check_semantics
from ..errors import InputError
from ..progress import Progress, report
from ..risk.classes import check_alpha, compute_class_sizes
from ..risk.individual import DEFAULT_MAX_RISK, RISK_METHODS, check_max_risk, global_risk, individual_risk
from ..steps import Step, register_step
from .suppress import Importance, apply_mask, resolve_costs

MAX_PASSES = 50


@dataclass(frozen=True, eq=False)
class RiskSuppressionResult:
    """Cells suppressed to bring every record's individual risk to at most ``threshold``.

    ``risk_before``/``risk_after`` are per record (the latter recounted independently on the release);
    ``remaining`` the records still above the threshold (their free cells are all used up).
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

    @property
    def n_suppressed(self) -> int:
        return int(self.mask.sum())

    @property
    def cost(self) -> float:
        return float((self.mask * self.costs[None, :]).sum())

    @property
    def records_touched(self) -> int:
        return int(self.mask.any(axis=1).sum())

    @property
    def remaining(self) -> np.ndarray:
        return np.flatnonzero(self.risk_after > self.threshold)

    @property
    def per_variable(self) -> dict[str, int]:
        return {n: int(c) for n, c in zip(self.names, self.mask.sum(axis=0).tolist(), strict=True)}

    def summary(self) -> dict[str, Any]:
        before = global_risk(self.risk_before, threshold=self.threshold)
        after = global_risk(self.risk_after, threshold=self.threshold)
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


def _candidate_sizes(rel: np.ndarray, i: int, blanks: Sequence[int | None], w: np.ndarray | None,
                     missing: MissingSemantics, alpha: float) -> tuple[np.ndarray, np.ndarray | None]:
    """fk and Fk of record ``i`` with, in turn, each cell of ``blanks`` made missing (None: as it is).

    Counted against the other records of the release ``rel``: a record s counts for i when it matches
    (wildcard: agrees wherever both are observed; category: equal codes, missing equal to missing); it
    counts 1 when it has i's exact codes or none missing, ``alpha`` otherwise (sdcMicro's freqCalc);
    record i itself counts 1. One pass builds the agreement of every record with i per QI; blanking QI j
    then only drops column j from it, so all candidates cost one more pass together.
    """
    row = rel[i]
    eq = rel == row[None, :]
    q = rel.shape[1]
    not_same = q - np.count_nonzero(eq, axis=1)
    if missing == "category":
        agree = eq
    else:
        agree = eq | (rel < 0) | (row < 0)[None, :]
    clash = q - np.count_nonzero(agree, axis=1)
    complete = (rel >= 0).all(axis=1)
    fks, Fks = [], []
    for j in blanks:
        if j is None:
            match, same = clash == 0, not_same == 0
        else:
            col_missing = rel[:, j] < 0
            same = ((not_same - (~eq[:, j])) == 0) & col_missing
            match = same if missing == "category" else (clash - (~agree[:, j])) == 0
        share = np.where(match, np.where(same | complete, 1.0, alpha), 0.0)
        share[i] = 1.0
        fks.append(np.round(share.sum(), 9))
        if w is not None:
            Fks.append(float((share * w).sum()))  # not BLAS: its threads stall on a busy machine
    fk = np.asarray(fks, dtype=np.float64)
    return fk, (None if w is None else np.asarray(Fks))


def suppress_to_risk(ds: Dataset, threshold: float = DEFAULT_MAX_RISK, *, qis: Sequence[str] | None = None,
                     importance: Importance = None, protected: Sequence[str] = (), method: str = "approx",
                     alpha: float = 1.0, missing: MissingSemantics | None = None,
                     progress: Progress | None = None) -> RiskSuppressionResult:
    """Suppress QI cells until no record's individual risk exceeds ``threshold`` (module docstring)."""
    t0 = time.perf_counter()
    threshold = check_max_risk(threshold)
    if method not in RISK_METHODS:
        raise InputError(f"The individual risk method must be one of {', '.join(RISK_METHODS)}.")
    alpha = check_alpha(alpha)
    missing = check_semantics(missing or ds.missing)
    qm = ds.qi_matrix(qis)
    names = qm.names
    costs, prot = resolve_costs(names, importance, protected)
    w = ds.weights()
    codes = qm.codes
    rel = codes.copy()
    mask = np.zeros(codes.shape, dtype=bool)

    def recount() -> np.ndarray:
        s = compute_class_sizes(rel, missing, w, alpha=alpha)
        return individual_risk(s.fk, s.Fk, method)

    report(progress, 0.0, "Counting individual risks")
    before = recount()
    risk = before
    passes = 0
    stuck: set[int] = set()
    while passes < MAX_PASSES:
        todo = [int(i) for i in np.flatnonzero(risk > threshold) if int(i) not in stuck]
        if not todo:
            break
        passes += 1
        todo.sort(key=lambda i: (-risk[i], i))
        changed = False
        for n_done, i in enumerate(todo):
            report(progress, min(0.9, 0.05 + 0.85 * n_done / len(todo)), f"Pass {passes}: record {n_done + 1:,} "
                                                                          f"of {len(todo):,}")
            changed |= _treat_record(rel, mask, i, prot, costs, w, missing, alpha, method, threshold)
            if not (rel[i] >= 0)[~prot].any():
                stuck.add(i)
        risk = recount()
        if not changed:
            break
    report(progress, 0.95, "Recounting the risks independently")
    after = recount()
    report(progress, 1.0, "Done")
    return RiskSuppressionResult(
        names=names, threshold=threshold, method=method, missing=missing, alpha=alpha, weighted=w is not None,
        mask=mask, costs=costs, protected=tuple(n for n, p in zip(names, prot.tolist(), strict=True) if p),
        risk_before=before, risk_after=after, passes=passes, seconds=time.perf_counter() - t0)


def _treat_record(rel: np.ndarray, mask: np.ndarray, i: int, prot: np.ndarray, costs: np.ndarray,
                  w: np.ndarray | None, missing: MissingSemantics, alpha: float, method: str,
                  threshold: float) -> bool:
    """Blank cells of record ``i`` until its own risk is at most ``threshold`` or no cell is left."""
    changed = False
    while True:
        free = [j for j in range(rel.shape[1]) if not prot[j] and rel[i, j] >= 0]
        fk, Fk = _candidate_sizes(rel, i, [None, *free], w, missing, alpha)  # noqa: N806
        risks = individual_risk(fk, Fk, method)
        current = float(risks[0])
        if current <= threshold or not free:
            return changed
        trial = list(zip(free, risks[1:].tolist(), strict=True))
        enough = [(costs[j], r, j) for j, r in trial if r <= threshold]
        if enough:
            _, r, j = min(enough)
        else:  # the best risk reduction per unit of cost (a rise is never chosen over a fall)
            _, _, r, j = min(((-(current - r) / costs[j], costs[j], r, j) for j, r in trial))
        rel[i, j] = -1
        mask[i, j] = True
        changed = True


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
