"""Weighted percentages with design-based intervals from a file's aggregate, for files too large for memory.

:func:`kanon_core.utility.survey.proportions` needs every record; a census file reaches kanon through an
engine's ``GROUP BY`` instead. For one variable the estimate and its linearized variance depend on the
records only through a few sums, so the same numbers come from one row per (stratum, PSU, value):

* the estimate ``p_c = sum_D w_i 1[x_i = c] / W_D`` needs the weight sums per value;
* the scores ``z_i = w_i (1[x_i = c] - p_c) / W_D`` are linear in the weight within a value, so a PSU's
  score total is ``t_jc - p_c W_j`` with ``t_jc`` its weight of value c and ``W_j`` its domain weight;
* without PSUs each record is its own PSU; a row's records share ``1[x_i = c] - p_c``, so their scores'
  sum of squared deviations from the row's mean score is that factor squared times the weights' spread
  ``S2 - S1^2 / n`` (``S1``, ``S2`` the row's sums of weights and of squared weights).

The variance sums, per stratum, the squared deviations of its units' scores (PSUs, or rows of records)
from the stratum's mean score -- centred per stratum, so a stratum whose scores are all equal adds exactly
nothing -- and, for the "adjust" rule's single-PSU strata, which are not centred, their squares. Only the
(unit, category) pairs that occur are held: a unit without category c has the score ``-p_c`` times its
weight, so the units without c enter through sums over them, compensated -- per category over the strata
without c (:func:`kanon_core.utility.design._absent_sums`) and per (stratum, category) over a stratum's
units without c (:func:`_sums_without`); :func:`_share_variances` says how. Memory is linear in rows and
categories, whatever their product, and nothing loops over categories.

Weights are normalised by the domain's total before anything is squared, and the sums of squared weights
arrive scaled by a power of two (:attr:`DesignAggregate.w2_shift`, :func:`scaled_square_sums`), so weights
near the largest double (1e200 and above) give numbers, not infinities.

The stratum terms are those of :meth:`kanon_core.utility.design.SurveyDesign.vcov`
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
from .design import (
    DEFAULT_LONELY_PSU,
    StratumTerms,
    _absent_sums,
    _compensated_prefix,
    _key,
    _pair_totals,
    _range_sum,
    check_lonely_psu,
    fpc_factors,
    stratum_terms,
)
from .survey import ProportionEstimates, _intervals, _label, check_ci_method

AGGREGATE_COLUMNS = ("stratum", "psu", "fpc", "value", "n", "w", "w2")


@dataclass(frozen=True)
class DesignAggregate:
    """One variable of a file grouped by stratum, PSU, fpc value and the variable's value.

    ``frame`` has the columns of :data:`AGGREGATE_COLUMNS`: the keys (``None`` throughout where the design has
    no strata, no PSUs or no fpc; ``value`` None where the variable is missing), the record count ``n``, the
    weight sum ``w`` and the sum of squared weights ``w2``, each weight divided by ``2 ** w2_shift`` before it
    is squared (all weights 1 without a weight variable). PSUs are nested in strata, as in
    :class:`~kanon_core.utility.design.SurveyDesign`.
    """

    frame: pd.DataFrame
    has_psu: bool
    has_fpc: bool
    value_labels: Mapping[Any, str] = field(default_factory=dict)
    """The variable's value labels (from the file's labels, where it has them)."""
    label: str | None = None
    """The variable's label."""
    w2_shift: int = 0
    """``w2`` sums ``(w_i / 2**w2_shift)**2``: squares of weights near the largest double would overflow,
    and a power of two changes no digit (:func:`scaled_square_sums`)."""


