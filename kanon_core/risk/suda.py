"""SUDA and DIS-SUDA scores from minimal sample uniques, with sdcMicro's ``suda2`` definitions.

sdcMicro's ``suda2`` (default ``original_scores = TRUE``, after Elliot et al., "SUDA: a program for
detecting special uniques") scores the MSUs (MINUCs for k = 2) of a record as follows, with ATT the
number of key variables:

* an MSU of size m weighs ``(ATT - m)!`` (the product of ATT - i for i = m .. ATT - 1), so small MSUs
  dominate; a record's **SUDA score** is the sum over its MSUs;
* a record's **contribution** of variable j is the summed weight of its MSUs containing j, divided by
  its score (shares add up to more than 100 % because an MSU of size m counts for each of its m
  variables); a variable's overall contribution is the summed weight of all MSUs containing it divided
  by the summed score of all records, and a value's (attribute level) contribution the same restricted
  to MSUs containing that value;
* the **DIS** probability of a correct match given a unique match, from the sampling fraction f
  (``DisFraction``, default 0.01): with U the records unique on all key variables and P the records in
  classes of exactly two, ``dis = U f / (U f + P (1 - f))``;
* a record's **DIS-SUDA score** spreads that risk over the records in proportion to a power of their
  SUDA score: with ``Q = 1 + (8 - ATT) / 20`` and ``A = Σ_i score_i^-Q`` over records with a score,
  ``dis_suda_i = 1 / (1 + (U / dis - U) / (score_i^Q A))`` (0 for records without MSUs).

Missing values: sdcMicro's suda2 treats a missing value as "no item" (it neither matches nor is matched).
Here the MSUs follow the data set's own missing-value semantics (wildcard or category), and U and P are
the records with fk = 1 and fk = 2 under the same semantics; without missing values the two agree.
sdcMicro computes DIS in single precision; this module uses double precision throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import factorial

import numpy as np
import pandas as pd

from ..dataset import QIMatrix
from ..errors import InputError
from .classes import compute_class_sizes
from .minucs import MinucResult

DIS_FRACTION = 0.01


@dataclass(frozen=True, eq=False)
class SudaResult:
    """Per-record SUDA and DIS-SUDA scores and variable contributions (sdcMicro ``suda2`` definitions)."""

    names: tuple[str, ...]
    score: np.ndarray = field(repr=False)
    dis_score: np.ndarray = field(repr=False)
    contribution_percent: np.ndarray = field(repr=False)  # (n_records, q), % of each record's score
    variable_contributions: pd.DataFrame = field(repr=False)
    dis: float
    dis_fraction: float
    n_unique: int
    n_pairs: int

    def summary(self) -> dict:
        s = self.score
        return {
            "records_with_score": int((s > 0).sum()),
            "max_score": float(s.max()) if len(s) else 0.0,
            "mean_dis_suda": float(self.dis_score.mean()) if len(s) else 0.0,
            "max_dis_suda": float(self.dis_score.max()) if len(s) else 0.0,
            "dis": self.dis,
            "dis_fraction": self.dis_fraction,
            "variable_contributions": {r.variable: float(r.contribution) for r in
                                       self.variable_contributions.itertuples()},
        }


def size_weights(n_qis: int) -> np.ndarray:
    """weights[m] = (ATT - m)! for an MSU of size m (index 0 unused)."""
    return np.array([0.0] + [float(factorial(n_qis - m)) for m in range(1, n_qis + 1)], dtype=np.float64)


def suda_scores(result: MinucResult, codes: np.ndarray | QIMatrix | None = None,
                dis_fraction: float = DIS_FRACTION) -> SudaResult:
    """SUDA, DIS-SUDA and contributions from a k = 2 MINUC result (the MSUs).

    ``codes`` (the same QI codes the MINUCs were found on) is needed for U and P of the DIS formula;
    the result's own distinct rows are used when it is omitted.
    """
    from ._minuc_summary import suda_tallies

    if result.k != 2:
        raise InputError("SUDA scores are defined on minimal sample uniques: find MINUCs with k = 2.")
    if not 0 < dis_fraction < 1:
        raise InputError("The sampling fraction for DIS must be between 0 and 1.")
    q = result.n_qis
    weights = size_weights(q)
    row_score, row_contrib = suda_tallies(result.row_masks, result.row_offsets, q, weights)
    score = row_score[result.row_of_record]
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = np.where(row_score[:, None] > 0, 100.0 * row_contrib / row_score[:, None], 0.0)
    contribution_percent = pct[result.row_of_record]
    total = float((row_score * result.row_mult).sum())
    var_raw = (row_contrib * result.row_mult[:, None]).sum(axis=0)
    var_table = pd.DataFrame({
        "variable": list(result.names),
        "contribution": np.round(100.0 * var_raw / total, 6) if total > 0 else np.zeros(q),
    }).sort_values(["contribution", "variable"], ascending=[False, True], ignore_index=True)

    if isinstance(codes, QIMatrix):
        codes = codes.codes
    base = result.rows[result.row_of_record] if codes is None else np.asarray(codes)
    fk = compute_class_sizes(base, result.missing).fk
    n_unique = int((fk == 1).sum())
    n_pairs = int((fk == 2).sum())
    f = float(dis_fraction)
    denom = n_unique * f + n_pairs * (1.0 - f)
    dis = n_unique * f / denom if denom > 0 else 0.0
    dis_score = np.zeros(len(score))
    pos = score > 0
    if pos.any() and dis > 0:
        qexp = 1.0 + (8.0 - q) / 20.0
        powered = score[pos] ** qexp
        adj = float((1.0 / powered).sum())
        dis_score[pos] = 1.0 / (1.0 + (n_unique / dis - n_unique) / (powered * adj))
    return SudaResult(names=result.names, score=score, dis_score=dis_score,
                      contribution_percent=contribution_percent, variable_contributions=var_table, dis=dis,
                      dis_fraction=f, n_unique=n_unique, n_pairs=n_pairs)


def value_suda_contributions(result: MinucResult, suda: SudaResult, qm: QIMatrix | None = None) -> pd.DataFrame:
    """sdcMicro's attribute-level contributions: the share of the total score due to each value."""
    total = float(suda.score.sum())
    if total <= 0:
        return pd.DataFrame(columns=["variable", "value", "code", "contribution"])
    tally = result.value_tally(size_weights(result.n_qis))
    rows = [(result.names[j], label, code, round(100.0 * v / total, 6))
            for j, code, label, v in result.value_rows(tally, qm)]
    out = pd.DataFrame(rows, columns=["variable", "value", "code", "contribution"])
    return out.sort_values(["contribution", "variable"], ascending=[False, True], ignore_index=True)
