"""Bias and information loss of a treatment: means, correlations, suppressed cells, entropy.

* **Bias of means and correlations** (Angiuli & Waldo): suppression tends to shift means
  (rare values go with outlying outcomes), generalization tends to distort correlations. Numeric
  variables are compared as treated minus original. A generalized value (a bin such as ``"20-29"``)
  needs a number: by default the mean of the original values of the records in that bin, the
  placeholder Angiuli & Waldo recommends; an explicit ``{treated value: number}`` mapping can be given.
  Means and correlations are design-weighted when the file has a weight (they estimate population
  quantities), over the records where the values are present (pairwise for correlations).
* **Suppressed cells** per variable: values present in the original and missing after treatment, with
  the value suppressed most often (Wilson et al., RTI, tables 2 and 3).
* **Entropy** per quasi-identifier: the Shannon entropy (bits) of its distribution before and after,
  and the *non-uniform entropy* information loss of Gionis & Tassa (2009), used by ARX::

      loss = sum_i -log2( #{r: x_r = x_i} / #{r: x_r in B(y_i)} )

  over records i with an original value x_i, where y_i is the treated value and B(y) the set of
  original values it stands for (all values when suppressed). It is 0 when nothing changed and grows
  with what a user can no longer tell apart. With the variable's hierarchy, B(y) of a generalized label
  is its hierarchy group and its size is counted over all records, suppressed ones included, as the
  Recode page's lattice counts it (a value whose every record was suppressed still belongs to its group);
  without one, B(y) is read off the data: the original values of the records whose treated value is y.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..errors import InputError
from ..treat.hierarchy import Hierarchy

Placeholder = Literal["auto", "bin_mean", "value"]


@dataclass(frozen=True)
class NumericVersion:
    """A treated variable as numbers, and how its non-numeric values were replaced."""

    values: np.ndarray
    method: str


def _same_records(original: Dataset, treated: Dataset) -> None:
    if original.n_records != treated.n_records:
        raise InputError(
            f"The two versions have {original.n_records} and {treated.n_records} records; "
            "bias and information loss need the same records in both."
        )


def _weights(ds: Dataset, weighted: bool) -> np.ndarray:
    w = ds.weights() if weighted else None
    return np.ones(ds.n_records) if w is None else w


def original_numeric(ds: Dataset, v: str) -> np.ndarray:
    """An original variable as float with NaN for missing; refuses text."""
    miss = ds.missing_mask(v)
    num = pd.to_numeric(ds.frame[v].where(~miss), errors="coerce").to_numpy(dtype=np.float64)
    bad = int((np.isnan(num) & ~miss).sum())
    if bad:
        raise InputError(f"Variable '{v}' has {bad} non-numeric value(s) in the original; bias needs a numeric variable.")
    return num


def treated_numeric(
    original: Dataset,
    treated: Dataset,
    v: str,
    mapping: Mapping[Any, float] | None = None,
    placeholder: Placeholder = "auto",
    weighted: bool = True,
) -> NumericVersion:
    """The treated variable as numbers (NaN for missing).

    ``placeholder``: ``"value"`` converts values as they are; ``"bin_mean"`` replaces every treated
    value by the (weighted) mean of the original values of its records; ``"auto"`` (the default, the
    Compare page's) takes numbers as they are (a top code of 90 is what an analyst of the release computes
    with, so its bias shows) and uses bin means where the treated values are texts: a generalized value is a
    label for its bin, even when it reads as a number (an age band labelled "20"), unless every text left
    equals its original value (the variable written as text, not recoded). An explicit ``mapping`` wins.
    """
    if placeholder not in ("auto", "bin_mean", "value"):
        raise InputError("The placeholder must be 'auto', 'bin_mean' or 'value'.")
    miss = treated.missing_mask(v)
    col = treated.frame[v].reset_index(drop=True)
    if mapping:
        mapped = col.map(lambda x: mapping.get(x, x) if pd.notna(x) else x)
        num = pd.to_numeric(mapped.where(~miss), errors="coerce").to_numpy(dtype=np.float64)
        bad = int((np.isnan(num) & ~miss).sum())
        if bad:
            raise InputError(f"Variable '{v}': {bad} treated value(s) are neither numbers nor in the given mapping.")
        return NumericVersion(num, "mapping")
    direct = pd.to_numeric(col.where(~miss), errors="coerce").to_numpy(dtype=np.float64)
    convertible = not (np.isnan(direct) & ~miss).any()
    if placeholder == "value":
        if not convertible:
            raise InputError(f"Variable '{v}' has treated values that are not numbers; use bin means or a mapping.")
        return NumericVersion(direct, "value")
    orig = original_numeric(original, v)
    if placeholder == "auto" and convertible:
        labels = any(isinstance(x, str) for x in col[~miss].tolist())
        kept = ~miss & ~np.isnan(orig)
        if not labels or (np.array_equal(direct[kept], orig[kept]) and not (~miss & np.isnan(orig)).any()):
            return NumericVersion(direct, "value")  # numbers, or texts that are the original values
    w = _weights(original, weighted)
    keys = col.where(~miss)
    known = ~miss & ~np.isnan(orig)
    frame = pd.DataFrame({"k": keys[known].astype(str).to_numpy(), "wx": (w * np.nan_to_num(orig))[known],
                          "w": w[known]})
    sums = frame.groupby("k")[["wx", "w"]].sum()
    bin_mean = (sums["wx"] / sums["w"]).to_dict()
    out = np.array([bin_mean.get(str(k), np.nan) if not m else np.nan for k, m in zip(keys, miss, strict=True)])
    return NumericVersion(out, "bin mean")


def _wmean(x: np.ndarray, w: np.ndarray) -> float:
    ok = ~np.isnan(x)
    return float(np.sum(w[ok] * x[ok]) / np.sum(w[ok])) if ok.any() else float("nan")


def _no_variance(x: np.ndarray, w: np.ndarray, css: float) -> bool:
    """Whether ``x`` (observed, weights ``w``, weighted sum of squared deviations ``css``) has no variance: all
    values equal, or a variance within rounding of the values' scale (a weighted mean of a constant column is
    off by an ulp, which leaves ~1e-30 of spurious variance and a correlation of any value, even 1)."""
    if np.ptp(x) == 0:
        return True
    return not css > 1e-20 * float(np.sum(w * x * x))


def weighted_correlation(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Weighted Pearson correlation over records where both are present."""
    ok = ~np.isnan(x) & ~np.isnan(y)
    if ok.sum() < 2:
        return float("nan")
    x, y, w = x[ok], y[ok], w[ok]
    mx, my = np.average(x, weights=w), np.average(y, weights=w)
    cxy = np.sum(w * (x - mx) * (y - my))
    cxx, cyy = np.sum(w * (x - mx) ** 2), np.sum(w * (y - my) ** 2)
    if _no_variance(x, w, cxx) or _no_variance(y, w, cyy):
        return float("nan")
    return float(cxy / np.sqrt(cxx * cyy))


