"""The officer's choices on a page survive a visit to another page (Streamlit deletes the state of widgets a
run does not draw; kanon_app.state keeps their values), unless what they were chosen on has changed."""

from __future__ import annotations

from kanon_core.steps import SetRoles
from tests.app.helpers import open_page


def test_choices_survive_a_round_trip_to_another_page():
    at = open_page("recode.py")
    at.multiselect(key="w_rec_qis").set_value(["BYSEX", "BYRACE", "BYINCOME"]).run()
    at.session_state["w_recode_section"] = "Optimal generalization"
    at.run()
    at.number_input(key="w_gen_sup").set_value(3.5).run()
    at.selectbox(key="w_gen_metric").set_value("dm").run()
    at.switch_page("pages/suppress.py").run()
    at.radio(key="w_sup_model").set_value("record").run()
    at.switch_page("pages/risk.py").run()
    assert "w_rec_qis" not in at.session_state  # Streamlit dropped the widget's own state
    at.switch_page("pages/recode.py").run()
    at.session_state["w_recode_section"] = "Optimal generalization"
    at.run()
    assert at.multiselect(key="w_rec_qis").value == ["BYSEX", "BYRACE", "BYINCOME"]
    assert at.number_input(key="w_gen_sup").value == 3.5 and at.selectbox(key="w_gen_metric").value == "dm"
    at.switch_page("pages/suppress.py").run()
    assert at.radio(key="w_sup_model").value == "record"
    assert not at.exception


def test_new_roles_win_over_a_choice_made_before_them():
    at = open_page("risk.py")
    at.multiselect(key="w_risk_qis").set_value(["BYSEX", "BYRACE"]).run()
    at.switch_page("pages/recode.py").run()
    roles = at.session_state["history"].current.dataset.roles
    at.session_state["history"].apply(SetRoles(qis=("BYSEX", "BYREGION", "BYINCOME"), weight=roles.weight))
    at.switch_page("pages/risk.py").run()
    assert at.multiselect(key="w_risk_qis").value == ["BYSEX", "BYREGION", "BYINCOME"]
    assert not at.exception


def test_protection_and_risk_choices_survive_a_round_trip():
    """Protected variables sit in a collapsed section: losing them on a visit to another page meant a protected
    variable was suppressed at the next run, with no sign. Every choice of Suppress and Risk is kept."""
    at = open_page("suppress.py")
    at.multiselect(key="w_sup_qis").set_value(["BYSEX", "BYRACE", "BYREGION"]).run()
    at.multiselect(key="w_sup_protected").set_value(["BYSEX"]).run()
    at.multiselect(key="w_sup_by").set_value(["BYURBAN"]).run()
    at.radio(key="w_sup_solver").set_value("cbc").run()
    at.switch_page("pages/risk.py").run()
    at.multiselect(key="w_sensitive").set_value(["BYTXMSTD"]).run()
    at.selectbox(key="w_risk_method").set_value("exact").run()
    at.number_input(key="w_l_target").set_value(3).run()
    at.switch_page("pages/compare.py").run()
    assert "w_sup_protected" not in at.session_state and "w_sensitive" not in at.session_state
    at.switch_page("pages/suppress.py").run()
    assert at.multiselect(key="w_sup_protected").value == ["BYSEX"]
    assert at.multiselect(key="w_sup_by").value == ["BYURBAN"] and at.radio(key="w_sup_solver").value == "cbc"
    at.switch_page("pages/risk.py").run()
    assert at.multiselect(key="w_sensitive").value == ["BYTXMSTD"]
    assert at.selectbox(key="w_risk_method").value == "exact" and at.number_input(key="w_l_target").value == 3
    assert not at.exception
