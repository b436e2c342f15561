"""Two officers' sessions in one process: one searches MINUCs, the other suppresses. Each gets exactly what
it gets alone (kanon_core's result), and neither sees the other's results in its part of the shared cache.

The sessions run one after the other here: AppTest keeps process-wide state (the runtime it mocks, the
pages registry) for the length of each run, so two AppTests cannot run at once. The two searches running
at the same time in one server are tested in the real app, in tests/e2e/test_two_officers.py."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from kanon_app.samples import load_sample
from kanon_core.risk.minucs import find_minucs
from kanon_core.treat.suppress import suppress

from .helpers import metric, open_page

MINUC_QIS = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION", "BYURBAN", "BYFCOMP"]
SUP_QIS = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION"]


def _minuc_session() -> AppTest:
    at = open_page("minucs.py")
    at.multiselect(key="w_minuc_qis").set_value(MINUC_QIS).run()
    at.number_input(key="w_minuc_k").set_value(2).run()
    at.button(key="btn_find_minucs").click().run()
    return at


def _suppress_session() -> AppTest:
    at = open_page("suppress.py")
    at.multiselect(key="w_sup_qis").set_value(SUP_QIS).run()
    at.number_input(key="w_sup_k").set_value(3).run()
    at.button(key="btn_run_suppress").click().run()
    return at


def test_two_sessions_get_their_own_results_and_memo():
    m, s = _minuc_session(), _suppress_session()
    assert not m.exception and not s.exception and not m.error and not s.error
    ds = load_sample("els")
    ref_m = find_minucs(ds.qi_matrix(MINUC_QIS), k=2, missing=ds.missing)
    ref_s = suppress(ds, 3, qis=SUP_QIS)
    assert metric(m, "MINUCs") == f"{ref_m.total:,}"
    assert metric(m, "Records with a MINUC") == f"{ref_m.records_with_minucs():,}"
    assert metric(s, "Cells suppressed") == f"{ref_s.n_suppressed:,}"
    assert metric(s, "Records touched") == f"{ref_s.records_touched:,}"
    assert metric(s, "Cost") == f"{ref_s.cost:,.1f}"
    # isolation: separate histories, and each session's memo holds only its own kind of result
    hm, hs = m.session_state["history"], s.session_state["history"]
    assert hm.uid != hs.uid
    kinds_m = {key[2] for key in m.session_state["memo"]}
    kinds_s = {key[2] for key in s.session_state["memo"]}
    assert "minucs" in kinds_m and "suppression" not in kinds_m
    assert "suppression" in kinds_s and "minucs" not in kinds_s
    assert {key[0] for key in m.session_state["memo"]} == {hm.uid}
    assert {key[0] for key in s.session_state["memo"]} == {hs.uid}
    # the sessions' versions are untouched by each other's work
    assert hm.current_id == 0 and hs.current_id == 0
