"""Wilson's three models (Wilson et al., RTI, table 4) on a small file where every row and column can be checked.

Point estimates of a survey regression are weighted least squares whatever the design, so each model is
checked against ``lstsq`` on a design matrix built by hand from the rule the model states: which
records it keeps and how a suppressed value is coded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.utility.model_compare import (
    MODEL_CATEGORY,
    MODEL_EXCLUDING,
    MODEL_ORIGINAL,
    SUPPRESSED_LEVEL,
    _wilson_phrase,
    compare_models,
)

N = 60


@pytest.fixture(scope="module")
def files():
    rng = np.random.default_rng(11)
    a = rng.choice([1, 2, 3], N).astype(float)
    x = rng.normal(10, 2, N).round(2)
    w = rng.uniform(1, 4, N).round(2)
    y = 5 + 2 * (a == 2) - 1.5 * (a == 3) + 0.8 * x + rng.normal(0, 1, N)
    a[[0, 1]] = np.nan  # missing in the original already: dropped by every model
    original = pd.DataFrame({"y": y, "a": a, "x": x, "w": w, "s": np.repeat([1, 2, 3], N // 3),
                             "p": np.tile([1, 2, 3, 4], N // 4)})
    treated = original.copy()
    sup_a = [2, 5, 9, 14, 20]
    sup_x = [5, 7, 30, 41]  # record 5 has both suppressed
    treated.loc[sup_a, "a"] = np.nan
    treated.loc[sup_x, "x"] = np.nan
    roles = Roles(qis=("a", "x"), weight="w", strata="s", psu="p")
    return (Dataset(frame=original, roles=roles), Dataset(frame=treated, roles=roles), sup_a, sup_x)


def wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    sw = np.sqrt(w)
    return np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)[0]


def dummies(values: pd.Series, levels: list) -> np.ndarray:
    return np.column_stack([(values == lev).to_numpy(float) for lev in levels])


def test_three_models_keep_and_code_the_records_as_stated(files):
    original, treated, sup_a, sup_x = files
    mc = compare_models(original, treated, "y ~ C(a) + x")
    o, t = original.frame, treated.frame
    in_original = o["a"].notna()
    suppressed = pd.Series(False, index=o.index)
    suppressed[sup_a + sup_x] = True

    # 1: original data, complete records
    res1 = mc.results[MODEL_ORIGINAL]
    keep = in_original
    assert res1.n_used == keep.sum() == N - 2
    x1 = np.column_stack([np.ones(keep.sum()), dummies(o.loc[keep, "a"], [2.0, 3.0]), o.loc[keep, "x"]])
    assert np.allclose(res1.coefficients["estimate"], wls(x1, o.loc[keep, "y"].to_numpy(), o.loc[keep, "w"].to_numpy()))

    # 2: treated data, records with a suppressed covariate dropped (record 5 counted once)
    res2 = mc.results[MODEL_EXCLUDING]
    keep = in_original & ~suppressed
    assert res2.n_used == keep.sum() == N - 2 - len(set(sup_a) | set(sup_x))
    x2 = np.column_stack([np.ones(keep.sum()), dummies(t.loc[keep, "a"], [2.0, 3.0]), t.loc[keep, "x"]])
    assert np.allclose(res2.coefficients["estimate"], wls(x2, t.loc[keep, "y"].to_numpy(), t.loc[keep, "w"].to_numpy()))

    # 3: same records as model 1; suppressed a is a level of its own, suppressed x the weighted mean of the
    # observed x plus an indicator
    res3 = mc.results[MODEL_CATEGORY]
    keep = in_original
    assert res3.n_used == res1.n_used
    observed = t["x"].notna()
    fill = np.average(t.loc[observed, "x"], weights=t.loc[observed, "w"])
    a3 = t["a"].astype(object).where(~o.index.isin(sup_a), SUPPRESSED_LEVEL)
    x3 = t["x"].fillna(fill)
    ind = o.index.isin(sup_x).astype(float)
    design = np.column_stack([np.ones(N), dummies(a3, [2.0, 3.0, SUPPRESSED_LEVEL]), x3, ind])[keep.to_numpy()]
    assert res3.coefficients["term"].tolist() == ["(Intercept)", "a[2]", "a[3]", f"a[{SUPPRESSED_LEVEL}]", "x",
                                                  f"x[{SUPPRESSED_LEVEL}]"]
    assert np.allclose(res3.coefficients["estimate"], wls(design, o.loc[keep, "y"].to_numpy(), o.loc[keep, "w"].to_numpy()))
    # the joint test of a covers its suppressed level; that of x only x (the indicator is not x's coefficient)
    n_coef = res3.term_tests.set_index("variable")["n_coef"]
    assert n_coef["a"] == 3 and n_coef["x"] == 1


def test_nothing_suppressed_gives_three_identical_models(files):
    original, _, _, _ = files
    mc = compare_models(original, original, "y ~ C(a) + x")
    est = [r.coefficients["estimate"].to_numpy() for r in mc.results.values()]
    assert np.allclose(est[0], est[1]) and np.allclose(est[0], est[2])
    assert not mc.pvalue_table()["conclusion_changes"].any()


def test_tables_report_significance_per_model(files):
    original, treated, _, _ = files
    mc = compare_models(original, treated, "y ~ C(a) + x", alpha=0.05)
    sig = mc.significance_table().set_index("model")
    pv = mc.pvalue_table().set_index("variable")
    assert len(mc.results) == 3  # Wilson's three models
    for key, res in mc.results.items():
        p = res.term_tests.set_index("variable")["p_value"]
        expected = [v for v in ("a", "x") if p[v] < 0.05]
        assert sig.loc[key, "n_significant"] == len(expected)
        assert sig.loc[key, "n_used"] == res.n_used
        assert list(pv[f"p_{key}"]) == pytest.approx([p["a"], p["x"]])
    flags = pv[[f"significant_{k}" for k in mc.results]].to_numpy()
    assert (pv["conclusion_changes"].to_numpy() == (flags.any(axis=1) & ~flags.all(axis=1))).all()
    long = mc.coefficients_long()
    assert "(Intercept)" not in set(long["term"]) and set(long["model"]) == set(mc.results)


def test_wilson_phrases():
    cov = ("A", "B", "C", "D")
    assert _wilson_phrase(list(cov), cov) == "All"
    assert _wilson_phrase([], cov) == "None"
    assert _wilson_phrase(["A", "B", "C"], cov) == "All but D"
    assert _wilson_phrase(["A", "B"], cov) == "All but C and D"
    assert _wilson_phrase(["A"], cov) == "All but B, C, D"


def test_refusals(files):
    original, treated, _, _ = files
    with pytest.raises(InputError, match="same records"):
        compare_models(original, Dataset(frame=treated.frame.iloc[:10]), "y ~ x")
    with pytest.raises(InputError, match="not in the treated"):
        compare_models(original, Dataset(frame=treated.frame.drop(columns="x")), "y ~ x")
    with pytest.raises(InputError, match="significance level"):
        compare_models(original, treated, "y ~ x", alpha=1.5)


def test_suppressed_is_never_the_reference_level():
    """y ~ C(fruit) with text levels: "(suppressed)" sorts before "apple" as text, yet the reference stays
    apple. With one categorical covariate each coefficient is mean(y | level) - mean(y | apple) (weights 1),
    so suppressing a few cherries leaves banana's coefficient exactly as on the original."""
    fruit = np.array(["apple"] * 6 + ["banana"] * 6 + ["cherry"] * 6, dtype=object)
    y = np.array([1, 2, 3, 2, 1, 3, 5, 6, 7, 6, 5, 7, 9, 8, 10, 9, 8, 11], dtype=float)
    original = Dataset(pd.DataFrame({"y": y, "fruit": fruit}), roles=Roles(outcomes=("y",)))
    treated_frame = original.frame.copy()
    treated_frame.loc[[12, 15], "fruit"] = None  # two cherries suppressed
    treated = original.with_frame(treated_frame, original.meta)
    mc = compare_models(original, treated, "y ~ C(fruit)")
    coef = {m: r.coefficients.set_index("level")["estimate"] for m, r in mc.results.items()}
    mean = {f: y[fruit == f].mean() for f in ("apple", "banana", "cherry")}
    assert coef[MODEL_ORIGINAL]["banana"] == pytest.approx(mean["banana"] - mean["apple"])
    assert coef[MODEL_CATEGORY]["banana"] == pytest.approx(coef[MODEL_ORIGINAL]["banana"])
    kept_cherry = y[[i for i in range(18) if fruit[i] == "cherry" and i not in (12, 15)]].mean()
    assert coef[MODEL_CATEGORY]["cherry"] == pytest.approx(kept_cherry - mean["apple"])
    assert coef[MODEL_CATEGORY][SUPPRESSED_LEVEL] == pytest.approx(y[[12, 15]].mean() - mean["apple"])
    assert "apple" not in coef[MODEL_CATEGORY].index  # the reference


