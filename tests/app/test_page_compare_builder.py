"""The Compare page's model builder and readable tables, on a file unlike the sample: lists of the file's
own variables, a formula that fits the file, numeric analysis variables for the bias tab, headers in words."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from kanon_core import fmt
from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.treat.recode import RecodeStep
from kanon_core.utility.formula import parse_formula
from kanon_core.utility.model_builder import build_formula, default_model, measurement_variables

from .helpers import APP


def _history() -> History:
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({
        "hh_id": np.arange(n), "sex": rng.integers(1, 3, n), "region": rng.integers(1, 6, n),
        "relat": rng.integers(1, 8, n), "age": rng.integers(16, 90, n),
        "income": np.round(rng.lognormal(10, 1, n), 2), "expenditure": np.round(rng.lognormal(9, 1, n), 2),
        "wgt": rng.uniform(1, 3, n)})
    ds = Dataset(frame=frame, roles=Roles(qis=("sex", "region", "relat"), weight="wgt", direct_ids=("hh_id",)),
                 name="household")
    h = History.start(ds)
    h.apply(RecodeStep(column="relat", merge=(6, 7), into=6))
    return h


@pytest.fixture
def page() -> tuple[AppTest, History]:
    at = AppTest.from_file(APP, default_timeout=120).run()
    h = _history()
    at.session_state["history"] = h
    at.session_state["source"] = {"kind": "upload", "title": "household.csv", "name": "household.csv"}
    at.session_state["memo"] = OrderedDict()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    return at, h


def test_builder_lists_the_files_variables_and_writes_the_formula(page):
    at, h = page
    ds = h.current.dataset
    key = f"w_cmp_formula_{h.current_id}"
    at.session_state["w_cmp_tab"] = "Regression"  # lazy tabs: only the open one is computed
    at.run()
    formula = at.text_input(key=key).value
    parsed = parse_formula(formula, ds.columns)  # never a formula naming variables the file lacks
    assert formula == default_model(ds, ds.roles.qis).formula
    assert parsed.outcome in ("age", "income", "expenditure")
    outcome = at.selectbox(key=f"w_cmp_outcome_{h.current_id}")
    assert "hh_id" not in outcome.options and "wgt" not in outcome.options
    outcome.set_value("income").run()
    at.multiselect(key=f"w_cmp_covariates_{h.current_id}").set_value(["sex", "age", "region"]).run()
    at.multiselect(key=f"w_cmp_categorical_{h.current_id}").set_value(["sex", "region"]).run()
    assert at.text_input(key=key).value == "income ~ C(sex) + age + C(region)"
    at.radio(key="w_cmp_family").set_value("gaussian").run()
    at.button(key="btn_cmp_fit").click().run()
    assert not at.exception and not at.error
    assert any("significant covariates" in df.value.columns for df in at.dataframe)
    # the formula stays editable by hand
    at.text_input(key=key).set_value("expenditure ~ C(sex)").run()
    assert at.text_input(key=key).value == "expenditure ~ C(sex)"


def test_bias_defaults_to_numeric_analysis_variables(page):
    at, h = page
    at.session_state["w_cmp_tab"] = "Bias and information loss"
    at.run()
    chosen = at.multiselect(key="w_cmp_bias_vars").value
    assert chosen and set(chosen) <= {"age", "income", "expenditure"}
    assert set(chosen) == set(measurement_variables(h.original.dataset))
    assert not set(chosen) & {"sex", "region", "relat"}  # never the QI codes


def test_tables_read_in_words(page):
    at, h = page
    at.multiselect(key="w_cmp_vars").set_value(["sex", "region", "relat"]).run()
    at.session_state["w_cmp_tab"] = "Regression"
    at.run()
    at.button(key="btn_cmp_fit").click().run()
    assert not at.exception
    for tab in ("Weighted percentages", "Regression", "Bias and information loss"):  # lazy: one at a time
        at.session_state["w_cmp_tab"] = tab
        at.run()
        for df in at.dataframe:
            frame = df.value.data if hasattr(df.value, "data") else df.value
            for c in frame.columns:
                assert not fmt.is_snake_case(str(c)), c
            text = frame.astype(str).to_string()
            assert "None" not in text and "-0.00" not in text
            assert " nan" not in text.lower().replace("non-", "")


def test_build_formula_quotes_and_skips_the_outcome():
    assert build_formula("y", ["y", "a b", "c"], ["a b"]) == "y ~ C(`a b`) + c"
    assert build_formula("y", []) == "y ~ 1"
    parse_formula(build_formula("income", ["sex", "age"], ["sex"]), ["income", "sex", "age"])
