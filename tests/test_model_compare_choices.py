"""What the original model decides, the treated models keep (Wilson et al., RTI, table 4): the family, the
reference level of each categorical covariate and, for a number not recoded, its kind; a treated model that
cannot be fitted leaves the others standing, and a covariate without a p-value is "not tested", not "not
significant".

Point estimates are weighted least squares whatever the design, so each model is checked against
statsmodels' WLS on the records and coding the model states; the joint tests against a direct fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.utility.formula import MOVED_REFERENCE
from kanon_core.utility.model_compare import MODEL_CATEGORY, MODEL_EXCLUDING, MODEL_ORIGINAL, compare_models
from kanon_core.utility.regression import regress


def wls_params(y: np.ndarray, columns: list[np.ndarray], w: np.ndarray) -> np.ndarray:
    """statsmodels' weighted least squares with an intercept, columns in the order given."""
    x = np.column_stack([np.ones(len(y)), *columns])
    return sm.WLS(y, x, weights=w).fit().params


def dataset(frame: pd.DataFrame, qis: tuple[str, ...]) -> Dataset:
    return Dataset(frame=frame, roles=Roles(qis=qis, weight="w", outcomes=("y",)))


def test_auto_family_is_the_originals_even_when_model_2_leaves_two_outcome_values():
    """The three records with y = 2 all have a suppressed covariate: model 2 sees only y in {0, 1}, yet stays
    linear like models 1 and 3 (it would otherwise be a logistic model beside two linear ones)."""
    rng = np.random.default_rng(5)
    n = 300
    a = rng.choice(["p", "q", "r"], n)
    y = rng.integers(0, 2, n).astype(float)
    y[:3] = 2.0
    w = rng.uniform(1, 3, n)
    original = pd.DataFrame({"y": y, "a": a, "w": w})
    treated = original.copy()
    treated.loc[:2, "a"] = np.nan
    mc = compare_models(dataset(original, ("a",)), dataset(treated, ("a",)), "y ~ a")
    assert {r.family for r in mc.results.values()} == {"gaussian"}
    kept = treated["a"].notna().to_numpy()
    t = treated[kept]
    expected = wls_params(t["y"].to_numpy(), [(t["a"] == lev).to_numpy(float) for lev in ("q", "r")],
                          t["w"].to_numpy())
    assert np.allclose(mc.results[MODEL_EXCLUDING].coefficients["estimate"], expected)
    # the same file with the original's outcome two-valued: logistic in all three
    binary = original.assign(y=(original["y"] > 0).astype(float))
    mc = compare_models(dataset(binary, ("a",)), dataset(binary.assign(a=treated["a"]), ("a",)), "y ~ a")
    assert {r.family for r in mc.results.values()} == {"binomial"}


def test_reference_stays_the_originals_when_a_recode_adds_a_level_sorting_first():
    """"c" and "d" merged into "a+", which sorts before "b", model 1's reference: "b" stays the reference, so
    model 2's coefficient is the contrast of the merged category with "b", as statsmodels fits it."""
    rng = np.random.default_rng(9)
    n = 400
    a = rng.choice(["b", "c", "d"], n)
    y = 1.0 * (a == "c") + 2.0 * (a == "d") + rng.normal(size=n)
    w = rng.uniform(1, 3, n)
    original = pd.DataFrame({"y": y, "a": a, "w": w})
    treated = original.assign(a=original["a"].replace({"c": "a+", "d": "a+"}))
    mc = compare_models(dataset(original, ("a",)), dataset(treated, ("a",)), "y ~ a")
    res2 = mc.results[MODEL_EXCLUDING]
    assert res2.coefficients["term"].tolist() == ["(Intercept)", "a[a+]"]  # contrast with "b", not with "a+"
    expected = wls_params(y, [(treated["a"] == "a+").to_numpy(float)], w)
    assert np.allclose(res2.coefficients["estimate"], expected)
    assert not any(MOVED_REFERENCE in lab for lab in mc.coefficients_long()["label"])
    assert not any("reference" in n for n in mc.model_notes())


def test_a_completely_suppressed_reference_is_said_and_its_contrasts_are_labelled_apart():
    rng = np.random.default_rng(3)
    n = 400
    a = rng.choice([1, 2, 3], n, p=[0.05, 0.5, 0.45])
    y = 1.0 * (a == 2) + 2.0 * (a == 3) + rng.normal(size=n)
    w = rng.uniform(1, 3, n)
    original = pd.DataFrame({"y": y, "a": a, "w": w})
    treated = original.assign(a=original["a"].astype(float).where(original["a"] != 1))
    mc = compare_models(dataset(original, ("a",)), dataset(treated, ("a",)), "y ~ C(a)")
    long = mc.coefficients_long()
    m1 = long[long["model"] == MODEL_ORIGINAL]
    m2 = long[long["model"] == MODEL_EXCLUDING]
    assert not any(MOVED_REFERENCE in lab for lab in m1["label"])
    assert list(m2["label"]) == [f"a: 3 {MOVED_REFERENCE}"]
    # model 2's a[3] is 3 vs 2 (statsmodels), model 1's 3 vs 1: different rows of the plot, with a note
    t = treated[treated["a"].notna()]
    assert np.allclose(m2["estimate"], wls_params(t["y"].to_numpy(), [(t["a"] == 3).to_numpy(float)],
                                                  t["w"].to_numpy())[1:])
    assert set(m1["label"]).isdisjoint(m2["label"])
    notes = mc.model_notes()
    assert sum("reference category of a has no record" in n for n in notes) == 2  # models 2 and 3
    assert all("3" not in n for n in notes)  # no level named


