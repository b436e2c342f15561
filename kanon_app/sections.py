"""Lazy page sections: only the tab shown is computed, and switching tabs reruns only the tabs.

``st.tabs`` runs every tab's body on every rerun (the browser only hides the others), so a page with a
costly tab pays for it even when the officer never opens it; and a plain rerun redraws the whole page
(metrics, charts, the sidebar) for a click inside one tab. Here the tabs are created with a ``key`` and
``on_change="rerun"``, so they know which one is open, inside an ``st.fragment``, so a tab switch or a widget
inside a tab reruns only the tabs. A page writes each tab's body as a function and hands them to
:func:`lazy_tabs` where the tabs stand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from kanon_core import threads


def run_open(tabs: Sequence[Any], bodies: Sequence[Callable[[], None]]) -> None:
    """Call the body of the open tab, inside it; tabs that cannot know (no key: ``open`` is None) all run."""
    for tab, body in zip(tabs, bodies, strict=True):
        if tab.open is not False:
            with tab:
                body()


def lazy_tabs(labels: Sequence[str], key: str, bodies: Sequence[Callable[[], None]]) -> None:
    """Tabs ``labels`` (widget ``key``, its value the open tab's label) whose open body alone runs, in a
    fragment of its own."""
    if len(labels) != len(bodies):
        raise ValueError("one body per tab")

    @st.fragment
    def _tabs() -> None:
        with threads.foreground():  # a tab switch reruns only this: work started ahead waits meanwhile
            run_open(st.tabs(list(labels), key=key, on_change="rerun"), bodies)

    _tabs()