def _counted_fits(monkeypatch) -> list[str]:
    """The name of the dataset of every fit compare_models makes (a fit is the work it can save)."""
    import kanon_core.utility.model_compare as mc_module

    calls: list[str] = []
    real = mc_module.regress

    def counting(ds, *args, **kwargs):
        calls.append(ds.name)
        return real(ds, *args, **kwargs)

    monkeypatch.setattr(mc_module, "regress", counting)
    return calls


def _same_fit(a, b) -> bool:
    return (a.coefficients.equals(b.coefficients) and a.term_tests.equals(b.term_tests)
            and np.array_equal(a.vcov, b.vcov) and (a.n_used, a.n_dropped) == (b.n_used, b.n_dropped))


def test_a_release_that_reads_as_the_original_is_fitted_once(files, monkeypatch):
    """A release whose formula variables are the original's (cells, missing cells, labels) gives the
    original's model three times, fitted once, and each equals its own fit made apart."""
    from kanon_core.utility.regression import regress

    original, _, _, _ = files
    copy = Dataset(frame=original.frame.copy(), roles=original.roles)
    calls = _counted_fits(monkeypatch)
    mc = compare_models(original, copy, "y ~ C(a) + x")
    assert len(calls) == 1
    alone = regress(copy, "y ~ C(a) + x")
    for model in (MODEL_ORIGINAL, MODEL_EXCLUDING, MODEL_CATEGORY):
        assert _same_fit(mc.results[model], alone)


