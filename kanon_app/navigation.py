"""Keep every run on the app's own navigation (``app.py``), also when a page is opened by its URL.

Streamlit starts a server in its legacy multipage mode whenever a ``pages/`` folder sits next to the main
script, and leaves that mode only once ``st.navigation`` has run. If the first request a server sees is a
deep link (``/recode``), the page script runs on its own: no registered titles, no version timeline, and
the legacy mode sticks for every later session. Each page calls :func:`ensure_app_navigation` first; in
legacy mode it switches the server to the app's navigation and reruns, so ``app.py`` runs and then the
requested page. It does so only on a session's first run (nothing is lost: no widget has been used yet);
Streamlit's AppTest puts every run in the legacy mode and runs the page alone, which is fine for tests of
page logic and must not trigger a rerun that would swallow a simulated click.
"""

from __future__ import annotations

import streamlit as st


def ensure_app_navigation() -> None:
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and "history" not in st.session_state:
        PagesManager.uses_pages_directory = False
        st.rerun()
