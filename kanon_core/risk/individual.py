"""Individual and global re-identification risk: the Benedetti–Franconi estimate from fk and Fk.

The individual risk of a record is the probability that an intruder who finds the record's combination
of quasi-identifier values in the population picks the right person, estimated from the sample:
``fk`` records share the combination in the sample, and their sampling weights sum to ``Fk``, the
estimated number of such people in the population. Benedetti & Franconi (1998; Franconi & Polettini
2004, the mu-Argus estimator) model the population frequency given the sample frequency as a negative
binomial with success probability ``pk = fk / Fk`` and take the expectation of ``1 / F``.

This module computes it exactly as sdcMicro's ``indivRisk`` does (Templ, Kowarik & Meindl 2015; the
function ``measure_risk`` calls it on ``freqCalc``'s fk and Fk), branch by branch:

* ``fk == Fk`` (every weight 1, a census): risk = 1 / fk;
* ``fk == 1``: risk = pk / (1 - pk) * log(1 / pk);
* ``fk == 2``: risk = pk / (1 - pk) - (pk / (1 - pk))^2 * log(1 / pk);
* ``fk > 2``, method ``approx`` (the default): risk = pk / (fk - (1 - pk));
* ``fk > 2``, method ``exact``: the expectation itself. sdcMicro evaluates it by Benedetti & Franconi's
  alternating series (``(pk / (1 - pk))^fk * (A * (1 + BB) + (-1)^fk * log(pk))``), whose terms cancel: from
  fk = 12 at sampling fractions near 1 it gives negative risks (fk = 12, pk = 0.95: -17.6 for 0.0795) or
  astronomically large ones, and NaN for large classes. kanon computes the same expectation in closed form,
  E[1/F] = pk / fk * 2F1(1, 1; fk + 1; 1 - pk) (the negative binomial's sum
  pk/fk * sum_j (1 - pk)^j / C(fk + j, j) of positive terms), evaluated as an integral of a smooth
  positive function (:func:`expected_inverse`), which is stable for every fk and pk and equals sdcMicro's
  series wherever that series is accurate. The fk = 1 and fk = 2 formulas above are this expectation at
  fk = 1 and 2; near a census (pk within 1e-3 of 1) they are computed by the integral too (sdcMicro's fk = 2
  formula cancels when Fk is within 1e-8 of fk: 1.5 for 0.5). A fractional fk (sdcMicro's
  ``alpha`` below 1) above 2 keeps sdcMicro's series, whose value there is sdcMicro's definition; a value of
  it outside [0, 1] is undefined (NaN, counted as such), never a risk;
* any other fk (between 1 and 2, which only happens with sdcMicro's ``alpha`` below 1): risk 0. This is
  what sdcMicro computes (none of its branches applies); kanon keeps it so that both agree, and the
  Risk page says so.

The result is multiplied by sdcMicro's correction factor ``qual`` (default 1). Without sampling weights
sdcMicro's ``measure_risk`` uses ``survey = FALSE``, which is simply 1 / fk; pass ``Fk=None`` for that.

Everything here is element-wise, so it works per class (on :meth:`ClassTable.class_sizes`) or per
record (on :func:`~kanon_core.risk.classes.compute_class_sizes`); per class is what the generalization
lattice uses, because records of one class share their fk and Fk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

DEFAULT_MAX_RISK = 0.01
"""The default threshold of an acceptable individual risk (1 %), as a statistical office might set it."""


LAGUERRE_NODES = 40
"""Gauss-Laguerre nodes of :func:`expected_inverse`: 40 give it to about 1e-14 (relative) against the positive
series summed term by term, for fk 3 to 400 and pk 1e-4 to 1 (the tests check it on random cases)."""


def expected_inverse(fk: np.ndarray, pk: np.ndarray) -> np.ndarray:
    """E[1/F] for F - fk negative binomial (fk successes, success probability pk), element-wise (module
    docstring), for fk >= 3, or any fk with pk near 1.

    The sum pk/fk * sum_j (1 - pk)^j / C(fk + j, j) equals pk * integral_0^1 s^(fk-1) / (pk + (1-pk) s) ds
    (expand 1 / (pk + (1-pk) s) around s = 1); with s = exp(-u / fk) it becomes
    pk / fk * integral_0^inf exp(-u) g(u) du, g(u) = 1 / (pk + (1 - pk) exp(-u / fk)), a Gauss-Laguerre
    integral of a smooth function rising from 1 to 1/pk. Its rise lies at u = fk log((1 - pk) / pk), where
    exp(-u) / pk = pk^(fk-1) / (1-pk)^fk: negligible for fk >= 3 whatever pk, and where pk is near 1, g hardly
    rises at all. Every term is positive: nothing cancels."""
    from numpy.polynomial.laguerre import laggauss

    u, w = laggauss(LAGUERRE_NODES)
    fk = np.asarray(fk, dtype=np.float64)
    pk = np.asarray(pk, dtype=np.float64)
    g = 1.0 / (pk[..., None] + (1.0 - pk[..., None]) * np.exp(-u / fk[..., None]))
    return pk / fk * (g @ w)


NEAR_CENSUS = 1e-3
"""Below this 1 - pk, the fk = 1 and 2 formulas lose digits to cancellation (fk = 2, Fk within 1e-8 of fk:
1.5 for 0.5); :func:`expected_inverse` takes over there, where its integrand is nearly constant."""


def _risk_small(fk: np.ndarray, pk: np.ndarray) -> np.ndarray:
    """The fk = 1 and fk = 2 branches, shared by both methods (sdcMicro writes them once for each); near a
    census (1 - pk below :data:`NEAR_CENSUS`) the same expectation by :func:`expected_inverse`."""
    out = np.zeros_like(pk)
    one = fk == 1
    two = fk == 2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = pk / (1.0 - pk)
        log_inv = np.log(1.0 / pk)
        out[one] = (ratio * log_inv)[one]
        out[two] = (ratio - ratio**2 * log_inv)[two]
    near = (one | two) & (1.0 - pk < NEAR_CENSUS) & (pk < 1.0)
    if near.any():
        out[near] = expected_inverse(fk[near], pk[near])
    return out


def _approx(fk: np.ndarray, pk: np.ndarray) -> np.ndarray:
    out = _risk_small(fk, pk)
    big = fk > 2
    with np.errstate(divide="ignore", invalid="ignore"):
        out[big] = (pk / (fk - (1.0 - pk)))[big]
    return out


def _exact_one(f: float, p: float) -> float:
    """Benedetti & Franconi's exact series for one fk > 2, as sdcMicro's ``indivRisk(method = "exact")``.

    sdcMicro sums, for m = 0 .. fk - 3, (-1)^(m + 1) times the product of B(0) .. B(m); the products are
    running products, so one pass suffices (the same sum, computed in O(fk) instead of O(fk^2)). R's
    ``0:(fk - 3)`` is the single value 0 when fk - 3 is between -1 and 0, which ``_r_range`` reproduces.
    Large fk with small pk overflow to inf/NaN in sdcMicro too (its formula is not stable there).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ms = _r_range(f - 3.0)
        i = ms.astype(np.float64)
        b_terms = ((f - 1.0 - i) ** 2 / ((i + 1.0) * (f - 2.0 - i))
                   * (np.power(p, i + 2.0 - f) - 1.0) / (np.power(p, i + 1.0 - f) - 1.0))
        running = np.cumprod(b_terms)
        signs = np.where(ms % 2 == 0, -1.0, 1.0)  # (-1)^(m + 1)
        bb = float(np.sum(signs * running))
        a = (p ** (1.0 - f) - 1.0) / (f - 1.0)
        eins = (p / (1.0 - p)) ** f
        drei = float(np.power(-1.0, f)) * np.log(p)
        return float(eins * (a * (1.0 + bb) + drei))