def bias_of_means(
    original: Dataset,
    treated: Dataset,
    variables: Sequence[str],
    mappings: Mapping[str, Mapping[Any, float]] | None = None,
    placeholder: Placeholder = "auto",
    weighted: bool = True,
) -> pd.DataFrame:
    """Mean of each numeric variable before and after: ``bias = treated - original`` (Angiuli & Waldo)."""
    _same_records(original, treated)
    rows = []
    for v in variables:
        o = original_numeric(original, v)
        t = treated_numeric(original, treated, v, (mappings or {}).get(v), placeholder, weighted)
        m_o, m_t = _wmean(o, _weights(original, weighted)), _wmean(t.values, _weights(treated, weighted))
        rows.append({
            "variable": v, "mean_original": m_o, "mean_treated": m_t, "bias": m_t - m_o,
            "relative_bias": (m_t - m_o) / abs(m_o) if m_o else float("nan"),
            "n_original": int((~np.isnan(o)).sum()), "n_treated": int((~np.isnan(t.values)).sum()),
            "placeholder": t.method,
        })
    return pd.DataFrame(rows, columns=["variable", "mean_original", "mean_treated", "bias", "relative_bias",
                                       "n_original", "n_treated", "placeholder"])


def bias_of_correlations(
    original: Dataset,
    treated: Dataset,
    variables: Sequence[str],
    mappings: Mapping[str, Mapping[Any, float]] | None = None,
    placeholder: Placeholder = "auto",
    weighted: bool = True,
) -> pd.DataFrame:
    """Pairwise correlations before and after: ``bias = treated - original`` (Angiuli & Waldo)."""
    _same_records(original, treated)
    if len(variables) < 2:
        raise InputError("Correlations need at least two numeric variables.")
    o = {v: original_numeric(original, v) for v in variables}
    t = {v: treated_numeric(original, treated, v, (mappings or {}).get(v), placeholder, weighted).values
         for v in variables}
    w_o, w_t = _weights(original, weighted), _weights(treated, weighted)
    rows = []
    for a, b in combinations(variables, 2):
        r_o = weighted_correlation(o[a], o[b], w_o)
        r_t = weighted_correlation(t[a], t[b], w_t)
        rows.append({"variable_1": a, "variable_2": b, "corr_original": r_o, "corr_treated": r_t, "bias": r_t - r_o})
    return pd.DataFrame(rows, columns=["variable_1", "variable_2", "corr_original", "corr_treated", "bias"])


