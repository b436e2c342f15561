"""Before vs after: weighted percentages of each category in the original and the treated file.

Wilson et al. (RTI, section 4.2) judge a treatment by comparing, for every quasi-identifier value, the
weighted percentage and its 95 % confidence interval computed on the original and on the treated
microdata: the difference (original minus treated, in percentage points), the relative difference
(scaled by the original percentage, his Figure 1), whether the two intervals overlap (70 of 138 did)
and which values were completely suppressed. Percentages are domain estimates among records where
the variable is not missing (:mod:`kanon_core.utility.survey`), so suppressed cells leave the
denominator. Both files must hold the same records in the same order; the design (strata, PSUs) is
the original's, the weights each file's own.

When a variable was globally recoded -- the treated file has values the original does not, or original
values were merged into an existing code (categories 1 and 5 -> 1) -- the original values are mapped to
the treated ones through the records that have both, provided every original value maps to a single
treated value, so percentages are compared on the treated coding. Otherwise (e.g. local recoding) values
are compared as they are. A category absent after treatment is ``"completely suppressed"`` only when
every one of its records is missing in the treated file; if some of them now show another value it is
``"recoded"``. A variable with every value suppressed has no percentages after treatment: each of its
categories is completely suppressed, and the other variables are compared as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset, _sort_key
from ..errors import InputError
from .baseline import reads_alike
from .design import DEFAULT_LONELY_PSU, SurveyDesign
from .survey import proportions

STATUS_COMPARED = "compared"
STATUS_SUPPRESSED = "completely suppressed"
STATUS_RECODED = "recoded"
STATUS_NEW = "only in treated"

TABLE_COLUMNS = [
    "variable", "variable_label", "value", "label", "status", "recoded",
    "n_original", "pct_original", "se_original", "ci_low_original", "ci_high_original",
    "n_treated", "pct_treated", "se_treated", "ci_low_treated", "ci_high_treated",
    "difference", "relative_difference", "overlap",
]


NO_ESTIMATES = pd.DataFrame({"value": pd.Series([], dtype=object), "label": pd.Series([], dtype=object),
                             "n": pd.Series([], dtype=np.int64),
                             **{c: pd.Series([], dtype=np.float64) for c in ("estimate", "se", "ci_low", "ci_high")}})
"""The estimate table of a side where the variable has no value (every cell missing or suppressed): no
category, so each category of the other side reads 0 % there (:func:`comparison_frame`)."""


@dataclass(frozen=True)
class ComparisonSummary:
    """Wilson et al.'s summaries over the categories present in both files."""

    n_variables: int
    n_categories: int
    n_overlap: int
    share_overlap: float
    n_without_interval: int
    mean_difference: float
    median_difference: float
    min_difference: float
    max_difference: float
    n_completely_suppressed: int
    completely_suppressed: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["completely_suppressed"] = [{"variable": v, "label": lab} for v, lab in self.completely_suppressed]
        return d

    @property
    def n_judged(self) -> int:
        """Categories compared whose two intervals both exist: the ones whose overlap is judged."""
        return self.n_categories - self.n_without_interval

    def sentence(self) -> str:
        if self.n_categories == 0:
            return "No category is present in both files."
        if self.n_judged:
            overlap = (f"Confidence intervals overlap for {self.n_overlap} of {self.n_judged} values "
                       f"({100 * self.share_overlap:.0f}%).")
        else:
            overlap = "No confidence interval overlap is judged."
        if self.n_without_interval:
            overlap += (f" {self.n_without_interval} value(s) have no confidence interval on one side or both "
                        "(the design leaves no degrees of freedom for it), so their overlap is not judged.")
        return (
            f"{overlap} Differences (original minus treated, percentage points) "
            f"range from {self.min_difference:.1f} to {self.max_difference:.1f}, mean {self.mean_difference:.2f}, "
            f"median {self.median_difference:.2f}. {self.n_completely_suppressed} value(s) completely suppressed."
        )


@dataclass(frozen=True)
class DistributionComparison:
    """Per-category comparison (``table``, percentages in %) and its summary."""

    table: pd.DataFrame
    summary: ComparisonSummary
    ci_method: str
    level: float
    design: str

    def variable_table(self, variable: str) -> pd.DataFrame:
        return self.table[self.table["variable"] == variable].reset_index(drop=True)


