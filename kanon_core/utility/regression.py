"""Survey-weighted linear and logistic regression with design-based (sandwich) standard errors.

Point estimates solve the weighted estimating equations ``sum_i w_i x_i (y_i - mu_i) = 0`` (weighted
least squares; logistic regression by iteratively reweighted least squares). Their covariance is the
linearization sandwich of Binder (1983), as R's ``svyglm``::

    V = A^{-1} B A^{-1},   A = X' diag(w_i v_i) X,   B = design covariance of the scores w_i x_i (y_i - mu_i)

with ``v_i = 1`` (linear) or ``mu_i (1 - mu_i)`` (logistic) and B from :meth:`SurveyDesign.vcov`, i.e. the
influence functions ``w_i (y_i - mu_i) x_i' A^{-1}`` summed by PSU within strata. Records with a
missing outcome or covariate are dropped but the design keeps all its PSUs (R's ``design[-nas, ]``).

Inference follows ``summary.svyglm``: t statistics with ``df = degf - p + 1`` where ``degf`` counts
PSUs minus strata among the records used and p the number of estimated coefficients. The joint test
of a covariate (all its dummies) is R's ``regTermTest`` Wald test: by default ``F = W / q`` on
``(q, df)`` degrees of freedom, W the Wald statistic ``b' V^{-1} b`` and q the number of coefficients
tested; ``test="chisq"`` gives ``W`` against chi-square(q) (``regTermTest(..., df = Inf)``).

Coefficients that are linear combinations of earlier ones (aliased, e.g. a dummy equal to another
covariate among the records used) are reported with NaN estimates, as R's ``NA``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from ..dataset import Dataset
from ..errors import InputError
from .design import DEFAULT_LONELY_PSU, SurveyDesign
from .formula import INTERCEPT, Formula, ModelMatrix, build_matrix, parse_formula

Family = Literal["auto", "gaussian", "binomial"]
FAMILIES: tuple[Family, ...] = ("auto", "gaussian", "binomial")
TermTest = Literal["F", "chisq"]
ALIAS_TOL = 1e-7
"""Relative residual norm below which a column counts as aliased (R's ``lm``/``glm`` QR tolerance)."""


@dataclass(frozen=True)
class RegressionResult:
    """A fitted survey regression.

    ``coefficients``: ``term, variable, level, label, estimate, se, statistic, p_value, ci_low, ci_high,
    aliased``. ``term_tests``: ``variable, kind, n_coef, statistic, df_num, df_den, p_value, test`` (one
    joint Wald test per covariate). ``vcov`` is the sandwich covariance of the non-aliased coefficients.
    """

    formula: str
    family: str
    outcome: str
    event: Any
    coefficients: pd.DataFrame
    term_tests: pd.DataFrame
    vcov: np.ndarray
    n_used: int
    n_dropped: int
    degf: int
    df_resid: int
    converged: bool
    iterations: int
    test: str
    level: float
    n_lonely_strata: int
    lonely_psu: str
    notes: tuple[str, ...] = field(default=())

    def significant(self, alpha: float = 0.05) -> list[str]:
        """Covariates whose joint Wald test has p-value below ``alpha``."""
        t = self.term_tests
        return [str(v) for v, p in zip(t["variable"], t["p_value"], strict=True) if np.isfinite(p) and p < alpha]

    def to_records(self) -> list[dict[str, Any]]:
        """JSON-ready rows ``{term, estimate, se, p_value}``."""
        return [{"term": r.term, "estimate": r.estimate, "se": r.se, "p_value": r.p_value}
                for r in self.coefficients.itertuples(index=False)]


def check_family(family: str) -> Family:
    if family not in FAMILIES:
        raise InputError(f"Regression family must be one of {', '.join(FAMILIES)}, not '{family}'.")
    return family  # type: ignore[return-value]


def regress(
    ds: Dataset,
    formula: str | Formula,
    design: SurveyDesign | None = None,
    family: str = "auto",
    test: str = "F",
    level: float = 0.95,
    domain: np.ndarray | None = None,
    lonely_psu: str = DEFAULT_LONELY_PSU,
    extra_numeric: tuple[tuple[str, np.ndarray, str], ...] = (),
) -> RegressionResult:
    """Fit ``formula`` on ``ds`` with design-based standard errors.

    ``family="auto"`` fits a logistic regression when the outcome takes exactly two values (the larger
    one is the event) and a linear regression otherwise. ``domain`` restricts the fit to a
    subpopulation while keeping the whole design for the variance.
    """
    fam = check_family(family)
    if test not in ("F", "chisq"):
        raise InputError("The joint test must be 'F' or 'chisq'.")
    if not 0 < level < 1:
        raise InputError("The confidence level must be between 0 and 1.")
    f = formula if isinstance(formula, Formula) else parse_formula(formula, ds.columns)
    design = design or SurveyDesign.from_dataset(ds, lonely_psu=lonely_psu)
    if design.n_records != ds.n_records:
        raise InputError("The survey design and the data have different numbers of records.")
    mm = build_matrix(ds, f, domain=domain, extra_numeric=extra_numeric)
    if fam == "auto":
        fam = "binomial" if mm.y_binary is not None else "gaussian"
    if fam == "binomial":
        if mm.y_binary is None:
            raise InputError(f"Outcome '{f.outcome}' does not have exactly two values; logistic regression needs a binary outcome.")
        y = mm.y_binary
    else:
        if mm.y is None:
            raise InputError(f"Outcome '{f.outcome}' is not numeric; a linear regression needs a numeric outcome.")
        y = mm.y
    return _fit(f, fam, mm, y, design, test, level)


def _fit(f: Formula, family: str, mm: ModelMatrix, y: np.ndarray, design: SurveyDesign, test: str,
         level: float) -> RegressionResult:
    s = mm.sample
    n_used = int(s.sum())
    # weights rescaled to mean 1 on the records used: estimates and the sandwich do not depend on scale
    w_all = np.where(s, design.weights, 0.0)
    w = w_all[s] / w_all[s].mean()
    xs = mm.x[s]
    keep = _non_aliased(xs * np.sqrt(w)[:, None])
    notes: list[str] = []
    if not keep.all():
        notes.append(f"{int((~keep).sum())} coefficient(s) aliased with others (not estimable)")
    xk = xs[:, keep]
    p = xk.shape[1]
    if n_used <= p:
        raise InputError(f"Only {n_used} complete record(s) for {p} coefficient(s); the model cannot be estimated.")
    ys = y[s]
    if family == "gaussian":
        beta = _wls(xk, ys, w)
        mu = xk @ beta
        var_fn = np.ones_like(mu)
        converged, iterations = True, 1
    else:
        beta, mu, converged, iterations = _logistic(xk, ys, w)
        var_fn = mu * (1 - mu)
        if not converged:
            notes.append("logistic regression did not converge (perfect separation?)")
    a = (xk * (w * var_fn)[:, None]).T @ xk
    a_inv = np.linalg.inv(a)
    infl = np.zeros((design.n_records, p))
    infl[s] = (xk * (w * (ys - mu))[:, None]) @ a_inv
    vcov = design.vcov(infl, s)
    se = np.sqrt(np.clip(np.diag(vcov), 0.0, None))
    degf = design.degf(s)
    df_resid = degf + 1 - p
    with np.errstate(divide="ignore", invalid="ignore"):
        tstat = beta / se
    if df_resid > 0:
        pval = 2 * stats.t.sf(np.abs(tstat), df_resid)
        tq = stats.t.ppf(0.5 + level / 2, df_resid)
    else:
        pval = np.full(p, np.nan)
        tq = np.nan
        notes.append("no residual design degrees of freedom: p-values are not available")

    full = len(mm.columns)
    est = np.full(full, np.nan)
    est[keep] = beta
    se_f = np.full(full, np.nan)
    se_f[keep] = se
    t_f = np.full(full, np.nan)
    t_f[keep] = tstat
    p_f = np.full(full, np.nan)
    p_f[keep] = pval
    coefficients = pd.DataFrame({
        "term": [c.term for c in mm.columns],
        "variable": [c.variable for c in mm.columns],
        "level": [c.level for c in mm.columns],
        "label": [c.label for c in mm.columns],
        "estimate": est,
        "se": se_f,
        "statistic": t_f,
        "p_value": p_f,
        "ci_low": est - tq * se_f,
        "ci_high": est + tq * se_f,
        "aliased": ~keep,
    })
    kept_vars = [c.variable for c, k in zip(mm.columns, keep, strict=True) if k]
    term_tests = _term_tests(f, mm, kept_vars, beta, vcov, df_resid, test)
    return RegressionResult(
        formula=f.text, family=family, outcome=f.outcome, event=mm.event if family == "binomial" else None,
        coefficients=coefficients, term_tests=term_tests, vcov=vcov, n_used=n_used,
        n_dropped=design.n_records - n_used, degf=degf, df_resid=df_resid, converged=converged,
        iterations=iterations, test=test, level=level, n_lonely_strata=design.lonely_strata_in(s),
        lonely_psu=design.lonely_psu, notes=tuple(notes),
    )


def _term_tests(f: Formula, mm: ModelMatrix, kept_vars: list[str | None], beta: np.ndarray, vcov: np.ndarray,
                df_resid: int, test: str) -> pd.DataFrame:
    rows = []
    for t in f.terms:
        idx = [i for i, v in enumerate(kept_vars) if v == t.variable]
        q = len(idx)
        stat, df_den, p = np.nan, np.nan, np.nan
        if q:
            b = beta[idx]
            v = vcov[np.ix_(idx, idx)]
            try:
                wald = float(b @ np.linalg.solve(v, b))
            except np.linalg.LinAlgError:
                wald = np.nan
            if test == "F":
                df_den = float(df_resid)
                stat = wald / q
                p = float(stats.f.sf(stat, q, df_resid)) if df_resid > 0 and np.isfinite(stat) else np.nan
            else:
                df_den = np.inf
                stat = wald
                p = float(stats.chi2.sf(stat, q)) if np.isfinite(stat) else np.nan
        rows.append({"variable": t.variable, "kind": mm.kinds[t.variable], "n_coef": q, "statistic": stat,
                     "df_num": q, "df_den": df_den, "p_value": p, "test": test})
    return pd.DataFrame(rows, columns=["variable", "kind", "n_coef", "statistic", "df_num", "df_den", "p_value", "test"])


def _non_aliased(xw: np.ndarray) -> np.ndarray:
    """Columns kept in order unless (nearly) a combination of earlier kept ones, as R's pivoting QR."""
    n, p = xw.shape
    keep = np.zeros(p, dtype=bool)
    basis: list[np.ndarray] = []
    for j in range(p):
        col = xw[:, j].astype(np.float64)
        norm = np.linalg.norm(col)
        if norm == 0:
            continue
        r = col.copy()
        for _ in range(2):  # Gram-Schmidt twice for numerical stability
            for q in basis:
                r -= (q @ r) * q
        rn = np.linalg.norm(r)
        if rn > ALIAS_TOL * norm:
            basis.append(r / rn)
            keep[j] = True
    return keep


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    sw = np.sqrt(w)
    beta, *_ = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)
    return beta


