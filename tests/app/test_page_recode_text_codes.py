"""The Recode page on text codes: the value typed in "Into" is matched in the variable's type (a text
variable's "12" is not its "012", nor "1" its "1.0"; a number variable's "12.0" is its 12), and the hierarchy
table labels each text code's own row."""

from __future__ import annotations

from collections import OrderedDict

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.treat.recode import RecodeStep

from .helpers import APP, frame_with

QIS = ["code", "num", "sex"]


def _data(codes: list[str]) -> Dataset:
    n = len(codes)
    frame = pd.DataFrame({"code": pd.Series(codes, dtype="str"),
                          "num": pd.Series([12, 13, 14, 12, 13, 14, 12, 13][:n], dtype="int64"),
                          "sex": pd.Series([1, 2] * (n // 2), dtype="int64")})
    return Dataset(frame, roles=Roles(qis=tuple(QIS)), name="codes")


def _open(ds: Dataset) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.session_state["history"] = History.start(ds)
    at.session_state["source"] = {"kind": "upload", "title": "codes.csv", "name": "codes.csv"}
    at.session_state["memo"] = OrderedDict()
    at.switch_page("pages/recode.py").run()
    at.multiselect(key="w_rec_qis").set_value(QIS).run()
    assert not at.exception
    return at


def _open_tab(at: AppTest, label: str) -> None:
    """Open the page's tab ``label``: the tabs are lazy (kanon_app.sections), only the open one is drawn."""
    at.session_state["w_recode_section"] = label
    at.run()


def _recode(at: AppTest, column: str, merge: list[int], into: str) -> RecodeStep:
    """Choose ``merge`` (indices of the listed categories) and type ``into``; returns the step applied."""
    _open_tab(at, "Single recode")
    at.selectbox(key="w_single_var").set_value(column).run()
    at.multiselect(key=f"w_single_merge_{column}").set_value(merge).run()
    at.text_input(key=f"w_single_into_{column}").set_value(into).run()
    assert not at.exception and not at.error
    at.button(key="btn_apply_single").click().run()
    assert not at.exception
    hist = at.session_state["history"]
    assert hist.current_id == 1
    return hist.current.step


@pytest.mark.parametrize(("codes", "into"), [
    (["012", "12", "13", "14", "12", "13", "012", "14"], "12"),  # "012" is listed first: it is not "12"
    (["1.0", "1", "13", "14", "1", "13", "1.0", "14"], "1.0"),  # "1" is listed first: it is not "1.0"
    (["012", "13", "14", "012", "13", "14", "13", "14"], "12"),  # a new category, not "012"
])
def test_into_a_text_code_is_that_text(codes, into):
    ds = _data(codes)
    at = _open(ds)
    vals = list(ds.qi_matrix(["code"]).values[0])
    merge = [vals.index("13"), vals.index("14")]
    step = _recode(at, "code", merge, into)
    assert step.into == into
    expect = RecodeStep("code", merge=("13", "14"), into=into).apply(ds).frame["code"]
    got = at.session_state["history"].current.dataset.frame["code"]
    assert got.tolist() == expect.tolist()
    assert got.tolist() == [into if c in ("13", "14") else c for c in codes]


def test_into_a_number_is_its_value():
    """"12.0" typed for a number variable holding 12 is 12: the merged records join those of 12."""
    ds = _data(["012", "12", "13", "14", "12", "13", "012", "14"])
    at = _open(ds)
    vals = list(ds.qi_matrix(["num"]).values[0])
    step = _recode(at, "num", [vals.index(13), vals.index(14)], "12.0")
    assert step.into == 12 and isinstance(step.into, int)
    got = at.session_state["history"].current.dataset.frame["num"]
    assert got.dtype == "int64" and got.tolist() == [12] * 8


def test_the_hierarchy_table_labels_each_text_code():
    """The Hierarchies tab's table: the rows of "012" and "12" show their own values (before, both showed
    the last value of the same number)."""
    at = _open(_data(["012", "12", "13", "14", "12", "13", "012", "14"]))
    _open_tab(at, "Hierarchies")
    at.selectbox(key="w_hb_var").set_value("code").run()
    assert not at.exception
    table = frame_with(at, "level 0")
    assert table["label"].tolist() == table["level 0"].tolist()
    assert {"012", "12"} <= set(table["level 0"])


def test_into_a_number_variable_needs_a_number():
    at = _open(_data(["012", "12", "13", "14", "12", "13", "012", "14"]))
    _open_tab(at, "Single recode")
    at.selectbox(key="w_single_var").set_value("num").run()
    at.multiselect(key="w_single_merge_num").set_value([1, 2]).run()
    at.text_input(key="w_single_into_num").set_value("twelve").run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Into: give a number; the variable holds numbers."]
    assert "btn_apply_single" not in [b.key for b in at.button]
