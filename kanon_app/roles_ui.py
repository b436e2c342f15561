"""The Data page's role table: one row per variable with its label, distinct and missing values and a role
selector, pre-filled from :mod:`kanon_core.guidance` when the data has no roles yet, and one button that
applies the roles as a recorded step (``set_roles``).

The table is an ``st.data_editor`` keyed per (history, version), so a new version starts from its own
roles and no edit of an older version leaks into it. The button's callback rebuilds the chosen roles from
the editor's edits (Streamlit keeps them in ``session_state[key]["edited_rows"]``) before the page runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.describe import too_many_distinct
from kanon_core.errors import KanonError
from kanon_core.guidance import (
    DIRECT,
    QI,
    ROLE_WORDS,
    ROLES,
    WEIGHT,
    RoleGuidance,
    roles_from_assignments,
)
from kanon_core.steps import SetRoles
from kanon_core.utility.design import SurveyDesign

from . import shared_results, state

CONFIRM_MANY = "w_roles_table_many"


def guidance(ds: Dataset) -> RoleGuidance:
    """Suggestions for the current version, memoised (they read every column once)."""
    return state.memo("role_guidance", None, lambda: shared_results.role_guidance(ds))


def table_key() -> str:
    h = state.history()
    return f"w_role_table_{h.uid}_{h.current_id}"


def no_roles(ds: Dataset) -> bool:
    """No role set at all (compared by content: a server that reloads edited modules holds older classes)."""
    return not any(ds.roles.to_dict().values())


def role_table(ds: Dataset, g: RoleGuidance) -> pd.DataFrame:
    """The rows shown: the version's own roles, or the suggestions when no role is set yet."""
    use_suggestions = no_roles(ds)
    rows = []
    for s in g.suggestions:
        rows.append({
            "variable": s.variable,
            "label": s.label,
            "distinct": s.distinct,
            "missing": s.missing,
            "role": s.role if use_suggestions else ds.roles.role_of(s.variable),
            "suggestion": s.role,
            "why": s.reason,
        })
    return pd.DataFrame(rows, columns=["variable", "label", "distinct", "missing", "role", "suggestion", "why"])


def edited_assignments(base: pd.DataFrame, state_value: Mapping[str, Any] | None) -> dict[str, str]:
    """Variable -> role after the officer's edits, given the editor's state (``{"edited_rows": {row:
    {column: value}}, ...}``, as Streamlit keeps it; rows are never added or removed)."""
    roles = dict(zip(base["variable"], base["role"], strict=True))
    edits = (state_value or {}).get("edited_rows", {})
    for row, change in edits.items():
        if "role" in change and change["role"] is not None:
            roles[base["variable"].iloc[int(row)]] = change["role"]
    return roles


def apply_roles(new: Roles, confirm_many: bool) -> bool:
    """Check and apply roles as a new version (a widget callback): very many distinct values in a QI need
    a confirmation, a weight must be valid, a design with an fpc must be valid now. Returns whether applied."""
    ds = state.dataset()
    many = too_many_distinct(ds, list(new.qis))
    if many and not confirm_many:
        state.flash("These quasi-identifiers have very many distinct values, which makes almost every record "
                    "unique: " + ", ".join(f"{c} ({n:,})" for c, n in many.items())
                    + ". Recode them first, or tick the box to use them anyway.", "warning")
        return False
    try:
        ds.with_roles(new).weights()
        if new.fpc is not None:  # the design must be valid now, not at the first estimate on the Compare page
            SurveyDesign.from_dataset(ds.with_roles(new))
    except KanonError as exc:
        state.flash(str(exc), "error")
        return False
    if new.to_dict() == ds.roles.to_dict():
        state.flash("These are already the roles of this version.", "info")
        return False
    state.run_step(SetRoles.from_roles(new), roles_message(new))
    return True


def roles_message(r: Roles) -> str:
    parts = [f"{len(r.qis)} quasi-identifier(s)"]
    if r.weight:
        parts.append(f"weight {r.weight}")
    if r.direct_ids:
        parts.append(f"{len(r.direct_ids)} identifier(s) excluded")
    return "Roles applied as a new version. " + ", ".join(parts) + "."


def _use_roles(base: pd.DataFrame, key: str) -> None:
    try:
        new = roles_from_assignments(edited_assignments(base, st.session_state.get(key)))
    except KanonError as exc:
        state.flash(str(exc), "error")
        return
    apply_roles(new, bool(st.session_state.get(CONFIRM_MANY)))


def render(ds: Dataset) -> None:
    """The role table, the "Use these roles" button and what the roles give at the session's k."""
    g = guidance(ds)
    base = role_table(ds, g)
    key = table_key()
    if no_roles(ds):
        n_qi = sum(s.role == QI for s in g.suggestions)
        weight = next((s.variable for s in g.suggestions if s.role == WEIGHT), None)
        n_direct = sum(s.role == DIRECT for s in g.suggestions)
        st.info(f"No roles are set yet. Suggested from names, labels and values: {n_qi} quasi-identifier(s), "
                + (f"weight {weight}, " if weight else "no weight, ")
                + f"{n_direct} identifier(s) to exclude. Check the roles below (each row says why), then use them.")
    st.data_editor(
        base,
        key=key,
        hide_index=True,
        width="stretch",
        height=min(35 * (len(base) + 1) + 3, 738),  # every row of up to 20 variables without scrolling
        num_rows="fixed",
        disabled=["variable", "label", "distinct", "missing", "suggestion", "why"],
        column_config={
            "variable": st.column_config.TextColumn("Variable"),
            "label": st.column_config.TextColumn("Label"),
            "distinct": st.column_config.NumberColumn("Distinct values", format="%d"),
            "missing": st.column_config.NumberColumn("Missing values", format="%d"),
            "role": st.column_config.SelectboxColumn("Role", options=list(ROLES), required=True,
                                                     help="; ".join(f"{r}: {w}" for r, w in ROLE_WORDS.items())),
            "suggestion": st.column_config.TextColumn("Suggested"),
            "why": st.column_config.TextColumn("Why", width="large"),
        },
    )
    c1, c2 = st.columns([1, 3])
    c1.button("Use these roles", key="btn_use_roles", type="primary", on_click=_use_roles, args=(base, key))
    c2.checkbox("I know some quasi-identifiers have very many distinct values", key=CONFIRM_MANY)


def risk_line() -> None:
    """What the current roles give at the session's k: the count the sidebar shows, next to the table, so
    the first k-violation count needs no page change (same memo key as the sidebar: computed once)."""
    ds = state.dataset()
    if not ds.roles.qis:
        return
    k = int(state.settings()["k"])
    alpha = float(state.settings().get("alpha", 1.0))
    memo_key = k if alpha == 1.0 else (k, alpha)
    try:
        r = state.memo("version_risk", memo_key,
                       lambda: shared_results.version_risk(state.history().original.dataset, ds, k, alpha))
    except KanonError as exc:
        st.error(str(exc))
        return
    if r is None:
        return
    c1, c2, c3 = st.columns(3)
    c1.metric(f"Records violating k={k}", f"{r.n_violating:,}")
    c2.metric("k achieved", f"{r.k_achieved:,}")
    c3.metric("Quasi-identifiers", f"{r.n_qis:,}")
    st.caption("k is set on the Risk page; the Risk and MINUCs pages show where the risk is.")
