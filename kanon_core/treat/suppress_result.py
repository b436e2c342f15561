"""The outcome of a local suppression run, with the tables of Wilson et al. (RTI) ready to show.

Wilson et al. (RTI) report, per variable, the count and percentage of records with a suppressed value (its Table
2), the value of each variable suppressed most often (Table 3) and the categories that disappeared
completely (section 4.2). These come out as DataFrames so the dashboard and the report show them as
they are; ``summary()`` is the JSON the CLI writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import QIMatrix

GREEDY_NOT_PROVEN = "the greedy method does not search for the optimum"
NO_PROOF_WITHIN_LIMITS = "the search stopped at its limits before the bound met the cost"


@dataclass(frozen=True)
class Optimality:
    """What is known of a suppression's cost for its protection model: proven optimal, or a proven lower bound
    with the gap and the reason the optimum is not proven.

    Why: "not proven optimal, gap 83 %" alone does not tell an officer whether the release is poor or the bound
    weak. Under the wildcard reading of missing cells, for example, the strict model's class programme cannot
    prove its bound, and the bound left is Wilson et al.'s record-wise optimum, which can lie far below the
    strict optimum: the gap then measures the bound as much as the release. Kept with the version a step made,
    so the report can state it for every suppression step."""

    cost: float
    lower_bound: float
    optimal: bool
    bound: str = ""
    """How the lower bound was proven ("" when the method does not say)."""
    why_not_proven: str = ""
    """Why the optimum is not proven ("" when it is)."""

    @property
    def gap(self) -> float:
        """(cost - lower bound) / cost, 0 when proven optimal or nothing was suppressed."""
        return 0.0 if self.optimal or self.cost <= 0 else max(0.0, (self.cost - self.lower_bound) / self.cost)

    def sentence(self) -> str:
        """The finding in words (figures and method names, never a value)."""
        if self.optimal:
            return f"Proven optimal for its protection model: the cost, {self.cost:,g}, equals a proven lower bound."
        how = f" ({self.bound})" if self.bound else ""
        return (f"Not proven optimal: cost {self.cost:,g}, proven lower bound {self.lower_bound:,g}{how}, gap "
                f"{100 * self.gap:.1f} %; {self.why_not_proven}.")

    def to_json(self) -> dict[str, Any]:
        return {"cost": self.cost, "lower_bound": self.lower_bound, "optimal": self.optimal, "gap": self.gap,
                "bound": self.bound, "why_not_proven": self.why_not_proven}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Optimality:
        return cls(float(raw["cost"]), float(raw["lower_bound"]), bool(raw["optimal"]), str(raw.get("bound", "")),
                   str(raw.get("why_not_proven", "")))


def optimality_of(cost: float, lower_bound: float, optimal: bool, method: str, stats: dict[str, Any]
                  ) -> Optimality:
    """:class:`Optimality` from a run's figures and the statistics its solver recorded (``bound``: how the bound
    was found; ``unproven``: why the optimum was not proven), in memory or on a class table."""
    why = ""
    if not optimal:
        why = str(stats.get("unproven") or (GREEDY_NOT_PROVEN if method == "greedy" else NO_PROOF_WITHIN_LIMITS))
    return Optimality(float(cost), float(lower_bound), bool(optimal), str(stats.get("bound", "")), why)


def proof_keys(said: Optimality) -> dict[str, str]:
    """The JSON keys a suppression summary adds to its cost, bound and gap, in memory and at scale."""
    return {"bound": said.bound, "why_not_proven": said.why_not_proven}


@dataclass(frozen=True, eq=False)
class SuppressionResult:
    """Suppressed cells and what they cost, for a named protection model.

    ``cost`` is the total cost; ``lower_bound`` a proven lower bound on the optimal cost *for ``model``*
    (never above ``cost``), and ``optimal`` holds only when the two are equal. ``violations_after`` comes
    from an independent recount of the model's criterion on the output and is always 0 (else the run
    fails); ``min_class_after`` is the smallest recounted value. ``findable_below_k`` counts the people of
    the input with fewer than k consistent released records (the intruder's view, whatever the model).
    """

    names: tuple[str, ...]
    k: int
    missing: str
    model: str
    alpha: float
    method: str
    engine: str
    codes: np.ndarray = field(repr=False)
    mask: np.ndarray = field(repr=False)
    costs: np.ndarray = field(repr=False)
    protected: tuple[str, ...]
    cost: float
    lower_bound: float
    optimal: bool
    seconds: float
    violations_after: int
    min_class_after: float
    findable_below_k: int
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    # -- headline numbers -----------------------------------------------------------------------------
    @property
    def n_records(self) -> int:
        return int(self.mask.shape[0])

    @property
    def n_suppressed(self) -> int:
        return int(self.mask.sum())

    @property
    def records_touched(self) -> int:
        return int(self.mask.any(axis=1).sum())

    @property
    def per_variable_counts(self) -> np.ndarray:
        return self.mask.sum(axis=0).astype(np.int64)

    @property
    def gap(self) -> float:
        """Relative gap (cost - lower bound) / cost, 0 when proven optimal (:attr:`Optimality.gap`)."""
        return self.optimality().gap

    def optimality(self) -> Optimality:
        """What is proven of this result's cost (:class:`Optimality`)."""
        return optimality_of(self.cost, self.lower_bound, self.optimal, self.method, self.stats)

    def suppressed_codes(self) -> np.ndarray:
        """The QI codes after suppression (-1 where suppressed)."""
        out = self.codes.copy()
        out[self.mask] = -1
        return out

    # -- tables ---------------------------------------------------------------------------------------
    def _label(self, qm: QIMatrix | None, j: int, code: int) -> str:
        if qm is not None and 0 <= code < len(qm.labels[j]):
            return qm.labels[j][code]
        return str(code)

    def per_variable(self) -> pd.DataFrame:
        """Wilson et al. Table 2: records with a suppressed value, per variable (count and % of records)."""
        counts = self.per_variable_counts
        n = max(self.n_records, 1)
        return pd.DataFrame({
            "variable": list(self.names),
            "suppressed": counts,
            "percent": np.round(100.0 * counts / n, 2),
            "cost_per_cell": [float(c) if np.isfinite(c) else None for c in self.costs],
            "protected": [v in self.protected for v in self.names],
        })

    def most_suppressed(self, qm: QIMatrix | None = None) -> pd.DataFrame:
        """Wilson et al. Table 3: the value suppressed most often per variable, with its share of them."""
        rows = []
        for j, name in enumerate(self.names):
            sup = self.codes[self.mask[:, j], j]
            if len(sup) == 0:
                continue
            cnt = np.bincount(sup)
            top = int(np.argmax(cnt))
            rows.append({"variable": name, "value": self._label(qm, j, top), "suppressed": int(cnt[top]),
                         "percent_of_variable": round(100.0 * cnt[top] / len(sup), 2)})
        return pd.DataFrame(rows, columns=["variable", "value", "suppressed", "percent_of_variable"])

    def completely_suppressed(self, qm: QIMatrix | None = None) -> pd.DataFrame:
        """Categories present before and absent after (every occurrence suppressed), Wilson et al. sec. 4.2."""
        rows = []
        for j, name in enumerate(self.names):
            col = self.codes[:, j]
            obs = col >= 0
            if not obs.any():
                continue
            before = np.bincount(col[obs])
            after = np.bincount(col[obs & ~self.mask[:, j]], minlength=len(before))
            for c in np.flatnonzero((before > 0) & (after == 0)).tolist():
                rows.append({"variable": name, "value": self._label(qm, j, c), "records": int(before[c])})
        return pd.DataFrame(rows, columns=["variable", "value", "records"])

    def overview(self) -> pd.DataFrame:
        """One row of headline figures (what the dashboard shows above the tables)."""
        return pd.DataFrame([{
            "protection model": self.model, "method": self.method, "k": self.k, "missing": self.missing,
            "cells suppressed": self.n_suppressed, "cost": self.cost, "records touched": self.records_touched,
            "lower bound": self.lower_bound, "proven optimal": self.optimal, "gap": self.gap,
            "people findable below k": self.findable_below_k, "seconds": round(self.seconds, 3),
        }])

    def tables(self, qm: QIMatrix | None = None) -> dict[str, pd.DataFrame]:
        """All tables, keyed: overview, per_variable, most_suppressed, completely_suppressed."""
        return {
            "overview": self.overview(),
            "per_variable": self.per_variable(),
            "most_suppressed": self.most_suppressed(qm),
            "completely_suppressed": self.completely_suppressed(qm),
        }

    def summary(self) -> dict[str, Any]:
        """Plain JSON-ready summary (no data values: counts, costs and variable names only)."""
        pv = self.per_variable()
        return {
            "n_records": self.n_records,
            "qis": list(self.names),
            "k": self.k,
            "missing": self.missing,
            "model": self.model,
            "alpha": self.alpha,
            "method": self.method,
            "engine": self.engine,
            "protected": list(self.protected),
            "n_suppressed": self.n_suppressed,
            "cost": self.cost,
            "records_touched": self.records_touched,
            "lower_bound": self.lower_bound,
            "optimal": self.optimal,
            "gap": self.gap,
            **proof_keys(self.optimality()),
            "findable_below_k": self.findable_below_k,
            "per_variable": {r.variable: {"suppressed": int(r.suppressed), "percent": float(r.percent)}
                             for r in pv.itertuples()},
            "seconds": self.seconds,
            "timings": dict(self.timings),
            "stats": dict(self.stats),
            "violations_after": self.violations_after,
            "min_class_after": self.min_class_after,
        }