def test_a_number_recoded_into_bands_enters_the_treated_models_as_categories():
    rng = np.random.default_rng(2)
    n = 200
    age = rng.integers(18, 80, n)
    y = 0.05 * age + rng.normal(size=n)
    w = rng.uniform(1, 2, n)
    original = pd.DataFrame({"y": y, "age": age, "w": w})
    bands = pd.cut(age, [0, 30, 50, 200], labels=["18-30", "31-50", "51+"]).astype(str)
    treated = original.assign(age=bands)
    original_ds, treated_ds = dataset(original, ("age",)), dataset(treated, ("age",))
    mc = compare_models(original_ds, treated_ds, "y ~ age")
    assert mc.failures == {}
    direct = regress(treated_ds, "y ~ C(age)", family="gaussian")
    p2 = mc.results[MODEL_EXCLUDING].term_tests.set_index("variable")["p_value"]["age"]
    assert p2 == pytest.approx(direct.term_tests.set_index("variable")["p_value"]["age"])
    assert any("recoded into categories by the treatment" in n for n in mc.model_notes())
    assert mc.results[MODEL_ORIGINAL].coefficients["term"].tolist() == ["(Intercept)", "age"]


def test_a_treated_model_that_cannot_be_fitted_leaves_the_others():
    rng = np.random.default_rng(4)
    n = 120
    original = pd.DataFrame({"y": rng.normal(size=n), "a": rng.choice(["p", "q"], n),
                             "b": rng.choice(["u", "v", "x"], n), "w": rng.uniform(1, 2, n)})
    treated = original.assign(b=np.nan)  # every value of b suppressed: model 2 keeps no record
    mc = compare_models(dataset(original, ("a", "b")), dataset(treated, ("a", "b")), "y ~ a + b")
    assert set(mc.results) == {MODEL_ORIGINAL, MODEL_CATEGORY}
    assert set(mc.failures) == {MODEL_EXCLUDING} and "No record" in mc.failures[MODEL_EXCLUDING]
    sig = mc.significance_table().set_index("model")
    assert sig.loc[MODEL_EXCLUDING, "summary"].startswith("not fitted: ")
    assert any("could not be fitted" in n for n in mc.model_notes())
    p = mc.pvalue_table().set_index("variable")
    assert np.isnan(p.loc["a", f"p_{MODEL_EXCLUDING}"]) and p[f"significant_{MODEL_EXCLUDING}"].isna().all()
    # in model 3, b is one level, "(suppressed)": no coefficient, so not tested (not "not significant")
    assert sig.loc[MODEL_CATEGORY, "not_tested"] == "b"
    assert "b" not in sig.loc[MODEL_CATEGORY, "not_significant"]
    # the original's own failure is still an error: there is nothing to compare with
    with pytest.raises(InputError):
        compare_models(dataset(original.assign(b=np.nan), ("a", "b")), dataset(treated, ("a", "b")), "y ~ a + b")


def test_no_residual_degrees_of_freedom_means_not_tested():
    """One PSU per stratum: design degrees of freedom 0, no p-value; the covariate is "not tested" in every
    model and no conclusion is said to change."""
    rng = np.random.default_rng(8)
    n = 100
    original = pd.DataFrame({"y": rng.normal(size=n), "a": rng.choice(["p", "q"], n), "w": rng.uniform(1, 2, n),
                             "s": np.repeat(np.arange(10), 10)})
    original["y"] += 3 * (original["a"] == "q")
    treated = original.copy()
    treated.loc[:4, "a"] = np.nan
    roles = Roles(qis=("a",), weight="w", strata="s", psu="s", outcomes=("y",))
    mc = compare_models(Dataset(original, roles=roles), Dataset(treated, roles=roles), "y ~ a")
    sig = mc.significance_table()
    assert (sig["not_tested"] == "a").all() and (sig["not_significant"] == "none").all()
    assert (sig["summary"] == "None tested").all()
    p = mc.pvalue_table()
    assert p.filter(like="significant_").isna().all().all() and not p["conclusion_changes"].any()


def test_conclusion_changes_among_the_models_that_test_it():
    rng = np.random.default_rng(12)
    n = 300
    a = rng.choice(["p", "q"], n)
    original = pd.DataFrame({"y": 0.6 * (a == "q") + rng.normal(size=n), "a": a, "w": np.ones(n)})
    treated = original.copy()
    treated.loc[rng.random(n) < 0.9, "a"] = np.nan  # 90 % suppressed: the effect is no longer significant
    mc = compare_models(dataset(original, ("a",)), dataset(treated, ("a",)), "y ~ a")
    p = mc.pvalue_table().set_index("variable")
    flags = [bool(p.loc["a", f"significant_{m}"]) for m in mc.models]
    assert bool(p.loc["a", "conclusion_changes"]) == (any(flags) and not all(flags))
    assert p.loc["a", f"p_{MODEL_ORIGINAL}"] < 0.05


def test_summaries_in_words_keep_what_follows_the_bare_word():
    from kanon_core.utility.model_compare import summary_in_words

    assert summary_in_words("None") == "no covariate significant"
    assert summary_in_words("None; not tested: region") == "no covariate significant; not tested: region"
    assert summary_in_words("None tested") == "no covariate tested"
    assert summary_in_words("All") == "all covariates significant"
    assert summary_in_words("All but a and b") == "all covariates significant but a and b"
    assert summary_in_words("not fitted: no record") == "not fitted: no record"
