"""Risk at a glance: k achieved, violations for k = 2..10, class-size distribution, sample uniques,
per-QI distinct and singleton values, and the records that reach k only through wildcard matches.
Everything the Risk page and ``kanon risk`` show comes from here.

With sdcMicro's ``alpha`` below 1 the class sizes fk can be fractional (see
:mod:`kanon_core.risk.classes`): k achieved is then the largest integer k with every fk >= k, and class
sizes are binned by their integer part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..dataset import MISSING_CODE, MissingSemantics, QIMatrix
from .classes import ClassSizes, compute_class_sizes, wildcard_dependent
from .keys import group_ids

K_RANGE = tuple(range(2, 11))


@dataclass(frozen=True)
class RiskSummary:
    """Risk of one QI set. ``violations[k]`` = records whose class is smaller than k.

    ``wildcard_dependent`` flags the records with fk >= k at alpha = 1 but < k at alpha = 0: they are
    safe only because records with missing values count as matches (whatever ``alpha`` is chosen).
    """

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
    alpha: float = 1.0
    wildcard_dependent: np.ndarray | None = None

    @property
    def n_wildcard_dependent(self) -> int:
        return 0 if self.wildcard_dependent is None else int(self.wildcard_dependent.sum())

    def to_json(self) -> dict:
        return {
            "n_records": self.n_records,
            "n_qis": self.n_qis,
            "missing": self.missing,
            "alpha": self.alpha,
            "k": self.k,
            "k_achieved": self.k_achieved,
            "n_violating": self.n_violating,
            "n_sample_uniques": self.n_sample_uniques,
            "n_classes": self.n_classes,
            "wildcard_dependent": self.n_wildcard_dependent,
            "violations_by_k": {str(k): v for k, v in self.violations.items()},
            "size_distribution": self.size_distribution.to_dict(orient="records"),
            "per_qi": self.per_qi.to_dict(orient="records"),
        }


def risk_summary(
    qm: QIMatrix,
    k: int = 3,
    missing: MissingSemantics = "wildcard",
    weights: np.ndarray | None = None,
    alpha: float = 1.0,
) -> RiskSummary:
    """Summarise re-identification risk of the QIs in ``qm`` for threshold ``k``.

    ``n_classes`` counts distinct QI patterns (missing as a value); under wildcard, classes overlap, so
    the pattern count is what is reported. ``k_achieved`` is the floor of the smallest fk (the data is
    k-anonymous for every k up to it). ``alpha`` weighs wildcard matches as in sdcMicro's ``freqCalc``;
    sample uniques are the records with fk = 1 (sdcMicro's ``n1``).
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    sizes = compute_class_sizes(qm.codes, missing, weights, alpha=alpha, wildcard_split=True)
    fk = sizes.fk
    _, counts = group_ids(qm.codes)
    violations = {kk: int((fk < kk).sum()) for kk in sorted(set(K_RANGE) | {k})}
    return RiskSummary(
        n_records=qm.n_records,
        n_qis=qm.n_qis,
        missing=missing,
        k=k,
        k_achieved=math.floor(float(fk.min())) if len(fk) else 0,
        n_violating=violations[k],
        n_sample_uniques=int((fk == 1).sum()),
        n_classes=int(len(counts)),
        violations=violations,
        sizes=sizes,
        size_distribution=size_distribution(fk),
        per_qi=per_qi_table(qm),
        alpha=sizes.alpha,
        wildcard_dependent=wildcard_dependent(sizes, k),
    )


def size_distribution(fk: np.ndarray) -> pd.DataFrame:
    """Records by class size in bins 1, 2, ..., 10, 11-20, 21-50, 51-100, >100.

    Fractional sizes (alpha < 1) go to the bin of their integer part: 2.5 counts under "2".
    """
    whole = np.floor(fk)
    edges = [(i, i, str(i)) for i in range(1, 11)] + [(11, 20, "11-20"), (21, 50, "21-50"), (51, 100, "51-100")]
    rows = [(label, int(((whole >= lo) & (whole <= hi)).sum())) for lo, hi, label in edges]
    rows.append((">100", int((whole > 100).sum())))
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
    data.update(_labels(qm, idx))
    return pd.DataFrame(data)


def wildcard_dependent_statement(n_dependent: int, k: int) -> str:
    """The plain explanation shown wherever wildcard-dependent records are reported (page and report).

    One wording, so that an officer reads the same sentence on the Risk page and in the report.
    """
    return (f"{n_dependent:,} records reach k = {k} only because records with missing values count as matches; "
            "with alpha = 0 they would be below k. A missing value is assumed to stand for any value "
            "(sdcMicro's wildcard rule), so a few blank or suppressed records can make many others look safe.")


def wildcard_dependent_records(qm: QIMatrix, sizes: ClassSizes, k: int, limit: int = 1000) -> pd.DataFrame:
    """The records that reach k only through wildcard matches, with fk at alpha = 1 and at alpha = 0.

    Fewest firm matches first (``fk_alpha0``: the record's own key and complete records), so the
    records resting most on blank cells lead the table.
    """
    idx = np.flatnonzero(wildcard_dependent(sizes, k))
    idx = idx[np.argsort(sizes.fk_strict[idx], kind="stable")][:limit]
    data = {"record": idx, "fk_alpha1": sizes.fk_all[idx], "fk_alpha0": sizes.fk_strict[idx]}
    data.update(_labels(qm, idx))
    return pd.DataFrame(data)


def _labels(qm: QIMatrix, idx: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for j, name in enumerate(qm.names):
        labels = np.array(qm.labels[j] + ("(missing)",), dtype=object)
        out[name] = labels[qm.codes[idx, j]]  # -1 indexes the "(missing)" entry
    return out
