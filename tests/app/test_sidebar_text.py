"""Data values in the sidebar (file names, variable names and labels in step descriptions) are shown as
text: no Markdown emphasis, LaTeX, link, HTML or Streamlit icon directive is read out of them."""

from __future__ import annotations

import re

import pandas as pd
from streamlit.testing.v1 import AppTest

from kanon_core import fmt
from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.treat.recode import RecodeStep

NAME = "inc$_*x*<b>:material/home:"


def _app() -> None:
    import streamlit as st

    from kanon_app import sidebar, state

    state.init()
    with st.sidebar:
        sidebar.render_timeline()


def test_step_text_and_file_name_are_escaped():
    frame = pd.DataFrame({NAME: [1, 2, 3, 3, 4, 4] * 5, "q": [1, 2] * 15})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=(NAME, "q")), name="d"))
    h.apply(RecodeStep(column=NAME, merge=(1, 2), into=1))
    at = AppTest.from_function(_app, default_timeout=60)
    at.session_state["history"] = h
    at.session_state["source"] = {"kind": "upload", "title": "[$x$](http://e) *f*.csv"}
    at.run()
    assert not at.exception
    current = next(m.value for m in at.sidebar.markdown if m.value.startswith("**"))
    assert fmt.markdown_literal(NAME) in current
    for raw in ("$_", "*x*", "<b>"):
        assert raw not in current, raw
    assert not re.search(r"(?<!\\):material/home", current)  # the directive's colon is escaped
    caption = " ".join(c.value for c in at.sidebar.caption)
    assert "\\[\\$x\\$\\](http://e) \\*f\\*.csv" in caption
    assert "[$x$]" not in caption


def test_markdown_literal_cases():
    m = fmt.markdown_literal
    assert m("v0: Original data") == "v0: Original data"  # plain text stays readable
    assert m("$1,000 or less") == "\\$1,000 or less"
    assert m("a_b *c*") == "a\\_b \\*c\\*"
    assert m(":red[x] :smile:") == "\\:red\\[x\\] \\:smile:"
    assert m("- item") == "\\- item" and m("1. x") == "1\\. x" and m("3.5") == "3\\.5"
    assert m("<script>") == "&lt;script&gt;"
