"""Recode: hierarchies, manual levels with their risk effect, the optimal generalization, single recodes
and recode suggestions from the MINUCs. Applying creates a new current version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from kanon_app import big_file, hierarchy_ui, many_levels, minuc_carry, prefetch, state
from kanon_app.navigation import ensure_app_navigation
from kanon_app.pager import paged
from kanon_app.sections import lazy_tabs
from kanon_core.errors import InputError, KanonError
from kanon_core.fmt import markdown_literal, readable_table
from kanon_core.io import cell_text, typed_codes
from kanon_core.risk.minucs import find_minucs
from kanon_core.steps import DropVariables
from kanon_core.treat import lattice
from kanon_core.treat.default_hierarchy import without_observed_values
from kanon_core.treat.explain import effects_table, search_summary
from kanon_core.treat.metrics import precision_from_loss
from kanon_core.treat.recode import GeneralizeStep, RecodeStep, level_counts, preview_step
from kanon_core.treat.suggest import (
    suggest_recodes,
    suggestion_effect,
    suggestion_effect_table,
    suggestions_frame,
)
from kanon_core.utility.plots import inert_frame, inert_labels, top_categories, wrap_title

ensure_app_navigation()

METRICS = {"prec": "Prec (Sweeney: share of hierarchy height used)", "dm": "Discernibility",
           "aecs": "Average equivalence class size", "entropy": "Non-uniform entropy"}

st.title("Recode")
st.caption(
    "Global recoding generalizes a variable for every record: merge categories, code the tails, or take a "
    "level of a **hierarchy** (level 0 = the original values, the last level `*` = not released). Review "
    "the MINUCs, recode, recheck, and suppress only what is left (Wilson et al., RTI). Nothing changes until you "
    "apply; every application is a new version you can undo.")
state.keep_widget_values()  # the choices of the page left, for when it is opened again
state.show_flash()
if big_file.recode_panel(state.session_k()):  # a large file opened on the Data page: its class table
    st.stop()
ds = state.dataset()
settings = state.settings()

state.widget_value("w_rec_qis", [q for q in ds.roles.qis if q in ds.columns], options=ds.columns)
c1, c2 = st.columns([6, 1])
qis = c1.multiselect("Quasi-identifiers", ds.columns, key="w_rec_qis")
k = state.k_input(c2, "w_rec_k")
if not qis:
    st.info("Choose at least one quasi-identifier.")
    st.stop()
st.caption(f"Missing values count as **{ds.missing}**. Version v{state.current().id}: {ds.n_records:,} records.")
empty = state.memo("without_observed_values", tuple(qis), lambda: without_observed_values(ds, qis))
if empty:  # nothing to recode in them, and they split no class: the page works on the others
    st.info(f"{markdown_literal(', '.join(empty))}: no observed value, so nothing to recode; left out here "
            "(they split no class, so the risk and the search are the same without them).")
    qis = [q for q in qis if q not in empty]
    if not qis:
        st.stop()


def _stored_key() -> tuple:
    """The officer's hierarchies as a key: what the page's hierarchies (and their memos) are made from."""
    return tuple(sorted((c, h.rows) for c, h in state.hierarchies().items()))


drawn_version = state.current()
stored_key = _stored_key()
try:
    hierarchies, stale = state.memo("hierarchies", (tuple(qis), stored_key),
                                    lambda: hierarchy_ui.effective_hierarchies(ds, qis))
except KanonError as exc:
    st.error(str(exc))
    st.stop()
if stale:
    st.warning(f"The hierarchies of {', '.join(stale)} no longer cover the data (values were recoded); the "
               "default ones are used until you build new ones.")


def _apply(step, done: str) -> None:
    state.run_step(step, done)


def _apply_many(steps, done: str) -> None:
    try:
        for s in steps:
            state.apply(s)
    except KanonError as exc:
        state.flash(str(exc), "error")
    else:
        state.flash(done)


def _into_value(series: pd.Series, vals: list[Any], typed: str) -> Any:
    """The value typed in "Into" as a value of the variable, as a recipe's codes are read (typed_codes): in a
    text variable the text as typed, so "12" is not the category "012" (an existing category written so is
    taken as it is held); in a number variable a number, so "12.0" is 12."""
    value = typed_codes(series, [typed.strip()])[0]
    if not isinstance(value, str):
        return value
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        raise InputError("Into: give a number; the variable holds numbers.")
    return next((v for v in vals if cell_text(v) == value), value)


def _show_preview(step, name: str) -> None:
    """Counts per new value and the risk before/after."""
    with_minucs = st.checkbox("Include the MINUC count (a MINUC search on the result)", key=f"w_prev_minucs_{name}")
    try:
        # the MINUCs page's search of this version, when made: not searched again, and carried over
        found = state.memo_peek("minucs", (tuple(qis), k, None, ds.missing)) if with_minucs else None
        prev = state.memo("recode_preview", (step, tuple(qis), k, with_minucs),
                          lambda: preview_step(ds, step, k, qis, minucs=with_minucs, minucs_before=found))
    except KanonError as exc:
        st.error(str(exc))
        return
    left, right = st.columns([3, 2])
    with left:  # a page of the counts: a postcode merged keeps its other 99,999 values
        st.dataframe(paged(prev.counts, f"w_prev_page_{name}", noun="values"), hide_index=True, width="stretch",
                     height=280)
    right.dataframe(prev.risk, hide_index=True, width="stretch")


def _page_is_stale() -> bool:
    """Whether a click inside the tabs changed what the page above them shows: a new current version (a
    recode, levels, a suggestion or a search result applied, variables dropped), other hierarchies, or a
    message waiting. Such a click reruns only the tabs (kanon_app.sections), and its callback ran before, so
    the page, the sidebar's versions and the message would otherwise show the state before the click."""
    return (state.current() is not drawn_version or _stored_key() != stored_key
            or bool(st.session_state.get("flash")))


