"""Suppressed cells: the one definition every count of them in kanon comes from.

A cell is *suppressed* by a treatment when it is observed in the earlier version and missing in the later
one (same records, same variable). Cells missing already before are not suppressed: nothing was taken; nor
is a value that the later version declares a missing code (declaring -9 missing takes no information:
:func:`declared_later`, which the information-loss measures leave out too).
The sidebar timeline (:func:`kanon_core.risk.timeline.version_risk`), the Compare page and the report
(:func:`kanon_core.utility.bias.suppressed_cells`, Wilson et al.'s tables 2 and 3) and the exported files'
suppressed-cell codes (:func:`kanon_core.export.release`) all count through :func:`suppressed_mask`, so they
cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..errors import InputError


@dataclass(frozen=True, eq=False)
class SuppressedCells:
    """``mask[i, j]``: record i's value of ``variables[j]`` was observed before and is missing after."""

    variables: tuple[str, ...]
    mask: np.ndarray

    @property
    def total(self) -> int:
        return int(self.mask.sum())

    @property
    def records_touched(self) -> int:
        return int(self.mask.any(axis=1).sum()) if self.mask.size else 0

    def per_variable(self) -> dict[str, int]:
        return dict(zip(self.variables, self.mask.sum(axis=0).astype(int).tolist(), strict=True))

    def column(self, variable: str) -> np.ndarray:
        return self.mask[:, self.variables.index(variable)]

    def most_suppressed(self, before: Dataset) -> pd.DataFrame:
        """Wilson et al.'s table 3: per variable, the label suppressed most often, its count and share."""
        rows = []
        for j, v in enumerate(self.variables):
            sup = self.mask[:, j]
            if not sup.any():
                continue
            qm = before.qi_matrix([v])
            cnt = np.bincount(qm.codes[sup, 0], minlength=len(qm.labels[0]))
            top = int(np.argmax(cnt))  # ties: the first in kanon's value order
            rows.append({"variable": v, "value": qm.labels[0][top], "suppressed": int(cnt[top]),
                         "percent_of_variable": round(100.0 * cnt[top] / int(sup.sum()), 2)})
        return pd.DataFrame(rows, columns=["variable", "value", "suppressed", "percent_of_variable"])

    def completely_suppressed(self, before: Dataset) -> pd.DataFrame:
        """Categories observed before of which every occurrence was suppressed (Wilson et al., RTI, section 4.2)."""
        rows = []
        for j, v in enumerate(self.variables):
            qm = before.qi_matrix([v])
            codes = qm.codes[:, 0]
            obs = codes >= 0
            if not obs.any():
                continue
            n_before = np.bincount(codes[obs], minlength=len(qm.labels[0]))
            n_kept = np.bincount(codes[obs & ~self.mask[:, j]], minlength=len(qm.labels[0]))
            for c in np.flatnonzero((n_before > 0) & (n_kept == 0)).tolist():
                rows.append({"variable": v, "value": qm.labels[0][c], "records": int(n_before[c])})
        return pd.DataFrame(rows, columns=["variable", "value", "records"])


def suppressed_mask(before: Dataset, after: Dataset, variables: Sequence[str] | None = None) -> SuppressedCells:
    """The suppressed cells of ``variables`` (default: ``after``'s QIs present in both versions).

    A variable absent from either version is an input error: a dropped variable was not suppressed.
    """
    if before.n_records != after.n_records:
        raise InputError(
            f"The two versions have {before.n_records} and {after.n_records} records; "
            "suppressed cells compare the same records.")
    if variables is None:
        variables = [c for c in after.roles.qis if c in before.frame.columns and c in after.frame.columns]
    variables = tuple(variables)
    absent = [v for v in variables if v not in before.frame.columns or v not in after.frame.columns]
    if absent:
        raise InputError(f"Not in both versions: {', '.join(absent)}.")
    if not variables:
        return SuppressedCells((), np.zeros((before.n_records, 0), dtype=bool))
    mask = np.column_stack([_suppressed_column(before, after, v) for v in variables])
    return SuppressedCells(variables, mask)


def declared_later(before: Dataset, after: Dataset, v: str) -> np.ndarray:
    """Cells of ``v`` observed in ``before``, missing in ``after``, whose value ``after`` declares a missing
    code (-9 "refused" declared by a step): no information was taken, so they are neither suppressed nor
    charged as lost (:mod:`kanon_core.utility.info_loss` leaves them out, as cells missing from the start).
    A cell recoded *into* a code (x written as -9) is not: its value is gone."""
    return ~before.missing_mask(v) & after.missing_mask(v) & _holds_a_declared_code(before, after, v)


def _holds_a_declared_code(before: Dataset, after: Dataset, v: str) -> np.ndarray:
    """Cells whose value in ``before`` is one of the missing codes ``after`` declares for ``v``, matched by
    value (:func:`~kanon_core.treat.hierarchy.value_key`): a generalized variable keeps -9 as the text "-9",
    declared as that text."""
    from ..treat.hierarchy import value_key

    codes = after.meta_of(v).missing_codes
    if not len(codes):
        return np.zeros(before.n_records, dtype=bool)
    keys = {value_key(c) for c in codes}
    found, uniques = pd.factorize(before.frame[v].to_numpy(dtype=object), use_na_sentinel=True)
    is_code = np.array([value_key(u) in keys for u in uniques] + [False], dtype=bool)
    return is_code[found]


def _suppressed_column(before: Dataset, after: Dataset, v: str) -> np.ndarray:
    """Observed before and missing after, and not a code declared later (:func:`declared_later`)."""
    return after.missing_mask(v) & ~before.missing_mask(v) & ~_holds_a_declared_code(before, after, v)
