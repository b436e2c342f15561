"""Weighted percentages with design-based intervals from a file's aggregate, for files too large for memory.

:func:`kanon_core.utility.survey.proportions` needs every record; a census file reaches kanon through an
engine's ``GROUP BY`` instead. For one variable the estimate and its linearized variance depend on the
records only through a few sums, so the same numbers come from one row per (stratum, PSU, value):

* the estimate ``p_c = sum_D w_i 1[x_i = c] / W_D`` needs the weight sums per value;
* the scores ``z_i = w_i (1[x_i = c] - p_c) / W_D`` are linear in the weight within a value, so a PSU's
  score total is ``sum_v S1_{j,v} (1[v = c] - p_c) / W_D`` with ``S1`` the weight sums of its records;
* without PSUs each record is its own PSU; the variance then needs, per stratum, the sum of the squared
  scores, ``sum_v S2_{h,v} (1[v = c] - p_c)^2 / W_D^2`` with ``S2`` the sums of squared weights, and their
  sum, from ``S1``. Their squared deviations from the stratum's mean come from the same sums: a row's
  records deviate from the row's mean score by their weights' spread ``S2 - S1^2 / n`` times
  ``(1[v = c] - p_c)^2 / W_D^2``, and the row's mean from the stratum's by the rest.

Given the PSU totals' squared deviations from their stratum's mean (their squares, for the "adjust" rule's
single-PSU strata, which are not centred), the variance is that of
:meth:`kanon_core.utility.design.SurveyDesign.vcov` with the same stratum terms
(:func:`kanon_core.utility.design.stratum_terms`: the finite population correction, fully sampled strata,
the single-PSU rules), and the intervals, degrees of freedom and table are those of ``proportions``; the
tests check every number against ``proportions`` on the records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import encode_column
from ..errors import InputError
from .design import DEFAULT_LONELY_PSU, _key, check_lonely_psu, fpc_factors, stratum_terms
from .survey import ProportionEstimates, _intervals, _label, check_ci_method

AGGREGATE_COLUMNS = ("stratum", "psu", "fpc", "value", "n", "w", "w2")


@dataclass(frozen=True)
class DesignAggregate:
    """One variable of a file grouped by stratum, PSU, fpc value and the variable's value.

    ``frame`` has the columns of :data:`AGGREGATE_COLUMNS`: the keys (``None`` throughout where the design has
    no strata, no PSUs or no fpc; ``value`` None where the variable is missing), the record count ``n``, the
    weight sum ``w`` and the sum of squared weights ``w2`` (all weights 1 without a weight variable). PSUs
    are nested in strata, as in :class:`~kanon_core.utility.design.SurveyDesign`.
    """

    frame: pd.DataFrame
    has_psu: bool
    has_fpc: bool
    value_labels: Mapping[Any, str] = field(default_factory=dict)
    """The variable's value labels (from the file's labels, where it has them)."""
    label: str | None = None
    """The variable's label."""


def aggregate_records(values: pd.Series, weights: np.ndarray | None = None, strata: pd.Series | None = None,
                      psu: pd.Series | None = None, fpc: pd.Series | None = None,
                      missing_codes: Sequence[Any] = ()) -> DesignAggregate:
    """The aggregate of records held in memory (what an engine's ``GROUP BY`` returns for a file)."""
    n = len(values)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    codes, cats, _ = encode_column(values.reset_index(drop=True), missing_codes)
    value = np.array([*cats, None], dtype=object)[codes]  # code -1 takes the appended None
    none = pd.Series([None] * n, dtype=object)
    frame = pd.DataFrame({
        "stratum": none if strata is None else strata.reset_index(drop=True).astype(object),
        "psu": none if psu is None else psu.reset_index(drop=True).astype(object),
        "fpc": none if fpc is None else fpc.reset_index(drop=True).astype(object),
        "value": pd.Series(value, dtype=object), "n": 1, "w": w, "w2": w * w,
    })
    grouped = frame.groupby(["stratum", "psu", "fpc", "value"], dropna=False, sort=False)
    out = grouped.agg(n=("n", "sum"), w=("w", "sum"), w2=("w2", "sum")).reset_index()
    out = out.astype({"stratum": object, "psu": object, "fpc": object, "value": object})
    out = out.where(out.notna(), None)  # keys missing as None, whatever groupby made of them
    return DesignAggregate(out[list(AGGREGATE_COLUMNS)], psu is not None, fpc is not None)