def intervals_overlap(low1: np.ndarray, high1: np.ndarray, low2: np.ndarray, high2: np.ndarray) -> pd.arrays.BooleanArray:
    """Closed intervals [low1, high1] and [low2, high2] share at least one point; missing (``pd.NA``) where a
    bound is not a number: an interval that does not exist (a logit interval with no design degrees of
    freedom, a standard error no stratum can estimate) neither overlaps nor fails to."""
    bounds = [np.atleast_1d(np.asarray(b, dtype=float)) for b in (low1, high1, low2, high2)]
    undefined = np.isnan(bounds[0]) | np.isnan(bounds[1]) | np.isnan(bounds[2]) | np.isnan(bounds[3])
    meet = (bounds[0] <= bounds[3]) & (bounds[2] <= bounds[1])
    return pd.arrays.BooleanArray(meet & ~undefined, undefined)


def compare_distributions(
    original: Dataset,
    treated: Dataset,
    variables: Sequence[str] | None = None,
    design: SurveyDesign | None = None,
    ci: str = "wald",
    level: float = 0.95,
    lonely_psu: str = DEFAULT_LONELY_PSU,
) -> DistributionComparison:
    """Compare weighted percentages of ``variables`` (default: the original's QIs) before and after."""
    if original.n_records != treated.n_records:
        raise InputError(
            f"The two versions have {original.n_records} and {treated.n_records} records; "
            "comparing percentages needs the same records in both."
        )
    variables = list(variables) if variables is not None else list(original.roles.qis)
    if not variables:
        raise InputError("Choose at least one variable to compare.")
    for v in variables:
        for ds, which in ((original, "original"), (treated, "treated")):
            if v not in ds.frame.columns:
                raise InputError(f"Variable '{v}' is not in the {which} data.")
    design_o = design or SurveyDesign.from_dataset(original, lonely_psu=lonely_psu)
    design_t = _treated_design(design_o, original, treated)
    frames = [_compare_variable(original, treated, v, design_o, design_t, ci, level) for v in variables]
    table = pd.concat(frames, ignore_index=True)[TABLE_COLUMNS]
    return DistributionComparison(table=table, summary=summarize(table), ci_method=ci, level=level,
                                  design=design_o.describe())


def summarize(table: pd.DataFrame) -> ComparisonSummary:
    """Overlap count and difference statistics over categories present in both files (Wilson et al., RTI); the
    overlap share is over those whose two intervals exist."""
    both = table[table["status"] == STATUS_COMPARED]
    diff = both["difference"].to_numpy(dtype=float)
    gone = table[table["status"] == STATUS_SUPPRESSED]
    n = len(both)
    overlap = both["overlap"].astype("boolean")
    n_without = int(overlap.isna().sum())
    n_overlap = int(overlap.fillna(False).sum())
    judged = n - n_without
    return ComparisonSummary(
        n_variables=int(table["variable"].nunique()),
        n_categories=n,
        n_overlap=n_overlap,
        share_overlap=n_overlap / judged if judged else float("nan"),
        n_without_interval=n_without,
        mean_difference=float(diff.mean()) if n else float("nan"),
        median_difference=float(np.median(diff)) if n else float("nan"),
        min_difference=float(diff.min()) if n else float("nan"),
        max_difference=float(diff.max()) if n else float("nan"),
        n_completely_suppressed=len(gone),
        completely_suppressed=tuple(zip(gone["variable"].astype(str), gone["label"].astype(str), strict=True)),
    )


def _treated_design(design: SurveyDesign, original: Dataset, treated: Dataset) -> SurveyDesign:
    name = design.weight_name
    if name is None or name not in treated.frame.columns:
        return design
    w = treated.weights() if treated.roles.weight == name else None
    if w is None:
        from ..dataset import validate_weights

        w = validate_weights(treated.frame[name], name)
    if np.array_equal(w, design.weights):
        return design
    return design.with_weights(w)


