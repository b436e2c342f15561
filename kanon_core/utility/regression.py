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

A logistic regression whose outcome is separated -- completely or quasi-completely, e.g. a rare category
(easily made by the "suppressed as a category" model) whose records all have the same outcome -- has
infinite maximum-likelihood estimates for some coefficients (:mod:`.separation`). The estimates, SEs and
p-values are reported as R reports them (where the iterations stopped), and each such coefficient carries
a ``note`` saying so: a beta of 23 with p = 1e-72 must not pass without a word. An outcome with a single
value among the records used is an input error (there is nothing to explain), not SE 0 / p 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import linalg, stats

from ..dataset import Dataset
from ..errors import InputError
from .design import DEFAULT_LONELY_PSU, SurveyDesign
from .formula import (
    INTERCEPT,
    MOVED_REFERENCE,
    Formula,
    ModelMatrix,
    build_matrix,
    is_categorical,
    parse_formula,
)
from .separation import infinite_coefficients

Family = Literal["auto", "gaussian", "binomial"]
FAMILIES: tuple[Family, ...] = ("auto", "gaussian", "binomial")
TermTest = Literal["F", "chisq"]
ALIAS_TOL = 1e-7
"""Relative residual norm below which a column counts as aliased: R's ``lm`` tolerance. (``glm.fit`` uses
``min(1e-7, epsilon / 1000)``; the two agree on exact collinearity such as dummies that add up to another
covariate, and a column closer than 1e-7 to the others would have a useless, enormous standard error.)"""
MAX_MATRIX_BYTES = 1024**3
"""Largest design matrix (records x columns x 8 bytes) kanon builds. Fitting holds about seven arrays of that
size at its peak (the matrix, the complete cases, their weighted copy, the QR input, the influence functions and
their copies in the variance), so 1 GiB means some 7 GiB of memory. A categorical covariate with thousands of
categories on a large file would need far more; it is refused up front, with its name and number of
categories, instead of failing for lack of memory."""


@dataclass(frozen=True)
class RegressionResult:
    """A fitted survey regression.

    ``coefficients``: ``term, variable, level, label, estimate, se, statistic, p_value, ci_low, ci_high,
    aliased, note`` (``note`` is "" or why the coefficient must not be read as it stands: aliased, or
    infinite under separation). ``term_tests``: ``variable, kind, n_coef, statistic, df_num, df_den, p_value, test`` (one
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
        """JSON-ready rows ``{term, estimate, se, p_value, note}`` (``note`` null when there is nothing to say)."""
        return [{"term": r.term, "estimate": r.estimate, "se": r.se, "p_value": r.p_value, "note": r.note or None}
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
    references: Mapping[str, Any] | None = None,
) -> RegressionResult:
    """Fit ``formula`` on ``ds`` with design-based standard errors.

    ``family="auto"`` fits a logistic regression when the outcome takes exactly two values (the larger
    one is the event) and a linear regression otherwise (:func:`choose_family`). ``domain`` restricts the fit
    to a subpopulation while keeping the whole design for the variance. ``references`` fixes categorical
    covariates' reference levels (:func:`~kanon_core.utility.formula.build_matrix`); one with no record here
    is noted, and its coefficients' labels say they are contrasts with another level.
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
    check_matrix_size(ds, f, domain, len(extra_numeric))
    mm = build_matrix(ds, f, domain=domain, extra_numeric=extra_numeric, references=references)
    if len(mm.outcome_levels) < 2:
        raise InputError(f"Outcome '{f.outcome}' takes a single value on the {int(mm.sample.sum())} record(s) used; "
                         "a regression needs an outcome that varies.")
    fam = choose_family(fam, mm.outcome_levels)
    if fam == "binomial":
        if mm.y_binary is None:
            raise InputError(f"Outcome '{f.outcome}' does not have exactly two values; logistic regression needs a binary outcome.")
        y = mm.y_binary
    else:
        if mm.y is None:
            raise InputError(f"Outcome '{f.outcome}' is not numeric; a linear regression needs a numeric outcome.")
        y = mm.y
    result = _fit(f, fam, mm, y, design, test, level)
    if mm.moved_references:
        moved = ", ".join(mm.moved_references)
        result = replace(result, notes=(*result.notes, (
            f"the reference category of {moved} has no record here (suppressed or recoded), so its coefficients "
            f"compare with another category; they are labelled {MOVED_REFERENCE} and are not the same contrasts "
            "as the original model's (the joint test of the covariate still is)")))
    return result


