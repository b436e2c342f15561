"""The Data page through AppTest: the notice about text that often means missing, declaring it missing as a
recorded step (replayed by the recipe), and declared codes typed like their variable."""

from __future__ import annotations

from collections import OrderedDict

import pandas as pd
from streamlit.testing.v1 import AppTest

from kanon_core.dataset import Dataset, Roles
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.history import History
from kanon_core.recipe import Recipe
from kanon_core.steps import DeclareMissingCodes

from .helpers import APP


def _open_with(ds: Dataset) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.session_state["history"] = History.start(ds)
    at.session_state["source"] = {"kind": "upload", "title": "countries.csv", "name": "countries.csv"}
    at.session_state["memo"] = OrderedDict()
    at.switch_page("pages/data.py").run()
    assert not at.exception
    return at


def _countries() -> Dataset:
    frame = pd.DataFrame({"country": ["NA", "ZA", "ZA", "null", "BW"], "sex": ["m", "m", "m", "f", "-"],
                          "n": [1, -9, 3, 4, 5]})
    return Dataset(frame=frame, roles=Roles(qis=("country", "sex")), name="countries")


def _notices(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "often read as missing" in w.value]


def test_sample_has_no_missing_like_notice():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/data.py").run()
    assert not at.exception
    assert _notices(at) == []
    assert not [b for b in at.button if b.key == "btn_declare_missing_like"]


def test_notice_names_columns_and_counts_and_one_click_declares_them():
    at = _open_with(_countries())
    [notice] = _notices(at)
    assert "country (2), sex (1)" in notice
    assert "null" not in notice.split(":")[-1]  # values are not listed, only variables and counts
    at.button(key="btn_declare_missing_like").click().run()
    assert not at.exception
    history = at.session_state["history"]
    step = history.current.step
    assert isinstance(step, DeclareMissingValues)
    assert step.values == (("country", ("NA", "null")), ("sex", ("-",)))
    ds = history.current.dataset
    assert ds.missing_mask("country").tolist() == [True, False, False, True, False]
    assert _notices(at) == []
    # the step is in the recipe and replays
    recipe = Recipe.from_json(Recipe.from_history(history).to_json())
    assert recipe.steps == (step,)
    replayed = recipe.replay(history.original.dataset).current.dataset
    assert replayed.meta_of("sex").missing_codes == ("-",)


def test_declared_codes_take_the_variable_type():
    at = _open_with(_countries())
    at.selectbox(key="w_mc_var").select("n").run()
    at.text_input(key="w_mc_codes_n").input("-9").run()
    at.button(key="btn_mc").click().run()
    assert not at.exception
    step = at.session_state["history"].current.step
    assert step == DeclareMissingCodes("n", (-9,))
    assert at.session_state["history"].current.dataset.missing_mask("n").tolist() == [False, True, False, False,
                                                                                      False]