def recode_map(original: pd.Series, treated: pd.Series, miss_o: np.ndarray, miss_t: np.ndarray) -> dict[Any, Any] | None:
    """The global recoding original value -> treated value seen on records with both, or None if a value
    maps to several treated values (not a global recoding)."""
    both = ~miss_o & ~miss_t
    o = original.to_numpy(dtype=object)[both]
    t = treated.to_numpy(dtype=object)[both]
    if not len(o):
        return {}
    # values by Python equality (1 and 1.0 are one value), each written as its first record shows it
    o_codes, o_values = pd.factorize(o)
    t_codes, t_values = pd.factorize(t)
    pairs = np.unique(o_codes.astype(np.int64) * len(t_values) + t_codes)
    if (np.bincount(pairs // len(t_values), minlength=len(o_values)) > 1).any():
        return None
    first = np.unique(o_codes, return_index=True)[1]
    return {o_values[c]: t[first[c]] for c in range(len(o_values))}


def _compare_variable(original: Dataset, treated: Dataset, v: str, design_o: SurveyDesign,
                      design_t: SurveyDesign, ci: str, level: float) -> pd.DataFrame:
    meta_o, meta_t = original.meta_of(v), treated.meta_of(v)
    col_o = original.frame[v].reset_index(drop=True)
    col_t = treated.frame[v].reset_index(drop=True)
    miss_o, miss_t = original.missing_mask(v), treated.missing_mask(v)
    # a variable the treatment left alone (most of them after one recode): no recoding to find, and with the
    # same design the same estimates on both sides
    alike = reads_alike(original, treated, [v])
    recoded, mapping = (False, None) if alike else _recoding(col_o, col_t, miss_o, miss_t)
    labels_o = dict(meta_o.value_labels)
    if recoded and mapping is not None:
        # unmapped original values (never seen unsuppressed) keep their own value
        col_o = _mapped(col_o, mapping)
        col_o[miss_o] = np.nan
        labels_o = {**labels_o, **dict(meta_t.value_labels)}
    # original values (on the compared coding) that some record still shows after treatment
    kept_keys = {value_key(x) for x in pd.unique(col_o[~miss_o & ~miss_t].to_numpy(dtype=object))}  # per value
    est_o = (proportions(col_o.where(~miss_o), design_o, (), labels_o, ci=ci, level=level, name=v).table
             if not miss_o.all() else NO_ESTIMATES)
    if alike and design_t is design_o:
        est_t = est_o
    elif miss_t.all():
        est_t = NO_ESTIMATES
    else:
        est_t = proportions(col_t.where(~miss_t), design_t, (), dict(meta_t.value_labels), ci=ci, level=level,
                            name=v).table
    return comparison_frame(v, meta_o.label or v, est_o, est_t, recoded, kept_keys)


def _mapped(column: pd.Series, mapping: dict[Any, Any]) -> pd.Series:
    """``column`` with each value replaced by ``mapping``'s (a value it lacks kept), missing cells NaN: the
    mapping looked up once per distinct value (``pd.factorize`` groups values as the dict does), not per cell."""
    codes, uniques = pd.factorize(column.to_numpy(dtype=object))
    new = np.full(len(uniques) + 1, np.nan, dtype=object)  # the last one for code -1, a missing cell
    for i, u in enumerate(uniques):  # one by one: a value is never split into an array
        new[i] = mapping.get(u, u)
    return pd.Series(new[codes], index=column.index, name=column.name, dtype=object)


def _recoding(col_o: pd.Series, col_t: pd.Series, miss_o: np.ndarray, miss_t: np.ndarray
              ) -> tuple[bool, dict[Any, Any] | None]:
    """Whether the treatment recoded the variable (a new value, merged codes, or no global mapping), and the
    mapping original value -> treated value when there is one (:func:`recode_map`)."""
    values_o = set(col_o[~miss_o].tolist())
    new_values = [x for x in set(col_t[~miss_t].tolist()) if x not in values_o]
    # the mapping comes first: a merge into an existing code (1 and 5 -> 1) adds no new value but is a recode
    mapping = recode_map(col_o, col_t, miss_o, miss_t)
    merged_codes = mapping is not None and any(k != t for k, t in mapping.items())
    return bool(new_values) or merged_codes or mapping is None, mapping


def comparison_frame(v: str, variable_label: str, est_o: pd.DataFrame, est_t: pd.DataFrame, recoded: bool,
                     kept_keys: set[str]) -> pd.DataFrame:
    """One variable's rows of the comparison table from the two estimate tables (``proportions``' tables,
    the original's on the compared coding): matched by value, with the status of each category
    (``kept_keys``: the :func:`value_key` of the original categories some record still shows after),
    the differences and whether the intervals overlap.

    The match is an outer join on :func:`value_key` (1, 1.0 and a numpy 1 are one category), written over
    the few categories as dictionaries and arrays: a pandas merge and a column assignment per statistic
    cost 20 ms per variable, most of the Compare page's first second. A category is present on a side
    when it has records there; an absent side reads 0 % with a zero interval. ``overlap`` is missing (``pd.NA``)
    on rows not compared and where an interval does not exist. Rows are in the values' natural order (numbers,
    then texts)."""
    sides = (_side_rows(est_o), _side_rows(est_t))
    keys = list(sides[0].index) + [key for key in sides[1].index if key not in sides[0].index]
    keys.sort(key=lambda key: (_sort_key(_row_value(sides, key)), key))
    at = [np.array([side.index.get(key, -1) for key in keys], dtype=np.int64) for side in sides]
    n = [np.where(pos >= 0, side.n[np.maximum(pos, 0)], 0) if len(side.n) else np.zeros(len(keys), np.int64)
         for pos, side in zip(at, sides, strict=True)]
    in_o, in_t = n[0] > 0, n[1] > 0
    suppressed = np.array([key not in kept_keys for key in keys], dtype=bool)
    status = np.select([in_o & in_t, in_o & ~in_t & suppressed, in_o & ~in_t],
                       [STATUS_COMPARED, STATUS_SUPPRESSED, STATUS_RECODED], STATUS_NEW)
    columns: dict[str, Any] = {
        "variable": [v] * len(keys),
        "variable_label": [variable_label] * len(keys),
        "value": pd.Series([_row_value(sides, key) for key in keys], dtype=None if keys else object),
        "label": pd.Series([_row_label(sides, key) for key in keys], dtype=None if keys else object),
        "status": status,
        "recoded": np.full(len(keys), recoded, dtype=bool),
        "n_original": n[0].astype(np.int64),
        "n_treated": n[1].astype(np.int64),
    }
    for name, pos, side, present in (("original", at[0], sides[0], in_o), ("treated", at[1], sides[1], in_t)):
        for stat, col in (("estimate", "pct"), ("se", "se"), ("ci_low", "ci_low"), ("ci_high", "ci_high")):
            got = side.stats[stat][np.maximum(pos, 0)] if len(side.n) else np.zeros(len(keys))
            columns[f"{col}_{name}"] = 100 * np.where(present, got, 0.0)
    pct_o = columns["pct_original"]
    columns["difference"] = difference = pct_o - columns["pct_treated"]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf for a tiny percentage, as pandas gave
        columns["relative_difference"] = np.where(pct_o > 0, difference / pct_o, np.nan)
    # overlap is judged only where both sides have the category: an absent side's zero interval is no interval
    compared = in_o & in_t
    overlap = intervals_overlap(*(np.where(compared, columns[c], np.nan) for c in (
        "ci_low_original", "ci_high_original", "ci_low_treated", "ci_high_treated")))
    columns["overlap"] = overlap
    return pd.DataFrame(columns)


@dataclass(frozen=True)
class _SideRows:
    """One side's estimate table for the join: row of each value key, and its columns as plain arrays."""

    index: dict[str, int]
    values: list[Any]
    labels: list[Any]
    n: np.ndarray
    stats: dict[str, np.ndarray]


def _side_rows(est: pd.DataFrame) -> _SideRows:
    values = est["value"].tolist()
    index: dict[str, int] = {}
    for i, value in enumerate(values):
        key = value_key(value)
        if key in index:  # categories are distinct by Python equality, so by key: a duplicate is a bug
            raise ValueError(f"Two categories of one estimate table share the key {key!r}.")
        index[key] = i
    return _SideRows(index=index, values=values, labels=est["label"].tolist(), n=est["n"].to_numpy(np.int64),
                     stats={c: est[c].to_numpy(np.float64) for c in ("estimate", "se", "ci_low", "ci_high")})


def _row_value(sides: tuple[_SideRows, _SideRows], key: str) -> Any:
    """The category's value as the original shows it, else as the treated file does."""
    o, t = sides
    return o.values[o.index[key]] if key in o.index else t.values[t.index[key]]


def _row_label(sides: tuple[_SideRows, _SideRows], key: str) -> Any:
    """The category's label as the treated file shows it (its recoding's labels), else the original's."""
    o, t = sides
    return t.labels[t.index[key]] if key in t.index else o.labels[o.index[key]]


def value_key(value: Any) -> str:
    """Join key that treats 1, 1.0 and numpy ints alike."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return f"n:{int(value)}"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"n:{int(value)}"
    if isinstance(value, (float, np.floating)):
        return f"n:{float(value)!r}"
    return f"s:{value}"