def choose_family(family: str, outcome_levels: Sequence[Any]) -> str:
    """The family ``family`` means for an outcome with these values among the records used: ``"auto"`` is
    logistic for exactly two values, else linear; the others stand for themselves."""
    if family != "auto":
        return family
    return "binomial" if len(outcome_levels) == 2 else "gaussian"


def check_matrix_size(ds: Dataset, f: Formula, domain: np.ndarray | None = None, n_extra: int = 0) -> None:
    """Refuse, before building it, a design matrix that cannot be fitted: a categorical covariate with at least
    as many categories as complete records (never estimable: one coefficient per category), or a matrix above
    :data:`MAX_MATRIX_BYTES`. The message names the covariate with most categories and their number."""
    n = ds.n_records
    sample = np.ones(n, dtype=bool) if domain is None else np.asarray(domain, dtype=bool).copy()
    missing = {v: ds.missing_mask(v) for v in f.variables if v in ds.frame.columns}
    for mask in missing.values():
        sample &= ~mask
    n_used = int(sample.sum())
    n_columns = 1 + n_extra
    levels: dict[str, int] = {}
    for t in f.terms:
        if t.variable not in missing:
            return  # build_matrix names the unknown variable
        col = ds.frame[t.variable]
        if is_categorical(col, t.categorical, missing[t.variable]):
            levels[t.variable] = _n_levels(col, sample)
            n_columns += max(levels[t.variable] - 1, 0)
        else:
            n_columns += 1
    widest = max(levels, key=levels.__getitem__) if levels else None
    if widest is not None and n_used and levels[widest] >= n_used:
        raise InputError(f"Covariate '{widest}' has {levels[widest]} categories on only {n_used} complete record(s); "
                         "the model cannot be estimated (one coefficient per category). Merge its categories or "
                         "leave it out.")
    size = 8 * n * n_columns
    if size > MAX_MATRIX_BYTES:
        need = (f"the model would need {n_columns} columns on {n} records, a design matrix of "
                f"{size / 1024**3:.1f} GiB, more than the {MAX_MATRIX_BYTES / 1024**3:g} GiB kanon builds.")
        if widest is None:
            raise InputError(f"The formula has too many covariates for this file: {need}")
        raise InputError(f"Covariate '{widest}' has {levels[widest]} categories: {need} Merge its categories or "
                         "leave it out.")


def _n_levels(series: pd.Series, sample: np.ndarray) -> int:
    """Distinct values of ``series`` among the ``sample`` records, as the dummy coding counts them (hashed in
    compiled code, not by a Python set per record)."""
    found, _ = pd.factorize(series.to_numpy(dtype=object)[sample], use_na_sentinel=True)
    return int(found.max(initial=-1)) + 1


def _fit(f: Formula, family: str, mm: ModelMatrix, y: np.ndarray, design: SurveyDesign, test: str,
         level: float) -> RegressionResult:
    s = mm.sample
    n_used = int(s.sum())
    # weights rescaled to mean 1 on the records used: estimates and the sandwich do not depend on scale
    w_all = np.where(s, design.weights, 0.0)
    w = w_all[s] / w_all[s].mean()
    xs = mm.x[s]
    ys = y[s]
    sw = np.sqrt(w)
    xw, yw = xs * sw[:, None], ys * sw
    gram = xw.T @ xw
    r = None
    if _clearly_full_rank(gram):
        keep = np.ones(xs.shape[1], dtype=bool)
    else:
        # one QR of [X y] (weighted) serves the aliasing check and, for a linear model, the least squares fit
        r = np.linalg.qr(np.column_stack([xw, yw]), mode="r")
        keep = _aliasing_walk(r[:, :-1])
    notes: list[str] = []
    if not keep.all():
        notes.append(f"{int((~keep).sum())} coefficient(s) aliased with others (not estimable)")
    xk = xs[:, keep]
    p = xk.shape[1]
    infinite = np.zeros(p, dtype=bool)
    if n_used <= p:
        raise InputError(f"Only {n_used} complete record(s) for {p} coefficient(s); the model cannot be estimated.")
    if family == "gaussian":
        beta = _least_squares_from_r(r, keep) if r is not None else _normal_equations(xw, yw, gram)
        mu = xk @ beta
        var_fn = np.ones_like(mu)
        converged, iterations = True, 1
    else:
        try:
            beta, mu, converged, iterations = _logistic(xk, ys, w)
        except np.linalg.LinAlgError:
            raise InputError("The logistic regression cannot be fitted (a covariate predicts the outcome "
                             "perfectly?).") from None
        var_fn = mu * (1 - mu)
        infinite = infinite_coefficients(xk, ys, w * np.abs(ys - mu))  # the fit's score proves most cases
        if infinite.any():
            notes.append(f"separation: {int(infinite.sum())} coefficient(s) have infinite estimates (see their "
                         "notes); merging rare categories or dropping the covariate gives a model that can be read")
        if not converged:
            notes.append("logistic regression did not converge (perfect separation?)")
        eps = 10 * np.finfo(float).eps  # R's glm.fit warns at the same bound
        if (mu < eps).any() or (mu > 1 - eps).any():
            notes.append("fitted probabilities numerically 0 or 1 occurred (a covariate separates the outcome?)")
    a = (xk * (w * var_fn)[:, None]).T @ xk
    try:
        a_inv = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise InputError("The model's information matrix is singular; its standard errors cannot be computed.") from None
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
        "note": _coefficient_notes(mm, keep, infinite, xs, ys),
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