def proportions_of_aggregate(agg: DesignAggregate, variable: str, value_labels: Mapping[Any, str] | None = None,
                             ci: str = "wald", level: float = 0.95, lonely_psu: str = DEFAULT_LONELY_PSU,
                             levels: Sequence[Any] | None = None) -> ProportionEstimates:
    """:func:`kanon_core.utility.survey.proportions` from the aggregate (the module docstring says how)."""
    method = check_ci_method(ci)
    lonely = check_lonely_psu(lonely_psu)
    if not 0 < level < 1:
        raise InputError("The confidence level must be between 0 and 1.")
    f = agg.frame
    if len(f) == 0 or int(f["n"].sum()) == 0:
        raise InputError("The survey design has no records.")
    value = f["value"].astype(object)
    codes, cats, labels = encode_column(value.where(value.notna(), None), (), value_labels)
    cats_l, labels_l = list(cats), list(labels)
    if levels is not None:  # categories to report even when absent, as proportions does
        known = set(cats_l)
        for v in levels:
            if v not in known:
                cats_l.append(v)
                labels_l.append(_label(v, dict(value_labels or {})))
                known.add(v)
    n_rec = f["n"].to_numpy(dtype=np.int64)
    s1 = f["w"].to_numpy(dtype=np.float64)
    s2 = f["w2"].to_numpy(dtype=np.float64)
    dom = codes >= 0
    n_domain = int(n_rec[dom].sum())
    if n_domain == 0:
        raise InputError(f"Variable '{variable}' has no non-missing values to estimate percentages.")
    k = len(cats_l)
    ind = np.zeros((len(f), k))
    ind[np.flatnonzero(dom), codes[dom]] = 1.0
    total = float(s1[dom].sum())
    p = (s1[dom] @ ind[dom]) / total
    dev = np.where(dom[:, None], ind - p[None, :], 0.0)  # 1[v = c] - p_c on domain rows, 0 outside
    stratum = _index(f["stratum"])
    n_strata = int(stratum.max()) + 1
    present = np.zeros(n_strata, dtype=bool)
    present[stratum[dom]] = True
    s_h = np.zeros((n_strata, k))  # per stratum and category: the scores' total
    q_h = np.zeros((n_strata, k))  # ... the sum of their squares (about 0: the "adjust" rule's lonely strata)
    c_h = np.zeros((n_strata, k))  # ... the sum of their squared deviations from the stratum's mean score
    for c in range(k):
        s_h[:, c] = np.bincount(stratum, weights=s1 * dev[:, c], minlength=n_strata) / total
    if agg.has_psu:
        psu = _index(pd.Series(list(zip(f["stratum"], f["psu"], strict=True)), dtype=object))  # nested in strata
        n_psus = int(psu.max()) + 1
        psu_stratum = np.zeros(n_psus, dtype=np.int64)
        psu_stratum[psu] = stratum
        n_h = np.bincount(psu_stratum, minlength=n_strata)
        for c in range(k):
            t = np.bincount(psu, weights=s1 * dev[:, c], minlength=n_psus) / total
            q_h[:, c] = np.bincount(psu_stratum, weights=t * t, minlength=n_strata)
            centred = t - s_h[psu_stratum, c] / n_h[psu_stratum]
            c_h[:, c] = np.bincount(psu_stratum, weights=centred * centred, minlength=n_strata)
        df = n_psus - n_strata
    else:
        n_h = np.bincount(stratum, weights=n_rec, minlength=n_strata).astype(np.int64)  # records are the PSUs
        # a row's records share 1[v = c] - p_c; their weights spread by w2 - w^2 / n around the row's mean
        spread = np.clip(s2 - s1 * s1 / n_rec, 0.0, None) / total**2
        for c in range(k):
            q_h[:, c] = np.bincount(stratum, weights=s2 * dev[:, c] ** 2, minlength=n_strata) / total**2
            centred = s1 * dev[:, c] / (n_rec * total) - s_h[stratum, c] / n_h[stratum]
            c_h[:, c] = np.bincount(stratum, weights=dev[:, c] ** 2 * spread + n_rec * centred * centred,
                                    minlength=n_strata)
        df = int(n_rec.sum()) - n_strata
    fpc_h = _fpc_factor(f, stratum, n_h) if agg.has_fpc else None
    terms = stratum_terms(n_h, fpc_h, present, lonely)
    if terms.factor is None:
        var = np.full(k, np.nan)
    else:
        # sum_h scale_h q_h - centre_h s_h^2, with the centred sum where centre_h = scale_h / n_h: the same
        # number, without the cancellation that leaves ~1e-18 (an se of ~1e-9) where every score is equal
        centred_stratum = (terms.centre > 0)[:, None]
        var = (terms.scale[:, None] * np.where(centred_stratum, c_h, q_h)).sum(axis=0) * terms.factor
    se = np.sqrt(np.clip(var, 0.0, None))
    low, high = _intervals(p, se, method, level, df)
    counts = (n_rec[dom, None] * ind[dom]).sum(axis=0).astype(np.int64)
    table = pd.DataFrame({"value": cats_l, "label": labels_l, "n": counts, "estimate": p, "se": se,
                          "ci_low": low, "ci_high": high})
    n_lonely = int((present & (n_h == 1)).sum())
    return ProportionEstimates(variable=variable, table=table, n_domain=n_domain,
                               n_missing=int(n_rec.sum()) - n_domain, weighted_domain=total, df=df,
                               ci_method=method, level=level, n_lonely_strata=n_lonely, lonely_psu=lonely)


def _index(keys: pd.Series) -> np.ndarray:
    """Consecutive indices of distinct keys, on the records' string view (``1`` and ``"1"`` of a mixed file
    are one stratum, as in :class:`~kanon_core.utility.design.SurveyDesign`); None is the one stratum of a
    design without strata."""
    def key(v: Any) -> Any:
        if isinstance(v, tuple):
            return tuple(key(x) for x in v)
        return "" if v is None else _key(v)

    codes, _ = pd.factorize(keys.astype(object).map(key), sort=False)
    return codes.astype(np.int64)


def check_design_keys(agg: DesignAggregate, names: Mapping[str, str]) -> None:
    """The records' message when a stratum or PSU is missing (``names``: the aggregate's key -> variable)."""
    f = agg.frame
    for col, name in names.items():
        missing = int(f.loc[f[col].isna(), "n"].sum())
        if missing:
            raise InputError(f"Design variable '{name}' is missing for {missing} record(s); every record needs one.")


def _fpc_factor(f: pd.DataFrame, stratum: np.ndarray, n_h: np.ndarray) -> np.ndarray:
    """Per stratum ``f_h`` from the fpc values (constant within a stratum, as the records' design requires)."""
    return fpc_factors(f["fpc"].to_numpy(dtype=object), stratum, n_h)