def _with_page_current(body: Callable[[], None]) -> Callable[[], None]:
    """``body``, run only once the whole app shows the state it reads: else the whole app reruns first."""

    def run() -> None:
        if _page_is_stale():
            st.rerun(scope="app")
        body()

    return run


# The tabs' bodies; kanon_app.sections.lazy_tabs (at the end) runs only the open one (with a 100,000-level
# variable the five took seconds on every click), and a tab switch or a click inside a tab reruns only the tabs.

# -- manual level choice ---------------------------------------------------------------------------------------
def _tab_levels() -> None:
    st.caption("Choose a level per variable; the preview shows the counts per generalized value and the risk "
               "before and after.")
    cols = st.columns(4)
    levels = {}
    for i, q in enumerate(qis):
        h = hierarchies[q]
        groups = h.n_groups()
        state.widget_value(f"w_lvl_{q}", 0)
        levels[q] = cols[i % 4].select_slider(
            q, options=list(range(h.height)), key=f"w_lvl_{q}",
            format_func=lambda lv, g=groups: f"{lv} ({g[lv]} values)" if g[lv] > 1 else f"{lv} (*)")
    if any(levels.values()):
        step = GeneralizeStep.build(levels, hierarchies, qis=tuple(qis))
        _show_preview(step, "levels")
        st.button("Apply these levels", key="btn_apply_levels", type="primary", on_click=_apply,
                  args=(step, "Generalization applied."))
    else:
        st.info("All variables are at level 0 (original values).")


