"""Design-based weighted percentages and means with Taylor-linearized standard errors.

Percentages are *domain* estimates among the records where the variable is not missing, so a
suppressed cell leaves the denominator (Wilson et al., RTI, section 4.2). For category c::

    p_c = sum_{i in D} w_i 1[x_i = c] / sum_{i in D} w_i

a ratio whose linearized scores are ``z_i = w_i (1[x_i = c] - p_c) / W_D`` for i in D (zero outside);
the diagonal of their design covariance (:meth:`SurveyDesign.vcov`, with the design's finite population
correction when it has one) gives the standard errors -- computed by :meth:`SurveyDesign.category_shares`
from grouped (PSU, category) totals, so a variable with 100,000 categories needs no records x categories
matrix. This is exactly ``svymean(~factor(x), design, na.rm = TRUE)`` of
R's survey package, the design built with ``svydesign(..., fpc = ~COL)`` when there is an fpc.

Confidence intervals (level 95 % by default):

* ``"wald"`` -- ``p +/- z_{1-a/2} se`` with the normal quantile, as ``confint(svymean(...))``; the
  interval is not clipped to [0, 1], as in R;
* ``"logit"`` -- the Wald interval on the logit scale mapped back,
  ``expit(logit p +/- t_{df,1-a/2} se / (p (1 - p)))`` with ``df`` the design degrees of freedom of
  the *whole* design (PSUs minus strata), as ``svyciprop(~I(x == c), design, method = "logit")``.
  It stays inside (0, 1). A category with estimate 0 or 1 gets the degenerate interval [p, p].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special  # not scipy.stats: its import takes seconds, the quantiles are special's

from ..dataset import Dataset, _label_for, encode_column, missing_mask
from ..errors import InputError
from .design import DEFAULT_LONELY_PSU, SurveyDesign

CIMethod = Literal["wald", "logit"]
CI_METHODS: tuple[CIMethod, ...] = ("wald", "logit")


@dataclass(frozen=True)
class ProportionEstimates:
    """Weighted proportions of every category of one variable, with SEs and CIs.

    ``table`` columns: ``value`` (the stored value), ``label`` (value label or the value as text),
    ``n`` (unweighted records), ``estimate`` (a proportion in [0, 1]), ``se``, ``ci_low``, ``ci_high``.
    """

    variable: str
    table: pd.DataFrame
    n_domain: int
    n_missing: int
    weighted_domain: float
    df: int
    ci_method: CIMethod
    level: float
    n_lonely_strata: int
    lonely_psu: str

    def to_records(self) -> list[dict[str, Any]]:
        """JSON-ready rows ``{level, label, estimate, se, ci_low, ci_high}`` (``level`` is the value)."""
        out = []
        for row in self.table.itertuples(index=False):
            out.append({"level": _plain(row.value), "label": row.label, "estimate": row.estimate,
                        "se": row.se, "ci_low": row.ci_low, "ci_high": row.ci_high})
        return out


@dataclass(frozen=True)
class MeanEstimate:
    """A weighted mean of a numeric variable among its non-missing records (``svymean(~y, na.rm=TRUE)``)."""

    variable: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    n_domain: int
    df: int


def check_ci_method(method: str) -> CIMethod:
    if method not in CI_METHODS:
        raise InputError(f"Confidence interval method must be one of {', '.join(CI_METHODS)}, not '{method}'.")
    return method  # type: ignore[return-value]


def proportions(
    values: pd.Series,
    design: SurveyDesign,
    missing_codes: Sequence[Any] = (),
    value_labels: dict[Any, str] | None = None,
    ci: str = "wald",
    level: float = 0.95,
    levels: Sequence[Any] | None = None,
    name: str | None = None,
) -> ProportionEstimates:
    """Weighted proportion of each category of ``values`` among its non-missing records.

    ``levels`` adds categories to report even when absent (estimate 0, SE 0) -- e.g. the categories
    of the original file when estimating on a treated one.
    """
    method = check_ci_method(ci)
    if not 0 < level < 1:
        raise InputError("The confidence level must be between 0 and 1.")
    variable = name or str(values.name)
    if len(values) != design.n_records:
        raise InputError(f"Variable '{variable}' and the survey design have different numbers of records.")
    codes, cats, labels = encode_column(values.reset_index(drop=True), missing_codes, value_labels)
    cats_l, labels_l = list(cats), list(labels)
    if levels is not None:
        known = set(cats_l)
        for v in levels:
            if v not in known:
                cats_l.append(v)
                labels_l.append(_label(v, value_labels or {}))
                known.add(v)
    domain = codes >= 0
    n_domain = int(domain.sum())
    if n_domain == 0:
        raise InputError(f"Variable '{variable}' has no non-missing values to estimate percentages.")
    shares = design.category_shares(codes, len(cats_l))  # linear memory, even with 100,000 categories
    p = shares.share
    se = np.sqrt(np.clip(shares.variance, 0.0, None))
    df = design.degf()
    low, high = _intervals(p, se, method, level, df)
    table = pd.DataFrame({
        "value": cats_l,
        "label": labels_l,
        "n": shares.n,
        "estimate": p,
        "se": se,
        "ci_low": low,
        "ci_high": high,
    })
    return ProportionEstimates(
        variable=variable, table=table, n_domain=n_domain, n_missing=design.n_records - n_domain,
        weighted_domain=shares.total, df=df, ci_method=method, level=level,
        n_lonely_strata=design.lonely_strata_in(domain), lonely_psu=design.lonely_psu,
    )


def estimate_proportions(
    ds: Dataset,
    variable: str,
    design: SurveyDesign | None = None,
    ci: str = "wald",
    level: float = 0.95,
    lonely_psu: str = DEFAULT_LONELY_PSU,
    levels: Sequence[Any] | None = None,
) -> ProportionEstimates:
    """:func:`proportions` for a variable of a dataset, with its labels, missing codes and design roles."""
    if variable not in ds.frame.columns:
        raise InputError(f"Variable '{variable}' is not a variable of the data.")
    design = design or SurveyDesign.from_dataset(ds, lonely_psu=lonely_psu)
    meta = ds.meta_of(variable)
    return proportions(ds.frame[variable], design, meta.missing_codes, dict(meta.value_labels), ci=ci,
                       level=level, levels=levels, name=variable)


def mean(
    values: pd.Series,
    design: SurveyDesign,
    missing_codes: Sequence[Any] = (),
    level: float = 0.95,
    name: str | None = None,
) -> MeanEstimate:
    """Weighted mean among non-missing records, SE by linearization, normal-quantile Wald CI."""
    variable = name or str(values.name)
    if len(values) != design.n_records:
        raise InputError(f"Variable '{variable}' and the survey design have different numbers of records.")
    miss = missing_mask(values.reset_index(drop=True), missing_codes)
    numeric = pd.to_numeric(values.reset_index(drop=True).where(~miss), errors="coerce")
    bad = int((numeric.isna() & ~miss).sum())
    if bad:
        raise InputError(f"Variable '{variable}' has {bad} non-numeric value(s); a mean needs numbers.")
    domain = ~miss
    if not domain.any():
        raise InputError(f"Variable '{variable}' has no non-missing values.")
    y = numeric.fillna(0.0).to_numpy(dtype=np.float64)
    w = np.where(domain, design.weights, 0.0)
    total = float(w.sum())
    m = float(w @ y / total)
    scores = w * (y - m) / total
    se = float(np.sqrt(max(design.vcov(scores, domain)[0, 0], 0.0)))
    z = special.ndtri(0.5 + level / 2)  # = scipy.stats.norm.ppf, bit for bit
    return MeanEstimate(variable, m, se, m - z * se, m + z * se, int(domain.sum()), design.degf(domain))


def _intervals(p: np.ndarray, se: np.ndarray, method: CIMethod, level: float, df: int) -> tuple[np.ndarray, np.ndarray]:
    if method == "wald":
        z = special.ndtri(0.5 + level / 2)
        return p - z * se, p + z * se
    t = special.stdtrit(df, 0.5 + level / 2) if df > 0 else np.nan  # = scipy.stats.t.ppf
    inner = (p > 0) & (p < 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logit = np.log(p / (1 - p))
        half = t * se / (p * (1 - p))
        low = np.where(inner, 1 / (1 + np.exp(-(logit - half))), p)
        high = np.where(inner, 1 / (1 + np.exp(-(logit + half))), p)
    return low, high


def _label(value: Any, value_labels: dict[Any, str]) -> str:
    return _label_for(value, value_labels)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value