def _coefficient_notes(mm: ModelMatrix, keep: np.ndarray, infinite: np.ndarray, xs: np.ndarray,
                       ys: np.ndarray) -> list[str]:
    """Per coefficient: why it must not be read as it stands ("" when it can)."""
    notes = ["" if k else "aliased: a linear combination of other coefficients on the records used; not estimable"
             for k in keep]
    for j, is_inf in zip(np.flatnonzero(keep), infinite, strict=True):
        if not is_inf:
            continue
        col = mm.columns[j]
        rows = xs[:, j] == 1.0
        why = "the covariates predict the outcome perfectly for some records"
        if col.level is not None and np.isin(xs[:, j], (0.0, 1.0)).all() and rows.any() and np.unique(ys[rows]).size == 1:
            why = f"all {int(rows.sum())} record(s) of this category have the same outcome"
        notes[j] = (f"separation: the estimate is infinite ({why}); the estimate, SE and p-value shown are "
                    "where the iterations stopped and mean nothing")
    return notes


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


def _non_aliased(xw: np.ndarray, tol: float = ALIAS_TOL) -> np.ndarray:
    """Columns kept in order unless (nearly) a combination of earlier kept ones -- R's choice.

    R's ``lm``/``glm`` (LINPACK ``dqrdc2``, "limited pivoting") walk the columns left to right and move a
    column to the end, i.e. alias it, when its residual norm after projecting out the columns kept so
    far falls below ``tol`` times its own norm; of two collinear columns the *later* one is dropped. A
    general rank-revealing QR (largest residual first, LAPACK ``geqp3``) would choose differently, so
    it is not used.
    """
    xw = np.asarray(xw, dtype=np.float64)
    if xw.shape[1] == 0:
        return np.zeros(0, dtype=bool)
    return _aliasing_walk(np.linalg.qr(xw, mode="r"), tol)


FULL_RANK_PIVOT = 1e-6
"""Fast path: squared relative residual (Cholesky pivot of the unit-diagonal Gram matrix) above which no column
can be aliased, whatever the rounding of the Gram matrix (checked together with :data:`FULL_RANK_COND`)."""
FULL_RANK_COND = 1e4
"""Fast path: largest condition number of the scaled design for which the Gram matrix is accurate enough."""


def _clearly_full_rank(gram: np.ndarray) -> bool:
    """True when no column can be aliased, decided from ``X'X`` alone (one matrix product over the data).

    With columns scaled to unit norm, the Cholesky pivots of ``X'X`` taken in column order are the squared
    residual norms of :func:`_aliasing_walk`. Rounding the Gram matrix perturbs them by about
    ``eps * cond(X)^2`` (< 1e-8 when ``cond(X) < 1e4``), far below :data:`FULL_RANK_PIVOT` -- so every
    true residual is then above ``1e-3``, ten thousand times :data:`ALIAS_TOL`. Anything less clear
    (an aliased or nearly collinear column, an ill-conditioned design) returns False and goes to the
    exact QR walk. The point is speed: a tall Householder QR runs its many small BLAS calls on all
    threads and, on a machine whose cores are busy, can take a hundred times longer than this product.
    """
    d = np.sqrt(np.diag(gram))
    if d.size == 0 or not (d > 0).all() or not np.isfinite(gram).all():
        return False
    try:
        chol = np.linalg.cholesky(gram / np.outer(d, d))
    except np.linalg.LinAlgError:
        return False
    return bool(np.diag(chol).min() ** 2 > FULL_RANK_PIVOT and np.linalg.cond(chol) < FULL_RANK_COND)