# -- single recode -------------------------------------------------------------------------------------------
def _tab_single() -> None:
    state.widget_value("w_single_var", qis[0] if qis else None, options=qis)
    col = st.selectbox("Variable", qis, key="w_single_var")
    qm1 = ds.qi_matrix([col])
    vals, labs = list(qm1.values[0]), list(qm1.labels[0])
    codes1 = qm1.codes[:, 0]
    n_of = np.bincount(codes1[codes1 >= 0], minlength=len(vals))
    merge_key = f"w_single_merge_{col}"
    # a postcode's 100,000 categories are found by a search, not listed (kanon_app.many_levels)
    offered = many_levels.listed_categories(col, labs, n_of, st.session_state.get(merge_key, []),
                                            f"w_single_find_{col}")
    choice = st.multiselect("Merge these categories", offered, key=merge_key,
                            format_func=lambda i, labs=labs, n_of=n_of: f"{labs[i]} ({int(n_of[i]):,})")
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    c1, c2, c3 = st.columns(3)
    for field in ("into", "top", "bot"):
        state.widget_value(f"w_single_{field}_{col}", "")
    into = c1.text_input("Into (empty: the smallest value)", key=f"w_single_into_{col}")
    top = c2.text_input("Top-code at (values at or above)", key=f"w_single_top_{col}", disabled=not numeric)
    bottom = c3.text_input("Bottom-code at (values at or below)", key=f"w_single_bot_{col}", disabled=not numeric)
    try:
        into_value = _into_value(ds.frame[col], vals, into) if into.strip() else None
        step = RecodeStep(column=col, merge=tuple(vals[i] for i in choice), into=into_value,
                          top=hierarchy_ui._opt(top) if numeric else None,
                          bottom=hierarchy_ui._opt(bottom) if numeric else None)
    except (KanonError, ValueError) as exc:
        if choice or top.strip() or bottom.strip():
            st.error(str(exc))
        else:
            st.info("Choose categories to merge, or a top or bottom code.")
    else:
        _show_preview(step, "single")
        st.button("Apply this recode", key="btn_apply_single", type="primary", on_click=_apply,
                  args=(step, f"{step.describe()}: applied."))

    st.markdown("**Drop variables from the release** (Wilson et al., RTI: often the best recode for a variable in many "
                "MINUCs that analysts rarely need)")
    drop = st.multiselect("Variables to drop", ds.columns, key="w_drop_vars")
    st.button("Drop these variables", key="btn_drop", disabled=not drop, on_click=_apply,
              args=(DropVariables(tuple(drop)), f"Dropped {', '.join(drop)}."))


# -- hierarchy builder -----------------------------------------------------------------------------------------
def _tab_build() -> None:
    col = st.selectbox("Variable", qis, key="w_hb_var")
    qm1 = ds.qi_matrix([col])
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in qm1.values[0])
    hierarchy_ui.scale_widget(ds, col)
    current = hierarchies[col]
    st.caption(f"In use: {current.height} levels ({' → '.join(str(g) for g in current.n_groups())} values)"
               + (" — your own." if col in state.hierarchies() else " — the default."))
    try:
        built = hierarchy_ui.build_widgets(ds, col, numeric)
    except KanonError as exc:
        st.error(str(exc))
        built = None
    shown = built or current
    # kept per hierarchy (this tab reruns on every click inside it) and shown a page at a time: a postcode
    # has 100,000 rows
    table = state.memo("hb_table", (col, shown), lambda: hierarchy_ui.hierarchy_table(shown, ds, col))
    st.dataframe(paged(table, f"w_hb_table_page_{col}", noun="values"), hide_index=True, width="stretch",
                 height=260)
    lvl = st.select_slider("Preview level", options=list(range(shown.height)), key=f"w_hb_prev_{col}")
    try:
        counts = state.memo("hb_level_counts", (col, shown, lvl), lambda: level_counts(ds, col, shown, lvl))
    except KanonError as exc:
        st.error(str(exc))
    else:
        drawn, left_out = top_categories(counts, "value", "records")  # the largest values, the rest in one bar
        title = f"Records per value of {col} at level {lvl}" + (
            f": the {len(drawn) - 1:,} largest of {len(counts):,} values, the others in one bar" if left_out else "")
        fig = px.bar(inert_frame(drawn), x="value", y="records", title=wrap_title(title, 70))
        fig.update_layout(height=300 + 20 * bool(left_out), margin=dict(l=10, r=10, t=40 + 20 * bool(left_out),
                                                                         b=10))
        st.plotly_chart(fig, width="stretch", key="chart_hb_counts")

    def _use(h=built, c=col) -> None:
        state.hierarchies()[c] = h.with_name(c)
        state.flash(f"Hierarchy of {c} saved ({h.height} levels).")

    b1, b2 = st.columns(2)
    b1.button(f"Use this hierarchy for {col}", key="btn_hb_use", type="primary", disabled=built is None,
              on_click=_use)
    b2.download_button("Download as ARX CSV", shown.to_arx_csv, file_name=f"hierarchy_{col}.csv",  # on click
                       mime="text/csv", key="btn_hb_download", on_click="ignore")


