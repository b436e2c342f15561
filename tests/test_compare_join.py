"""The comparison table's join of the two estimate tables (``compare.comparison_frame``) against a reference
written with a pandas outer merge on the value keys (the form it first had): the same rows in the same order,
the same statuses, counts, percentages, intervals, differences and overlaps, on random estimate tables with
numbers, texts, categories on one side only and categories whose records were all suppressed. The global
recoding map (``compare.recode_map``) against the pandas group-by it was first written with."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import _sort_key
from kanon_core.utility.compare import (
    STATUS_COMPARED,
    STATUS_NEW,
    STATUS_RECODED,
    STATUS_SUPPRESSED,
    comparison_frame,
    intervals_overlap,
    value_key,
)


def reference(v, variable_label, est_o, est_t, recoded, kept_keys) -> pd.DataFrame:
    merged = pd.merge(
        est_o.assign(key=est_o["value"].map(value_key)), est_t.assign(key=est_t["value"].map(value_key)),
        on="key", how="outer", suffixes=("_original", "_treated"),
    )
    merged["value"] = merged["value_original"].where(merged["value_original"].notna(), merged["value_treated"])
    merged["label"] = merged["label_treated"].where(merged["label_treated"].notna(), merged["label_original"])
    in_o = merged["n_original"].fillna(0) > 0
    in_t = merged["n_treated"].fillna(0) > 0
    suppressed = ~merged["key"].isin(kept_keys)
    merged["status"] = np.select([in_o & in_t, in_o & ~in_t & suppressed, in_o & ~in_t],
                                 [STATUS_COMPARED, STATUS_SUPPRESSED, STATUS_RECODED], STATUS_NEW)
    for col in ("n_original", "n_treated"):
        merged[col] = merged[col].fillna(0).astype(np.int64)
    out = pd.DataFrame({"variable": v, "variable_label": variable_label, "value": merged["value"],
                        "label": merged["label"], "status": merged["status"], "recoded": recoded,
                        "n_original": merged["n_original"], "n_treated": merged["n_treated"]})
    for side in ("original", "treated"):
        present = merged[f"n_{side}"] > 0
        for stat, col in (("estimate", "pct"), ("se", "se"), ("ci_low", "ci_low"), ("ci_high", "ci_high")):
            out[f"{col}_{side}"] = 100 * merged[f"{stat}_{side}"].where(present, 0.0)
    out["difference"] = out["pct_original"] - out["pct_treated"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["relative_difference"] = np.where(out["pct_original"] > 0, out["difference"] / out["pct_original"], np.nan)
    out["overlap"] = intervals_overlap(out["ci_low_original"], out["ci_high_original"],
                                       out["ci_low_treated"], out["ci_high_treated"])
    out.loc[out["status"] != STATUS_COMPARED, "overlap"] = pd.NA  # judged only where both sides have it
    order = sorted(range(len(out)), key=lambda i: _sort_key(out["value"].iloc[i]))
    return out.iloc[order].reset_index(drop=True)


VALUES = st.one_of(st.integers(0, 9), st.sampled_from([0.5, 2.0, 7.25]), st.sampled_from(["a", "b", "z", "10"]))


@st.composite
def estimate_tables(draw):
    def table(values):
        m = len(values)
        p = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=m, max_size=m)))
        se = np.array(draw(st.lists(st.floats(0.0, 0.2), min_size=m, max_size=m)))
        return pd.DataFrame({"value": values, "label": [f"L{x}" for x in values],
                             "n": draw(st.lists(st.integers(1, 50), min_size=m, max_size=m)),
                             "estimate": p, "se": se, "ci_low": p - 1.96 * se, "ci_high": p + 1.96 * se})

    def distinct(values):  # one category per value key, as encode_column's categories are
        seen, out = set(), []
        for x in values:
            if value_key(x) not in seen:
                seen.add(value_key(x))
                out.append(x)
        return out

    orig = distinct(draw(st.lists(VALUES, min_size=1, max_size=8)))
    treated = distinct(draw(st.lists(VALUES, min_size=1, max_size=8)))
    kept = {value_key(x) for x in orig if draw(st.booleans())}
    return table(orig), table(treated), kept, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(estimate_tables())
def test_join_matches_the_pandas_merge(case):
    est_o, est_t, kept, recoded = case
    got = comparison_frame("x", "X", est_o, est_t, recoded, kept)
    ref = reference("x", "X", est_o, est_t, recoded, kept)
    assert list(got.columns) == list(ref.columns)
    # the value: the same category in the same place (the merge turned whole numbers into floats whenever a
    # category was on one side only; the join keeps each value as its table shows it)
    assert [value_key(x) for x in got["value"]] == [value_key(x) for x in ref["value"]]
    pd.testing.assert_frame_equal(got.drop(columns="value"), ref.drop(columns="value"), check_dtype=True)


def reference_recode_map(original: pd.Series, treated: pd.Series, miss_o, miss_t):
    both = ~miss_o & ~miss_t
    pairs = pd.DataFrame({"o": original.to_numpy(dtype=object)[both], "t": treated.to_numpy(dtype=object)[both]})
    if pairs.empty:
        return {}
    if (pairs.groupby("o", sort=False)["t"].nunique() > 1).any():
        return None
    first = pairs.drop_duplicates("o")
    return dict(zip(first["o"], first["t"], strict=True))


CELL = st.one_of(st.integers(0, 4), st.sampled_from([1.0, 2.5, "a", "b", "1"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(CELL, CELL, st.booleans(), st.booleans()), max_size=30))
def test_recode_map_matches_the_pandas_groupby(rows):
    from kanon_core.utility.compare import recode_map

    o = pd.Series([r[0] for r in rows], dtype=object)
    t = pd.Series([r[1] for r in rows], dtype=object)
    miss_o = np.array([r[2] for r in rows], dtype=bool)
    miss_t = np.array([r[3] for r in rows], dtype=bool)
    got, ref = recode_map(o, t, miss_o, miss_t), reference_recode_map(o, t, miss_o, miss_t)
    assert (got is None) == (ref is None)
    if got is not None:  # the same keys and targets, each written as the first record shows it
        assert [(type(a), a, type(b), b) for a, b in got.items()] == [(type(a), a, type(b), b) for a, b in ref.items()]
