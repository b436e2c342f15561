"""The Data page's value-label editor through AppTest: importing a labels file and saving labels are
recorded steps (replayed by the recipe) and the labels reach the page's tables."""

from __future__ import annotations

import json
from collections import OrderedDict

import pandas as pd
from streamlit.testing.v1 import AppTest

from kanon_app.labels_ui import edited_labels
from kanon_core.dataset import Dataset, Roles
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.history import History
from kanon_core.recipe import Recipe
from kanon_core.value_labels import SetValueLabels

from .helpers import APP, frame_with


def _open() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    frame = pd.DataFrame({"sex": [1, 2, 2, 1, 9, 1], "region": [3, 3, 4, 4, 3, 4],
                          "income": [10.5, 20.25, 30.5, 40.75, 50.5, 60.25]})
    at.session_state["history"] = History.start(Dataset(frame, roles=Roles(qis=("sex", "region")), name="coded"))
    at.session_state["source"] = {"kind": "upload", "title": "coded.csv", "name": "coded.csv"}
    at.session_state["memo"] = OrderedDict()
    at.switch_page("pages/data.py").run()
    assert not at.exception
    return at


def test_import_a_labels_file_as_steps_and_see_the_labels():
    at = _open()
    spec = {"sex": {"label": "Sex of the person", "value_labels": {"1": "Male", "2": "Female"}, "missing_codes": ["9"]},
            "nothere": {"label": "x"}}
    at.file_uploader(key="w_vl_file").upload("coded.labels.json", json.dumps(spec).encode(), "application/json").run()
    at.button(key="btn_vl_import").click().run()
    assert not at.exception
    hist = at.session_state["history"]
    steps = [v.step for v in hist.lineage(hist.current_id)[1:]]
    assert isinstance(steps[0], SetValueLabels) and isinstance(steps[1], DeclareMissingValues)
    ds = hist.current.dataset
    assert ds.value_label("sex", 2) == "Female" and ds.meta_of("sex").label == "Sex of the person"
    assert ds.missing_mask("sex").tolist() == [False, False, False, False, True, False]
    assert any("Not in the data, ignored: nothere" in s.value for s in at.success)
    summary = frame_with(at, "most_frequent").set_index("variable")
    assert summary.loc["sex", "most_frequent"] == "Male"  # the label, not the code
    assert summary.loc["sex", "label"] == "Sex of the person"
    # the editor shows the labels; the recipe replays both steps
    editor = next(df.value for df in at.data_editor if "records" in df.value.columns)
    assert editor["label"].tolist()[:2] == ["Male", "Female"]
    recipe = Recipe.from_json(Recipe.from_history(hist).to_json())
    assert recipe.replay(hist.original.dataset).current.dataset.value_label("sex", 1) == "Male"


def test_a_bad_labels_file_is_one_message_and_no_version():
    at = _open()
    at.file_uploader(key="w_vl_file").upload("bad.json", b"{not json", "application/json").run()
    at.button(key="btn_vl_import").click().run()
    assert any("not valid JSON" in e.value for e in at.error)
    assert at.session_state["history"].current_id == 0


def test_saving_a_variable_label_is_a_step_and_unchanged_labels_are_not():
    at = _open()
    at.selectbox(key="w_vl_var").select("region").run()
    at.button(key="btn_vl_save").click().run()
    assert any("Nothing changed" in w.value for w in at.warning)
    assert at.session_state["history"].current_id == 0
    [box] = [t for t in at.text_input if t.label == "Variable label"]
    box.input("Region of residence").run()
    at.button(key="btn_vl_save").click().run()
    assert not at.exception
    hist = at.session_state["history"]
    assert hist.current.step == SetValueLabels((), (("region", "Region of residence"),))
    assert hist.current.dataset.meta_of("region").label == "Region of residence"


def test_edits_of_the_label_table_become_the_labels():
    base = pd.DataFrame({"code": ["1", "2", "9"], "label": ["Male", "", "Refused"], "_value": [1, 2, 9]})
    assert edited_labels(base, None) == ((1, "Male"), (9, "Refused"))
    edits = {"edited_rows": {"1": {"label": "Female"}, 2: {"label": None}}}
    assert edited_labels(base, edits) == ((1, "Male"), (2, "Female"))
