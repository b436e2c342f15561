"""Rendering less without showing anything else: the sidebar's risk completed after the page, the Data page's
risk line filled last and its preview a page of records at a time."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from kanon_app.pager import PAGE_ROWS
from kanon_app.samples import load_sample
from kanon_core.fmt import markdown_literal
from kanon_core.history import History
from kanon_core.risk.timeline import version_risk

from .helpers import APP, metric


def test_cold_session_shows_the_same_risk_in_sidebar_and_data_page():
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    ds = load_sample("els")
    r = version_risk(ds, ds, 3)
    current = next(m.value for m in at.sidebar.markdown if m.value.startswith("**"))
    assert markdown_literal(f"{r.n_violating:,} < k=3") in current  # completed after the page, in the same run
    assert metric(at, "Records violating k=3") == f"{r.n_violating:,}"
    assert metric(at, "k achieved") == f"{r.k_achieved:,}"


def _deferred_timeline() -> None:
    import streamlit as st

    from kanon_app import sidebar, state

    state.init()
    with st.sidebar:
        finish = sidebar.render_timeline(defer=True)
    st.markdown("the page")
    finish()


def test_version_lines_are_buttons_once_complete():
    """Versions not counted yet are drawn as text first and completed after the page: the other versions as
    their buttons, the current one in bold, each with the core's risk, and no text left in their place."""
    from kanon_core.steps import SetMissing

    h = History.start(load_sample("els"))
    v1 = h.apply(SetMissing("category"))
    v2 = h.apply(SetMissing("wildcard"))
    at = AppTest.from_function(_deferred_timeline, default_timeout=120)
    at.session_state["history"] = h
    at.session_state["source"] = {"kind": "sample", "title": "sample"}
    at.run()
    assert not at.exception
    original = h.original.dataset
    for vid, v in ((0, h.original), (1, v1)):
        r = version_risk(original, v.dataset, 3)
        assert markdown_literal(f"{r.n_violating:,} < k=3") in at.sidebar.button(key=f"btn_goto_{vid}").label
    r = version_risk(original, v2.dataset, 3)
    current = [m.value for m in at.sidebar.markdown if m.value.startswith("**")]
    assert len(current) == 1 and markdown_literal(f"{r.n_violating:,} < k=3") in current[0]
    assert not any(m.value.startswith(("v0:", "v1:")) for m in at.sidebar.markdown)


def test_data_preview_pages():
    at = AppTest.from_file(APP, default_timeout=120).run()
    ds = load_sample("els")
    preview = next(df.value for df in at.dataframe if list(df.value.columns) == list(ds.frame.columns))
    assert len(preview) == PAGE_ROWS
    assert preview.index.tolist() == list(range(PAGE_ROWS))
    at.number_input(key="w_preview_page").set_value(2).run()
    assert not at.exception
    preview = next(df.value for df in at.dataframe if list(df.value.columns) == list(ds.frame.columns))
    assert preview.index.tolist() == list(range(PAGE_ROWS, 2 * PAGE_ROWS))
    assert any(c.value == f"records {PAGE_ROWS + 1}–{2 * PAGE_ROWS} of {ds.n_records:,}" for c in at.caption)


def test_the_first_run_ends_with_the_chart_code_preload_and_later_runs_do_not():
    """A session's first page ends with one empty, static chart (so the browser loads its chart code while the
    officer reads, kanon_app.chart_code); a valid figure (an invalid one shows an error box instead), drawn
    once: the next run of the same page has no chart."""
    import json

    from kanon_app.chart_code import LOADED

    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 1  # the Data page draws no chart of its own
    spec = json.loads(charts[0].proto.spec)
    assert spec["data"] == [] and spec["layout"]["height"] == 10
    assert json.loads(charts[0].proto.config)["staticPlot"] is True
    assert at.session_state[LOADED] is True
    at.run()
    assert not at.exception and len(at.get("plotly_chart")) == 0