def scaled_square_sums(parts: Sequence[tuple[np.ndarray, int]], weight_sums: np.ndarray) -> tuple[np.ndarray, int]:
    """Per row, the sum of ``(w_i / 2**shift)**2`` from its parts, and ``shift``.

    Each part is ``(sums, e)``: per row the sum of ``(w_i * 2**e)**2`` over some of its records (an engine sums
    the squares of small, middle and large weights apart, each scaled so that no square overflows or
    underflows). ``shift`` is the exponent of the largest of the rows' ``weight_sums``, so no result exceeds
    1 (a row's squares sum to at most its weight sum squared) and powers of two change no digit; only squares
    below about 2**-1022 of the largest row's squared weight lose digits, as they do when the records' path
    squares weights divided by their total.
    """
    w = np.asarray(weight_sums, dtype=np.float64)
    shift = _exponent(w)
    out = np.zeros(w.shape[0])
    with np.errstate(over="ignore"):  # only where a row's weight sum overflowed, which is refused
        for sums, e in parts:
            out += np.ldexp(np.asarray(sums, dtype=np.float64), -2 * (e + shift))
    return out, shift


def _exponent(values: np.ndarray) -> int:
    """The binary exponent of the largest finite value (``x < 2**e``), 0 without one."""
    finite = np.abs(values[np.isfinite(values)])
    return int(np.frexp(finite.max())[1]) if finite.size else 0


def aggregate_records(values: pd.Series, weights: np.ndarray | None = None, strata: pd.Series | None = None,
                      psu: pd.Series | None = None, fpc: pd.Series | None = None,
                      missing_codes: Sequence[Any] = ()) -> DesignAggregate:
    """The aggregate of records held in memory (what an engine's ``GROUP BY`` returns for a file)."""
    n = len(values)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    shift = _exponent(w)
    scaled = np.ldexp(w, -shift)  # at most 1: its square cannot overflow, whatever the weights
    codes, cats, _ = encode_column(values.reset_index(drop=True), missing_codes)
    value = np.array([*cats, None], dtype=object)[codes]  # code -1 takes the appended None
    none = pd.Series([None] * n, dtype=object)
    frame = pd.DataFrame({
        "stratum": none if strata is None else strata.reset_index(drop=True).astype(object),
        "psu": none if psu is None else psu.reset_index(drop=True).astype(object),
        "fpc": none if fpc is None else fpc.reset_index(drop=True).astype(object),
        "value": pd.Series(value, dtype=object), "n": 1, "w": w, "w2": scaled * scaled,
    })
    grouped = frame.groupby(["stratum", "psu", "fpc", "value"], dropna=False, sort=False)
    out = grouped.agg(n=("n", "sum"), w=("w", "sum"), w2=("w2", "sum")).reset_index()
    out = out.astype({"stratum": object, "psu": object, "fpc": object, "value": object})
    out = out.where(out.notna(), None)  # keys missing as None, whatever groupby made of them
    return DesignAggregate(out[list(AGGREGATE_COLUMNS)], psu is not None, fpc is not None, w2_shift=shift)


