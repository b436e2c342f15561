"""Estimates and regressions on variables with many categories, and weights whose total overflows.

Percentages with their Taylor-linearized standard errors need memory linear in records and categories: the
grouped computation must give the numbers of the dense one (records x categories scores through
:meth:`SurveyDesign.vcov`), which the R comparisons of the other survey tests pin down. A regression whose
dummies cannot be fitted, and weights whose total is not a number, are input errors naming the variable.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.utility import regression
from kanon_core.utility.design import LONELY_PSU_CHOICES, SurveyDesign
from kanon_core.utility.survey import proportions
from tests.stderr_lines import without_progress

CATEGORIES = ("a", "b", "c", "d")


def dense_proportions(values: pd.Series, design: SurveyDesign, order: list) -> tuple[np.ndarray, np.ndarray]:
    """The previous computation: indicator and score matrices of records x categories, then the diagonal of
    their full design covariance."""
    dom = values.notna().to_numpy()
    indicator = np.column_stack([(values == v).to_numpy(dtype=np.float64) for v in order])
    w = np.where(dom, design.weights, 0.0)
    total = w.sum()
    p = w @ indicator / total
    scores = w[:, None] * (indicator - p[None, :]) / total
    return p, np.diag(design.vcov(scores, dom))


@st.composite
def designs(draw):
    n = draw(st.integers(1, 30))
    values = draw(st.lists(st.sampled_from([*CATEGORIES, None]), min_size=n, max_size=n))
    assume(any(v is not None for v in values))
    weights = draw(st.one_of(
        st.lists(st.floats(0.01, 1000.0), min_size=n, max_size=n),
        st.lists(st.integers(1, 4).map(float), min_size=n, max_size=n),
    ))
    strata = draw(st.none() | st.lists(st.sampled_from(["s1", "s2", "s3"]), min_size=n, max_size=n))
    psu = draw(st.none() | st.lists(st.integers(1, 4), min_size=n, max_size=n))
    fractions = draw(st.none() | st.lists(st.sampled_from([0.0, 0.2, 0.5, 1.0]), min_size=3, max_size=3))
    fpc = None
    if fractions is not None:  # a sampling fraction per stratum (constant within it, as the fpc must be)
        index = {"s1": 0, "s2": 1, "s3": 2}
        fpc = [fractions[index[s]] if strata else fractions[0] for s in (strata or ["s1"] * n)]
        assume(any(f != 1.0 for f in fpc))
    lonely = draw(st.sampled_from([c for c in LONELY_PSU_CHOICES if c != "fail"]))
    design = SurveyDesign.from_arrays(weights, strata, psu, lonely_psu=lonely, fpc=fpc)
    return pd.Series(values, dtype=object), design


@settings(max_examples=300, deadline=None)
@given(designs())
def test_grouped_variances_equal_the_dense_computation(case):
    values, design = case
    est = proportions(values, design, levels=["z"])  # "z" is absent: estimate 0, variance 0
    order = est.table["value"].tolist()
    p, var = dense_proportions(values, design, order)
    np.testing.assert_allclose(est.table["estimate"], p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.table["se"] ** 2, np.clip(var, 0.0, None), rtol=1e-10, atol=1e-14)
    assert est.table["n"].tolist() == [int((values == v).sum()) for v in order]
    assert est.weighted_domain == pytest.approx(design.weights[values.notna().to_numpy()].sum(), rel=1e-12)


def test_many_categories_use_memory_linear_in_records_and_categories():
    """4,000 records in 2,000 categories: the dense scores alone would take 64 MB (records x categories x 8
    bytes), its covariance 32 MB; the grouped computation stays within a small multiple of the records."""
    rng = np.random.default_rng(7)
    n, k = 4000, 2000
    values = pd.Series(rng.integers(0, k, n))
    design = SurveyDesign.from_arrays(rng.uniform(1, 5, n), rng.integers(0, 5, n), rng.integers(0, 20, n))
    tracemalloc.start()
    try:
        est = proportions(values, design)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * k * 8 / 8
    assert est.table["estimate"].sum() == pytest.approx(1.0)
    assert (est.table["se"] > 0).all()


def test_estimate_cli_with_many_categories(tmp_path):
    rng = np.random.default_rng(3)
    n = 3000
    frame = pd.DataFrame({"v": rng.integers(0, 2500, n), "w": rng.uniform(1, 9, n).round(2),
                          "s": rng.integers(0, 4, n), "p": rng.integers(0, 6, n)})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "e.json"
    assert main(["estimate", str(path), "--var", "v", "--weight", "w", "--strata", "s", "--psu", "p",
                 "--json", str(out)]) == 0
    rows = pd.read_json(out)
    design = SurveyDesign.from_arrays(frame["w"], frame["s"], frame["p"])
    p, var = dense_proportions(frame["v"], design, rows["level"].tolist())
    np.testing.assert_allclose(rows["estimate"], p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rows["se"] ** 2, var, rtol=1e-10, atol=1e-14)


def test_regress_refuses_a_covariate_with_as_many_categories_as_records(tmp_path, capsys):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"y": rng.normal(size=300).round(3), "v": [f"id{i:04d}" for i in range(300)],
                          "w": 1.0})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    assert main(["regress", str(path), "--formula", "y ~ C(v)", "--weight", "w"]) == 2
    err = without_progress(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("kanon regress: error:")
    assert "'v' has 300 categories" in err[0] and "300 complete record(s)" in err[0]
    assert "id0" not in err[0]


def test_regress_refuses_a_design_matrix_above_the_memory_bound(monkeypatch):
    """With the bound at 20 columns' worth of records, 30 categories are refused up front (naming the covariate
    and its categories) and 10 are fitted."""
    rng = np.random.default_rng(9)
    n = 600
    frame = pd.DataFrame({"y": rng.normal(size=n), "many": rng.integers(0, 30, n).astype(str),
                          "few": rng.integers(0, 10, n).astype(str), "w": rng.uniform(1, 3, n)})
    ds = Dataset(frame, roles=Roles(weight="w"))
    monkeypatch.setattr(regression, "MAX_MATRIX_BYTES", 8 * n * 20)
    with pytest.raises(InputError, match=r"Covariate 'many' has 30 categories: the model would need 30 columns"):
        regression.regress(ds, "y ~ C(many)")
    fit = regression.regress(ds, "y ~ C(few)")
    assert len(fit.coefficients) == 10 and not fit.coefficients["aliased"].any()


@pytest.mark.parametrize("command", [
    ["estimate", "{f}", "--var", "v", "--weight", "w"],
    ["estimate", "{f}", "--var", "v", "--weight", "w", "--engine", "duckdb"],
    ["estimate", "{f}", "--var", "v", "--weight", "w", "--engine", "polars"],
    ["regress", "{f}", "--formula", "y ~ C(v)", "--weight", "w"],
])
def test_weights_whose_total_overflows_are_refused(tmp_path, capsys, command):
    frame = pd.DataFrame({"v": ["a", "b", "a"], "w": [1e308, 1e308, 1.0], "y": [1.0, 2.0, 3.0]})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([c.replace("{f}", str(path)) for c in command]) == 2
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    err = without_progress(capsys.readouterr().err)
    assert len(err) == 1
    assert "Weight 'w': the weights' total is too large to compute (overflow)" in err[0]


def test_design_refuses_weights_whose_total_overflows():
    with pytest.raises(InputError, match="'wt': the weights' total is too large"):
        SurveyDesign.from_arrays([1.5e308, 1.5e308], names=("wt", None, None))
    design = SurveyDesign.from_arrays([1.0, 2.0], names=("wt", None, None))
    with pytest.raises(InputError, match="'wt': the weights' total is too large"):
        design.with_weights(np.array([1e308, 1e308]))