def _r_range(to: float) -> np.ndarray:
    """R's ``0:to`` for to > -1: 0, 1, ..., floor(to) (just 0 when to < 1); R's fuzz of 1e-10 included."""
    if to < 0:
        return np.zeros(1, dtype=np.int64)
    return np.arange(int(np.floor(to + 1e-10)) + 1, dtype=np.int64)


def _exact(fk: np.ndarray, pk: np.ndarray) -> np.ndarray:
    out = _risk_small(fk, pk)
    whole = (fk > 2) & (fk == np.round(fk))
    if whole.any():
        out[whole] = expected_inverse(fk[whole], pk[whole])
    big = np.flatnonzero((fk > 2) & ~whole)  # a fractional fk (alpha < 1): sdcMicro's series
    if len(big):
        # classes share (fk, pk) often: evaluate each distinct pair once
        pairs, inverse = np.unique(np.column_stack([fk[big], pk[big]]), axis=0, return_inverse=True)
        vals = np.array([_exact_one(f, p) for f, p in pairs])
        vals[~((vals >= 0.0) & (vals <= 1.0))] = np.nan  # the series' cancellation: no risk, undefined
        out[big] = vals[inverse.reshape(-1)]
    return out


RISK_METHODS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {"approx": _approx, "exact": _exact}
"""The estimators of the fk > 2 branch, by name (sdcMicro's ``method`` argument); register more here."""