def suppressed_cells(original: Dataset, treated: Dataset, variables: Sequence[str] | None = None) -> pd.DataFrame:
    """Cells present in the original and missing after treatment, per variable (Wilson et al., RTI tables 2, 3).

    ``most_suppressed`` is the label of the value suppressed most often and ``most_suppressed_percent``
    its share of that variable's suppressed cells, in percent (the unit of the table's other shares and of a
    suppression step's "percent of variable").
    """
    from .suppressed import suppressed_mask

    _same_records(original, treated)
    variables = list(variables) if variables is not None else list(original.roles.qis)
    for v in variables:
        if v not in treated.frame.columns:
            raise InputError(f"Variable '{v}' is not in the treated data.")
    cells = suppressed_mask(original, treated, variables)
    top = cells.most_suppressed(original).set_index("variable")
    rows = []
    n = original.n_records
    for v in variables:
        mo, mt = original.missing_mask(v), treated.missing_mask(v)
        k = int(cells.column(v).sum())
        top_label = top.loc[v, "value"] if v in top.index else None
        top_n = int(top.loc[v, "suppressed"]) if v in top.index else 0
        rows.append({
            "variable": v, "label": treated.meta_of(v).label or original.meta_of(v).label or v, "n_suppressed": k,
            "pct_records": 100 * k / n, "n_missing_original": int(mo.sum()), "n_missing_treated": int(mt.sum()),
            "most_suppressed": top_label, "most_suppressed_n": top_n,
            "most_suppressed_percent": 100 * top_n / k if k else float("nan"),
        })
    return pd.DataFrame(rows, columns=["variable", "label", "n_suppressed", "pct_records", "n_missing_original",
                                       "n_missing_treated", "most_suppressed", "most_suppressed_n",
                                       "most_suppressed_percent"])


def _codes(values: pd.Series) -> np.ndarray:
    """Integer code per distinct value (-1 for NA): counting on codes, not on texts, keeps this fast."""
    return pd.factorize(pd.Series(values.to_numpy(dtype=object)), use_na_sentinel=True)[0].astype(np.int64)


def shannon_entropy(values: pd.Series, missing: np.ndarray) -> float:
    """Entropy in bits of the (unweighted) distribution among non-missing values."""
    codes = _codes(values)[~missing]
    counts = np.bincount(codes[codes >= 0]).astype(float) if codes.size else np.zeros(0)
    counts = counts[counts > 0]
    if counts.size == 0:
        return 0.0
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def _hierarchy_bins(original: pd.Series, treated: pd.Series, have: np.ndarray, kept: np.ndarray,
                    hierarchy: Hierarchy, level: int | None) -> np.ndarray:
    """Per record, the records (all observed ones, suppressed or not) whose original value its released value
    stands for by ``hierarchy``: the released value is the label of the original value's row at ``level`` (the
    level a generalization step applied) or else at the lowest level with that label, and it stands for every
    original value of that label's group, as the lattice search counts it
    (:meth:`kanon_core.treat.metrics.MetricContext.build`). NaN where the hierarchy does not say (no row, or a
    released value that is no label of the row: a later recode)."""
    from ..io import cell_text
    from ..treat.recode import is_text_column
    from .info_loss import cell_key

    out = np.full(len(original), np.nan)
    o_codes, o_values = pd.factorize(pd.Series(original.to_numpy(dtype=object)), use_na_sentinel=True)
    o_codes = np.asarray(o_codes, dtype=np.int64)
    rows = hierarchy.match(list(o_values), [cell_text(v) for v in o_values])
    cnt = np.bincount(o_codes[have], minlength=len(o_values)).astype(float)
    t_text = is_text_column(treated)
    labels = [[cell_key(x, t_text) for x in r] for r in hierarchy.rows]
    group: list[dict[str | None, float]] = [{} for _ in range(hierarchy.height)]
    for c, r in enumerate(rows.tolist()):
        if r >= 0:
            for lv, lab in enumerate(labels[r]):
                group[lv][lab] = group[lv].get(lab, 0.0) + cnt[c]
    t_codes, t_values = pd.factorize(pd.Series(treated.to_numpy(dtype=object)), use_na_sentinel=True)
    t_keys = [cell_key(v, t_text) for v in t_values]
    pairs: dict[tuple[int, int], float] = {}
    for i in np.flatnonzero(have & kept).tolist():
        c, t = int(o_codes[i]), int(t_codes[i])
        if (c, t) not in pairs:
            r, y = int(rows[c]), t_keys[t] if t >= 0 else None
            lv = None
            if r >= 0 and y is not None:
                if level is not None and 0 < level < len(labels[r]) and labels[r][level] == y:
                    lv = level
                else:
                    lv = next((j for j in range(1, len(labels[r])) if labels[r][j] == y), None)
            pairs[(c, t)] = group[lv][y] if lv is not None else np.nan
        out[i] = pairs[(c, t)]
    return out


