"""A survey design (weights, strata, PSUs) and Taylor-linearization variances.

The variance of an estimator that is (asymptotically) a sum of per-record *scores* ``z_i`` (its
influence function) is estimated, as in R's ``survey`` package (``svyrecvar``) and in Wolter (2007,
ch. 6), by the with-replacement ("ultimate cluster") formula at the first stage::

    V = sum_h  n_h / (n_h - 1) * sum_j (z_hj - zbar_h)(z_hj - zbar_h)'

where ``z_hj`` is the total of the scores in PSU j of stratum h, ``n_h`` the number of PSUs of stratum
h *in the whole design* and ``zbar_h = sum_j z_hj / n_h``.

A finite population correction (R's ``svydesign(..., fpc = ~COL)``) multiplies the term of stratum h by
``f_h = (N_h - n_h) / N_h``, N_h the number of PSUs in the stratum's population. The rules are R's
(``as.fpc`` and ``onestrat`` of the survey package):

* values above 1 are population sizes N_h; values at most 1 are sampling fractions n_h / N_h (so N_h =
  n_h / value, and a fraction of 0 means no correction); a mix of the two, or every value exactly 1, is
  refused;
* with strata the correction is per stratum (first stage), so it must be constant within each stratum
  (R only warns; kanon refuses, because R then uses one value per PSU, which is a different design);
  without PSUs, N_h counts records, as n_h does;
* N_h < n_h (more than 100 % sampled) is refused; a stratum with f_h below 1e-7 (a census of its PSUs) has
  no variance at all -- checked before the single-PSU rules, as in R, so a fully sampled single-PSU
  stratum is neither a failure nor a stratum without variance under ``"average"``;
* a single-PSU stratum under ``"adjust"`` contributes ``f_h`` times its squared PSU total.

Domain estimation (e.g. percentages among records where a variable is not missing) keeps the whole
design: scores outside the domain are zero and ``n_h`` still counts every PSU of the stratum, which is
what ``svymean(..., na.rm = TRUE)`` and ``svyglm`` do (R subsets a ``survey.design2`` but keeps the PSU
counts). The degrees of freedom of a domain are those of R's ``degf`` on the subset: the number of PSUs
with at least one domain record minus the number of strata with at least one domain record.

PSU identifiers are taken as nested within strata (``svydesign(..., nest = TRUE)``): PSU 1 of stratum A
and PSU 1 of stratum B are different clusters. Without PSUs each record is its own PSU; without strata
the design has one stratum.

Strata with a single PSU ("lonely PSUs") have no within-stratum variance estimate. The choices follow
R's ``options(survey.lonely.psu = ...)``:

* ``"fail"`` -- raise an error naming how many such strata there are;
* ``"adjust"`` (kanon's default) -- centre the stratum's PSU total at the grand mean (zero for scores)
  instead of the stratum mean; conservative, and the choice most analysts make;
* ``"remove"`` / ``"certainty"`` -- the stratum contributes no variance (treated as a certainty
  selection); in R these two give identical numbers;
* ``"average"`` -- the stratum contributes the average variance of the other strata (the total is
  scaled by strata / strata-with-variance).

R's ``survey.adjust.domain.lonely`` is left at its default (``FALSE``): a stratum with several PSUs of
which only one has domain records is treated like any other stratum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from ..dataset import Dataset, validate_weights
from ..errors import InputError

LonelyPSU = Literal["adjust", "fail", "remove", "certainty", "average"]
LONELY_PSU_CHOICES: tuple[LonelyPSU, ...] = ("adjust", "fail", "remove", "certainty", "average")
DEFAULT_LONELY_PSU: LonelyPSU = "adjust"

LONELY_PSU_HELP = (
    "How to treat strata with a single PSU (as R's survey.lonely.psu): **adjust** (default) centres "
    "the lonely PSU at the overall mean, a conservative choice; **remove** / **certainty** give it no "
    "variance; **average** gives it the average variance of the other strata; **fail** stops with an error."
)

FPC_HELP = (
    "The variable with the first-stage population size of each stratum (values above 1) or its sampling "
    "fraction (values at most 1), constant within stratum, as the fpc of R's survey package "
    "(svydesign(..., fpc = ~COL)). Standard errors shrink by the factor sqrt(1 - n_h/N_h); leave it at "
    "(none) for with-replacement variances."
)


def check_lonely_psu(value: str) -> LonelyPSU:
    if value not in LONELY_PSU_CHOICES:
        raise InputError(f"Single-PSU strata handling must be one of {', '.join(LONELY_PSU_CHOICES)}, not '{value}'.")
    return value  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class SurveyDesign:
    """A first-stage design: per-record weights, stratum index and (globally unique) PSU index.

    ``stratum[i]`` is in ``0..n_strata-1``; ``psu[i]`` is in ``0..n_psus-1`` and every PSU lies in one
    stratum (``psu_stratum[p]``). ``n_psu_per_stratum[h]`` counts the PSUs of stratum h.
    """

    weights: np.ndarray
    stratum: np.ndarray
    psu: np.ndarray
    psu_stratum: np.ndarray
    lonely_psu: LonelyPSU = DEFAULT_LONELY_PSU
    weight_name: str | None = None
    strata_name: str | None = None
    psu_name: str | None = None
    fpc_factor: np.ndarray | None = None
    """Per stratum ``f_h = (N_h - n_h) / N_h`` (1 where N_h is infinite); None without an fpc."""
    fpc_name: str | None = None

    # -- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        weights: Sequence[float] | np.ndarray | None,
        strata: Sequence | np.ndarray | pd.Series | None = None,
        psu: Sequence | np.ndarray | pd.Series | None = None,
        lonely_psu: str = DEFAULT_LONELY_PSU,
        n: int | None = None,
        names: tuple[str | None, str | None, str | None] = (None, None, None),
        fpc: Sequence | np.ndarray | pd.Series | None = None,
        fpc_name: str | None = None,
    ) -> SurveyDesign:
        """Build a design from raw columns. ``weights=None`` means every weight is 1.

        ``fpc`` is R's ``fpc``: per record, the population size (values > 1) or the sampling fraction
        (values <= 1) of the record's stratum at the first stage.
        """
        lonely = check_lonely_psu(lonely_psu)
        lengths = [len(a) for a in (weights, strata, psu, fpc) if a is not None]
        if n is None:
            if not lengths:
                raise InputError("A survey design needs weights, strata, PSUs or a record count.")
            n = lengths[0]
        if any(length != n for length in lengths):
            raise InputError("Weights, strata, PSUs and the fpc must have one value per record.")
        if n == 0:
            raise InputError("The survey design has no records.")
        w_name, s_name, p_name = names
        if weights is None:
            w = np.ones(n, dtype=np.float64)
        else:
            w = validate_weights(pd.Series(np.asarray(weights)), w_name or "weight")
        if strata is None:
            stratum = np.zeros(n, dtype=np.int64)
        else:
            stratum = _codes(pd.Series(np.asarray(strata, dtype=object)), s_name or "stratum")
        if psu is None:
            psu_codes = np.arange(n, dtype=np.int64)
        else:
            raw = _codes(pd.Series(np.asarray(psu, dtype=object)), p_name or "PSU")
            # nested within strata: a PSU is a (stratum, psu) pair
            pair = stratum.astype(np.int64) * (int(raw.max()) + 1) + raw
            psu_codes = pd.factorize(pair, sort=True)[0].astype(np.int64)
        n_psus = int(psu_codes.max()) + 1
        psu_stratum = np.zeros(n_psus, dtype=np.int64)
        psu_stratum[psu_codes] = stratum
        factor = None
        if fpc is not None:
            n_h = np.bincount(psu_stratum, minlength=int(stratum.max()) + 1)
            factor = fpc_factors(fpc, stratum, n_h, fpc_name or "fpc")
        return cls(weights=w, stratum=stratum, psu=psu_codes, psu_stratum=psu_stratum, lonely_psu=lonely,
                   weight_name=w_name, strata_name=s_name, psu_name=p_name, fpc_factor=factor,
                   fpc_name=fpc_name if fpc is not None else None)

    @classmethod
    def from_dataset(
        cls,
        ds: Dataset,
        weight: str | None = None,
        strata: str | None = None,
        psu: str | None = None,
        lonely_psu: str = DEFAULT_LONELY_PSU,
        fpc: str | None = None,
    ) -> SurveyDesign:
        """The design of a dataset: explicit column names win over the dataset's roles."""
        weight = weight or ds.roles.weight
        strata = strata or ds.roles.strata
        psu = psu or ds.roles.psu
        fpc = fpc or ds.roles.fpc
        for col, what in ((weight, "Weight"), (strata, "Stratum"), (psu, "PSU"), (fpc, "FPC")):
            if col is not None and col not in ds.frame.columns:
                raise InputError(f"{what} variable '{col}' is not a variable of the data.")
        return cls.from_arrays(
            None if weight is None else ds.frame[weight],
            None if strata is None else ds.frame[strata],
            None if psu is None else ds.frame[psu],
            lonely_psu=lonely_psu,
            n=ds.n_records,
            names=(weight, strata, psu),
            fpc=None if fpc is None else _fpc_values(ds, fpc),
            fpc_name=fpc,
        )

    # -- description ---------------------------------------------------------------------------------------
    @property
    def n_records(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_strata(self) -> int:
        return int(self.psu_stratum.max()) + 1 if self.psu_stratum.size else 0

    @property
    def n_psus(self) -> int:
        return int(self.psu_stratum.shape[0])

    @property
    def n_psu_per_stratum(self) -> np.ndarray:
        return np.bincount(self.psu_stratum, minlength=self.n_strata)

    @property
    def n_lonely_strata(self) -> int:
        """Strata of the whole design with a single PSU."""
        return int((self.n_psu_per_stratum == 1).sum())

    def describe(self) -> str:
        parts = [f"{self.n_records:,} records"]
        parts.append(f"weight {self.weight_name}" if self.weight_name else "equal weights")
        if self.strata_name:
            parts.append(f"{self.n_strata:,} strata ({self.strata_name})")
        if self.psu_name:
            parts.append(f"{self.n_psus:,} PSUs ({self.psu_name})")
        if self.fpc_name:
            parts.append(f"finite population correction ({self.fpc_name})")
        if self.n_lonely_strata:
            parts.append(f"{self.n_lonely_strata:,} single-PSU strata handled by '{self.lonely_psu}'")
        return ", ".join(parts)

    def with_weights(self, weights: np.ndarray) -> SurveyDesign:
        """The same strata and PSUs with other weights (e.g. a treated file's weights)."""
        w = validate_weights(pd.Series(np.asarray(weights)), self.weight_name or "weight")
        if w.shape[0] != self.n_records:
            raise InputError("The weights must have one value per record of the design.")
        return replace(self, weights=w)

    # -- domains -------------------------------------------------------------------------------------------
    def _domain(self, domain: np.ndarray | None) -> np.ndarray:
        if domain is None:
            return np.ones(self.n_records, dtype=bool)
        d = np.asarray(domain, dtype=bool)
        if d.shape != (self.n_records,):
            raise InputError("A domain must flag every record of the design.")
        return d

    def degf(self, domain: np.ndarray | None = None) -> int:
        """Design degrees of freedom, R's ``degf``: PSUs minus strata, counting those with domain records."""
        d = self._domain(domain)
        # PSUs and strata are codes 0..m-1: the distinct ones are the non-empty counts (no sort)
        return int(np.count_nonzero(np.bincount(self.psu[d])) - np.count_nonzero(np.bincount(self.stratum[d])))

    def lonely_strata_in(self, domain: np.ndarray | None = None) -> int:
        """Single-PSU strata of the design that have records in the domain."""
        d = self._domain(domain)
        present = np.zeros(self.n_strata, dtype=bool)
        present[self.stratum[d]] = True
        return int((present & (self.n_psu_per_stratum == 1)).sum())

    # -- variance ------------------------------------------------------------------------------------------
    def vcov(self, scores: np.ndarray, domain: np.ndarray | None = None) -> np.ndarray:
        """Linearization covariance of the totals of ``scores`` (n x k), R's ``svyrecvar``.

        Scores of records outside ``domain`` are ignored (taken as zero); PSU counts are those of the
        whole design, so domain estimates get the usual domain variance.
        """
        z = np.asarray(scores, dtype=np.float64)
        if z.ndim == 1:
            z = z[:, None]
        if z.shape[0] != self.n_records:
            raise InputError("Scores must have one row per record of the design.")
        d = self._domain(domain)
        k = z.shape[1]
        if not d.any():
            return np.zeros((k, k))
        z = np.where(d[:, None], z, 0.0)
        totals = np.zeros((self.n_psus, k))
        for j in range(k):
            totals[:, j] = np.bincount(self.psu, weights=z[:, j], minlength=self.n_psus)
        present = np.zeros(self.n_strata, dtype=bool)
        present[self.stratum[d]] = True
        terms = stratum_terms(self.n_psu_per_stratum, self.fpc_factor, present, self.lonely_psu)
        if terms.factor is None:
            return np.full((k, k), np.nan)
        scale_p = terms.scale[self.psu_stratum]
        v = (totals * scale_p[:, None]).T @ totals
        s = np.zeros((self.n_strata, k))
        for j in range(k):
            s[:, j] = np.bincount(self.psu_stratum, weights=totals[:, j], minlength=self.n_strata)
        v -= (s * terms.centre[:, None]).T @ s
        v *= terms.factor
        return (v + v.T) / 2.0

    def category_shares(self, codes: np.ndarray, n_categories: int) -> CategoryShares:
        """Weighted shares of categories and their linearization variances, in O(records + categories) memory.

        ``codes[i]`` is record i's category in ``0..n_categories-1`` or -1 outside the domain (missing). The
        shares are ``p_c = t_c / W`` (``t_c`` the weight of category c, W that of the domain); their variances
        are the diagonal of :meth:`vcov` on the scores ``w_i (1[x_i = c] - p_c) / W`` -- R's
        ``svymean(~factor(x), na.rm = TRUE)`` -- without its records x categories scores or categories x
        categories covariance: see :func:`_share_variances` for how.
        """
        c = np.asarray(codes, dtype=np.int64)
        if c.shape != (self.n_records,):
            raise InputError("Category codes must have one value per record of the design.")
        dom = c >= 0
        weight_of = np.bincount(c[dom], weights=self.weights[dom], minlength=n_categories)
        total = float(weight_of.sum())  # the categories' sum: a single category has a share of exactly 1
        p = weight_of / total
        # normalised weights: every PSU total below is at most 1, so no square overflows
        w = np.where(dom, self.weights, 0.0) / total
        present = np.zeros(self.n_strata, dtype=bool)
        present[self.stratum[dom]] = True
        terms = stratum_terms(self.n_psu_per_stratum, self.fpc_factor, present, self.lonely_psu)
        if terms.factor is None:
            var = np.full(n_categories, np.nan)
        else:
            var = _share_variances(self, c, w, p, terms) * terms.factor
        return CategoryShares(p, var, total, np.bincount(c[dom], minlength=n_categories).astype(np.int64))


@dataclass(frozen=True)
class CategoryShares:
    """:meth:`SurveyDesign.category_shares`: per category its share of the domain's weight (``share``), the
    share's linearization variance (``variance``) and its unweighted record count (``n``); ``total`` is the
    domain's weight."""

    share: np.ndarray
    variance: np.ndarray
    total: float
    n: np.ndarray


def _share_variances(design: SurveyDesign, codes: np.ndarray, w: np.ndarray, p: np.ndarray,
                     terms: StratumTerms) -> np.ndarray:
    """The variance of every share, from sparse (PSU, category) and (stratum, category) weight totals.

    With weights normalised to a domain total of 1, PSU j's score total for category c is
    ``d_jc = t_jc - p_c W_j`` (``t_jc`` the weight of category c in the PSU, ``W_j`` the PSU's domain weight)
    and the variance (before the lonely-PSU ``factor``) is ``sum_j scale_h(j) d_jc^2 - sum_h centre_h D_hc^2``
    with ``D_hc = T_hc - p_c W_h`` the stratum totals: :meth:`SurveyDesign.vcov`'s diagonal. Where category
    c is absent, ``d_jc = -p_c W_j`` (and ``D_hc = -p_c W_h``), so each sum is one over the (PSU, category)
    pairs that occur, computed term by term as the dense scores are, plus ``p_c^2`` times a sum over the
    PSUs (strata) without the category (:func:`_absent_sums`).
    """
    k = p.shape[0]
    dom = codes >= 0
    psu_w = np.bincount(design.psu, weights=w, minlength=design.n_psus)
    stratum_w = np.bincount(design.psu_stratum, weights=psu_w, minlength=design.n_strata)
    scale_j = terms.scale[design.psu_stratum]
    pair_psu, pair_cat, t = _pair_totals(design.psu[dom], codes[dom], w[dom], k)
    d = t - p[pair_cat] * psu_w[pair_psu]
    first = np.bincount(pair_cat, weights=scale_j[pair_psu] * d * d, minlength=k)
    first += p * p * _absent_sums(pair_psu, pair_cat, scale_j * psu_w**2, k)
    pair_str, cat_s, t_s = _pair_totals(design.psu_stratum[pair_psu], pair_cat, t, k)
    big_d = t_s - p[cat_s] * stratum_w[pair_str]
    second = np.bincount(cat_s, weights=terms.centre[pair_str] * big_d * big_d, minlength=k)
    second += p * p * _absent_sums(pair_str, cat_s, terms.centre * stratum_w**2, k)
    return first - second


def _pair_totals(unit: np.ndarray, cat: np.ndarray, values: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """The (unit, category) pairs that occur and the sum of ``values`` over each: grouped, never dense."""
    key = unit.astype(np.int64) * k + cat
    pairs, inverse = np.unique(key, return_inverse=True)
    return pairs // k, pairs % k, np.bincount(inverse, weights=values, minlength=pairs.shape[0])


def _absent_sums(unit: np.ndarray, cat: np.ndarray, a: np.ndarray, k: int) -> np.ndarray:
    """Per category c, the sum of ``a`` (>= 0, one value per unit) over the units without c, given the distinct
    (unit, category) pairs that occur -- in O(units + pairs), never units x categories.

    "All minus those with c" would lose every digit when c is in the units that carry nearly all of ``a``
    (a share near 1 with very unequal weights). Instead, with the units in ascending order of ``a``, the
    units without c are the gaps between the ranks of those with c, and each gap is a difference of
    compensated prefix sums: accurate to a few units in the last place of the gap itself, and exactly 0 for
    an empty gap or one of zeros.
    """
    n = a.shape[0]
    order = np.argsort(a, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    hi, lo = _compensated_prefix(a[order])
    r = rank[unit]
    by = np.lexsort((r, cat))
    c_s, r_s = cat[by], r[by]
    new_cat = np.ones(c_s.shape[0], dtype=bool)
    new_cat[1:] = c_s[1:] != c_s[:-1]
    gap_start = np.where(new_cat, 0, np.concatenate(([0], r_s[:-1] + 1)))
    out = np.bincount(c_s, weights=_range_sum(hi, lo, gap_start, r_s), minlength=k)
    tail_start = np.zeros(k, dtype=np.int64)
    last = np.ones(c_s.shape[0], dtype=bool)
    last[:-1] = new_cat[1:]
    tail_start[c_s[last]] = r_s[last] + 1
    return out + _range_sum(hi, lo, tail_start, np.full(k, n))


def _compensated_prefix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums ``S[i] = x[0] + ... + x[i-1]`` (``S[0] = 0``) as ``hi + lo``: ``hi`` the sequential float
    sums (``np.cumsum`` adds in order) and ``lo`` the running total of their exact rounding errors (Knuth's
    TwoSum), so differences of ``S`` keep their digits."""
    hi = np.concatenate(([0.0], np.cumsum(x)))
    before, after = hi[:-1], hi[1:]
    added = after - before
    err = (before - (after - added)) + (x - added)
    return hi, np.concatenate(([0.0], np.cumsum(err)))


def _range_sum(hi: np.ndarray, lo: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """``x[start] + ... + x[stop - 1]`` from :func:`_compensated_prefix` (0 where ``stop <= start``)."""
    return np.where(stop > start, (hi[stop] - hi[start]) + (lo[stop] - lo[start]), 0.0)


@dataclass(frozen=True)
class StratumTerms:
    """Per stratum, the factor of its PSU totals' squares (``scale``) and of its squared total (``centre``)
    in the variance, and the factor of the whole (``average``: strata over strata with a variance; None when
    no stratum has one). The same numbers serve records (:meth:`SurveyDesign.vcov`) and aggregates
    (:mod:`kanon_core.utility.survey_aggregate`), which give the totals' squares and sums per stratum."""

    scale: np.ndarray
    centre: np.ndarray
    factor: float | None


def stratum_terms(n_psu_per_stratum: np.ndarray, fpc_factor: np.ndarray | None, present: np.ndarray,
                  lonely_psu: str) -> StratumTerms:
    """The variance terms of the module docstring: ``f_h n_h / (n_h - 1)`` and its centring, no variance in a
    fully sampled stratum, and the single-PSU rules (``present``: strata with domain records)."""
    n_h = np.asarray(n_psu_per_stratum, dtype=np.float64)
    f_h = np.ones(len(n_h)) if fpc_factor is None else fpc_factor
    census = f_h < CENSUS_FPC  # R: a stratum whose PSUs were all sampled has no variance, whatever else
    lonely = (n_h == 1) & ~census
    if lonely_psu == "fail" and (present & lonely).any():
        n_bad = int((present & lonely).sum())
        raise InputError(
            f"{n_bad} stratum/strata have a single PSU, so their variance cannot be estimated. "
            "Choose how to handle single-PSU strata (adjust, remove, certainty or average)."
        )
    multi = (n_h > 1) & ~census
    scale_h = np.where(multi, f_h * n_h / np.where(multi, n_h - 1.0, 1.0), 0.0)
    centre_h = np.where(multi, scale_h / n_h, 0.0)
    if lonely_psu == "adjust":
        scale_h = np.where(lonely, f_h, scale_h)  # uncentred: deviation from the grand mean of scores
    factor: float | None = 1.0
    if lonely_psu == "average":
        n_ok = int((present & ~lonely).sum())
        factor = None if n_ok == 0 else int(present.sum()) / n_ok
    return StratumTerms(scale_h, centre_h, factor)


CENSUS_FPC = 1e-7
"""R's ``onestrat``: a stratum whose correction ``f_h`` is below this is fully sampled (no variance)."""


def fpc_factors(values: Sequence | np.ndarray | pd.Series, stratum: np.ndarray, n_h: np.ndarray,
                name: str = "fpc") -> np.ndarray:
    """Per stratum ``f_h = (N_h - n_h) / N_h`` from R's ``fpc`` values (see the module docstring).

    ``values`` has one number per record: all > 1 (population sizes N_h) or all <= 1 (sampling fractions,
    N_h = n_h / value); ``n_h`` is the number of PSUs (records without PSUs) sampled in each stratum.
    """
    raw = pd.Series(np.asarray(values, dtype=object))
    n_missing = int(raw.isna().sum())
    if n_missing:
        raise InputError(f"Finite population correction '{name}' is missing for {n_missing} record(s); "
                         "every record needs one.")
    num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    n_bad = int((~np.isfinite(num)).sum())
    if n_bad:
        raise InputError(f"Finite population correction '{name}' has {n_bad} value(s) that are not finite numbers.")
    if (num < 0).any():
        raise InputError(f"Finite population correction '{name}' has {int((num < 0).sum())} negative value(s).")
    popsize_given = bool((num > 1).any())
    if popsize_given != bool((num >= 1).all()):
        raise InputError(f"Finite population correction '{name}' must be all population sizes (> 1) or all "
                         "sampling fractions (<= 1), not a mix (and not all exactly 1).")
    k = int(n_h.shape[0])
    lo = np.full(k, np.inf)
    hi = np.full(k, -np.inf)
    np.minimum.at(lo, stratum, num)
    np.maximum.at(hi, stratum, num)
    varies = int((lo != hi).sum())
    if varies:
        raise InputError(f"Finite population correction '{name}' varies within {varies} stratum/strata; it must "
                         "be constant within each stratum (a first-stage population size or sampling fraction).")
    n = n_h.astype(np.float64)
    with np.errstate(divide="ignore"):
        pop = lo if popsize_given else n / lo  # a fraction of 0 gives an infinite population: no correction
    over = int((pop < n).sum())
    if over:
        raise InputError(f"Finite population correction '{name}' implies more than 100 % sampling in {over} "
                         "stratum/strata (population size below the number of sampled units).")
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(pop), 1.0, (pop - n) / pop)


def _fpc_values(ds: Dataset, column: str) -> pd.Series:
    """The fpc column with its declared missing codes as missing (so they are reported, not used)."""
    series = ds.frame[column]
    return series.where(~ds.missing_mask(column))


def _codes(series: pd.Series, name: str) -> np.ndarray:
    n_missing = int(series.isna().sum())
    if n_missing:
        raise InputError(f"Design variable '{name}' is missing for {n_missing} record(s); every record needs one.")
    # factorize on a string view so 1 and "1" from mixed files do not split a stratum
    return pd.factorize(series.map(_key), sort=True)[0].astype(np.int64)


def _key(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
