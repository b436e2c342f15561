"""Page logic through Streamlit's AppTest: the real app script, no browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def metric(at: AppTest, label_start: str) -> str:
    for m in at.metric:
        if m.label.startswith(label_start):
            return m.value
    raise AssertionError(f"no metric {label_start!r}: {[m.label for m in at.metric]}")


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    return at


def test_opens_on_sample_data_with_preset_roles(app):
    assert any("16,197 records" in m.value for m in app.markdown)
    ds = app.session_state["history"].current.dataset
    assert len(ds.roles.qis) == 19 and ds.roles.weight == "F2BYWT"


def test_risk_page_counts_change_with_k(app):
    app.switch_page("pages/risk.py").run()
    assert not app.exception
    assert metric(app, "Records") == "16,197"
    v3 = int(metric(app, "Records violating k=3").replace(",", ""))
    app.number_input(key="w_k").set_value(2).run()
    v2 = int(metric(app, "Records violating k=2").replace(",", ""))
    assert v2 == int(metric(app, "Sample uniques").replace(",", "")) < v3


def test_risk_with_fewer_qis_and_roles_version(app):
    app.switch_page("pages/risk.py").run()
    app.multiselect(key="w_risk_qis").set_value(["BYSEX", "BYREGION"]).run()
    assert metric(app, "Records violating k=3") == "0"
    app.button(key="btn_risk_set_qis").click().run()
    hist = app.session_state["history"]
    assert hist.current.id == 1 and hist.current.dataset.roles.qis == ("BYSEX", "BYREGION")


def test_sidebar_timeline_undo_redo_and_branch():
    from kanon_app.samples import load_sample
    from kanon_core.history import History
    from kanon_core.steps import SetMissing, SetRoles

    hist = History.start(load_sample("els"))
    hist.apply(SetRoles(qis=("BYSEX", "BYREGION"), weight="F2BYWT"))
    hist.apply(SetMissing("category"))
    def fresh() -> AppTest:
        # AppTest drops the sidebar tree after a callback rerun of an st.navigation app (the real app
        # keeps it, see tests/e2e), so each click starts from a fresh run on the same history.
        at = AppTest.from_file(APP, default_timeout=60)
        at.session_state["history"] = hist
        at.session_state["source"] = {"kind": "sample", "title": "test"}
        return at.run()

    at = fresh()
    assert not at.exception
    labels = [b.label for b in at.sidebar.button]
    assert any("v0: Original data" in lab for lab in labels)
    assert any(m.value.startswith("**") and "v2: Missing values as category" in m.value for m in at.sidebar.markdown)
    at.sidebar.button(key="btn_undo").click().run()
    assert hist.current_id == 1
    fresh().sidebar.button(key="btn_redo").click().run()
    assert hist.current_id == 2
    fresh().sidebar.button(key="btn_goto_0").click().run()
    assert hist.current_id == 0


def test_switching_missing_semantics_creates_a_version(app):
    app.radio(key="w_missing_sem").set_value("category").run()
    app.button(key="btn_apply_missing").click().run()
    assert app.session_state["history"].current.dataset.missing == "category"


def test_qi_with_thousands_of_values_needs_confirmation(app):
    qis = list(app.session_state["history"].current.dataset.roles.qis)
    app.multiselect(key="w_roles_qis").set_value(qis + ["STU_ID"])
    app.multiselect(key="w_roles_direct").set_value([])
    submit = [b for b in app.button if b.label == "Apply roles"][0]
    submit.click().run()
    assert not app.exception
    assert any("STU_ID (16,197)" in w.value for w in app.warning)
    assert app.session_state["history"].current.id == 0  # nothing applied yet
    app.checkbox(key="w_roles_many").check()
    [b for b in app.button if b.label == "Apply roles"][0].click().run()
    assert "STU_ID" in app.session_state["history"].current.dataset.roles.qis
