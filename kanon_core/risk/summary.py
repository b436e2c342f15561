"""Risk at a glance: k achieved, violations for k = 2..10, class-size distribution, sample uniques,
per-QI distinct and singleton values. Everything the Risk page and ``kanon risk`` show comes from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..dataset import MISSING_CODE, MissingSemantics, QIMatrix
from .classes import ClassSizes, compute_class_sizes
from .keys import group_ids

K_RANGE = tuple(range(2, 11))


@dataclass(frozen=True)
class RiskSummary:
    """Risk of one QI set. ``violations[k]`` = records whose class is smaller than k."""

    n_records: int
    n_qis: int
    missing: MissingSemantics
    k: int
    k_achieved: int
    n_violating: int
    n_sample_uniques: int
    n_classes: int
    violations: dict[int, int]
    sizes: ClassSizes
    size_distribution: pd.DataFrame
    per_qi: pd.DataFrame

    def to_json(self) -> dict:
        return {
            "n_records": self.n_records,
            "n_qis": self.n_qis,
            "missing": self.missing,
            "k": self.k,
            "k_achieved": self.k_achieved,
            "n_violating": self.n_violating,
            "n_sample_uniques": self.n_sample_uniques,
            "n_classes": self.n_classes,
            "violations_by_k": {str(k): v for k, v in self.violations.items()},
            "size_distribution": self.size_distribution.to_dict(orient="records"),
            "per_qi": self.per_qi.to_dict(orient="records"),
        }


def risk_summary(
    qm: QIMatrix, k: int = 3, missing: MissingSemantics = "wildcard", weights: np.ndarray | None = None
) -> RiskSummary:
    """Summarise re-identification risk of the QIs in ``qm`` for threshold ``k``.

    ``n_classes`` counts distinct QI patterns (missing as a value); under wildcard, classes overlap, so
    the pattern count is what is reported. ``k_achieved`` is the smallest fk (the data is k-anonymous
    for every k up to it).
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    sizes = compute_class_sizes(qm.codes, missing, weights)
    fk = sizes.fk
    _, counts = group_ids(qm.codes)
    violations = {kk: int((fk < kk).sum()) for kk in sorted(set(K_RANGE) | {k})}
    return RiskSummary(
        n_records=qm.n_records,
        n_qis=qm.n_qis,
        missing=missing,
        k=k,
        k_achieved=int(fk.min()) if len(fk) else 0,
        n_violating=violations[k],
        n_sample_uniques=int((fk == 1).sum()),
        n_classes=int(len(counts)),
        violations=violations,
        sizes=sizes,
        size_distribution=size_distribution(fk),
        per_qi=per_qi_table(qm),
    )


def size_distribution(fk: np.ndarray) -> pd.DataFrame:
    """Records by class size in bins 1, 2, ..., 10, 11-20, 21-50, 51-100, >100."""
    edges = [(i, i, str(i)) for i in range(1, 11)] + [(11, 20, "11-20"), (21, 50, "21-50"), (51, 100, "51-100")]
    rows = [(label, int(((fk >= lo) & (fk <= hi)).sum())) for lo, hi, label in edges]
    rows.append((">100", int((fk > 100).sum())))
    return pd.DataFrame(rows, columns=["class_size", "records"])


def per_qi_table(qm: QIMatrix) -> pd.DataFrame:
    """Per QI: distinct values, values held by a single record (singletons), missing count."""
    rows = []
    for j, name in enumerate(qm.names):
        col = qm.codes[:, j]
        obs = col[col != MISSING_CODE]
        counts = np.bincount(obs, minlength=len(qm.values[j])) if len(obs) else np.zeros(0, np.int64)
        rows.append(
            {
                "variable": name,
                "distinct": int((counts > 0).sum()),
                "singletons": int((counts == 1).sum()),
                "missing": int((col == MISSING_CODE).sum()),
                "smallest_category": int(counts[counts > 0].min()) if (counts > 0).any() else 0,
            }
        )
    return pd.DataFrame(rows)


def violating_records(qm: QIMatrix, fk: np.ndarray, k: int, Fk: np.ndarray | None = None, limit: int = 1000) -> pd.DataFrame:
    """The records whose class is smaller than k, with labels, smallest classes first."""
    idx = np.flatnonzero(fk < k)
    idx = idx[np.argsort(fk[idx], kind="stable")][:limit]
    data = {"record": idx, "fk": fk[idx]}
    if Fk is not None:
        data["Fk"] = Fk[idx]
    for j, name in enumerate(qm.names):
        labels = np.array(qm.labels[j] + ("(missing)",), dtype=object)
        data[name] = labels[qm.codes[idx, j]]  # -1 indexes the "(missing)" entry
    return pd.DataFrame(data)