def proportions_of_aggregate(agg: DesignAggregate, variable: str, value_labels: Mapping[Any, str] | None = None,
                             ci: str = "wald", level: float = 0.95, lonely_psu: str = DEFAULT_LONELY_PSU,
                             levels: Sequence[Any] | None = None) -> ProportionEstimates:
    """:func:`kanon_core.utility.survey.proportions` from the aggregate (the module docstring says how), in
    memory linear in the aggregate's rows and the categories."""
    method = check_ci_method(ci)
    lonely = check_lonely_psu(lonely_psu)
    if not 0 < level < 1:
        raise InputError("The confidence level must be between 0 and 1.")
    f = agg.frame
    if len(f) == 0 or int(f["n"].sum()) == 0:
        raise InputError("The survey design has no records.")
    f = f[f["n"].to_numpy() > 0].reset_index(drop=True)  # a row without records adds nothing
    value = f["value"].astype(object)
    codes, cats, labels = encode_column(value.where(value.notna(), None), (), value_labels)
    cats_l, labels_l = _with_levels(list(cats), list(labels), levels, value_labels)
    codes = codes.astype(np.int64)
    n_rec = f["n"].to_numpy(dtype=np.int64)
    s1 = f["w"].to_numpy(dtype=np.float64)
    dom = codes >= 0
    n_domain = int(n_rec[dom].sum())
    if n_domain == 0:
        raise InputError(f"Variable '{variable}' has no non-missing values to estimate percentages.")
    k = len(cats_l)
    weight_of = np.bincount(codes[dom], weights=s1[dom], minlength=k)
    with np.errstate(over="ignore"):
        total = float(weight_of.sum())
    if not np.isfinite(total):
        raise InputError("The weights' total is too large to compute (overflow).")
    p = weight_of / total
    stratum = _index(f["stratum"])
    n_strata = int(stratum.max()) + 1
    present = np.zeros(n_strata, dtype=bool)
    present[stratum[dom]] = True
    w = np.where(dom, s1, 0.0) / total  # normalised: no square below overflows
    if agg.has_psu:
        units = _psu_units(f, stratum, codes, w, k)
    else:
        units = _record_units(f, stratum, codes, w, total, agg.w2_shift)
    n_h = np.rint(np.bincount(units.stratum, weights=units.size, minlength=n_strata)).astype(np.int64)
    df = int(n_h.sum()) - n_strata  # PSUs (records without PSUs) minus strata
    fpc_h = _fpc_factor(f, stratum, n_h) if agg.has_fpc else None
    terms = stratum_terms(n_h, fpc_h, present, lonely)
    if terms.factor is None:
        var = np.full(k, np.nan)
    else:
        var = _share_variances(units, p, terms, n_h) * terms.factor
    se = np.sqrt(np.clip(var, 0.0, None))
    low, high = _intervals(p, se, method, level, df)
    counts = np.rint(np.bincount(codes[dom], weights=n_rec[dom], minlength=k)).astype(np.int64)
    table = pd.DataFrame({"value": cats_l, "label": labels_l, "n": counts, "estimate": p, "se": se,
                          "ci_low": low, "ci_high": high})
    n_lonely = int((present & (n_h == 1)).sum())
    return ProportionEstimates(variable=variable, table=table, n_domain=n_domain,
                               n_missing=int(n_rec.sum()) - n_domain, weighted_domain=total, df=df,
                               ci_method=method, level=level, n_lonely_strata=n_lonely, lonely_psu=lonely)


def _with_levels(cats: list, labels: list, levels: Sequence[Any] | None,
                 value_labels: Mapping[Any, str] | None) -> tuple[list, list]:
    """The categories with ``levels`` absent from the file appended, to report them at zero as ``proportions``
    does."""
    if levels is not None:
        known = set(cats)
        for v in levels:
            if v not in known:
                cats.append(v)
                labels.append(_label(v, dict(value_labels or {})))
                known.add(v)
    return cats, labels


@dataclass(frozen=True)
class _Units:
    """The units whose scores the variance centres per stratum: PSUs, or without PSUs the rows (each a group
    of records sharing a value, so sharing ``1[x_i = c] - p_c``).

    Per unit: its stratum, its ``size`` (1 for a PSU, the row's records otherwise: what the stratum's PSU
    count counts), its normalised domain ``weight``, its records' ``spread`` (sum of squared deviations of
    their normalised weights from their mean; 0 for a PSU) and whether it has records in the domain. Per
    (unit, category) pair that occurs: the unit's normalised weight of the category. Never units x
    categories.
    """

    stratum: np.ndarray
    size: np.ndarray
    weight: np.ndarray
    spread: np.ndarray
    inside: np.ndarray
    """Units with records in the domain (the others' scores are all 0)."""
    pair_unit: np.ndarray
    pair_cat: np.ndarray
    pair_weight: np.ndarray


