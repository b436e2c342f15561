"""Bias and entropy: constant columns, number-like bin labels, entropy after suppression."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.lattice import build_problem, evaluate_node
from kanon_core.treat.recode import GeneralizeStep, RecodeStep
from kanon_core.utility.bias import (
    bias_of_correlations,
    bias_of_means,
    entropy_table,
    treated_numeric,
    weighted_correlation,
)


# -- a constant column has no correlation, whatever the weights' rounding ----------------------------------------
def test_weighted_constant_columns_have_no_correlation():
    rng = np.random.default_rng(1)
    for _ in range(500):
        n = int(rng.integers(5, 40))
        w = rng.uniform(0.5, 500, size=n)
        x = np.full(n, float(rng.uniform(1, 100)))
        assert np.isnan(weighted_correlation(x, rng.normal(size=n), w))
        assert np.isnan(weighted_correlation(rng.normal(size=n), x, w))
        assert np.isnan(weighted_correlation(x, np.full(n, float(rng.uniform(1, 1000))), w))


def test_tiny_but_real_variance_still_correlates():
    x = np.array([1e-7, 2e-7, 3e-7, 4e-7])
    assert weighted_correlation(x, 2 * x + 1, np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(1.0)
    big = 1e6 + np.array([0.0, 1.0, 2.0])
    assert weighted_correlation(big, np.array([3.0, 1.0, 2.0]), np.array([0.3, 7.0, 1.1])) == pytest.approx(
        np.corrcoef(np.repeat(big, [3, 70, 11]), np.repeat([3.0, 1.0, 2.0], [3, 70, 11]))[0, 1])


def test_two_variables_generalized_to_one_bin_have_an_undefined_treated_correlation():
    rng = np.random.default_rng(3)
    n = 30
    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.integers(1000, 9000, n),
                          "w": rng.uniform(0.5, 500, n)})
    roles = Roles(qis=("age", "income"), weight="w")
    original = Dataset(frame=frame, roles=roles)
    treated = original.with_frame(frame.assign(age="*", income="*"))
    row = bias_of_correlations(original, treated, ["age", "income"]).iloc[0]
    assert np.isfinite(row["corr_original"]) and np.isnan(row["corr_treated"]) and np.isnan(row["bias"])


# -- a generalized value counts as its bin's mean, even when its label reads as a number -------------------------
AGES = [21, 23, 27, 29, 32, 35, 38, 39]


def _decades() -> tuple[Dataset, Dataset]:
    ds = Dataset(pd.DataFrame({"age": AGES}), roles=Roles(qis=("age",)))
    h = Hierarchy(tuple((str(a), str(a // 10 * 10), "*") for a in sorted(set(AGES))), "age")
    return ds, GeneralizeStep.build({"age": 1}, {"age": h}).apply(ds)


def test_number_like_bin_labels_count_as_their_bin_means():
    ds, rel = _decades()
    assert rel.frame["age"].tolist() == ["20"] * 4 + ["30"] * 4
    row = bias_of_means(ds, rel, ["age"]).iloc[0]
    assert row["placeholder"] == "bin mean"
    assert row["mean_treated"] == pytest.approx(30.5) and row["bias"] == pytest.approx(0.0, abs=1e-12)
    t = treated_numeric(ds, rel, "age")
    assert np.allclose(t.values, [25.0] * 4 + [36.0] * 4)
    # "value" still reads the labels when asked for
    assert bias_of_means(ds, rel, ["age"], placeholder="value")["bias"].iloc[0] == pytest.approx(-5.5)


def test_a_numeric_top_code_is_read_as_the_number_released():
    """A top code of 80 is what an analyst of the release computes with: its bias shows (-5), where a bin mean
    would hide it; a generalized label that reads as a number is a bin (above)."""
    ds = Dataset(pd.DataFrame({"age": [20, 30, 85, 95]}), roles=Roles(qis=("age",)))
    top = RecodeStep(column="age", top=80, top_value=80).apply(ds)
    row = bias_of_means(ds, top, ["age"]).iloc[0]
    assert row["placeholder"] == "value" and row["bias"] == pytest.approx(-5.0)


def test_unrecoded_variable_keeps_its_values_suppression_aside():
    ds = Dataset(pd.DataFrame({"age": [20.0, 30.0, 40.0, 50.0]}), roles=Roles(qis=("age",)))
    sup = ds.with_frame(pd.DataFrame({"age": [20.0, 30.0, 40.0, None]}))
    t = treated_numeric(ds, sup, "age")
    assert t.method == "value"
    assert np.array_equal(t.values, [20.0, 30.0, 40.0, np.nan], equal_nan=True)
    as_text = ds.with_frame(pd.DataFrame({"age": pd.Series(["20", "30", "40", None], dtype=object)}))
    assert treated_numeric(ds, as_text, "age").method == "value"  # the same values, written as text


# -- non-uniform entropy: a label stands for its hierarchy group over all records --------------------------------
def test_entropy_after_suppression_counts_the_group_over_all_records():
    """A's g1 = {a1, a2}; k = 2 suppresses the only a2 record (and b2)."""
    ds = Dataset(pd.DataFrame({"A": ["a1", "a1", "a2"], "B": ["b1", "b1", "b2"]}), roles=Roles(qis=("A", "B")))
    hs = {"A": Hierarchy((("a1", "g1", "*"), ("a2", "g1", "*")), "A"),
          "B": Hierarchy((("b1", "*"), ("b2", "*")), "B")}
    rel = GeneralizeStep.build({"A": 1, "B": 0}, hs, suppress_k=2, qis=("A", "B")).apply(ds)
    et = entropy_table(ds, rel, ["A", "B"], hs, {"A": 1}).set_index("variable")["non_uniform_entropy"]
    # A: two kept a1 in g1 (3 records): log2(3/2) each; suppressed a2 -> root: log2(3/1). B: b2 suppressed.
    assert et["A"] == pytest.approx(2 * math.log2(3 / 2) + math.log2(3))
    assert et["B"] == pytest.approx(math.log2(3))
    lattice = evaluate_node(build_problem(ds, hs), [1, 0], 2, 1.0, "entropy").loss
    assert et.sum() == pytest.approx(lattice)
    # the level is found from the labels when not given
    assert entropy_table(ds, rel, ["A"], hs)["non_uniform_entropy"].iloc[0] == pytest.approx(et["A"])


def test_entropy_by_hand_with_a_hierarchy():
    original = Dataset(pd.DataFrame({"v": ["a", "a", "b", "c"]}), roles=Roles(qis=("v",)))
    treated = original.with_frame(pd.DataFrame({"v": ["a", "a", "bc", None]}))
    h = Hierarchy((("a", "a", "*"), ("b", "bc", "*"), ("c", "bc", "*")), "v")
    # b released as "bc", which stands for {b, c} (2 records, c's suppressed): log2(2/1) = 1; c -> root: 2
    assert entropy_table(original, treated, hierarchies={"v": h}, levels={"v": 1})[
        "non_uniform_entropy"].iloc[0] == pytest.approx(3.0)
    # without the hierarchy B(bc) is read off the kept records, as before: {b}
    assert entropy_table(original, treated)["non_uniform_entropy"].iloc[0] == pytest.approx(2.0)
