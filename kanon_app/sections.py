"""Lazy page sections: only the tab shown is computed.

``st.tabs`` runs every tab's body on every rerun (the browser only hides the others), so a page with a
costly tab pays for it even when the officer never opens it. Tabs created with a ``key`` and
``on_change="rerun"`` know which one is open. A page writes each tab's body as a function decorated with
``@in_tab(tab)``: it is called at once, inside the tab, when that tab is the open one, and not at all
otherwise (the layout stays that of ``with tab:``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def in_tab(tab: Any) -> Callable[[Callable[[], None]], None]:
    """Decorator: run the body now, inside ``tab``, unless ``tab`` is a lazy tab that is not open.

    Tabs without a key report ``open`` as None (they cannot know): their body then runs, as before.
    """
    def run(body: Callable[[], None]) -> None:
        if tab.open is False:
            return None
        with tab:
            body()
        return None

    return run