def _psu_units(f: pd.DataFrame, stratum: np.ndarray, codes: np.ndarray, w: np.ndarray, k: int) -> _Units:
    """PSUs (nested in strata) as units: their weights and (PSU, category) weights summed over their rows."""
    within = _index(f["psu"])
    psu = pd.factorize(stratum * (int(within.max()) + 1) + within, sort=False)[0].astype(np.int64)  # nested
    n_psus = int(psu.max()) + 1
    psu_stratum = np.zeros(n_psus, dtype=np.int64)
    psu_stratum[psu] = stratum
    dom = codes >= 0
    pair_psu, pair_cat, t = _pair_totals(psu[dom], codes[dom], w[dom], k)
    inside = np.bincount(psu[dom], minlength=n_psus) > 0
    return _Units(psu_stratum, np.ones(n_psus), np.bincount(psu, weights=w, minlength=n_psus), np.zeros(n_psus),
                  inside, pair_psu, pair_cat, t)


def _record_units(f: pd.DataFrame, stratum: np.ndarray, codes: np.ndarray, w: np.ndarray, total: float,
                  w2_shift: int) -> _Units:
    """Rows as units when every record is its own PSU: a row's records spread by ``S2 - S1^2 / n``.

    The spread is taken on weights scaled by the power of two nearest the domain's total (so ``S2`` and
    ``S1^2`` are at most about 1 and equal weights give exactly 0), then divided by the rest of the total.
    """
    dom = codes >= 0
    n = f["n"].to_numpy(dtype=np.float64)
    mantissa, exponent = np.frexp(total)
    s1 = np.ldexp(np.where(dom, f["w"].to_numpy(dtype=np.float64), 0.0), -exponent)
    s2 = np.ldexp(np.where(dom, f["w2"].to_numpy(dtype=np.float64), 0.0), 2 * (w2_shift - int(exponent)))
    spread = np.clip(s2 - s1 * s1 / n, 0.0, None) / (mantissa * mantissa)
    rows = np.flatnonzero(dom)
    return _Units(stratum, n, w, spread, dom, rows, codes[dom], w[dom])


def _share_variances(u: _Units, p: np.ndarray, terms: StratumTerms, n_h: np.ndarray) -> np.ndarray:
    """Per category, ``sum_h scale_h sum_{j in h} (z_jc - m_hc)^2`` over the units' score totals ``z_jc``
    (each unit's records' squared deviations from ``m_hc``, the stratum's mean score per PSU or record;
    ``m_hc = 0`` where ``centre_h`` is 0: the "adjust" rule's single-PSU strata, which are not centred).

    A unit without category c has the score ``-p_c`` times its mean weight ``Wbar_j`` per record. So in a
    stratum without c every unit deviates by ``-p_c e_j``, ``e_j`` its mean weight less the stratum's (less
    0 where uncentred): the stratum adds ``p_c^2`` times its units' centred squares, a constant per stratum
    summed over the strata without c by :func:`_absent_sums`. In a stratum with c, a unit with c deviates by
    ``(tbar_jc - g_hc) - p_c e_j``, ``g_hc`` the stratum's mean weight of c; these units occur, so they are
    added term by term. Those without c add ``sum n_j (p_c Wbar_j + m_hc)^2``, from their sums of
    ``n_j Wbar_j^2`` and ``n_j Wbar_j`` (:func:`_sums_without`): its terms are squares of scores and of the
    mean score, so they round as the records' path does (centring them at the stratum's mean weight instead
    would cancel terms far larger than the scores). Where every score of a stratum is equal -- one
    category, or identical units -- each of its terms is exactly 0.
    """
    k = p.shape[0]
    centred = terms.centre > 0
    n_hf = n_h.astype(np.float64)
    stratum_w = np.bincount(u.stratum, weights=u.weight, minlength=n_h.shape[0])
    ref = np.where(centred, stratum_w / np.maximum(n_hf, 1.0), 0.0)
    mean_w = u.weight / u.size
    e = mean_w - ref[u.stratum]
    pairs, inverse = np.unique(u.stratum[u.pair_unit] * k + u.pair_cat, return_inverse=True)
    pair_h, pair_c = pairs // k, pairs % k  # the (stratum, category) pairs that occur
    centred_squares = np.bincount(u.stratum, weights=u.size * e * e + u.spread, minlength=n_h.shape[0])
    strata_without = p * p * _absent_sums(pair_h, pair_c, terms.scale * centred_squares, k)
    size = u.size[u.pair_unit]
    t_h = np.bincount(inverse, weights=u.pair_weight)
    g = np.where(centred[pair_h], t_h / n_hf[pair_h], 0.0)
    m = np.where(centred[pair_h], (t_h - p[pair_c] * stratum_w[pair_h]) / n_hf[pair_h], 0.0)
    p_u = p[u.pair_cat]
    dev = (u.pair_weight / size - g[inverse]) - p_u * e[u.pair_unit]
    own = size * dev * dev + (1.0 - p_u) ** 2 * u.spread[u.pair_unit]
    with_c = np.bincount(u.pair_cat, weights=terms.scale[u.stratum][u.pair_unit] * own, minlength=k)
    square_of = np.where(u.inside, u.weight * mean_w + u.spread, 0.0)  # n_j Wbar_j^2 + spread_j
    squares = _sums_without(u.stratum, u.pair_unit, u.pair_cat, square_of, k)
    sums = _sums_without(u.stratum, u.pair_unit, u.pair_cat, u.weight, k)
    p_s = p[pair_c]
    n_without = n_hf[pair_h] - np.bincount(inverse, weights=size)  # records (PSUs) without c, in or out of D
    others = p_s * p_s * squares + 2.0 * p_s * m * sums + m * m * n_without
    return with_c + np.bincount(pair_c, weights=terms.scale[pair_h] * others, minlength=k) + strata_without