# -- optimal search --------------------------------------------------------------------------------------------
def _tab_search() -> None:
    try:
        problem = state.memo("lattice_problem", (tuple(qis), stored_key),
                             lambda: lattice.build_problem(ds, hierarchies, qis))
    except KanonError as exc:
        st.error(str(exc))
        st.stop()
    c1, c2, c3 = st.columns(3)
    state.widget_value("w_gen_sup", 1.0)
    max_sup = float(c1.number_input("Records that may be suppressed (%)", 0.0, 50.0, step=0.5, key="w_gen_sup",
                                    help="As ARX: records still in classes smaller than k are removed, up to "
                                         "this share."))
    state.widget_value("w_gen_metric", next(iter(METRICS)), options=list(METRICS))
    state.widget_value("w_gen_algo", "optimal", options=["optimal", "datafly"])
    state.widget_value("w_gen_criteria", "")
    metric = c2.selectbox("Information loss", list(METRICS), format_func=METRICS.get, key="w_gen_metric")
    algorithm = c3.radio("Search", ["optimal", "datafly"], horizontal=True, key="w_gen_algo",
                         help="Optimal: exact search of the lattice with monotonicity pruning (provably least "
                              "loss). Datafly: Sweeney's heuristic, for comparison.")
    st.caption(f"Lattice: {problem.n_nodes:,} nodes (one level per variable: "
               + ", ".join(f"{q} 0–{h - 1}" for q, h in zip(qis, problem.heights, strict=True)) + ").")
    too_big = algorithm == "optimal" and problem.n_nodes > lattice.MAX_NODES
    if too_big:
        st.warning(f"The lattice has more than {lattice.MAX_NODES:,} nodes: use fewer quasi-identifiers, shorter "
                   "hierarchies, or Datafly.")
    extra = st.text_input(
        "More privacy criteria (optional, all must hold with k)", key="w_gen_criteria",
        placeholder="l=3:occupation; t=0.2:income; risk=0.05",
        help="Separated by ';'. A variable whose name holds ':' or ';' is written in double quotes. l=L:S distinct l-diversity of S (l=entropy:L:S, l=recursive:C,L:S), t=T:S "
             "t-closeness of S, risk=R the highest individual risk (Benedetti & Franconi). Records of classes "
             "failing any of them count against the suppression limit (Machanavajjhala et al.; Li et al.).")
    try:
        from kanon_core.criteria import parse_criteria
        from kanon_core.criteria.base import split_criteria

        criteria = parse_criteria(split_criteria(extra))
        sensitive = sorted({v for c in criteria for v in c.sensitive})
        weighted = any(getattr(c, "weighted", False) for c in criteria)
        if sensitive or weighted:
            problem = state.memo("lattice_problem", (tuple(qis), stored_key, tuple(sensitive), weighted),
                                 lambda: lattice.build_problem(ds, hierarchies, qis, sensitive=sensitive,
                                                               weighted=weighted))
    except KanonError as exc:
        st.error(str(exc))
        st.stop()
    params = (tuple(qis), stored_key, k, max_sup, metric, algorithm, tuple(c.spec for c in criteria))
    result = state.memo_peek("generalize_search", params)
    if result is None and not too_big:  # off the script thread (kanon_app.background), with Cancel
        offer = st.empty()
        clicked = (not state.job_running("generalize_search", params)
                   and offer.button("Search", key="btn_gen_search", type="primary"))
        run = lattice.search_optimal if algorithm == "optimal" else lattice.datafly
        result = state.run_in_background(
            "generalize_search", params, "Generalization search",
            lambda progress: run(problem, k, max_sup / 100, metric, progress, criteria=criteria), start_now=clicked)
        if result is not None:
            offer.empty()
    if result is not None:
        m = st.columns(5)
        m[0].metric("Loss", f"{result.loss:,.4g}")
        prec = precision_from_loss(result.metric, result.loss)
        m[1].metric("Precision (Prec)", "not measured" if prec is None else f"{prec:.3f}",
                    help="Prec is read off the loss only when the search minimises Prec (Sweeney 2002); "
                         "choose Prec as the information loss to see it." if prec is None else
                         "1 = nothing generalized, 0 = every value at the top of its hierarchy (Sweeney 2002).")
        m[2].metric("Records suppressed", f"{result.n_suppressed_records:,}")
        m[3].metric("Nodes evaluated", f"{result.nodes_evaluated:,}", help=f"of {result.n_nodes:,} in the lattice; the "
                    "others were classified by monotonicity or skipped by a provable lower bound (discernibility "
                    "with missing values as wildcards also stops counting a node once it cannot win)")
        m[4].metric("Seconds", f"{result.seconds:,.2f}")
        st.markdown(markdown_literal(search_summary(result)))
        st.dataframe(effects_table(result.levels, hierarchies, result.qis), hide_index=True, width="stretch")
        st.button("Apply this generalization", key="btn_apply_search", type="primary", on_click=_apply,
                  args=(result.step(), "Optimal generalization applied."))
        ev = result.evaluated
        if len(ev):
            front = result.tradeoff()
            fig = px.scatter(inert_frame(ev), x="n_suppressed", y="loss", color="anonymous",
                             hover_data=inert_labels(qis),
                             title="Evaluated nodes: information loss vs records to suppress")
            fig.add_trace(go.Scatter(x=front["n_suppressed"], y=front["loss"], mode="lines", name="trade-off front"))
            fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10))
            st.plotly_chart(fig, width="stretch", key="chart_gen_tradeoff")
        curve_params = (tuple(qis), stored_key, k, metric, tuple(c.spec for c in criteria))
        curve = state.memo_peek("generalize_tradeoff", curve_params)
        if curve is None:
            clicked = (not state.job_running("generalize_tradeoff", curve_params)
                       and st.button("Trade-off curve: the optimum for each suppression limit (0 % to 10 %)",
                                     key="btn_gen_curve"))
            res = state.run_in_background("generalize_tradeoff", curve_params, "Trade-off curve",
                                          lambda progress: lattice.tradeoff(problem, k, metric=metric,
                                                                            progress=progress, criteria=criteria),
                                          start_now=clicked)
            if res is not None:
                st.rerun()
        else:
            feasible = curve[curve["feasible"]]
            if len(feasible):
                fig = px.line(feasible.assign(limit_percent=100 * feasible["max_suppression"]), x="limit_percent",
                              y="loss", markers=True, hover_data=["levels", "n_suppressed"],
                              title="Least loss for each suppression limit",
                              labels={"limit_percent": "records that may be suppressed (%)"})
                fig.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=10))
                st.plotly_chart(fig, width="stretch", key="chart_gen_curve")
            st.dataframe(readable_table(curve, digits=4, why={"loss": "no generalization meets k within this limit"},
                                        rename={"max_suppression": "suppression limit",
                                                "n_suppressed": "records suppressed"}),
                         hide_index=True, width="stretch")
        listed = result.k_minimal
        if listed is None:  # the search classified only the nodes that could win: every node on request
            full = state.memo_peek("generalize_kminimal", params)
            if full is None:
                offer_list = st.empty()
                clicked = (not state.job_running("generalize_kminimal", params)
                           and offer_list.button("List every k-minimal node (classifies the whole lattice)",
                                                 key="btn_gen_kminimal"))
                full = state.run_in_background(
                    "generalize_kminimal", params, "Listing the k-minimal nodes",
                    lambda progress: lattice.search_optimal(problem, k, max_sup / 100, metric, progress,
                                                            criteria=criteria, k_minimal=True),
                    start_now=clicked)
                if full is not None:
                    offer_list.empty()
            listed = None if full is None else full.k_minimal
        if listed is not None and len(listed):
            st.markdown(f"**k-minimal nodes ({len(listed):,})**: within the suppression limit for the criteria, "
                        "and no single step down is — the candidates an officer may prefer to the optimum. *May be "
                        "chosen* says whether each is a release: its suppressed records, blank on every "
                        "quasi-identifier, must meet the criteria together (at least k of them), or be none.")
            st.dataframe(readable_table(listed, digits=4, rename={"n_suppressed": "records suppressed",
                                                                  "anonymous": "may be chosen"}),
                         hide_index=True, width="stretch", height=260)


