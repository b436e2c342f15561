"""Cancel says "cancelled" and leaves the version unchanged (MINUCs, suppression, lattice search all run
through kanon_app.state.run_with_progress, which stores or applies nothing unless the work returns)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from kanon_app import state
    from kanon_core.errors import Cancelled
    from kanon_core.steps import SetMissing

    state.init()
    state.show_flash()

    def work(progress):
        progress.update(0.5, "half way")
        if st.session_state.get("raise_cancel"):
            raise Cancelled("The computation was cancelled.")
        return SetMissing("category")

    if st.button("Run", key="btn_run"):
        step = state.run_with_progress("Test search", work)
        if step is not None:
            state.apply(step)
    # the callback the progress's Cancel button runs when clicked during the work (AppTest runs a script to its
    # end, so the click is made here, on a button wired the same way)
    st.button("Cancel now", key="btn_cancel_now", on_click=state._say_cancelled, args=("Test search",))
    st.markdown(f"current v{state.current().id}")


def test_cancel_button_says_cancelled_and_nothing_changes():
    at = AppTest.from_function(_page, default_timeout=60).run()
    at.button(key="btn_run").click().run()
    assert at.session_state["history"].current_id == 1  # the run itself applied its step
    # the progress bar and its Cancel button went with the finished work, in the same run
    assert not [b for b in at.button if b.label == "Cancel"] and not at.get("progress")
    at.button(key="btn_cancel_now").click().run()
    assert not at.exception
    assert any("Test search cancelled" in i.value and "nothing was changed" in i.value for i in at.info)
    assert "v1 is still current" in " ".join(i.value for i in at.info)
    assert at.session_state["history"].current_id == 1


def test_work_stopped_at_a_checkpoint_is_reported_as_cancelled_not_as_an_error():
    at = AppTest.from_function(_page, default_timeout=60)
    at.session_state["raise_cancel"] = True
    at.run()
    at.button(key="btn_run").click().run()
    assert not at.exception and not at.error
    assert any("cancelled" in i.value for i in at.info)
    assert at.session_state["history"].current_id == 0  # nothing applied
    assert any(m.value == "current v0" for m in at.markdown)