def _normal_equations(xw: np.ndarray, yw: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """Least squares by the normal equations and one step of iterative refinement.

    Only used when :func:`_clearly_full_rank` holds (condition number below 1e4): the refinement step,
    which recomputes the residual from the data, brings the error well below what the comparison with
    R needs (1e-6), at the cost of two matrix-vector products.
    """
    factor = linalg.cho_factor(gram)
    beta = linalg.cho_solve(factor, xw.T @ yw)
    return beta + linalg.cho_solve(factor, xw.T @ (yw - xw @ beta))


def _aliasing_walk(r: np.ndarray, tol: float = ALIAS_TOL) -> np.ndarray:
    """:func:`_non_aliased` on the triangular factor R of ``X = Q R`` (Householder, no pivoting).

    Q has orthonormal columns, so the residual norm of a column of X after projecting out other columns
    equals that of the same column of R, and Householder QR is backward stable column by column: the
    left-to-right walk can run on the small p x p matrix instead of the n x p data. One LAPACK call on
    the data, not a Python loop over its columns, keeps the cost low even when BLAS threads compete.
    An unpivoted QR of the kept columns is exact up to the first aliased column, which is dropped
    before the next pass (one pass per aliased column, each on p x p numbers).
    """
    norms = np.linalg.norm(r, axis=0)
    keep = norms > 0  # an all-zero column is aliased (R: NA)
    while keep.any():
        idx = np.flatnonzero(keep)
        diag = np.abs(np.diag(np.linalg.qr(r[:, idx], mode="r")))
        bad = np.flatnonzero(diag < tol * norms[idx[: diag.size]])
        if bad.size == 0:
            keep[idx[diag.size:]] = False  # beyond min(n, p) columns every further one is a combination
            break
        keep[idx[bad[0]]] = False
    return keep


def _least_squares_from_r(r: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Least squares coefficients of the kept columns, from the R factor of ``[X y]`` (y last).

    The QR of the kept columns and y, taken on the small factor, is ``[[R_k, Q'y], [0, rss]]``, so the
    solution is ``R_k^{-1} Q'y`` -- the same computation as R's ``lm.fit``, without another pass over the data.
    """
    cols = np.append(np.flatnonzero(keep), r.shape[1] - 1)
    rk = np.linalg.qr(r[:, cols], mode="r")
    k = cols.size - 1
    return linalg.solve_triangular(rk[:k, :k], rk[:k, k])


def _logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, max_iter: int = 100,
              tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """Weighted logistic regression by Fisher scoring (IRLS), started like R's ``binomial()``.

    Each step solves ``X' diag(w mu (1 - mu)) X d = X' diag(w) (y - mu)`` -- IRLS written as Newton's
    step for the canonical link. The root, where the score ``X' diag(w) (y - mu)`` vanishes, does not
    depend on how precisely the p x p system is solved, so the normal equations (one matrix product
    over the data per step) give R's estimates. Stops, like ``glm.fit``, when the deviance changes by
    less than ``tol`` relative; ``mu`` is returned at the final coefficients.
    """
    mu = (w * y + 0.5) / (w + 1)
    eta = np.log(mu / (1 - mu))
    v = mu * (1 - mu)
    z = eta + (y - mu) / v
    beta = np.linalg.solve((x * (w * v)[:, None]).T @ x, x.T @ (w * v * z))
    mu = _expit(x @ beta)
    dev = _binomial_deviance(y, mu, w)
    for it in range(1, max_iter + 1):
        a = (x * (w * mu * (1 - mu))[:, None]).T @ x
        beta = beta + np.linalg.solve(a, x.T @ (w * (y - mu)))
        mu = _expit(x @ beta)
        dev_new = _binomial_deviance(y, mu, w)
        if abs(dev_new - dev) / (abs(dev_new) + 0.1) < tol:
            return beta, mu, True, it
        dev = dev_new
    return beta, mu, False, max_iter


def _expit(eta: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp(-eta) = inf for eta << 0 gives 0, then clipped like R's binomial()
        return np.clip(1 / (1 + np.exp(-eta)), 1e-15, 1 - 1e-15)


def _binomial_deviance(y: np.ndarray, mu: np.ndarray, w: np.ndarray) -> float:
    return -2 * float(np.sum(w * (y * np.log(mu) + (1 - y) * np.log(1 - mu))))


def design_for(ds: Dataset, weight: str | None = None, strata: str | None = None, psu: str | None = None,
               lonely_psu: str = DEFAULT_LONELY_PSU) -> SurveyDesign:
    """Convenience: the survey design of a dataset (explicit names override its roles)."""
    return SurveyDesign.from_dataset(ds, weight=weight, strata=strata, psu=psu, lonely_psu=lonely_psu)


__all__ = ["INTERCEPT", "RegressionResult", "regress", "design_for", "check_family", "choose_family", "FAMILIES"]
