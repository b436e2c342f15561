"""Suppress: local suppression to a named protection model, with importances, protected variables and checks."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from kanon_app import big_suppress, state
from kanon_app.navigation import ensure_app_navigation
from kanon_app.pager import paged
from kanon_app.risk_suppress_ui import risk_target_section
from kanon_core.errors import KanonError
from kanon_core.fmt import readable_table
from kanon_core.risk.restore import restorable_cells
from kanon_core.treat.protection import MODEL_NAMES, MODELS
from kanon_core.treat.suppress import NODE_LIMIT, SuppressStep
from kanon_core.utility.plots import inert_frame, label_every_category, wrap_title

ensure_app_navigation()

st.title("Suppress")
st.caption(
    "Local suppression blanks single values until the release meets a **protection model** at k, at the "
    "least total cost. The model says what is promised; every result is recounted by code independent of "
    "the solver, and the people an intruder could narrow down to fewer than k released records are "
    "counted whatever the model.")
state.keep_widget_values()  # the choices of the page left, for when it is opened again
state.show_flash()
if big_suppress.suppress_panel(state.session_k()):  # a large file opened on the Data page: its class table
    st.stop()
ds = state.dataset()
settings = state.settings()
alpha = float(settings.get("alpha", 1.0))

state.widget_value("w_sup_qis", list(ds.roles.qis), options=ds.columns)
c1, c2 = st.columns([5, 1])
qis = c1.multiselect("Quasi-identifiers", ds.columns, key="w_sup_qis")
k = state.k_input(c2, "w_sup_k")
c3, c4 = st.columns([3, 2])
state.widget_value("w_sup_model", next(iter(MODEL_NAMES)), options=list(MODEL_NAMES))
model_name = c3.radio("Protection model", list(MODEL_NAMES), horizontal=True, key="w_sup_model",
                      format_func=lambda n: MODELS[n].title)
model = MODELS[model_name]
state.widget_value("w_sup_method", model.methods[0])
if st.session_state.get("w_sup_method") not in model.methods:
    st.session_state["w_sup_method"] = model.methods[0]
method = c4.radio("Method", list(model.methods), horizontal=True, key="w_sup_method")
st.caption(f"**{model.title}.** {model.promise} {model.method_note()}")
if not qis:
    st.info("Choose at least one quasi-identifier.")
    st.stop()

with st.expander("Importance and protected variables", expanded=False):
    st.caption("Suppressing one value of a variable costs its importance; protected variables are never "
               "suppressed. The optimum minimises the total cost.")
    state.widget_value("w_sup_protected", [], options=qis)
    protected = st.multiselect("Protected (never suppressed)", qis, key="w_sup_protected")
    groups = [c for c in ds.columns if c not in qis]
    state.widget_value("w_sup_by", [], options=groups)
    by = st.multiselect("Within groups (k-anonymity inside each group, as sdcMicro's strataVars)", groups,
                        key="w_sup_by")
    cols = st.columns(4)
    importance = []
    for i, q in enumerate(qis):
        if q in protected:
            continue
        state.widget_value(f"w_sup_imp_{q}", 1.0)
        v = cols[i % 4].number_input(q, min_value=0.1, max_value=100.0, step=0.5, key=f"w_sup_imp_{q}")
        if float(v) != 1.0:
            importance.append((q, float(v)))
with st.expander("Solver", expanded=False):
    state.widget_value("w_sup_solver", "highs", options=["highs", "cbc"])
    solver = st.radio("Integer-programming solver for the record-wise model's rare hard instances",
                      ["highs", "cbc"], horizontal=True, key="w_sup_solver")
    state.widget_value("w_sup_nodes", NODE_LIMIT)
    node_limit = int(st.number_input("Search nodes per integer programme (a work limit, so a replay gives the "
                                     "same cells)", min_value=1, max_value=10_000_000, step=10_000,
                                     key="w_sup_nodes"))

risk_target_section(ds, qis, importance, protected, alpha)


def _step(model_name: str, method: str) -> SuppressStep:
    return SuppressStep(qis=tuple(qis), k=k, importance=tuple(importance), protected=tuple(protected),
                        model=model_name, method=method, alpha=alpha, solver=solver, node_limit=node_limit,
                        by=tuple(by))


step = _step(model_name, method)
params = (step, ds.missing)
result = state.memo_peek("suppression", params)
alpha_note = f"; a match with a record that has missing values counts {alpha:g} (Risk page)" if alpha < 1 else ""
st.caption(f"Missing values count as **{ds.missing}**{alpha_note}. Version v{state.current().id}: "
           f"{ds.n_records:,} records.")
if result is None:  # the run is off the script thread (kanon_app.background): responsive, with Cancel
    offer = st.empty()
    clicked = (not state.job_running("suppression", params)
               and offer.button("Run suppression", key="btn_run_suppress", type="primary"))
    result = state.run_in_background("suppression", params, "Local suppression",
                                     lambda progress: step.run(ds, progress), start_now=clicked)
    if result is None:
        st.stop()
    offer.empty()

qm = state.memo("qi_matrix", tuple(qis), lambda: ds.qi_matrix(qis))
m = st.columns(3) + st.columns(3)  # two rows of three: long labels are not cut off
m[0].metric("Cells suppressed", f"{result.n_suppressed:,}")
m[1].metric("Records touched", f"{result.records_touched:,}")
m[2].metric("Cost", f"{result.cost:,.1f}")
m[3].metric("Gap to the bound", "0 (optimal)" if result.optimal else f"{100 * result.gap:.1f} %",
            help="(cost - proven lower bound) / cost for the chosen protection model; 0 means proven optimal.")
m[4].metric("Findable below k", f"{result.findable_below_k:,}",
            help="People of the input with fewer than k consistent released records: an intruder who knows "
                 "their quasi-identifiers narrows them down to fewer than k records. Counted independently.")
m[5].metric("Seconds", f"{result.seconds:,.2f}")
st.caption(f"{result.model.capitalize()} model, {result.method}. {result.optimality().sentence()} Records below k "
           f"after, recounted independently: {result.violations_after:,}.")
share = result.n_suppressed / max(1, int((qm.codes >= 0).sum()))
if share > 0.3:
    st.warning(f"This blanks {100 * share:.0f} % of the quasi-identifier values: with {len(qis)} quasi-identifiers "
               "almost every record is unique. Recode first (Recode page: coarser categories, fewer "
               "quasi-identifiers), then suppress what is left.")
if result.findable_below_k:
    st.warning(f"{result.findable_below_k:,} people remain findable among fewer than {k} released records "
               f"under the {result.model} model. The strict model leaves none.")
# the intruder's side again: suppressed cells that another released variable (a school code, a stratum) gives back
restoration = state.memo("suppression_restorable", params, lambda: restorable_cells(
    ds, step.release_of(ds, result), qis, k, result.findable_below_k))
if restoration.n_restorable:
    st.warning(restoration.sentence())

tables = result.tables(qm)
left, right = st.columns(2)
with left:
    per_var = tables["per_variable"]
    fig = px.bar(inert_frame(per_var), x="percent", y="variable", orientation="h",
                 title=wrap_title("Records with a suppressed value, by variable (%)", 40), hover_data=["suppressed"],
                 labels={"percent": "% of records", "variable": ""})
    fig.update_layout(margin=dict(l=10, r=10, t=60, b=10), yaxis={"categoryorder": "total ascending"})
    label_every_category(fig, "y", per_var["variable"])  # all names, none skipped
    st.plotly_chart(fig, width="stretch", key="chart_sup_vars")
with right:
    st.markdown("**Value suppressed most often, per variable**")
    st.dataframe(readable_table(tables["most_suppressed"]), hide_index=True, width="stretch")
    gone = tables["completely_suppressed"]
    st.markdown(f"**Categories completely suppressed: {len(gone):,}**")
    if len(gone):  # a page at a time: a postcode of 100,000 values can lose most of them
        st.dataframe(readable_table(paged(gone, "w_sup_gone_page", noun="categories")), hide_index=True,
                     width="stretch")


def _make_current() -> None:
    try:
        state.history().add(step, step.release_of(ds, result), result.optimality())
    except KanonError as exc:
        state.flash(str(exc), "error")
    else:
        state.flash(f"Suppression applied: version v{state.current().id} is now current.")


st.button("Make this the new current version", key="btn_apply_suppress", type="primary", on_click=_make_current)

st.subheader("Other models and methods")
others = [_step(n, mth) for n, mdl in MODELS.items() for mth in mdl.methods if (n, mth) != (model_name, method)]
done = {o: state.memo_peek("suppression", (o, ds.missing)) for o in others}
if any(r is None for r in done.values()):
    clicked = (not state.job_running("suppression_others", params)
               and st.button("Run the other models and methods too, for comparison", key="btn_run_other"))

    def _all(progress):
        out = {}
        for i, o in enumerate(others):
            progress.update(i / len(others), f"{o.model} {o.method}")  # Cancel stops between runs
            if done[o] is None:
                try:
                    out[o] = o.run(ds)
                except KanonError as exc:  # e.g. a model that cannot treat this file: say why
                    out[o] = str(exc)
        return out

    res = state.run_in_background("suppression_others", params, "Comparison runs", _all, start_now=clicked)
    if res is not None:
        for o, r in res.items():
            state.memo_put("suppression", (o, ds.missing), r)
        st.rerun()
else:
    both = {(model_name, method): result,
            **{(o.model, o.method): r for o, r in done.items() if not isinstance(r, str)}}
    for o, r in done.items():
        if isinstance(r, str):
            st.caption(f"{o.model} {o.method}: not available here. {r}")
    rows = [{"model": n, "method": mth, "cells suppressed": r.n_suppressed, "records touched": r.records_touched,
             "cost": r.cost, "lower bound": r.lower_bound, "gap %": round(100 * r.gap, 2),
             "people findable below k": r.findable_below_k, "seconds": round(r.seconds, 2)}
            for (n, mth), r in both.items()]
    st.dataframe(rows, hide_index=True, width="stretch")
    per = []
    for (n, mth), r in both.items():
        for row in r.per_variable().itertuples():
            per.append({"run": f"{n} {mth}", "variable": row.variable, "suppressed": int(row.suppressed)})
    fig = px.bar(inert_frame(per), x="variable", y="suppressed", color="run", barmode="group",
                 title="Suppressed values per variable")
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10))
    label_every_category(fig, "x", list(dict.fromkeys(p["variable"] for p in per)))
    st.plotly_chart(fig, width="stretch", key="chart_sup_compare")