def individual_risk(fk: np.ndarray, Fk: np.ndarray | None, method: str = "approx",  # noqa: N803
                    qual: float = 1.0) -> np.ndarray:
    """Benedetti & Franconi's individual risk, element-wise, exactly as sdcMicro's ``indivRisk``.

    ``fk`` are sample frequencies (possibly fractional with sdcMicro's alpha), ``Fk`` the summed weights
    of the same records (None: no sampling weights, and the risk is 1 / fk as in sdcMicro's
    ``measure_risk`` without a weight). ``method`` is ``approx`` (default) or ``exact``; ``qual`` is
    sdcMicro's final correction factor. Returns float64 of the same shape. See the module docstring for
    every branch, including the ones that give 0.
    """
    if method not in RISK_METHODS:
        raise InputError(f"The individual risk method must be one of {', '.join(RISK_METHODS)}.")
    fk = np.asarray(fk, dtype=np.float64)
    if Fk is None:
        with np.errstate(divide="ignore"):
            return 1.0 / fk
    Fk = np.asarray(Fk, dtype=np.float64)  # noqa: N806
    if Fk.shape != fk.shape:
        raise InputError("fk and Fk must have one value per class or record each.")
    with np.errstate(divide="ignore", invalid="ignore"):
        pk = fk / Fk
    rk = RISK_METHODS[method](fk, pk)
    census = fk == Fk
    if census.any():
        with np.errstate(divide="ignore"):
            rk[census] = 1.0 / fk[census]
    return rk * float(qual)


@dataclass(frozen=True)
class GlobalRisk:
    """The file's risk from its records' individual risks (sdcMicro's ``measure_risk`` global figures).

    ``expected_reidentifications`` is the sum of the individual risks over the records (sdcMicro's
    ``global_risk_ER``): how many people an intruder who tried every record would be expected to
    identify correctly. ``global_risk`` is its mean (``global_risk``), ``n_above`` the records whose risk
    exceeds ``threshold``. Records whose risk is undefined (NaN, which sdcMicro's exact method gives for
    large classes) are left out of the sum, as sdcMicro's ``na.rm = TRUE`` does, but kept in the mean's
    denominator; ``n_undefined`` counts them, so a sum over nothing is never read as "no risk".
    """

    expected_reidentifications: float
    global_risk: float
    n_above: int
    threshold: float
    n_records: int
    max_risk: float
    n_undefined: int = 0

    def to_json(self) -> dict:
        return {"expected_reidentifications": self.expected_reidentifications, "global_risk": self.global_risk,
                "records_above_max_risk": self.n_above, "max_risk": self.threshold,
                "highest_individual_risk": self.max_risk, "records_risk_undefined": self.n_undefined}

    @property
    def undefined_note(self) -> str:
        """Why some risks are missing, for the page and the CLI (empty when all are defined)."""
        if not self.n_undefined:
            return ""
        return (f"{self.n_undefined:,} records have no defined individual risk: the exact method's alternating "
                "series (sdcMicro's, used for the fractional class sizes alpha below 1 gives) breaks down for large "
                "classes, so they are left out of the expected re-identifications as sdcMicro leaves them out. Use "
                "the approximation (the default) or alpha = 1 for a figure for every record.")


def check_max_risk(threshold: float) -> float:
    """A risk threshold is a probability strictly between 0 and 1 (sdcMicro's ``max_global_risk`` rule)."""
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        raise InputError("The maximum risk must be a number between 0 and 1.") from None
    if not 0.0 < t < 1.0:
        raise InputError("The maximum risk must be between 0 and 1 (exclusive).")
    return t


def global_risk(risk: np.ndarray, count: np.ndarray | None = None,
                threshold: float = DEFAULT_MAX_RISK) -> GlobalRisk:
    """Expected re-identifications, their mean and the records above ``threshold``.

    ``risk`` is per record, or per class with ``count`` the records of each class (the same totals,
    computed on the class table without expanding it).
    """
    threshold = check_max_risk(threshold)
    risk = np.asarray(risk, dtype=np.float64)
    count = np.ones(len(risk), dtype=np.int64) if count is None else np.asarray(count, dtype=np.int64)
    if count.shape != risk.shape:
        raise InputError("One record count per class is needed.")
    n = int(count.sum())
    finite = ~np.isnan(risk)
    er = float(np.sum(risk[finite] * count[finite]))
    return GlobalRisk(
        expected_reidentifications=er,
        global_risk=er / n if n else 0.0,
        n_above=int(count[risk > threshold].sum()),
        threshold=threshold,
        n_records=n,
        max_risk=float(np.nanmax(risk)) if finite.any() else 0.0,
        n_undefined=int(count[~finite].sum()),
    )
