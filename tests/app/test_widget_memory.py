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
