"""Weighted percentages: domain estimation, labels, CIs (hand-computable cases)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.utility.design import SurveyDesign
from kanon_core.utility.survey import estimate_proportions, proportions


def test_missing_values_leave_the_denominator():
    """Wilson et al. (RTI): suppressed cells drop out. Weights 1, 2, 3, 4 with the last missing: p(a) = 3/6."""
    x = pd.Series(["a", "b", "a", None])
    d = SurveyDesign.from_arrays([1.0, 2.0, 3.0, 4.0])
    est = proportions(x, d)
    t = est.table.set_index("value")
    assert t.loc["a", "estimate"] == pytest.approx(4 / 6)
    assert t.loc["b", "estimate"] == pytest.approx(2 / 6)
    assert est.n_domain == 3 and est.n_missing == 1
    assert est.weighted_domain == pytest.approx(6.0)
    assert t["n"].tolist() == [2, 1]


def test_declared_missing_codes_and_value_labels():
    frame = pd.DataFrame({"sex": [1, 2, 2, -9, 1, 2], "w": [1.0] * 6})
    ds = Dataset(frame, meta={"sex": VariableMeta("Sex", {1: "Male", 2: "Female"}, (-9,))},
                 roles=Roles(weight="w"))
    est = estimate_proportions(ds, "sex")
    assert est.table["label"].tolist() == ["Male", "Female"]
    assert est.table["estimate"].tolist() == pytest.approx([0.4, 0.6])
    recs = est.to_records()
    assert recs[0]["level"] == 1 and recs[0]["label"] == "Male"
    assert set(recs[0]) == {"level", "label", "estimate", "se", "ci_low", "ci_high"}


def test_wald_interval_uses_the_normal_quantile():
    x = pd.Series(list("aaabbbbbbb"))
    d = SurveyDesign.from_arrays(None, n=10)
    row = proportions(x, d, ci="wald").table.iloc[0]
    z = stats.norm.ppf(0.975)
    assert row.ci_low == pytest.approx(row.estimate - z * row.se)
    assert row.ci_high == pytest.approx(row.estimate + z * row.se)


def test_logit_interval_by_hand():
    """expit(logit p +/- t_{df} se / (p (1-p))) with df = n - 1 = 9 for 10 equally weighted records."""
    x = pd.Series(list("aaabbbbbbb"))
    d = SurveyDesign.from_arrays(None, n=10)
    est = proportions(x, d, ci="logit", level=0.9)
    row = est.table.iloc[0]
    se = math.sqrt(0.3 * 0.7 / 9)
    half = stats.t.ppf(0.95, 9) * se / (0.3 * 0.7)
    logit = math.log(0.3 / 0.7)
    assert row.ci_low == pytest.approx(1 / (1 + math.exp(-(logit - half))))
    assert row.ci_high == pytest.approx(1 / (1 + math.exp(-(logit + half))))
    assert est.df == 9 and est.level == 0.9


def test_extra_levels_and_degenerate_intervals():
    x = pd.Series(["a", "a", "a"])
    d = SurveyDesign.from_arrays(None, n=3)
    for ci in ("wald", "logit"):
        t = proportions(x, d, ci=ci, levels=["a", "z"]).table.set_index("value")
        assert t.loc["z", "estimate"] == 0 and t.loc["z", "se"] == 0
        assert (t.loc["z", "ci_low"], t.loc["z", "ci_high"]) == (0, 0)
        assert (t.loc["a", "ci_low"], t.loc["a", "ci_high"]) == (1, 1)


def test_errors_name_the_variable_not_the_data():
    d = SurveyDesign.from_arrays(None, n=2)
    with pytest.raises(InputError, match="no non-missing"):
        proportions(pd.Series([None, None], name="secret_var"), d)
    with pytest.raises(InputError, match="must be one of"):
        proportions(pd.Series(["a", "b"]), d, ci="exact")
    with pytest.raises(InputError, match="different numbers"):
        proportions(pd.Series(["a", "b", "c"]), d)


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]), st.floats(0.5, 50)), min_size=2, max_size=40),
       st.integers(1, 4))
def test_estimates_sum_to_one_and_ses_are_consistent(rows, n_strata):
    values = [v for v, _ in rows]
    if all(v is None for v in values):
        values[0] = "a"
    w = [wt for _, wt in rows]
    strata = [i % n_strata for i in range(len(rows))]
    d = SurveyDesign.from_arrays(w, strata, lonely_psu="adjust")
    est = proportions(pd.Series(values), d)
    assert est.table["estimate"].sum() == pytest.approx(1.0)
    # the category proportions are linearly dependent: their SEs satisfy se(a) <= se(b) + se(c)
    se = est.table["se"].to_numpy()
    for i in range(len(se)):
        assert se[i] <= se.sum() - se[i] + 1e-12
    assert np.all(est.table["ci_low"] <= est.table["estimate"])
