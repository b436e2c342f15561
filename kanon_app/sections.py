"""Lazy page sections: only the tab shown is computed.

``st.tabs`` runs every tab's body on every rerun (the browser only hides the others), so a page with a
costly tab pays for it even when the officer never opens it. Tabs created with a ``key`` and
``on_change="rerun"`` know which one is open; ``for _ in when_open(tab):`` runs its body, inside that tab,
only when it is the open one (zero or one time), which keeps the page's ``with tab:`` layout unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def when_open(tab: Any) -> Iterator[None]:
    """Yield once, inside ``tab``, when it is the open tab of lazy ``st.tabs``; never otherwise.

    Tabs without a key report ``open`` as None (they cannot know): their body then runs as before.
    """
    if tab.open is False:
        return
    with tab:
        yield
