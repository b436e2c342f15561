"""A three-step guide for the first visit, shown on the Data page while the sample data is loaded.

Dismissed once, it stays hidden for the session (a workflow key, not a widget key, so a page change does
not bring it back).
"""

from __future__ import annotations

import streamlit as st

from . import state

DISMISSED = "guide_dismissed"

STEPS = (
    "**Look at the roles below.** The sample survey opens with its quasi-identifiers, weight and design "
    "already set; the sidebar counts the records in groups smaller than k for every version.",
    "**See where the risk is** on the Risk page (group sizes, k achieved) and the MINUCs page (the smallest "
    "combinations of values that single a record out).",
    "**Treat and check.** Recode or Suppress make new versions (undo any time in the sidebar); Compare shows "
    "what changed in the statistics; Export writes the data, the recipe and a report. Your own file: "
    "open *Load data* and drop it there.",
)


def _dismiss() -> None:
    st.session_state[DISMISSED] = True


def render() -> None:
    """The guide, unless dismissed or another file than a sample is loaded."""
    if st.session_state.get(DISMISSED) or state.source().get("kind") != "sample":
        return
    with st.container(border=True, key="first_run_guide"):
        st.markdown("#### Getting started in three steps")
        for i, text in enumerate(STEPS, 1):
            st.markdown(f"{i}. {text}")
        st.caption("The glossary in the sidebar explains k, MINUCs, SUDA and the other terms in plain words.")
        st.button("Got it, hide this guide", key="btn_guide_dismiss", on_click=_dismiss)
