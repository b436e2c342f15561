"""The glossary in the sidebar, so every page can explain its terms (texts in :mod:`kanon_core.glossary`)."""

from __future__ import annotations

import streamlit as st

from kanon_core.glossary import GLOSSARY


def render_sidebar() -> None:
    with st.sidebar.expander("Glossary", icon=":material/menu_book:"):
        for term in GLOSSARY:
            st.markdown(term.markdown())
