"""Workflow state kept in ``st.session_state`` under keys that no widget is bound to.

Widgets get their own ``w_*`` keys and copy their value into the workflow state; Streamlit forgets
widget keys of pages not shown, the workflow state survives page changes. Expensive results are memoised
per (history, version, function, parameters) — never keyed on the frame itself, which Streamlit would
hash from a sample.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import streamlit as st

from kanon_core.dataset import Dataset
from kanon_core.history import History, Version
from kanon_core.steps import Step

from .cache import SessionView
from .samples import DEFAULT_SAMPLE, SAMPLES, load_sample

T = TypeVar("T")
DEFAULT_K = 3
"""The session's k until the officer changes it: the same on every page and in the report."""
BASELINE = -1
"""The Compare page's default "Before": the original data with the After version's roles, as in the report
(memo keys of comparisons hold it, so the report finds the Compare page's results)."""


def init() -> None:
    """Load the default sample with preset roles on first open, so a demo needs no clicks."""
    ss = st.session_state
    if "history" not in ss:
        ss["history"] = History.start(default_sample())
        ss["source"] = {"kind": "sample", "key": DEFAULT_SAMPLE, "title": SAMPLES[DEFAULT_SAMPLE].title,
                        "path": str(SAMPLES[DEFAULT_SAMPLE].path)}
    ss.setdefault("settings", {"k": DEFAULT_K})
    if not isinstance(ss.get("memo"), SessionView):  # a fresh view: this session's part of the shared cache
        ss["memo"] = SessionView()
    ss.setdefault("flash", [])


def default_sample() -> Dataset:
    """The default sample, read once per server and shared by the sessions that open it (a Dataset is
    immutable; its encoded columns are then computed once for all): a new session opens without rereading."""
    from .cache import shared

    sample = SAMPLES[DEFAULT_SAMPLE]
    key = ("sample", DEFAULT_SAMPLE, str(sample.path), sample.path.stat().st_mtime_ns)
    ds = shared().get(key)
    if ds is None:
        ds = load_sample(DEFAULT_SAMPLE)
        shared().put(key, ds)
    return ds


def _ss():
    """Session state, initialised on first use: a page opened by its URL may run before app.py has."""
    if "history" not in st.session_state or not isinstance(st.session_state.get("memo"), SessionView):
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
    st.session_state["memo"] = SessionView()
    st.session_state["hierarchies"] = {}
    st.session_state[KEPT_WIDGETS] = {}  # choices made on other data do not carry over
    st.session_state[KEPT_DEFAULTS] = {}
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


DOWNLOAD_FAILURES = "download_failures"
"""Session key (bound to no widget): file name -> why a download made on click failed (see kanon_app.export_ui)."""


def download_failures() -> dict[str, str]:
    """This session's record of downloads that failed since the Export page last said so: a plain dict, which
    the download's own thread fills (it runs outside any page run)."""
    return st.session_state.setdefault(DOWNLOAD_FAILURES, {})


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


def memo_key(name: str, params: Hashable, version: Version | None = None) -> tuple:
    """The key of ``name`` for these parameters and the version (default current) in this session's memo, and
    of its background job: work started ahead stores under it what the page's own call then finds."""
    return (history().uid, (version or current()).id, name, params)


def memo(name: str, params: Hashable, compute: Callable[[], T], version: Version | None = None) -> T:
    """Memoise ``compute()`` for the given version (default current) and parameters.

    Kept in the server's shared cache (kanon_app.cache: bounded by bytes, least recently used evicted,
    thread-safe) under this session's own keys, so a rerun recomputes only what its inputs changed.
    """
    cache: SessionView = _ss()["memo"]
    return cache.get_or_compute(memo_key(name, params, version), compute)  # type: ignore[no-any-return]


def session_view() -> SessionView:
    """This session's part of the shared result cache (a worker thread stores into it without the session)."""
    return _ss()["memo"]


def memo_peek(name: str, params: Hashable, version: Version | None = None) -> Any | None:
    """The memoised value when it exists (None otherwise): lets a page offer a run instead of starting it."""
    from . import background

    background.sweep()  # jobs whose results are in the memo now
    return _ss()["memo"].get(memo_key(name, params, version))  # type: ignore[no-any-return]


def memo_found(name: str, version: Version) -> list[tuple[Hashable, Any]]:
    """All memoised (parameters, value) pairs of ``name`` for a version (e.g. MINUC runs already made)."""
    uid = history().uid
    return [(key[3], value) for key, value in _ss()["memo"].items()
            if key[0] == uid and key[1] == version.id and key[2] == name]


def memo_put(name: str, params: Hashable, value: Any, version: Version | None = None) -> None:
    """Store a value computed in the page body (e.g. with a progress bar) under the memo's key."""
    _ss()["memo"].put(memo_key(name, params, version), value)


def cancelled_message(label: str) -> str:
    """What the page says after a cancel: the work stopped and nothing changed."""
    return f"{label} cancelled: nothing was changed, version v{current().id} is still current."


def _say_cancelled(label: str) -> None:
    """The Cancel button's callback: Streamlit stops the running script for the rerun this click starts,
    and this message is shown on that rerun (the work's result is never stored or applied)."""
    flash(cancelled_message(label), "info")


def run_in_background(name: str, params: Hashable, label: str, work: Callable[[Any], T], start_now: bool,
                      version: Version | None = None) -> T | None:
    """Run ``work(progress)`` off the script thread (kanon_app.background) for the version (default current)
    and parameters; the result, memoised under ``name``, once ready (None while not started, cancelled or
    failed, each said on the page). ``start_now``: the page's Run button was just clicked."""
    from . import background

    key = memo_key(name, params, version)
    view: SessionView = _ss()["memo"]
    value = view.get(key)
    if value is not None:
        return value  # type: ignore[no-any-return]
    return background.run(name, key, label, work, start_now=start_now, store=lambda v: view.put(key, v),
                          cancelled_text=cancelled_message(label))


