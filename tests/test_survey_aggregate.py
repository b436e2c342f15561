"""Weighted percentages from a file's aggregate (one row per stratum, PSU, fpc value and value, with counts,
weight sums and sums of squared weights) equal those of the records, for every design kanon supports."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kanon_core.errors import InputError
from kanon_core.utility.design import LONELY_PSU_CHOICES, SurveyDesign
from kanon_core.utility.survey import proportions
from kanon_core.utility.survey_aggregate import aggregate_records, proportions_of_aggregate


@st.composite
def designs(draw):
    """Random records: a categorical variable with missing cells and a missing code, weights, and any of
    strata, PSUs (nested, some strata with a single PSU) and a first-stage fpc constant within strata."""
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(3, 120))
    values = pd.Series(rng.choice(["a", "b", "c", "-9", None], n, p=[.35, .3, .2, .05, .1]), dtype=object)
    weights = np.round(rng.uniform(0.5, 40, n), 3) if draw(st.booleans()) else None
    strata = pd.Series(rng.choice(["s1", "s2", "s3"], n), dtype=object) if draw(st.booleans()) else None
    psu = None
    if draw(st.booleans()):
        psu = pd.Series(rng.integers(1, draw(st.integers(2, 6)), n), dtype=object)
    fpc = None
    if draw(st.booleans()):
        if strata is None:
            fpc = pd.Series(np.full(n, float(n * 10)), dtype=object)
        else:
            sizes = {"s1": 500.0, "s2": 800.0, "s3": 1200.0}
            fpc = strata.map(sizes).astype(object)
    lonely = draw(st.sampled_from([c for c in LONELY_PSU_CHOICES if c != "fail"]))
    ci = draw(st.sampled_from(["wald", "logit"]))
    return values, weights, strata, psu, fpc, lonely, ci


def record_estimates(values, weights, strata, psu, fpc, lonely, ci, levels=None):
    design = SurveyDesign.from_arrays(weights, strata, psu, lonely_psu=lonely, n=len(values), fpc=fpc)
    return proportions(values, design, ("-9",), {"a": "Alpha"}, ci=ci, levels=levels, name="x")


@settings(max_examples=150, deadline=None)
@given(designs())
@example((pd.Series([None, None, None], dtype=object), None, None, None, None, "adjust", "wald"))
def test_aggregate_estimates_equal_the_records(case):
    values, weights, strata, psu, fpc, lonely, ci = case
    agg = aggregate_records(values, weights, strata, psu, fpc, ("-9",))
    assert len(agg.frame) <= len(values)
    try:
        ref = record_estimates(*case)
    except InputError as refusal:  # e.g. every value missing: the aggregate is refused alike
        with pytest.raises(InputError) as same:
            proportions_of_aggregate(agg, "x", {"a": "Alpha"}, ci=ci, lonely_psu=lonely)
        assert str(same.value) == str(refusal)
        return
    got = proportions_of_aggregate(agg, "x", {"a": "Alpha"}, ci=ci, lonely_psu=lonely)
    assert list(got.table["value"]) == list(ref.table["value"])
    assert list(got.table["label"]) == list(ref.table["label"])
    assert list(got.table["n"]) == list(ref.table["n"])
    for col in ("estimate", "se", "ci_low", "ci_high"):
        np.testing.assert_allclose(got.table[col], ref.table[col], rtol=1e-9, atol=1e-12, err_msg=col)
    assert (got.n_domain, got.n_missing, got.df, got.n_lonely_strata) == \
        (ref.n_domain, ref.n_missing, ref.df, ref.n_lonely_strata)
    assert got.weighted_domain == pytest.approx(ref.weighted_domain, rel=1e-12)


def test_hand_computed_case_without_psus():
    """Four records, two values, weights 1, 1, 2, 4, no strata: p_a = 2 / 8 = 0.25; with each record its own
    PSU, var = n / (n - 1) * sum z_i^2 with z_i = w_i (1[x_i = a] - 0.25) / 8."""
    values = pd.Series(["a", "a", "b", "b"], dtype=object)
    w = np.array([1.0, 1.0, 2.0, 4.0])
    got = proportions_of_aggregate(aggregate_records(values, w), "x")
    z = w * (np.array([1, 1, 0, 0]) - 0.25) / 8
    se = np.sqrt(4 / 3 * (z**2).sum())
    row = got.table.set_index("value").loc["a"]
    assert row["estimate"] == pytest.approx(0.25)
    assert row["se"] == pytest.approx(se)
    assert row["ci_low"] == pytest.approx(0.25 - 1.959963984540054 * se)


def test_levels_absent_from_the_file_are_reported_at_zero():
    values = pd.Series(["a", "b", "b"], dtype=object)
    ref = proportions(values, SurveyDesign.from_arrays(None, n=3), levels=["c"], name="x")
    got = proportions_of_aggregate(aggregate_records(values), "x", levels=["c"])
    assert list(got.table["value"]) == list(ref.table["value"]) == ["a", "b", "c"]
    np.testing.assert_allclose(got.table["se"], ref.table["se"])


def test_an_fpc_varying_within_a_stratum_is_refused_as_for_the_records():
    values = pd.Series(["a", "b", "a", "b"], dtype=object)
    strata = pd.Series(["s", "s", "t", "t"], dtype=object)
    fpc = pd.Series([100.0, 200.0, 300.0, 300.0], dtype=object)
    with pytest.raises(InputError, match="varies within 1 stratum"):
        SurveyDesign.from_arrays(None, strata, fpc=fpc, n=4)
    with pytest.raises(InputError, match="varies within 1 stratum"):
        proportions_of_aggregate(aggregate_records(values, None, strata, fpc=fpc), "x")


def test_single_psu_strata_fail_when_asked_as_for_the_records():
    values = pd.Series(["a", "b", "a", "b"], dtype=object)
    strata = pd.Series(["s", "s", "t", "t"], dtype=object)
    psu = pd.Series([1, 1, 1, 2], dtype=object)
    with pytest.raises(InputError, match="single PSU"):
        proportions(values, SurveyDesign.from_arrays(None, strata, psu, lonely_psu="fail", n=4), name="x")
    with pytest.raises(InputError, match="single PSU"):
        proportions_of_aggregate(aggregate_records(values, None, strata, psu), "x", lonely_psu="fail")


def test_a_stratum_whose_scores_are_all_equal_has_no_variance_exactly():
    """Stratum s1 holds two records, both c, weights 1: their scores are equal, so the stratum adds no
    variance, and s2's lone record is removed. The uncentred sums leave ~1e-18 (an se of ~1e-9) by cancellation;
    the centred ones give 0, as the records' path does."""
    values = pd.Series(["b", "c", "c"], dtype=object)
    strata = pd.Series(["s2", "s1", "s1"], dtype=object)
    agg = aggregate_records(values, None, strata, None, None, ())
    got = proportions_of_aggregate(agg, "x", ci="wald", lonely_psu="remove")
    ref = record_estimates(values, None, strata, None, None, "remove", "wald")
    assert list(got.table["se"]) == list(ref.table["se"]) == [0.0, 0.0]
