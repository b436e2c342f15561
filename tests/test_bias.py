"""Bias of means and correlations (Angiuli & Waldo), suppressed cells and entropy, computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.utility.bias import (
    bias_of_correlations,
    bias_of_means,
    entropy_table,
    suppressed_cells,
    treated_numeric,
    weighted_correlation,
)

AGE = [21, 25, 29, 31, 35, 52]
W = [1.0, 1.0, 2.0, 1.0, 1.0, 1.0]
BINS = ["20-29", "20-29", "20-29", "30-39", "30-39", None]  # 52 suppressed
INCOME = [10.0, 14.0, 20.0, 19.0, 30.0, 41.0]


def pair(orig: dict, treat: dict, weighted: bool = True) -> tuple[Dataset, Dataset]:
    o, t = pd.DataFrame(orig), pd.DataFrame(treat)
    roles = Roles(qis=tuple(c for c in o.columns if c != "w"), weight="w" if weighted else None)
    return Dataset(frame=o, roles=roles), Dataset(frame=t, roles=roles)


def test_bias_of_mean_with_bin_means_by_hand():
    original, treated = pair({"age": AGE, "w": W}, {"age": pd.Series(BINS, dtype=object), "w": W})
    # bin means of the original values: 20-29 -> (21 + 25 + 2 * 29) / 4 = 26, 30-39 -> 33; 52 suppressed
    t = treated_numeric(original, treated, "age")
    assert t.method == "bin mean"
    assert np.array_equal(t.values, [26, 26, 26, 33, 33, np.nan], equal_nan=True)
    row = bias_of_means(original, treated, ["age"]).iloc[0]
    m_o = (21 + 25 + 58 + 31 + 35 + 52) / 7
    m_t = (26 * 4 + 33 * 2) / 6
    assert row["mean_original"] == pytest.approx(m_o) and row["mean_treated"] == pytest.approx(m_t)
    assert row["bias"] == pytest.approx(m_t - m_o) and row["relative_bias"] == pytest.approx((m_t - m_o) / m_o)
    assert (row["n_original"], row["n_treated"]) == (6, 5)


def test_bin_means_alone_do_not_bias_the_mean_without_suppression():
    bins = BINS[:5] + ["50-59"]
    original, treated = pair({"age": AGE, "w": W}, {"age": bins, "w": W})
    assert bias_of_means(original, treated, ["age"])["bias"].iloc[0] == pytest.approx(0.0, abs=1e-12)


def test_unweighted_and_explicit_mapping():
    original, treated = pair({"age": AGE, "w": W}, {"age": pd.Series(BINS, dtype=object), "w": W})
    row = bias_of_means(original, treated, ["age"], mappings={"age": {"20-29": 25, "30-39": 35}}, weighted=False).iloc[0]
    assert row["placeholder"] == "mapping"
    assert row["mean_original"] == pytest.approx(np.mean(AGE))
    assert row["mean_treated"] == pytest.approx((25 * 3 + 35 * 2) / 5)
    with pytest.raises(InputError, match="neither numbers nor in the given mapping"):
        bias_of_means(original, treated, ["age"], mappings={"age": {"20-29": 25}})
    with pytest.raises(InputError, match="not numbers"):
        bias_of_means(original, treated, ["age"], placeholder="value")


def test_numeric_treatment_is_used_as_is():
    topcoded = [min(a, 40) for a in AGE]
    original, treated = pair({"age": AGE, "w": W}, {"age": topcoded, "w": W})
    row = bias_of_means(original, treated, ["age"]).iloc[0]
    assert row["placeholder"] == "value"
    assert row["bias"] == pytest.approx((40 - 52) / 7)


def hand_corr(x, y, w) -> float:
    x, y, w = map(np.asarray, (x, y, w))
    ok = ~np.isnan(x) & ~np.isnan(y)
    c = np.cov(x[ok], y[ok], aweights=w[ok])
    return float(c[0, 1] / np.sqrt(c[0, 0] * c[1, 1]))


def test_bias_of_correlation_by_hand():
    original, treated = pair({"age": AGE, "inc": INCOME, "w": W},
                             {"age": pd.Series(BINS, dtype=object), "inc": INCOME, "w": W})
    row = bias_of_correlations(original, treated, ["age", "inc"]).iloc[0]
    r_o = hand_corr(AGE, INCOME, W)
    r_t = hand_corr([26, 26, 26, 33, 33, np.nan], INCOME, W)  # pairwise: the suppressed record drops out
    assert row["corr_original"] == pytest.approx(r_o) and row["corr_treated"] == pytest.approx(r_t)
    assert row["bias"] == pytest.approx(r_t - r_o)
    with pytest.raises(InputError, match="two"):
        bias_of_correlations(original, treated, ["age"])


@given(st.lists(st.tuples(st.floats(-50, 50), st.floats(-50, 50), st.floats(0.1, 10)), min_size=3, max_size=30))
def test_weighted_correlation_matches_numpy(rows):
    x, y, w = (np.array(c) for c in zip(*rows, strict=True))
    assume(np.ptp(x) > 1e-3 and np.ptp(y) > 1e-3)
    assert weighted_correlation(x, y, w) == pytest.approx(hand_corr(x, y, w), abs=1e-9)


def test_correlation_with_a_constant_is_undefined():
    assert np.isnan(weighted_correlation(np.array([1.0, 1, 1]), np.array([1.0, 2, 3]), np.ones(3)))


def test_refuses_text_original_and_different_records():
    original, treated = pair({"g": ["a", "b"], "w": [1.0, 1.0]}, {"g": ["a", "b"], "w": [1.0, 1.0]})
    with pytest.raises(InputError, match="non-numeric"):
        bias_of_means(original, treated, ["g"], placeholder="bin_mean")
    short = Dataset(frame=pd.DataFrame({"g": ["a"]}))
    with pytest.raises(InputError, match="same records"):
        bias_of_means(original, short, ["g"])


def test_suppressed_cells_by_hand():
    original, treated = pair({"a": [1, 1, 2, 2, 3, None], "b": ["x", "y", "x", "y", "x", "y"]},
                             {"a": [None, None, 2, None, 3, None], "b": ["x", "y", "x", "y", "x", "y"]}, weighted=False)
    t = suppressed_cells(original, treated).set_index("variable")
    assert t.loc["a", "n_suppressed"] == 3 and t.loc["a", "n_missing_original"] == 1 and t.loc["a", "n_missing_treated"] == 4
    assert t.loc["a", "most_suppressed"] == "1" and t.loc["a", "most_suppressed_n"] == 2
    assert t.loc["a", "most_suppressed_percent"] == pytest.approx(100 * 2 / 3)
    assert t.loc["a", "pct_records"] == pytest.approx(50.0)
    assert t.loc["b", "n_suppressed"] == 0 and pd.isna(t.loc["b", "most_suppressed"])


def test_entropy_and_non_uniform_entropy_by_hand():
    original, treated = pair({"v": ["a", "a", "b", "c"]}, {"v": ["a", "a", "bc", None]}, weighted=False)
    row = entropy_table(original, treated).iloc[0]
    assert row["entropy_original"] == pytest.approx(1.5)  # p = 1/2, 1/4, 1/4
    assert row["entropy_treated"] == pytest.approx(-(2 / 3) * np.log2(2 / 3) - (1 / 3) * np.log2(1 / 3))
    # a: -log2(2/2) = 0 twice; b in bin {b}: 0 (c's record is suppressed, so B(bc) holds b only);
    # c suppressed: -log2(1/4) = 2
    assert row["non_uniform_entropy"] == pytest.approx(2.0)
    assert row["non_uniform_entropy_per_record"] == pytest.approx(0.5)
    same = entropy_table(original, original).iloc[0]
    assert same["non_uniform_entropy"] == 0.0
