"""Household (hierarchical) risk: the chance that at least one member of a household is re-identified.

In a household survey an intruder who re-identifies one person also learns who the other members of the
household are, because the file links them (a household identifier, or records in household order). So
the risk of a household is the probability that *any* member is re-identified. Treating the members'
individual risks r_i as independent, that is

    household risk = 1 − ∏_i (1 − r_i)

which every member of the household is given. This is sdcMicro's hierarchical risk in ``measure_risk``
(Templ, Kowarik & Meindl 2015): its default (``fast_hier = TRUE``) computes exactly this product per
household; its alternative C++ routine (``measure_hierachical``, after mu-Argus, Pascal Heus) expands the
same probability by Boole's inclusion–exclusion formula, which is algebraically equal. Like sdcMicro, the
expected number of re-identifications at household level (``hier_risk_ER``) sums the household risk over
*records* (each member counts its household's risk), and the hierarchical risk is that sum over the
number of records. A member with an undefined risk (NaN) makes the household's risk undefined, as R's
``prod`` does; records without a household identifier are households of their own (sdcMicro would give
them no household risk at all, which would hide them).

**The household identifier itself must not be released unchanged**: it is what links the members, so it
turns a set of individually safe records into a household an intruder can recognise (household size and
composition are quasi-identifiers of their own). :data:`HOUSEHOLD_ID_WARNING` says so wherever the
household risk is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

HOUSEHOLD_ID_WARNING = (
    "The household identifier '{name}' links the members of a household: it must not be released unchanged. "
    "Replace it by a random number (or drop it), and treat household size and composition as "
    "quasi-identifiers.")


@dataclass(frozen=True)
class HouseholdRisk:
    """Per-record household risk and its totals (sdcMicro's ``hier_risk_ER``, ``hier_risk``)."""

    variable: str
    per_record: np.ndarray
    expected_reidentifications: float
    global_risk: float
    n_households: int
    largest_household: int
    n_above: int
    threshold: float
    n_undefined: int = 0
    """Records whose household risk is undefined (a member's individual risk is: see
    :attr:`kanon_core.risk.individual.GlobalRisk.n_undefined`); left out of the sum and of ``n_above``, counted
    here so that a sum over nothing is never read as no risk."""

    @property
    def warning(self) -> str:
        return HOUSEHOLD_ID_WARNING.format(name=self.variable)

    def to_json(self) -> dict:
        return {"variable": self.variable, "expected_reidentifications": self.expected_reidentifications,
                "global_risk": self.global_risk, "households": self.n_households,
                "largest_household": self.largest_household, "records_above_max_risk": self.n_above,
                "records_risk_undefined": self.n_undefined, "release_unchanged": False, "warning": self.warning}


def household_risk(risk: np.ndarray, household: np.ndarray) -> np.ndarray:
    """1 − ∏(1 − r_i) over each record's household, per record in input order.

    ``household`` holds one integer code per record (-1: no identifier, then the record is a household
    of its own).
    """
    risk = np.asarray(risk, dtype=np.float64)
    hh = np.asarray(household, dtype=np.int64).copy()
    if hh.shape != risk.shape:
        raise InputError("The household identifier must have one value per record.")
    if not len(risk):
        return risk.copy()
    lone = hh < 0
    if lone.any():  # give each record without an identifier a household of its own
        base = int(hh.max(initial=-1)) + 1
        hh[lone] = base + np.arange(int(lone.sum()))
    order = np.argsort(hh, kind="stable")
    sorted_hh = hh[order]
    starts = np.flatnonzero(np.r_[True, sorted_hh[1:] != sorted_hh[:-1]])
    products = np.multiply.reduceat(1.0 - risk[order], starts)
    per_household = 1.0 - products
    sizes = np.diff(np.r_[starts, len(order)])
    out = np.empty_like(risk)
    out[order] = np.repeat(per_household, sizes)
    return out


def household_summary(risk: np.ndarray, household: np.ndarray, variable: str,
                      threshold: float) -> HouseholdRisk:
    """Household risk per record with sdcMicro's totals and the records above ``threshold``."""
    per = household_risk(risk, household)
    n = len(per)
    hh = np.asarray(household, dtype=np.int64)
    known = hh[hh >= 0]
    counts = np.bincount(known) if len(known) else np.zeros(0, np.int64)
    er = float(np.nansum(per))
    return HouseholdRisk(
        variable=variable, per_record=per, expected_reidentifications=er, global_risk=er / n if n else 0.0,
        n_households=int((counts > 0).sum()) + int((hh < 0).sum()),
        largest_household=int(counts.max()) if len(counts) else (1 if n else 0),
        n_above=int((per > threshold).sum()), threshold=float(threshold), n_undefined=int(np.isnan(per).sum()))
