"""Survey regression against R's survey package, and the aliasing rule against brute force.

Coefficients, SEs and p-values are compared with ``summary(svyglm(...))`` and the joint tests with
``regTermTest(..., method = "Wald")`` (F and chi-square), stored by tests/r/make_reference.R in
fixtures/r_survey: linear and logistic models with dummy-coded factors and a numeric covariate, under
strata + PSUs, strata only, PSUs only, weights only and every lonely-PSU option. Aliased models (a
covariate that is a combination of earlier ones) are compared with the references written by
fixtures/r_regression/make_reference.R. The tests marked ``r`` re-run both scripts when R is installed and fail if a run fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, VariableMeta
from kanon_core.errors import InputError
from kanon_core.utility import regression
from kanon_core.utility.design import SurveyDesign
from kanon_core.utility.formula import NumericReading
from kanon_core.utility.regression import ALIAS_TOL, _clearly_full_rank, _non_aliased, regress

ROOT = Path(__file__).resolve().parent
SURVEY = ROOT / "fixtures" / "r_survey"
SURVEY_SCRIPT = ROOT / "r" / "make_reference.R"
ALIASED = ROOT / "fixtures" / "r_regression"
ALIASED_SCRIPT = ALIASED / "make_reference.R"
TOL = 1e-6
DESIGNS = {"full": ("stratum", "psu", None), "strata": ("stratum", None, None), "cluster": (None, "psu_global", None),
           "weights": (None, None, None),
           # finite population corrections (R's fpc = ~COL): population sizes (N_*) or sampling fractions (f_*)
           "full_fpc": ("stratum", "psu", "N_psu"), "full_frac": ("stratum", "psu", "f_psu"),
           "full_fpc1": ("stratum", "psu", "N_psu1"), "strata_fpc": ("stratum", None, "N_rec"),
           "cluster_fpc": (None, "psu_global", "N_clu"), "weights_frac": (None, None, "f_all")}
MODELS = {"linear": ("y ~ C(a) + b + C(c)", "gaussian"), "logistic": ("yb ~ C(a) + b + C(c)", "binomial")}


def r_term(term: str) -> str:
    """kanon's ``a[2]`` is R's ``factor(a)2``; numeric terms and the intercept are spelt alike."""
    m = re.fullmatch(r"(.+)\[(.+)\]", term)
    return f"factor({m.group(1)}){m.group(2)}" if m else term


def r_design(data: pd.DataFrame, kind: str, lonely: str) -> SurveyDesign:
    strata, psu, fpc = DESIGNS[kind]
    return SurveyDesign.from_arrays(data["w"], None if strata is None else data[strata],
                                    None if psu is None else data[psu], lonely_psu=lonely,
                                    fpc=None if fpc is None else data[fpc], fpc_name=fpc)


def fit(data: pd.DataFrame, kind: str, lonely: str, model: str, test: str = "F"):
    formula, family = MODELS[model]
    return regress(Dataset(frame=data), formula, r_design(data, kind, lonely), family=family, test=test)


def coefficient_differences(expected_dir: Path) -> dict[str, float]:
    """Largest absolute differences to R per quantity, over every case of the stored references."""
    exp = pd.read_csv(expected_dir / "expected_coefficients.csv")
    worst = {"estimate": 0.0, "se": 0.0, "t": 0.0, "p": 0.0}
    assert len(exp) > 0
    for (file, kind, lonely, model), ref in exp.groupby(["file", "design", "lonely", "model"]):
        res = fit(pd.read_csv(SURVEY / file), kind, lonely, model)
        assert res.n_used == int(ref["n_used"].iloc[0])
        assert res.df_resid == int(ref["df_resid"].iloc[0])
        got = res.coefficients.assign(r=res.coefficients["term"].map(r_term)).set_index("r")
        assert sorted(got.index) == sorted(ref["term"])
        ref = ref.set_index("term")
        for ours, theirs in (("estimate", "estimate"), ("se", "se"), ("statistic", "t"), ("p_value", "p")):
            d = np.abs(got.loc[ref.index, ours].to_numpy(float) - ref[theirs].to_numpy(float))
            worst[theirs] = max(worst[theirs], float(d.max()))
    return worst


def term_test_differences(expected_dir: Path) -> float:
    exp = pd.read_csv(expected_dir / "expected_termtests.csv")
    worst = 0.0
    assert len(exp) > 0
    for (file, kind, lonely, model), ref in exp.groupby(["file", "design", "lonely", "model"]):
        data = pd.read_csv(SURVEY / file)
        ref = ref.assign(variable=ref["term"].str.replace(r"^factor\((.+)\)$", r"\1", regex=True)).set_index("variable")
        f_res = fit(data, kind, lonely, model, "F").term_tests.set_index("variable").loc[ref.index]
        c_res = fit(data, kind, lonely, model, "chisq").term_tests.set_index("variable").loc[ref.index]
        assert (f_res["df_num"].to_numpy() == ref["df"].to_numpy()).all()
        assert (f_res["df_den"].to_numpy() == ref["ddf"].to_numpy()).all()
        assert np.isinf(c_res["df_den"]).all()
        for got, theirs in ((f_res["statistic"], "f"), (f_res["p_value"], "p_f"), (c_res["statistic"], "chisq"),
                            (c_res["p_value"], "p_chisq")):
            worst = max(worst, float(np.max(np.abs(got.to_numpy(float) - ref[theirs].to_numpy(float)))))
    return worst


def aliased_differences(expected_dir: Path) -> float:
    exp = pd.read_csv(expected_dir / "expected_aliased.csv", keep_default_na=False, na_values=["NA"])
    data = pd.read_csv(ALIASED / "aliased.csv")
    worst = 0.0
    assert len(exp) > 0
    for (model, formula, family), ref in exp.groupby(["model", "kanon_formula", "family"], sort=False):
        res = regress(Dataset(frame=data), formula, SurveyDesign.from_arrays(data["w"], data["stratum"], data["psu"]),
                      family=family)
        got = res.coefficients.assign(r=res.coefficients["term"].map(r_term)).set_index("r")
        ref = ref.set_index("term")
        assert list(got.index) == list(ref.index), model
        # the same coefficients are aliased (R: NA), in particular the later of two collinear columns
        assert got["aliased"].tolist() == ref["estimate"].isna().tolist(), model
        ok = ~got["aliased"].to_numpy()
        for ours, theirs in (("estimate", "estimate"), ("se", "se"), ("p_value", "p")):
            d = np.abs(got[ours].to_numpy(float)[ok] - ref[theirs].to_numpy(float)[ok])
            worst = max(worst, float(d.max()))
        tests = pd.read_csv(expected_dir / "expected_aliased_tests.csv").query("model == @model")
        tt = res.term_tests.set_index("variable")
        assert len(tests) > 0, model
        for row in tests.itertuples(index=False):
            worst = max(worst, abs(tt.loc[row.variable, "statistic"] - row.f), abs(tt.loc[row.variable, "p_value"] - row.p_f))
            assert tt.loc[row.variable, "df_num"] == row.df
    return worst


@pytest.fixture(params=["fast", "qr"])
def path(request, monkeypatch):
    """Run a test on both ways of fitting: the Gram-matrix fast path and the QR path it falls back to."""
    if request.param == "qr":
        monkeypatch.setattr(regression, "_clearly_full_rank", lambda gram: False)
    return request.param


def test_coefficients_ses_and_p_values_match_stored_svyglm(path):
    worst = coefficient_differences(SURVEY)
    assert max(worst.values()) < TOL, worst


def test_joint_wald_tests_match_stored_regtermtest(path):
    assert term_test_differences(SURVEY) < TOL


def test_aliased_models_match_stored_svyglm():
    assert aliased_differences(ALIASED) < TOL


def test_references_cover_both_families_designs_and_factor_and_numeric_terms():
    exp = pd.read_csv(SURVEY / "expected_coefficients.csv")
    assert set(exp["model"]) == {"linear", "logistic"}
    assert set(exp["design"]) == set(DESIGNS)
    assert {"b", "factor(a)2", "factor(c)south"} <= set(exp["term"])
    # the references must discriminate: the design changes the standard errors
    se = exp[(exp["term"] == "b") & (exp["model"] == "linear") & (exp["lonely"] == "fail")].set_index("design")["se"]
    base = ["full", "strata", "cluster", "weights"]
    assert se[base].nunique() == len(base)
    # and the finite population correction narrows them; as a population size or as a fraction alike
    assert se["full_fpc"] < se["full"] and se["strata_fpc"] < se["strata"] and se["cluster_fpc"] < se["cluster"]
    assert se["full_fpc"] == pytest.approx(se["full_frac"], rel=1e-12)


@pytest.fixture(scope="module")
def fresh_r(tmp_path_factory) -> tuple[Path, Path]:
    """Both reference scripts re-run into temporary directories.

    Skipped only when ``Rscript`` is absent; an installed R whose run fails (survey package missing, a
    script error) fails the test, so the cross-check cannot silently stop checking.
    """
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed (scripts/system_deps.sh installs R and its survey package)")
    survey_out = tmp_path_factory.mktemp("r_survey")
    aliased_out = tmp_path_factory.mktemp("r_regression")
    # the two scripts run side by side: R's start-up and the survey package load dominate their time
    runs = [subprocess.Popen(["Rscript", str(script), str(data), str(out)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
            for script, data, out in ((SURVEY_SCRIPT, SURVEY, survey_out), (ALIASED_SCRIPT, ALIASED, aliased_out))]
    for run in runs:
        _, err = run.communicate(timeout=600)
        if run.returncode != 0:
            pytest.fail(f"Rscript failed:\n{err.decode(errors='replace')}")
    return survey_out, aliased_out


@pytest.mark.r
def test_regression_matches_freshly_computed_r(fresh_r):
    survey_out, aliased_out = fresh_r
    assert max(coefficient_differences(survey_out).values()) < TOL
    assert term_test_differences(survey_out) < TOL
    assert aliased_differences(aliased_out) < TOL


# -- aliasing: R's left-to-right rule ---------------------------------------------------------------------------
def greedy_rank_keep(x: np.ndarray) -> np.ndarray:
    """Brute force: keep a column iff it raises the rank of the columns kept before it (exact arithmetic
    on small integer matrices, via SVD rank)."""
    keep = np.zeros(x.shape[1], dtype=bool)
    rank = 0
    for j in range(x.shape[1]):
        trial = np.append(np.flatnonzero(keep), j)
        r = np.linalg.matrix_rank(x[:, trial])
        if r > rank:
            keep[j], rank = True, r
    return keep


def test_later_of_two_collinear_columns_is_dropped():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=40), rng.normal(size=40)
    ones = np.ones(40)
    assert _non_aliased(np.column_stack([ones, a, b, a + b])).tolist() == [True, True, True, False]
    # the same columns in another order: again the later one goes, whichever it is
    assert _non_aliased(np.column_stack([ones, a + b, a, b])).tolist() == [True, True, True, False]
    assert _non_aliased(np.column_stack([ones, 2 * a, a, b])).tolist() == [True, True, False, True]
    assert _non_aliased(np.column_stack([ones, np.zeros(40), a])).tolist() == [True, False, True]


def test_dummies_of_a_category_summing_to_the_intercept_alias_the_last():
    codes = np.arange(30) % 3
    x = np.column_stack([np.ones(30), codes == 0, codes == 1, codes == 2]).astype(float)
    assert _non_aliased(x).tolist() == [True, True, True, False]


def test_near_collinearity_uses_the_relative_tolerance():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=50), rng.normal(size=50)
    e = rng.normal(size=50)
    e -= np.column_stack([a, b]) @ np.linalg.lstsq(np.column_stack([a, b]), e, rcond=None)[0]
    e /= np.linalg.norm(e)
    c = a + b
    norm = np.linalg.norm(c)
    assert not _non_aliased(np.column_stack([a, b, c + 0.1 * ALIAS_TOL * norm * e]))[2]
    assert _non_aliased(np.column_stack([a, b, c + 10 * ALIAS_TOL * norm * e]))[2]


@given(st.integers(1, 7), st.integers(0, 10**6), st.data())
def test_aliasing_matches_brute_force_rank_walk(n_base, seed, data):
    rng = np.random.default_rng(seed)
    n = data.draw(st.integers(n_base + 2, 30))
    base = rng.integers(-3, 4, size=(n, n_base)).astype(float)
    # columns: base columns interleaved with integer combinations of some earlier/later base columns
    cols = [base[:, j] for j in range(n_base)]
    for _ in range(data.draw(st.integers(0, 5))):
        coef = rng.integers(-2, 3, size=n_base).astype(float)
        pos = data.draw(st.integers(0, len(cols)))
        cols.insert(pos, base @ coef)
    x = np.column_stack(cols)
    w = rng.uniform(0.2, 5.0, size=n)
    xw = x * np.sqrt(w)[:, None]
    expected = greedy_rank_keep(xw)
    assert _non_aliased(xw).tolist() == expected.tolist()
    # the fast path may only skip the QR when nothing is aliased
    assert not _clearly_full_rank(xw.T @ xw) or expected.all()


def test_fast_path_is_taken_for_a_well_conditioned_design_and_refused_near_collinearity():
    rng = np.random.default_rng(4)
    x = np.column_stack([np.ones(200), rng.normal(size=(200, 3))])
    assert _clearly_full_rank(x.T @ x)
    near = np.column_stack([x, x[:, 1] + x[:, 2] + 1e-5 * rng.normal(size=200)])
    assert not _clearly_full_rank(near.T @ near)
    assert _non_aliased(near).all()  # kept by the exact walk: 1e-5 is well above the tolerance


def test_non_aliased_handles_more_columns_than_rows():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 7))
    assert _non_aliased(x).tolist() == [True] * 4 + [False] * 3


# -- behaviour ---------------------------------------------------------------------------------------------------
def small_frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    x = rng.normal(size=n)
    return pd.DataFrame({"y": 1 + 2 * x + (g == "b") + rng.normal(scale=0.5, size=n), "x": x, "g": g,
                         "w": rng.uniform(1, 3, n), "s": np.repeat([1, 2, 3], n // 3), "p": np.tile([1, 2, 3, 4], n // 4)})


def test_unweighted_linear_estimates_equal_ordinary_least_squares():
    frame = small_frame()
    res = regress(Dataset(frame=frame), "y ~ x + g", SurveyDesign.from_arrays(None, n=len(frame)))
    x = np.column_stack([np.ones(len(frame)), frame["x"], frame["g"] == "b", frame["g"] == "c"]).astype(float)
    beta = np.linalg.lstsq(x, frame["y"].to_numpy(), rcond=None)[0]
    assert np.allclose(res.coefficients["estimate"], beta, atol=1e-10)
    assert res.coefficients["term"].tolist() == ["(Intercept)", "x", "g[b]", "g[c]"]


def test_aliased_coefficient_is_nan_and_noted():
    frame = small_frame().assign(x2=lambda d: 3 * d["x"])
    res = regress(Dataset(frame=frame), "y ~ x + x2 + g", SurveyDesign.from_arrays(frame["w"], frame["s"], frame["p"]))
    c = res.coefficients.set_index("term")
    assert c.loc["x2", "aliased"] and np.isnan(c.loc["x2", "estimate"]) and not c.loc["x", "aliased"]
    assert any("aliased" in n for n in res.notes)
    assert res.term_tests.set_index("variable").loc["x2", "n_coef"] == 0


def test_refuses_non_binary_logistic_and_text_linear_outcomes():
    frame = small_frame()
    with pytest.raises(InputError, match="two values"):
        regress(Dataset(frame=frame), "y ~ x", family="binomial")
    frame["yes"] = np.where(frame["g"] == "a", "yes", "no")
    with pytest.raises(InputError, match="not numeric"):
        regress(Dataset(frame=frame), "yes ~ x", family="gaussian")
    assert regress(Dataset(frame=frame), "yes ~ x").family == "binomial"
    with pytest.raises(InputError, match="neither numeric nor binary"):
        regress(Dataset(frame=frame), "g ~ x")


def test_perfect_separation_is_noted():
    x = np.arange(20.0)
    frame = pd.DataFrame({"y": (x > 9.5).astype(int), "x": x})
    res = regress(Dataset(frame=frame), "y ~ x")
    assert res.family == "binomial"
    assert any("numerically 0 or 1" in n for n in res.notes)
    frame["y"] = (np.sin(x) > 0).astype(int)
    assert not regress(Dataset(frame=frame), "y ~ x").notes


# -- text cells in a variable used as a number -------------------------------------------------------------------
@pytest.mark.parametrize(("n_present", "n_not_numeric", "meant"), [
    (100, 5, True), (100, 6, False), (6, 1, True), (3, 2, False), (20, 0, True), (0, 0, False), (5, 5, False),
])
def test_meant_numeric_rule(n_present, n_not_numeric, meant):
    """At least 95 % of the non-missing cells are numbers, or all but one."""
    reading = NumericReading(np.zeros(n_present), n_present, n_not_numeric)
    assert reading.meant_numeric is meant


def stray_frame(n: int = 60, stray: int = 1) -> pd.DataFrame:
    frame = small_frame(n)
    x = frame["x"].round(3).astype(str).astype(object)
    x.iloc[:stray] = ["n/a", "?", "unknown"][:stray]
    return frame.assign(xt=x)


def test_stray_text_in_a_numeric_covariate_is_an_error_naming_the_count():
    with pytest.raises(InputError, match=r"Covariate 'xt' is used as a number, but 2 of its 60 non-missing") as exc:
        regress(Dataset(frame=stray_frame(stray=2)), "y ~ xt + g")
    assert "n/a" not in str(exc.value) and "C(xt)" in str(exc.value)


def test_text_column_of_numbers_with_a_declared_code_is_a_number():
    frame = stray_frame(stray=1)
    ds = Dataset(frame=frame, meta={"xt": VariableMeta(missing_codes=("n/a",))})
    res = regress(ds, "y ~ xt + g")
    assert res.coefficients["term"].tolist() == ["(Intercept)", "xt", "g[b]", "g[c]"]
    num = frame.assign(xn=frame["x"].round(3)).iloc[1:]
    ref = regress(Dataset(frame=num), "y ~ xn + g")
    np.testing.assert_allclose(res.coefficients["estimate"], ref.coefficients["estimate"], rtol=1e-12)
    assert res.n_used == 59


def test_categorical_text_stays_categorical_and_c_forces_it():
    frame = stray_frame(stray=1).assign(code=lambda d: np.where(np.arange(60) % 3 == 0, "7", d["g"]))
    # a third of the cells are numbers: categorical text, with or without C()
    plain = regress(Dataset(frame=frame), "y ~ x + code")
    forced = regress(Dataset(frame=frame), "y ~ x + C(code)")
    assert plain.coefficients["term"].tolist() == forced.coefficients["term"].tolist()
    assert plain.term_tests.set_index("variable").loc["code", "kind"] == "categorical"
    # C() on a variable that looks numeric: its cells are levels, stray text included
    few = frame.assign(k=np.where(np.arange(60) % 2 == 0, "1", "2").astype(object))
    few.loc[0, "k"] = "n/a"
    assert "k[n/a]" in regress(Dataset(frame=few), "y ~ x + C(k)").coefficients["term"].tolist()
    with pytest.raises(InputError, match="1 of its 60"):
        regress(Dataset(frame=few), "y ~ x + k")


def test_stray_text_in_the_outcome():
    frame = stray_frame(stray=0).assign(yt=lambda d: d["y"].round(4).astype(str).astype(object))
    ref = regress(Dataset(frame=frame.assign(yn=frame["y"].round(4))), "yn ~ x + g")
    got = regress(Dataset(frame=frame), "yt ~ x + g")
    assert got.family == "gaussian"
    np.testing.assert_allclose(got.coefficients["estimate"], ref.coefficients["estimate"], rtol=1e-12)
    frame.loc[3, "yt"] = "missing!"
    with pytest.raises(InputError, match=r"Outcome 'yt' is used as a number, but 1 of its 60") as exc:
        regress(Dataset(frame=frame), "yt ~ x + g")
    assert "missing!" not in str(exc.value)
    # a yes/no text outcome is still binary
    frame["yn"] = np.where(frame["g"] == "a", "yes", "no")
    assert regress(Dataset(frame=frame), "yn ~ x").family == "binomial"


def test_model_comparison_reads_a_text_column_with_declared_codes_as_a_number():
    """10 % of the cells are a declared missing code: without the code the column is all numbers, so all
    three models have one coefficient for it, not one per distinct value."""
    from kanon_core.utility.model_compare import compare_models

    frame = stray_frame(stray=0)
    frame.loc[frame.index[::10], "xt"] = "n/a"
    ds = Dataset(frame=frame, meta={"xt": VariableMeta(missing_codes=("n/a",))})
    mc = compare_models(ds, ds, "y ~ xt + g")
    for res in mc.results.values():
        assert res.coefficients["term"].tolist() == ["(Intercept)", "xt", "g[b]", "g[c]"]