def non_uniform_entropy(original: pd.Series, treated: pd.Series, miss_o: np.ndarray, miss_t: np.ndarray,
                        hierarchy: Hierarchy | None = None, level: int | None = None) -> float:
    """Gionis & Tassa's non-uniform entropy loss (bits) of one variable; see the module docstring.

    With the variable's ``hierarchy`` (and the ``level`` its generalization step applied), a released label
    stands for its whole hierarchy group, counted over all records (:func:`_hierarchy_bins`), as on the Recode
    page; values the hierarchy does not explain, and every value without a hierarchy, stand for the original
    values released with them."""
    o = pd.Series(_codes(original))
    t = pd.Series(_codes(treated))
    have = ~miss_o
    if not have.any():
        return 0.0
    count_o = o[have].value_counts()
    n_have = int(have.sum())
    # B(y) from the data: original values of the records whose treated value is y
    both = have & ~miss_t
    members = pd.DataFrame({"t": t[both].to_numpy(), "o": o[both].to_numpy()}).drop_duplicates()
    members["n"] = members["o"].map(count_o).astype(float)
    bin_size = members.groupby("t")["n"].sum()
    num = o[have].map(count_o).to_numpy(dtype=float)
    den = t[have].map(bin_size).to_numpy(dtype=float)
    if hierarchy is not None:
        by_h = _hierarchy_bins(original.reset_index(drop=True), treated.reset_index(drop=True), have,
                               ~np.asarray(miss_t), hierarchy, level)[have]
        den = np.where(np.isnan(by_h), den, by_h)
    den = np.where(miss_t[have], float(n_have), den)
    return float(-np.log2(num / den).sum()) + 0.0  # + 0.0 turns -0.0 into 0.0


def entropy_table(original: Dataset, treated: Dataset, variables: Sequence[str] | None = None,
                  hierarchies: Mapping[str, Hierarchy] | None = None,
                  levels: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Shannon entropy before/after and non-uniform entropy loss for each variable (default: QIs).

    ``hierarchies`` (:func:`kanon_core.utility.info_loss.version_hierarchies`) and ``levels``
    (:func:`~kanon_core.utility.info_loss.version_levels`) let a generalized label stand for its hierarchy
    group over all records, the Recode page's reading (see :func:`non_uniform_entropy`)."""
    _same_records(original, treated)
    variables = list(variables) if variables is not None else list(original.roles.qis)
    rows = []
    for v in variables:
        mo, mt = original.missing_mask(v), treated.missing_mask(v)
        col_o, col_t = original.frame[v].reset_index(drop=True), treated.frame[v].reset_index(drop=True)
        loss = non_uniform_entropy(col_o, col_t, mo, mt, (hierarchies or {}).get(v), (levels or {}).get(v))
        n_have = int((~mo).sum())
        rows.append({
            "variable": v, "entropy_original": shannon_entropy(col_o, mo), "entropy_treated": shannon_entropy(col_t, mt),
            "non_uniform_entropy": loss, "non_uniform_entropy_per_record": loss / n_have if n_have else 0.0,
        })
    return pd.DataFrame(rows, columns=["variable", "entropy_original", "entropy_treated", "non_uniform_entropy",
                                       "non_uniform_entropy_per_record"])
