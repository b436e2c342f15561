"""``kanon risk``'s summary computed on the class table, for files that are never held in memory.

Every figure of :class:`~kanon_core.risk.summary.RiskSummary` depends on the records only through their
classes: a class's records share its fk and Fk, so a count of records is a sum of class counts. The
functions here give the same JSON as :meth:`RiskSummary.to_json` on the same file (tested), plus fk and Fk
summaries over the records, and the per-class values that ``--per-record`` joins back to the records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..classtable import ClassTable
from ..dataset import MISSING_CODE, MissingSemantics
from ..risk.classes import ClassSizes, wildcard_dependent
from ..risk.summary import K_RANGE


@dataclass(frozen=True)
class TableRisk:
    """The risk summary of a class table: ``payload`` (the JSON of ``kanon risk``) and the per-class
    ``sizes`` and ``dependent`` flags (indexed like the table's classes)."""

    payload: dict
    sizes: ClassSizes
    dependent: np.ndarray


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The lower q-quantile of ``values`` repeated ``weights`` times (numpy's 'lower' method)."""
    total = int(weights.sum())
    rank = int(math.floor(q * (total - 1)))
    if len(values) and float(values.min()) >= 0 and float(values.max()) < 1e7 and np.all(values == np.floor(values)):
        per_value = np.cumsum(np.bincount(values.astype(np.int64), weights=weights))  # integer sizes: no sort
        return float(np.searchsorted(per_value, rank + 1 - 0.5))
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, rank + 1)])


def _summary(values: np.ndarray, weights: np.ndarray, decimals: int | None = None) -> dict:
    """Min, median, mean and max over the records. Weight sums are added in a different order by each
    engine (equal to about 1e-12 relative), so Fk's summary is rounded to ``decimals`` to read the same."""
    total = weights.sum()
    out = {"min": float(values.min()), "median": _weighted_quantile(values, weights, 0.5),
           "mean": float((values * weights).sum() / total), "max": float(values.max())}
    return out if decimals is None else {k: round(v, decimals) for k, v in out.items()}


def size_distribution_of(fk: np.ndarray, count: np.ndarray) -> list[dict]:
    """Records by class size in the bins of :func:`kanon_core.risk.summary.size_distribution`."""
    whole = np.floor(fk)
    edges = [(i, i, str(i)) for i in range(1, 11)] + [(11, 20, "11-20"), (21, 50, "21-50"), (51, 100, "51-100")]
    rows = [{"class_size": label, "records": int(count[(whole >= lo) & (whole <= hi)].sum())} for lo, hi, label in edges]
    rows.append({"class_size": ">100", "records": int(count[whole > 100].sum())})
    return rows


def per_qi_of(table: ClassTable) -> list[dict]:
    """Per QI: distinct values, values held by one record, missing records, smallest category."""
    rows = []
    for j, name in enumerate(table.qis):
        col = table.codes[:, j]
        obs = col != MISSING_CODE
        n_values = len(table.values[j]) if table.values else int(col.max(initial=-1)) + 1
        counts = np.bincount(col[obs], weights=table.count[obs], minlength=n_values).astype(np.int64)
        rows.append({"variable": name, "distinct": int((counts > 0).sum()), "singletons": int((counts == 1).sum()),
                     "missing": int(table.count[~obs].sum()),
                     "smallest_category": int(counts[counts > 0].min()) if (counts > 0).any() else 0})
    return rows


def risk_of_table(table: ClassTable, k: int, missing: MissingSemantics, alpha: float = 1.0) -> TableRisk:
    """The risk summary of ``table`` at threshold ``k`` (see the module docstring)."""
    sizes = table.class_sizes(missing, alpha, wildcard_split=True)
    fk = sizes.fk
    count = table.count
    dep = wildcard_dependent(sizes, k)
    violations = {kk: int(count[fk < kk].sum()) for kk in sorted(set(K_RANGE) | {k})}
    payload = {
        "n_records": table.n_records,
        "n_qis": len(table.qis),
        "missing": missing,
        "alpha": sizes.alpha,
        "k": k,
        "k_achieved": math.floor(float(fk.min())) if len(fk) else 0,
        "n_violating": violations[k],
        "n_sample_uniques": int(count[fk == 1].sum()),
        "n_classes": table.n_classes,
        "wildcard_dependent": int(count[dep].sum()),
        "violations_by_k": {str(kk): v for kk, v in violations.items()},
        "size_distribution": size_distribution_of(fk, count),
        "per_qi": per_qi_of(table),
    }
    if len(fk):
        payload["fk_summary"] = _summary(np.asarray(fk, np.float64), count)
        if sizes.Fk is not None:
            payload["Fk_summary"] = _summary(np.asarray(sizes.Fk, np.float64), count, 6)
    return TableRisk(payload, sizes, dep)