def test_a_release_without_suppressed_covariates_has_model_three_as_model_two(files, monkeypatch):
    """Recoded but not suppressed: models 1 and 2 are fitted (the cells differ), model 3 is model 2 (no level
    added); a relabelled variable alone is a different input too; a suppressed covariate needs all three."""
    original, treated, _, _ = files
    merged = original.frame.copy()
    merged.loc[merged["a"] == 3, "a"] = 2.0  # categories 2 and 3 merged: no cell suppressed
    recoded = Dataset(frame=merged, roles=original.roles)
    calls = _counted_fits(monkeypatch)
    mc = compare_models(original, recoded, "y ~ C(a) + x")
    assert len(calls) == 2
    assert _same_fit(mc.results[MODEL_CATEGORY], mc.results[MODEL_EXCLUDING])
    assert not _same_fit(mc.results[MODEL_EXCLUDING], mc.results[MODEL_ORIGINAL])
    calls.clear()
    compare_models(original, treated, "y ~ C(a) + x")
    assert len(calls) == 3


def test_two_versions_read_alike_on_the_same_cells_missing_cells_and_labels(files):
    from kanon_core.dataset import VariableMeta
    from kanon_core.utility.baseline import reads_alike

    original, treated, _, _ = files
    assert reads_alike(original, Dataset(frame=original.frame.copy(), roles=original.roles), ["y", "a", "x"])
    assert not reads_alike(original, treated, ["a"]) and reads_alike(original, treated, ["y"])
    labelled = Dataset(frame=original.frame.copy(), roles=original.roles,
                       meta={"a": VariableMeta("a", {1.0: "one"})})
    assert not reads_alike(original, labelled, ["a"]) and reads_alike(original, labelled, ["x"])
    as_text = original.frame.copy()
    as_text["x"] = as_text["x"].astype(str)
    assert not reads_alike(original, Dataset(frame=as_text, roles=original.roles), ["x"])
