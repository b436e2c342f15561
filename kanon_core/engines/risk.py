"""``kanon risk``'s summary computed on the class table, for files that are never held in memory.

Every figure of :class:`~kanon_core.risk.summary.RiskSummary` depends on the records only through their
classes: a class's records share its fk and Fk, so a count of records is a sum of class counts. The
functions here give the same JSON as :meth:`RiskSummary.to_json` on the same file (tested), plus fk and Fk
summaries over the records, and the per-class values that ``--per-record`` joins back to the records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..classtable import ClassTable
from ..dataset import MissingSemantics
from ..risk.classes import ClassSizes, check_alpha, wildcard_dependent
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
    with np.errstate(over="ignore"):
        mean = (values * weights).sum() / total
    if not np.isfinite(mean):  # Fk of weights near the largest double: a sum of shares of them cannot overflow
        mean = (values * (weights / total)).sum()
    out = {"min": float(values.min()), "median": _weighted_quantile(values, weights, 0.5),
           "mean": float(mean), "max": float(values.max())}
    return out if decimals is None else {k: round(v, decimals) for k, v in out.items()}


SIZE_BINS = [(i, i, str(i)) for i in range(1, 11)] + [(11, 20, "11-20"), (21, 50, "21-50"), (51, 100, "51-100")]
"""The class-size bins of :func:`kanon_core.risk.summary.size_distribution` (then ">100")."""


def records_by_whole_size(fk: np.ndarray, count: np.ndarray, cap: int) -> np.ndarray:
    """``out[s]`` = records whose class size rounds down to s, for s < ``cap``; ``out[cap]`` those at or above.

    One pass over the classes instead of a mask per threshold: at 3.5 million classes the thresholds of
    the Risk page (violations for k = 2..10, 14 size bins) took a tenth of a second each way. Counts are
    summed as float64, exact below 2**53 records.
    """
    whole = np.floor(fk) if fk.dtype.kind == "f" else fk
    idx = np.clip(whole, 0, cap).astype(np.int64)
    return np.rint(np.bincount(idx, weights=count, minlength=cap + 1)).astype(np.int64)


def size_distribution_of(fk: np.ndarray, count: np.ndarray) -> list[dict]:
    """Records by class size in the bins of :func:`kanon_core.risk.summary.size_distribution`."""
    per = records_by_whole_size(fk, count, 101)
    rows = [{"class_size": label, "records": int(per[lo:hi + 1].sum())} for lo, hi, label in SIZE_BINS]
    rows.append({"class_size": ">100", "records": int(per[101])})
    return rows


def violations_of(fk: np.ndarray, count: np.ndarray, ks: Sequence[int]) -> dict[int, int]:
    """Records in classes smaller than each k of ``ks`` (fk < k, i.e. floor(fk) < k for a whole k).

    The sizes are binned up to the largest class's whole size + 1 at most, not up to the largest k: every
    record is below a k beyond it, and a k of any size (the command line takes ``--k 10**20``) then costs no
    memory and overflows nothing, as in memory."""
    ks = sorted(set(int(x) for x in ks))
    if not ks:
        return {}
    top = int(np.floor(np.max(fk))) + 1 if len(fk) else 0  # above every class's whole size
    cap = max(0, min(ks[-1], top))
    below = np.concatenate([[0], np.cumsum(records_by_whole_size(fk, count, cap))])
    return {kk: int(below[min(max(kk, 0), cap + 1)]) for kk in ks}


def per_qi_of(table: ClassTable) -> list[dict]:
    """Per QI: distinct values, values held by one record, missing records, smallest category."""
    rows = []
    weights = table.count.astype(np.float64)
    for j, name in enumerate(table.qis):
        col = table.codes[:, j]
        n_values = len(table.values[j]) if table.values else int(col.max(initial=-1)) + 1
        # code + 1: bin 0 counts the missing records (code -1), no boolean mask over the classes
        shifted = np.bincount(col + 1, weights=weights, minlength=n_values + 1)
        counts = np.rint(shifted[1:]).astype(np.int64)
        seen = counts > 0
        rows.append({"variable": name, "distinct": int(seen.sum()), "singletons": int((counts == 1).sum()),
                     "missing": int(round(shifted[0])),
                     "smallest_category": int(counts[seen].min()) if seen.any() else 0})
    return rows


HEADLINE = ("n_records", "n_classes", "k_achieved", "n_violating")
"""The four figures the Risk page shows first for a large file (see :func:`headline_of_table`)."""


def headline_of_table(table: ClassTable, k: int, sizes: ClassSizes) -> dict:
    """Records, classes, k achieved and records below ``k`` of ``table`` with class sizes ``sizes``: the
    figures :func:`risk_of_table` gives under these keys, without the rest of its summary (one pass over
    the classes, so the Risk page can show them at once while the wildcard sizes are being counted)."""
    fk = sizes.fk
    return {"n_records": table.n_records, "n_classes": table.n_classes,
            "k_achieved": math.floor(float(fk.min())) if len(fk) else 0,
            "n_violating": violations_of(fk, table.count, [k])[k]}


def risk_of_table(table: ClassTable, k: int, missing: MissingSemantics, alpha: float = 1.0,
                  sizes: ClassSizes | None = None, per_qi: list[dict] | None = None) -> TableRisk:
    """The risk summary of ``table`` at threshold ``k`` (see the module docstring).

    ``sizes`` are the table's class sizes under ``missing`` and ``alpha`` with the wildcard part kept
    (``table.class_sizes(missing, alpha, wildcard_split=True)``), when already computed: they do not depend
    on k, so the dashboard computes them once per file, QIs and semantics and a new k costs only this.
    ``per_qi`` is :func:`per_qi_of` of the table when already computed (it depends on the table alone).
    """
    if sizes is None:
        sizes = table.class_sizes(missing, alpha, wildcard_split=True)
    elif sizes.missing != missing or sizes.alpha != check_alpha(alpha) or sizes.fk_wild is None \
            or len(sizes.fk_all) != table.n_classes:
        raise ValueError("The class sizes given were not computed for this table, semantics and alpha.")
    fk = sizes.fk
    count = table.count
    dep = wildcard_dependent(sizes, k)
    violations = violations_of(fk, count, set(K_RANGE) | {k})
    head = headline_of_table(table, k, sizes)
    payload = {
        "n_records": head["n_records"],
        "n_qis": len(table.qis),
        "missing": missing,
        "alpha": sizes.alpha,
        "k": k,
        "k_achieved": head["k_achieved"],
        "n_violating": head["n_violating"],
        "n_sample_uniques": int(count[fk == 1].sum()),
        "n_classes": head["n_classes"],
        "wildcard_dependent": int(count[dep].sum()),
        "violations_by_k": {str(kk): v for kk, v in violations.items()},
        "size_distribution": size_distribution_of(fk, count),
        "per_qi": per_qi_of(table) if per_qi is None else per_qi,
    }
    if len(fk):
        payload["fk_summary"] = _summary(np.asarray(fk, np.float64), count)
        if sizes.Fk is not None:
            payload["Fk_summary"] = _summary(np.asarray(sizes.Fk, np.float64), count, 6)
    return TableRisk(payload, sizes, dep)
