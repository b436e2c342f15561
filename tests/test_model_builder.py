"""The Compare page's model builder (kanon_core.utility.model_builder) on the sample and a small file."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kanon_app.samples import load_sample
from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.utility.formula import parse_formula
from kanon_core.utility.model_builder import (
    covariate_candidates,
    default_model,
    is_categorical_default,
    measurement_variables,
    outcome_candidates,
)


def test_sample_default_model_fits_the_file():
    ds = load_sample("els")
    spec = default_model(ds, ds.roles.qis)
    assert spec.outcome in ds.roles.outcomes
    parse_formula(spec.formula, ds.columns)
    assert set(spec.categorical) == set(spec.covariates)  # QIs are categories
    assert ds.roles.weight not in outcome_candidates(ds)
    assert "STU_ID" not in covariate_candidates(ds, spec.outcome)


def test_small_file_lists_and_measurements():
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame({"y": rng.integers(0, 2, n), "grp": rng.choice(["a", "b", "c"], n),
                          "code": rng.integers(1, 12, n), "age": rng.integers(18, 80, n), "w": rng.uniform(1, 2, n)})
    ds = Dataset(frame=frame, roles=Roles(qis=("grp",), weight="w"),
                 meta={"code": VariableMeta(value_labels={i: f"c{i}" for i in range(1, 12)})})
    assert outcome_candidates(ds) == ["y", "code", "age"]
    assert measurement_variables(ds) == ["age"]  # labelled codes and 0/1 are not measurements
    assert is_categorical_default(ds, "grp") and is_categorical_default(ds, "code")
    assert not is_categorical_default(ds, "age")
    spec = default_model(ds, ["grp"])
    assert spec.formula == "y ~ C(grp)"
    empty = Dataset(frame=pd.DataFrame({"t": ["a", "b", "c"]}), roles=Roles())
    assert default_model(empty) is None


def test_a_variable_with_no_observed_value_is_no_covariate():
    """A QI missing in every record (a question not asked in this wave) made the default model's every record
    incomplete: "No record has all the variables of the formula". It is offered neither as a covariate nor in
    the default model; one declared missing throughout (-9 everywhere) neither."""
    rng = np.random.default_rng(1)
    n = 40
    frame = pd.DataFrame({"y": rng.normal(size=n), "sex": rng.integers(1, 3, n), "unasked": [np.nan] * n,
                          "refused": [-9] * n})
    ds = Dataset(frame=frame, roles=Roles(qis=("sex", "unasked", "refused")),
                 meta={"refused": VariableMeta(missing_codes=(-9,))})
    assert covariate_candidates(ds, "y") == ["sex"]
    assert default_model(ds).formula == "y ~ C(sex)"