# -- suggestions -----------------------------------------------------------------------------------------------
def _tab_suggest() -> None:
    st.caption("Candidates that remove the most MINUCs per category lost. *MINUCs touched* contain a recoded "
               "value: only those can go, so it bounds the effect; selecting a row searches the MINUCs again "
               "on the recoded data and counts the records below k.")
    mparams = (tuple(qis), k, None, ds.missing)
    minucs = state.memo_peek("minucs", mparams)
    if minucs is None:
        st.info(f"Suggestions need the MINUCs of these {len(qis)} variables at k = {k}.")
        # the MINUCs page's search, shared; one it started ahead of its own click is not waited for here
        # until asked for: waiting would hold the tab for a search the officer has not asked for
        ahead = prefetch.minucs_ahead(mparams) and state.job_running("minucs", mparams)
        clicked = ((ahead or not state.job_running("minucs", mparams))
                   and st.button("Find MINUCs", key="btn_sug_minucs", type="primary"))
        if clicked and ahead:
            prefetch.ask_minucs(mparams)  # the search under way is the officer's now
        if clicked or not ahead:
            qm = state.memo("qi_matrix", tuple(qis), lambda: ds.qi_matrix(qis))  # the MINUCs page's, shared
            # looked up only on the click that starts the search (as the MINUCs page does)
            carry = minuc_carry.earlier_search(mparams, tuple(qis), qm, k, ds.missing, None) if clicked else None
            res = state.run_in_background("minucs", mparams, "MINUC search", lambda progress: find_minucs(
                qm, k=k, missing=ds.missing, progress=progress, carry=None if carry is None else carry.plan),
                start_now=clicked)
            if res is not None:
                st.rerun()
    else:
        sugs = state.memo("suggestions", mparams, lambda: suggest_recodes(ds, minucs))
        st.caption(f"{minucs.total:,} MINUCs over {minucs.records_with_minucs():,} records.")
        if not sugs:
            st.success("No recode to suggest: no MINUC contains a value of a variable with three or more categories.")
        else:
            shown = sugs[:30]
            st.caption("Click a row: its effect (MINUCs and records below k, recounted on the recoded data) "
                       "appears below, with a button to apply it.")
            event = st.dataframe(suggestions_frame(shown), hide_index=True, width="stretch", height=300,
                                 key="w_sug_table", on_select="rerun", selection_mode="single-row")
            rows = [r for r in event.selection.rows if 0 <= r < len(shown)]
            if not rows:
                st.info("Select a suggestion in the table to see its effect.")
            else:
                chosen = shown[rows[0]]
                st.markdown(f"**{markdown_literal(f'{chosen.variable}: {chosen.description}')}**")
                effect_key = (mparams, chosen.variable, chosen.description)
                effect = state.memo_peek("suggestion_effect", effect_key)
                if effect is None:  # computed inline on selection: no rerun, so the tab stays open
                    effect = state.run_with_progress("Effect of the recode", lambda progress: suggestion_effect(
                        ds, chosen, minucs, progress))
                    if effect is not None:
                        state.memo_put("suggestion_effect", effect_key, effect)
                if effect is not None:
                    st.dataframe(suggestion_effect_table(effect, k), hide_index=True, width="stretch")
                st.button("Apply this suggestion", key="btn_sug_apply", type="primary", on_click=_apply_many,
                          args=(chosen.steps, f"{chosen.variable}: {chosen.description} — applied."))


lazy_tabs(["Levels", "Optimal generalization", "Single recode", "Suggestions from MINUCs", "Hierarchies"],
          "w_recode_section",
          [_with_page_current(b) for b in (_tab_levels, _tab_search, _tab_single, _tab_suggest, _tab_build)])
