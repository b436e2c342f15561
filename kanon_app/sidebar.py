"""The sidebar: the version timeline with a risk summary each, undo/redo and branching."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from kanon_core.errors import KanonError
from kanon_core.fmt import markdown_literal
from kanon_core.history import History, Version

from . import shared_results, state

CURRENT_MARK = ":material/arrow_right: "
"""Marks the current version: a Material icon, which renders everywhere (emoji need fonts)."""


def _undo() -> None:
    state.history().undo()


def _redo() -> None:
    state.history().redo()


def _checkout(vid: int) -> None:
    state.history().checkout(vid)


def render_timeline(defer: bool = False) -> Callable[[], None]:
    """The version timeline, each version with its risk at the session's k (and its MINUCs once found).

    With ``defer``, a version whose risk is not memoised yet is drawn without it and completed by the
    returned function, which the app calls after the page: on a fresh session the page is sent to the
    browser (which draws it meanwhile) before the first risk count, which loads the compiled kernels (a
    second on 2 cores). Without ``defer`` (or once called) every line is complete; the returned function is
    then a no-op.
    """
    hist = state.history()
    k = int(state.settings()["k"])
    alpha = float(state.settings().get("alpha", 1.0))
    memo_key = k if alpha == 1.0 else (k, alpha)  # alpha 1 keeps the key other pages look up
    k_text = f"k={k}" if alpha == 1.0 else f"k={k}, alpha {alpha:g}"
    st.sidebar.markdown("### Versions")
    src = state.source()
    st.sidebar.caption(f"Data: {markdown_literal(src.get('title', src.get('name', '')))}")
    st.sidebar.button("Undo", icon=":material/undo:", disabled=not hist.can_undo(), key="btn_undo", on_click=_undo)
    st.sidebar.button("Redo", icon=":material/redo:", disabled=not hist.can_redo(), key="btn_redo", on_click=_redo)
    original = hist.original.dataset
    pending: list[tuple[Any, int]] = []

    def risk_of(v: Version) -> Any:
        try:
            return state.memo("version_risk", memo_key,
                              lambda: shared_results.version_risk(original, v.dataset, k, alpha),
                              version=v)
        except KanonError:
            return None

    for vid in sorted(hist.versions):
        v = hist.versions[vid]
        slot = st.sidebar.empty()
        if defer and state.memo_peek("version_risk", memo_key, version=v) is None:
            _entry(slot, hist, vid, None, k, k_text, final=False)
            pending.append((slot, vid))
        else:
            _entry(slot, hist, vid, risk_of(v), k, k_text)

    def finish() -> None:
        while pending:
            slot, vid = pending.pop(0)
            _entry(slot, hist, vid, risk_of(hist.versions[vid]), k, k_text)

    return finish


def minucs_shown(v: Version, k: int) -> Any:
    """The MINUC search of version ``v`` the timeline shows: the latest made on its roles' QIs at the session's
    ``k``, of every size, that the officer asked for, or None. A line reads at one k throughout (a search at
    another k is not shown beside the count below this one), a search limited to small sizes counts only some
    MINUCs, and a search started ahead of the MINUCs page's click stays hidden here as it does on that page
    until the click (a search can take seconds, so none is made here)."""
    from .prefetch import minucs_held_back

    runs = [res for p, res in state.memo_found("minucs", v)  # p: (QIs, k, largest size or None, semantics)
            if p[0] == v.dataset.roles.qis and p[1] == k and p[2] is None and not minucs_held_back(p, v)]
    return runs[-1] if runs else None


def _entry(slot: Any, hist: History, vid: int, r: Any, k: int, k_text: str, final: bool = True) -> None:
    """One version's line in ``slot``: the current one in bold, the others as buttons that check them out.
    A line that is not ``final`` (its risk still to come) is plain text: its button is drawn once, complete."""
    v = hist.versions[vid]
    risk = "" if r is None else f" · {r.n_violating:,} < {k_text}" + (
        f" · {r.suppressed_cells:,} suppressed" if r.suppressed_cells else "")
    found = minucs_shown(v, k)
    if found is not None:
        risk += f" · {found.total:,} MINUCs (k={k})"
    marker = CURRENT_MARK if vid == hist.current_id else ""
    depth = len(hist.lineage(vid)) - 1
    indent = "\u2003" * depth  # em spaces: visible indentation, outside any markdown emphasis
    body = markdown_literal(f"v{vid}: {v.label}{risk}")  # a step's text shown as written, never as Markdown
    if vid == hist.current_id:
        slot.markdown(f"{indent}**{marker}{body}**")
    elif not final:
        slot.markdown(f"{indent}{body}")
    else:
        slot.button(f"{indent}{marker}{body}", key=f"btn_goto_{vid}", help="Make this version current (branch from it)",
                    on_click=_checkout, args=(vid,))
