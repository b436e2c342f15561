"""Streamlit's chart code loaded in the browser while the officer reads the session's first page.

The browser draws Plotly charts with code it loads for the session's first chart (Streamlit's Plotly
element: 1.3-1.6 s of browser work in headless Chromium on 2 cores), so the first page with a chart (Compare,
Risk, MINUCs) was drawn that much later than its run ended. The session's first page therefore ends with an
empty static chart ten pixels high: its code loads once that page is drawn, while the officer reads it.
Later runs do not draw it. When the app runs under its launcher, the page has already asked for that code,
while it waited for the first run (:mod:`kanon_app.page_head`); the empty chart then costs the browser its
first draw only, and still loads the code under a plain ``streamlit run app.py``.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

LOADED = "chart_code_loaded"
"""Session-state flag (bound to no widget): the empty chart was sent to this session's browser."""


def empty_figure() -> Any:
    """The empty chart: no trace, no axis, 10 px high (the least Plotly accepts), no margins."""
    import plotly.graph_objects as go

    return go.Figure(layout={"height": 10, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}, "showlegend": False,
                             "xaxis": {"visible": False}, "yaxis": {"visible": False}})


def load_once() -> None:
    """Draw the empty chart at the end of the session's first run; nothing on later runs."""
    if st.session_state.get(LOADED):
        return
    st.session_state[LOADED] = True
    st.plotly_chart(empty_figure(), config={"staticPlot": True, "displayModeBar": False}, key="chart_code_preload")