def _logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, max_iter: int = 100,
              tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """Weighted logistic regression by IRLS (Fisher scoring), started like R's ``binomial()``."""
    mu = (w * y + 0.5) / (w + 1)
    eta = np.log(mu / (1 - mu))
    beta = _wls(x, eta, w * mu * (1 - mu))
    dev_old = np.inf
    for it in range(1, max_iter + 1):
        eta = x @ beta
        mu = 1 / (1 + np.exp(-eta))
        mu = np.clip(mu, 1e-15, 1 - 1e-15)
        v = mu * (1 - mu)
        z = eta + (y - mu) / v
        beta = _wls(x, z, w * v)
        eta = x @ beta
        mu = np.clip(1 / (1 + np.exp(-eta)), 1e-15, 1 - 1e-15)
        dev = -2 * float(np.sum(w * (y * np.log(mu) + (1 - y) * np.log(1 - mu))))
        if abs(dev - dev_old) / (abs(dev) + 0.1) < tol:
            return beta, mu, True, it
        dev_old = dev
    return beta, mu, False, max_iter


def design_for(ds: Dataset, weight: str | None = None, strata: str | None = None, psu: str | None = None,
               lonely_psu: str = DEFAULT_LONELY_PSU) -> SurveyDesign:
    """Convenience: the survey design of a dataset (explicit names override its roles)."""
    return SurveyDesign.from_dataset(ds, weight=weight, strata=strata, psu=psu, lonely_psu=lonely_psu)


__all__ = ["INTERCEPT", "RegressionResult", "regress", "design_for", "check_family", "FAMILIES"]
