"""One k for the session: the sidebar and every page show the k just set, on the same run."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from kanon_app.state import DEFAULT_K

from .helpers import open_page


def _sidebar_then_page() -> None:
    """app.py's order: the sidebar timeline first, then the page (here only a page's k field)."""
    import streamlit as st

    from kanon_app import sidebar, state

    state.init()
    with st.sidebar:
        sidebar.render_timeline()
    k = state.k_input(st, "w_k")
    st.markdown(f"page k={k}")


def test_sidebar_risk_matches_the_page_on_the_same_run():
    at = AppTest.from_function(_sidebar_then_page, default_timeout=60).run()
    assert not at.exception
    assert int(at.number_input(key="w_k").value) == DEFAULT_K == 3
    at.number_input(key="w_k").set_value(5).run()
    assert not at.exception
    assert any(m.value == "page k=5" for m in at.markdown)
    current = next(m.value for m in at.sidebar.markdown if m.value.startswith("**"))
    # before the fix the sidebar said "< k=3" on this run: the page copied k after the sidebar was drawn
    assert "k=5" in current and "k=3" not in current, current
    from kanon_core.risk.timeline import version_risk

    hist = at.session_state["history"]
    risk = version_risk(hist.original.dataset, hist.current.dataset, 5, 1.0)
    assert f"{risk.n_violating:,} &lt; k=5" in current  # "<" escaped for markdown


def test_k_is_shared_by_minucs_suppress_and_recode():
    at = open_page("minucs.py")
    assert int(at.number_input(key="w_minuc_k").value) == DEFAULT_K  # MINUCs used to start at 2
    at.number_input(key="w_minuc_k").set_value(4).run()
    assert at.session_state["settings"]["k"] == 4
    for page, key in (("suppress.py", "w_sup_k"), ("recode.py", "w_rec_k"), ("risk.py", "w_k")):
        at.switch_page(f"pages/{page}").run()
        assert not at.exception
        assert int(at.number_input(key=key).value) == 4, page
    at.number_input(key="w_k").set_value(6).run()
    at.switch_page("pages/minucs.py").run()
    assert int(at.number_input(key="w_minuc_k").value) == 6


def test_a_rerun_does_not_push_an_unchanged_k_to_the_browser():
    """A run tells the browser to set the k field (Streamlit's set_value) only when the session's k changed,
    not on every run (also one ending while the officer edits the field); a changed k still reaches it."""
    at = AppTest.from_function(_sidebar_then_page, default_timeout=60).run()
    assert not at.exception
    at.run()  # a rerun with nothing changed (a background job's end, a click elsewhere)
    assert not at.number_input(key="w_k").proto.set_value
    at.session_state["settings"]["k"] = 7  # the session's k set on another page
    at.run()
    field = at.number_input(key="w_k")
    assert field.proto.set_value and int(field.value) == 7