def job_running(name: str, params: Hashable, version: Version | None = None) -> bool:
    """Whether this session's background job ``name`` for these parameters is still running."""
    from . import background

    return background.running(name, memo_key(name, params, version)) is not None


def run_with_progress(label: str, work: Callable[[Any], T]) -> T | None:
    """Run ``work(progress)`` in the page body with a progress bar and a Cancel button.

    Clicking Cancel (or any other widget) makes Streamlit stop this script run at the next progress
    update; kanon_core's computations stop at their next checkpoint. Errors a user can act on become a
    message and ``None`` is returned.
    """
    from kanon_core.errors import Cancelled, KanonError
    from kanon_core.progress import Progress

    holder = st.empty()  # the bar and its Cancel button, both gone once the work ends (in this same run)
    with holder.container():
        bar = st.progress(0.0, text=label)
        st.button("Cancel", key=f"btn_cancel_{label}", help="Stop this computation", icon=":material/cancel:",
                  on_click=_say_cancelled, args=(label,))

    def update(fraction: float, message: str) -> None:
        bar.progress(min(max(fraction, 0.0), 1.0), text=f"{label}: {message}" if message else label)

    try:
        result = work(Progress(update))
    except Cancelled:
        holder.empty()
        st.info(cancelled_message(label))
        return None
    except KanonError as exc:
        holder.empty()
        st.error(str(exc))
        return None
    holder.empty()
    return result


def session_k() -> int:
    """The one k of the session, used by MINUCs, Risk, Suppress, Recode, the sidebar and the report."""
    return int(settings().get("k", DEFAULT_K))


def _copy_widget(widget_key: str, setting: str, cast: Callable[[Any], Any]) -> None:
    settings()[setting] = cast(st.session_state[widget_key])


def shared_number_input(container: Any, label: str, setting: str, widget_key: str, default: float,
                        cast: Callable[[Any], Any] = float, **kwargs: Any) -> Any:
    """A number input showing a session setting and writing it back in its on_change callback.

    The setting lives in the workflow state (no widget is bound to it), so every page shows the same
    value. The copy happens in the callback, which Streamlit runs before the script: the sidebar, drawn
    before the page, already sees the new value (copying in the page body made it lag one rerun behind).
    The field's key is written only when it differs from the setting: a key written in a run is sent to
    the browser with Streamlit's instruction to set the field (``set_value``), also by a run that ends while
    the officer is editing the field.
    """
    value = cast(settings().get(setting, default))
    lo, hi = kwargs.get("min_value"), kwargs.get("max_value")
    value = value if lo is None else max(cast(lo), value)
    value = value if hi is None else min(cast(hi), value)
    if st.session_state.get(widget_key) != value:
        st.session_state[widget_key] = value
    return cast(container.number_input(label, key=widget_key, on_change=_copy_widget,
                                       args=(widget_key, setting, cast), **kwargs))


def k_input(container: Any, widget_key: str, **kwargs: Any) -> int:
    """The k field of a page, bound to the session's k (see :func:`shared_number_input`)."""
    kwargs.setdefault("min_value", 2)
    kwargs.setdefault("max_value", 100)
    kwargs.setdefault("step", 1)
    return shared_number_input(container, "k", "k", widget_key, DEFAULT_K, cast=int, **kwargs)


KEPT_WIDGETS = "kept_widgets"
"""Workflow state: the officer's last value of every widget (keys ``w_...``), by key (see :func:`widget_value`)."""

_KEPT_TYPES = (str, int, float, bool, list, tuple, type(None))


def keep_widget_values() -> None:
    """Copy the widgets' values into workflow state at the start of every run (app.py).

    Why: Streamlit deletes a widget's state at the end of a run that does not draw it, so opening another page
    and coming back gave the officer's choices (the quasi-identifiers of the Recode page, its suppression limit,
    the protection model) back as their defaults. At a run's start the session state still holds the values of
    the widgets the last run drew: they are kept here, a key no widget is bound to, and :func:`widget_value`
    seeds a widget from them when its page is drawn again. Plain values only (a file upload is not kept)."""
    ss = st.session_state
    kept = ss.setdefault(KEPT_WIDGETS, {})
    for key in list(ss.keys()):
        if str(key).startswith("w_"):
            value = ss[key]
            if isinstance(value, _KEPT_TYPES):
                kept[key] = list(value) if isinstance(value, (list, tuple)) else value


KEPT_DEFAULTS = "kept_widget_defaults"
"""Workflow state: the default each widget was last given (see :func:`widget_value`)."""


def widget_value(widget_key: str, default: Any, options: Sequence[Any] | None = None) -> None:
    """Seed a widget's key before the widget is created: the officer's last value of it (kept across pages by
    :func:`keep_widget_values`) when there is one and the default has not changed since, else ``default``. A
    changed default means the choice was made on something else (new roles make new quasi-identifiers the
    default: they win over the list chosen before). With ``options``, a kept value must still be one of them (a
    list is kept to its members that still are)."""
    ss = st.session_state
    defaults = ss.setdefault(KEPT_DEFAULTS, {})
    same_default = widget_key in defaults and defaults[widget_key] == default
    defaults[widget_key] = default
    if widget_key in ss:
        return
    kept = ss.get(KEPT_WIDGETS, {})
    value = kept[widget_key] if widget_key in kept and same_default else default
    if options is not None and value is not default:
        allowed = list(options)
        if isinstance(value, list):
            value = [v for v in value if v in allowed]
        elif value not in allowed:
            value = default
    st.session_state[widget_key] = value