def _sums_without(group: np.ndarray, unit: np.ndarray, cat: np.ndarray, a: np.ndarray, k: int) -> np.ndarray:
    """Per (group, category) pair that occurs, in ascending order of ``group * k + cat``, the sum of ``a`` (>= 0,
    one value per unit, ``group`` the unit's) over the group's units without the category, given the distinct
    (unit, category) pairs that occur -- in O(units + pairs), never units x categories.

    :func:`kanon_core.utility.design._absent_sums` within groups: with the units ordered by group and, within
    it, by ``a``, a group's units without c are the gaps between the ranks of those with c inside the group's
    range, each a difference of compensated prefix sums (exactly 0 for an empty gap).
    """
    n = a.shape[0]
    order = np.lexsort((a, group))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    hi, lo = _compensated_prefix(a[order])
    n_groups = int(group.max()) + 1 if n else 0
    first = np.searchsorted(group[order], np.arange(n_groups), side="left")
    end = np.searchsorted(group[order], np.arange(n_groups), side="right")
    g = group[unit]
    key = g * k + cat
    by = np.lexsort((rank[unit], key))
    key_s, r_s, g_s = key[by], rank[unit][by], g[by]
    new_pair = np.ones(key_s.shape[0], dtype=bool)
    new_pair[1:] = key_s[1:] != key_s[:-1]
    gap_start = np.where(new_pair, first[g_s], np.concatenate(([0], r_s[:-1] + 1)))
    pair = np.cumsum(new_pair) - 1
    out = np.bincount(pair, weights=_range_sum(hi, lo, gap_start, r_s))
    last = np.ones(key_s.shape[0], dtype=bool)
    last[:-1] = new_pair[1:]
    return out + _range_sum(hi, lo, r_s[last] + 1, end[g_s[last]])


def _index(keys: pd.Series) -> np.ndarray:
    """Consecutive indices of distinct keys, on the records' string view (``1`` and ``"1"`` of a mixed file
    are one stratum, as in :class:`~kanon_core.utility.design.SurveyDesign`); None is the one stratum of a
    design without strata."""
    codes, _ = pd.factorize(keys.astype(object).map(lambda v: "" if v is None else _key(v)), sort=False)
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
