"""A survey design (weights, strata, PSUs) and Taylor-linearization variances.

The variance of an estimator that is (asymptotically) a sum of per-record *scores* ``z_i`` (its
influence function) is estimated, as in R's ``survey`` package (``svyrecvar``) and in Wolter (2007,
ch. 6), by the with-replacement ("ultimate cluster") formula at the first stage::

    V = sum_h  n_h / (n_h - 1) * sum_j (z_hj - zbar_h)(z_hj - zbar_h)'

where ``z_hj`` is the total of the scores in PSU j of stratum h, ``n_h`` the number of PSUs of stratum
h *in the whole design* and ``zbar_h = sum_j z_hj / n_h``. No finite population correction is used.

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
from dataclasses import dataclass
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
    ) -> SurveyDesign:
        """Build a design from raw columns. ``weights=None`` means every weight is 1."""
        lonely = check_lonely_psu(lonely_psu)
        lengths = [len(a) for a in (weights, strata, psu) if a is not None]
        if n is None:
            if not lengths:
                raise InputError("A survey design needs weights, strata, PSUs or a record count.")
            n = lengths[0]
        if any(length != n for length in lengths):
            raise InputError("Weights, strata and PSUs must have one value per record.")
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
        return cls(weights=w, stratum=stratum, psu=psu_codes, psu_stratum=psu_stratum, lonely_psu=lonely,
                   weight_name=w_name, strata_name=s_name, psu_name=p_name)

    @classmethod
    def from_dataset(
        cls,
        ds: Dataset,
        weight: str | None = None,
        strata: str | None = None,
        psu: str | None = None,
        lonely_psu: str = DEFAULT_LONELY_PSU,
    ) -> SurveyDesign:
        """The design of a dataset: explicit column names win over the dataset's roles."""
        weight = weight or ds.roles.weight
        strata = strata or ds.roles.strata
        psu = psu or ds.roles.psu
        for col, what in ((weight, "Weight"), (strata, "Stratum"), (psu, "PSU")):
            if col is not None and col not in ds.frame.columns:
                raise InputError(f"{what} variable '{col}' is not a variable of the data.")
        return cls.from_arrays(
            None if weight is None else ds.frame[weight],
            None if strata is None else ds.frame[strata],
            None if psu is None else ds.frame[psu],
            lonely_psu=lonely_psu,
            n=ds.n_records,
            names=(weight, strata, psu),
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
        parts = [f"{self.n_records} records"]
        parts.append(f"weight {self.weight_name}" if self.weight_name else "equal weights")
        if self.strata_name:
            parts.append(f"{self.n_strata} strata ({self.strata_name})")
        if self.psu_name:
            parts.append(f"{self.n_psus} PSUs ({self.psu_name})")
        if self.n_lonely_strata:
            parts.append(f"{self.n_lonely_strata} single-PSU strata handled by '{self.lonely_psu}'")
        return ", ".join(parts)

    def with_weights(self, weights: np.ndarray) -> SurveyDesign:
        """The same strata and PSUs with other weights (e.g. a treated file's weights)."""
        w = validate_weights(pd.Series(np.asarray(weights)), self.weight_name or "weight")
        if w.shape[0] != self.n_records:
            raise InputError("The weights must have one value per record of the design.")
        return SurveyDesign(w, self.stratum, self.psu, self.psu_stratum, self.lonely_psu,
                            self.weight_name, self.strata_name, self.psu_name)

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
        return int(np.unique(self.psu[d]).size - np.unique(self.stratum[d]).size)

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
        n_h = self.n_psu_per_stratum.astype(np.float64)
        present = np.zeros(self.n_strata, dtype=bool)
        present[self.stratum[d]] = True
        lonely = n_h == 1
        if self.lonely_psu == "fail" and (present & lonely).any():
            n_bad = int((present & lonely).sum())
            raise InputError(
                f"{n_bad} stratum/strata have a single PSU, so their variance cannot be estimated. "
                "Choose how to handle single-PSU strata (adjust, remove, certainty or average)."
            )
        multi = ~lonely
        scale_h = np.where(multi, n_h / np.where(multi, n_h - 1.0, 1.0), 0.0)
        centre_h = np.where(multi, scale_h / n_h, 0.0)
        if self.lonely_psu == "adjust":
            scale_h = np.where(lonely, 1.0, scale_h)  # uncentred: deviation from the grand mean of scores
        scale_p = scale_h[self.psu_stratum]
        v = (totals * scale_p[:, None]).T @ totals
        s = np.zeros((self.n_strata, k))
        for j in range(k):
            s[:, j] = np.bincount(self.psu_stratum, weights=totals[:, j], minlength=self.n_strata)
        v -= (s * centre_h[:, None]).T @ s
        if self.lonely_psu == "average":
            n_present = int(present.sum())
            n_ok = int((present & multi).sum())
            if n_ok == 0:
                return np.full((k, k), np.nan)
            v *= n_present / n_ok
        return (v + v.T) / 2.0


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
