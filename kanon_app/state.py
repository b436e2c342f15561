"""Workflow state kept in ``st.session_state`` under keys that no widget is bound to.

Widgets get their own ``w_*`` keys and copy their value into the workflow state; Streamlit forgets
widget keys of pages not shown, the workflow state survives page changes. Expensive results are memoised
per (history, version, function, parameters) — never keyed on the frame itself, which Streamlit would
hash from a sample.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import streamlit as st

from kanon_core.dataset import Dataset
from kanon_core.history import History, Version
from kanon_core.steps import Step

from .samples import DEFAULT_SAMPLE, SAMPLES, load_sample

T = TypeVar("T")
MEMO_SIZE = 48


def init() -> None:
    """Load the default sample with preset roles on first open, so a demo needs no clicks."""
    ss = st.session_state
    if "history" not in ss:
        ss["history"] = History.start(load_sample(DEFAULT_SAMPLE))
        ss["source"] = {"kind": "sample", "key": DEFAULT_SAMPLE, "title": SAMPLES[DEFAULT_SAMPLE].title,
                        "path": str(SAMPLES[DEFAULT_SAMPLE].path)}
    ss.setdefault("settings", {"k": 3})
    ss.setdefault("memo", OrderedDict())
    ss.setdefault("flash", [])


def _ss():
    """Session state, initialised on first use: a page opened by its URL may run before app.py has."""
    if "history" not in st.session_state or "memo" not in st.session_state:
        init()
    return st.session_state


def history() -> History:
    return _ss()["history"]


def current() -> Version:
    return history().current


def dataset() -> Dataset:
    return current().dataset


def settings() -> dict[str, Any]:
    return _ss()["settings"]


def set_source(ds: Dataset, source: dict[str, Any]) -> None:
    """Start a new session history on freshly loaded data (the previous one is dropped)."""
    st.session_state["history"] = History.start(ds)
    st.session_state["source"] = source
    st.session_state["memo"] = OrderedDict()
    st.session_state["hierarchies"] = {}
    for key in [k for k in st.session_state if str(k).startswith("result_")]:
        del st.session_state[key]


def source() -> dict[str, Any]:
    return _ss()["source"]


def hierarchies() -> dict:
    """The officer's hierarchies by variable (built, imported or accepted defaults); kept across pages."""
    return _ss().setdefault("hierarchies", {})


def hierarchy_folder() -> str | None:
    """Folder holding ARX hierarchy files for the loaded sample (the Adult sample ships them)."""
    src = source()
    if src.get("kind") == "sample":
        from pathlib import Path

        return str(Path(src["path"]).parent)
    return None


def apply(step: Step) -> Version:
    return history().apply(step)


def flash(message: str, kind: str = "success") -> None:
    """A message shown once, on the page's next render (callbacks run before the page script)."""
    _ss()["flash"].append((kind, message))


def show_flash() -> None:
    for kind, msg in st.session_state.get("flash", []):
        {"success": st.success, "error": st.error, "warning": st.warning}.get(kind, st.info)(msg)
    st.session_state["flash"] = []


def run_step(step: Step, done: str | None = None) -> None:
    """Apply a step as a widget callback; errors become a message, never a traceback."""
    from kanon_core.errors import KanonError

    try:
        apply(step)
    except KanonError as exc:
        flash(str(exc), "error")
    else:
        if done:
            flash(done)


def memo(name: str, params: Hashable, compute: Callable[[], T], version: Version | None = None) -> T:
    """Memoise ``compute()`` for the given version (default current) and parameters (LRU, bounded)."""
    version = version or current()
    key = (history().uid, version.id, name, params)
    cache: OrderedDict = _ss()["memo"]
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = compute()
    cache[key] = value
    while len(cache) > MEMO_SIZE:
        cache.popitem(last=False)
    return value


def memo_peek(name: str, params: Hashable, version: Version | None = None) -> Any | None:
    """The memoised value when it exists (None otherwise): lets a page offer a run instead of starting it."""
    version = version or current()
    return _ss()["memo"].get((history().uid, version.id, name, params))


def memo_found(name: str, version: Version) -> list[tuple[Hashable, Any]]:
    """All memoised (parameters, value) pairs of ``name`` for a version (e.g. MINUC runs already made)."""
    uid = history().uid
    return [(key[3], value) for key, value in _ss()["memo"].items()
            if key[0] == uid and key[1] == version.id and key[2] == name]


def memo_put(name: str, params: Hashable, value: Any, version: Version | None = None) -> None:
    """Store a value computed in the page body (e.g. with a progress bar) under the memo's key."""
    version = version or current()
    cache: OrderedDict = _ss()["memo"]
    cache[(history().uid, version.id, name, params)] = value
    while len(cache) > MEMO_SIZE:
        cache.popitem(last=False)


def run_with_progress(label: str, work: Callable[[Any], T]) -> T | None:
    """Run ``work(progress)`` in the page body with a progress bar and a Cancel button.

    Clicking Cancel (or any other widget) makes Streamlit stop this script run at the next progress
    update; kanon_core's computations stop at their next checkpoint. Errors a user can act on become a
    message and ``None`` is returned.
    """
    from kanon_core.errors import KanonError
    from kanon_core.progress import Progress

    bar = st.progress(0.0, text=label)
    st.button("Cancel", key=f"btn_cancel_{label}", help="Stop this computation")

    def update(fraction: float, message: str) -> None:
        bar.progress(min(max(fraction, 0.0), 1.0), text=f"{label}: {message}" if message else label)

    try:
        result = work(Progress(update))
    except KanonError as exc:
        bar.empty()
        st.error(str(exc))
        return None
    bar.empty()
    return result


def widget_value(widget_key: str, default: Any) -> None:
    """Seed a widget's key from workflow state before the widget is created."""
    if widget_key not in st.session_state:
        st.session_state[widget_key] = default
