"""Weighted percentages from a file's aggregate at scale: memory linear in the aggregate's rows and the
categories (a variable with 100,000 categories), and weights near the largest or smallest double, whose
squares overflow or vanish, giving the numbers of the records' path through every engine."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.errors import InputError
from kanon_core.utility.design import LONELY_PSU_CHOICES, SurveyDesign
from kanon_core.utility.survey import proportions
from kanon_core.utility.survey_aggregate import aggregate_records, proportions_of_aggregate

SCALES = (1.0, 1e-300, 1e200, 1e300)
"""Factors for the weights: 1e200 and up squares to infinity, 1e-300 squares to 0."""


@st.composite
def designs(draw):
    """Random records: up to 30 categories with missing cells and a missing code, weights of any scale (or
    none), and any of strata, nested PSUs (some strata with one) and a first-stage fpc constant within strata."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    n = draw(st.integers(2, 150))
    k = draw(st.integers(1, 30))
    values = pd.Series(rng.integers(0, k, n).astype(str), dtype=object)
    values[rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.4]))] = None
    values[rng.random(n) < 0.05] = "-9"
    weights = None
    if draw(st.booleans()):
        weights = np.round(rng.uniform(0.5, 40, n), 3) * draw(st.sampled_from(SCALES))
    strata = pd.Series(rng.integers(0, draw(st.integers(1, 6)), n).astype(str), dtype=object) \
        if draw(st.booleans()) else None
    psu = pd.Series(rng.integers(1, draw(st.integers(2, 12)), n), dtype=object) if draw(st.booleans()) else None
    fpc = None
    if draw(st.booleans()):
        fpc = pd.Series(np.full(n, 10.0 * n), dtype=object) if strata is None else \
            strata.map(lambda s: 400.0 + 100 * int(s)).astype(object)
    lonely = draw(st.sampled_from([c for c in LONELY_PSU_CHOICES if c != "fail"]))
    levels = draw(st.sampled_from([None, ["zz", "0"]]))
    return values, weights, strata, psu, fpc, lonely, levels


@settings(max_examples=200, deadline=None)
@given(designs())
def test_the_aggregate_gives_the_numbers_of_the_records_at_any_weight_scale(case):
    values, weights, strata, psu, fpc, lonely, levels = case
    agg = aggregate_records(values, weights, strata, psu, fpc, ("-9",))
    try:
        design = SurveyDesign.from_arrays(weights, strata, psu, lonely_psu=lonely, n=len(values), fpc=fpc)
        ref = proportions(values, design, ("-9",), ci="logit", levels=levels, name="x")
    except InputError as refusal:  # e.g. every value missing: the aggregate is refused alike
        with pytest.raises(InputError) as same:
            proportions_of_aggregate(agg, "x", ci="logit", lonely_psu=lonely, levels=levels)
        assert str(same.value) == str(refusal)
        return
    got = proportions_of_aggregate(agg, "x", ci="logit", lonely_psu=lonely, levels=levels)
    assert list(got.table["value"]) == list(ref.table["value"])
    assert list(got.table["n"]) == list(ref.table["n"])
    for col in ("estimate", "se", "ci_low", "ci_high"):
        assert np.isfinite(got.table[col]).all() or not np.isfinite(ref.table[col]).all(), col
        np.testing.assert_allclose(got.table[col], ref.table[col], rtol=1e-9, atol=1e-12, err_msg=col)
    assert (got.n_domain, got.n_missing, got.df, got.n_lonely_strata) == \
        (ref.n_domain, ref.n_missing, ref.df, ref.n_lonely_strata)
    assert got.weighted_domain == pytest.approx(ref.weighted_domain, rel=1e-12)


def test_one_category_has_no_variance_exactly_whatever_is_missing():
    """Every record of the domain is "a", so every score is 0: each stratum's centred sums are exactly 0, also
    with the records outside the domain (missing) counted in the stratum's PSUs and very unequal weights."""
    rng = np.random.default_rng(0)
    n = 125
    values = pd.Series(np.where(rng.random(n) < 0.15, None, "a"), dtype=object)
    weights = np.exp(rng.normal(0, 2, n))
    strata, psu = pd.Series(rng.integers(0, 3, n)), pd.Series(rng.integers(0, 4, n))
    got = proportions_of_aggregate(aggregate_records(values, weights, strata, psu), "x")
    ref = proportions(values, SurveyDesign.from_arrays(weights, strata, psu), name="x")
    assert got.table["estimate"].tolist() == ref.table["estimate"].tolist() == [1.0]
    assert got.table["se"].tolist() == ref.table["se"].tolist() == [0.0]


@pytest.mark.parametrize("design", ["none", "strata", "strata and psu"])
def test_a_hundred_thousand_categories_take_memory_linear_in_rows_and_categories(design):
    """150,000 records in 100,000 categories: a rows x categories array of doubles would take over 80 GB;
    the estimates need a small multiple of the rows and categories, and equal the records'."""
    rng = np.random.default_rng(11)
    n, k = 150_000, 100_000
    values = pd.Series(rng.permutation(np.concatenate([np.arange(k), rng.integers(0, k, n - k)])))
    weights = rng.uniform(1, 5, n)
    strata = pd.Series(rng.integers(0, 8, n)) if design != "none" else None
    psu = pd.Series(rng.integers(0, 40, n)) if design == "strata and psu" else None
    agg = aggregate_records(values, weights, strata, psu)
    rows = len(agg.frame)
    tracemalloc.start()
    try:
        got = proportions_of_aggregate(agg, "x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(got.table) == k
    assert peak < 1024 * (rows + k)  # the dense arrays: 8 * rows * categories bytes each
    ref = proportions(values, SurveyDesign.from_arrays(weights, strata, psu), name="x")
    assert got.table["n"].tolist() == ref.table["n"].tolist()
    for col in ("estimate", "se"):
        np.testing.assert_allclose(got.table[col], ref.table[col], rtol=1e-9, atol=1e-15, err_msg=col)
    assert (got.table["se"] > 0).all()


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("scale", [1e200, 1e300, 1e-300])
@pytest.mark.parametrize("design", [[], ["--strata", "s"], ["--strata", "s", "--psu", "p"]])
def test_engines_agree_with_the_records_on_weights_whose_squares_overflow(tmp_path, capsys, engine, scale, design):
    """Weights around ``scale`` (a square of 1e200 is beyond the largest double, one of 1e-300 below the
    smallest): the engines' aggregate gives the in-memory reader's percentages and intervals, not NaN."""
    rng = np.random.default_rng(8)
    n = 240
    frame = pd.DataFrame({"v": rng.choice(["a", "b", "c", ""], n, p=[0.4, 0.3, 0.2, 0.1]),
                          "w": rng.uniform(1, 9, n) * scale, "s": rng.integers(0, 3, n),
                          "p": rng.integers(0, 5, n)})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = {}
    for how in ("pandas", engine):
        js = tmp_path / f"{how}.json"
        assert main(["estimate", str(path), "--var", "v", "--weight", "w", *design, "--ci", "logit",
                     "--engine", how, "--json", str(js)]) == 0, capsys.readouterr().err
        out[how] = pd.DataFrame(json.loads(js.read_text()))
    ref, got = out["pandas"], out[engine]
    assert got["level"].tolist() == ref["level"].tolist() == ["a", "b", "c"]
    for col in ("estimate", "se", "ci_low", "ci_high"):
        assert np.isfinite(got[col]).all(), col
        np.testing.assert_allclose(got[col], ref[col], rtol=1e-9, err_msg=col)
    assert (got["se"] > 0).all()
