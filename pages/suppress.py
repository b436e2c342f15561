"""Suppress: optimal local suppression to k-anonymity, with importances, protected variables and checks."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from kanon_app import state
from kanon_app.navigation import ensure_app_navigation
from kanon_core.errors import KanonError
from kanon_core.treat.suppress import SuppressStep, apply_mask
from kanon_core.utility.plots import inert_frame

ensure_app_navigation()

st.title("Suppress")
st.caption(
    "Local suppression sets single values to missing until every record shares its remaining values with at "
    "least k − 1 others. **Exact** solves seed 000's model to proven optimality: each record keeps the "
    "cheapest set of values that occurs at least k times in the data (all its MINUCs are hit), then a "
    "verified joint pass gives back every suppressed value no record needs. **Greedy** is a fast heuristic "
    "like sdcMicro's localSuppression, shown for comparison. Every result is recounted independently: it "
    "is k-anonymous or the run fails.")
state.show_flash()
ds = state.dataset()
settings = state.settings()

state.widget_value("w_sup_qis", list(ds.roles.qis))
state.widget_value("w_sup_k", int(settings["k"]))
c1, c2, c3 = st.columns([5, 1, 2])
qis = c1.multiselect("Quasi-identifiers", ds.columns, key="w_sup_qis")
k = int(c2.number_input("k", min_value=2, max_value=100, step=1, key="w_sup_k"))
method = c3.radio("Method", ["exact", "greedy"], horizontal=True, key="w_sup_method")
if not qis:
    st.info("Choose at least one quasi-identifier.")
    st.stop()

with st.expander("Importance and protected variables", expanded=False):
    st.caption("Suppressing one value of a variable costs its importance; protected variables are never "
               "suppressed. The optimum minimises the total cost.")
    protected = st.multiselect("Protected (never suppressed)", qis, key="w_sup_protected")
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
    solver = st.radio("Integer-programming solver (for the rare instances the compiled searches leave open)",
                      ["highs", "cbc"], horizontal=True, key="w_sup_solver")
    state.widget_value("w_sup_time", 60.0)
    time_limit = float(st.number_input("Time limit for those programmes (seconds)", min_value=1.0,
                                       max_value=3600.0, step=10.0, key="w_sup_time"))
    state.widget_value("w_sup_joint", True)
    joint = st.checkbox("Give back suppressions no record needs (joint pass)", key="w_sup_joint")

step = SuppressStep(qis=tuple(qis), k=k, importance=tuple(importance), protected=tuple(protected), method=method,
                    solver=solver, time_limit=time_limit, joint=joint)
params = (step, ds.missing)
result = state.memo_peek("suppression", params)
st.caption(f"Missing values count as **{ds.missing}**. Version v{state.current().id}: {ds.n_records:,} records.")
if result is None:
    if st.button("Run suppression", key="btn_run_suppress", type="primary"):
        res = state.run_with_progress("Local suppression", lambda progress: step.run(ds, progress))
        if res is not None:
            state.memo_put("suppression", params, res)
            st.rerun()
    st.stop()

qm = state.memo("qi_matrix", tuple(qis), lambda: ds.qi_matrix(qis))
m = st.columns(6)
m[0].metric("Cells suppressed", f"{result.n_suppressed:,}")
m[1].metric("Records touched", f"{result.records_touched:,}")
m[2].metric("Cost", f"{result.cost:,.1f}")
m[3].metric("Proven optimal", "yes" if result.optimal else "no",
            help="For the record-wise model; the joint pass may then lower the cost below its bound.")
m[4].metric("Records below k after", f"{result.violations_after:,}", help="Independent recount of class sizes.")
m[5].metric("Seconds", f"{result.seconds:,.2f}")
if method == "exact":
    st.caption(f"Record-wise optimum {result.record_wise_cost:,.1f} (lower bound {result.lower_bound:,.1f}, gap "
               f"{100 * result.gap:.2f} %); the joint pass gave back {result.joint_released:,} value(s).")

tables = result.tables(qm)
left, right = st.columns(2)
with left:
    per_var = tables["per_variable"]
    fig = px.bar(inert_frame(per_var), x="percent", y="variable", orientation="h",
                 title="Records with a suppressed value, by variable (%)", hover_data=["suppressed"])
    fig.update_layout(height=max(300, 22 * len(per_var)), margin=dict(l=10, r=10, t=40, b=10),
                      yaxis={"categoryorder": "total ascending"})
    st.plotly_chart(fig, width="stretch", key="chart_sup_vars")
with right:
    st.markdown("**Value suppressed most often, per variable**")
    st.dataframe(tables["most_suppressed"], hide_index=True, width="stretch")
    gone = tables["completely_suppressed"]
    st.markdown(f"**Categories completely suppressed: {len(gone)}**")
    if len(gone):
        st.dataframe(gone, hide_index=True, width="stretch")


def _make_current() -> None:
    try:
        new = ds.with_frame(apply_mask(ds.frame, result.names, result.mask))
        state.history().add(step, new)
    except KanonError as exc:
        state.flash(str(exc), "error")
    else:
        state.flash(f"Suppression applied: version v{state.current().id} is now current.")


st.button("Make this the new current version", key="btn_apply_suppress", type="primary", on_click=_make_current)

st.subheader("Exact vs greedy")
other_step = SuppressStep(qis=step.qis, k=k, importance=step.importance, protected=step.protected,
                          method="greedy" if method == "exact" else "exact", solver=solver, time_limit=time_limit,
                          joint=joint)
other = state.memo_peek("suppression", (other_step, ds.missing))
if other is None:
    if st.button(f"Run {other_step.method} too, for comparison", key="btn_run_other"):
        res = state.run_with_progress(f"{other_step.method.capitalize()} suppression",
                                      lambda progress: other_step.run(ds, progress))
        if res is not None:
            state.memo_put("suppression", (other_step, ds.missing), res)
            st.rerun()
else:
    both = {method: result, other_step.method: other}
    rows = [{"method": name, "cells suppressed": r.n_suppressed, "records touched": r.records_touched,
             "cost": r.cost, "proven optimal": r.optimal, "seconds": round(r.seconds, 2)} for name, r in both.items()]
    st.dataframe(rows, hide_index=True, width="stretch")
    per = []
    for name, r in both.items():
        for row in r.per_variable().itertuples():
            per.append({"method": name, "variable": row.variable, "suppressed": int(row.suppressed)})
    fig = px.bar(inert_frame(per), x="variable", y="suppressed", color="method", barmode="group",
                 title="Suppressed values per variable")
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig, width="stretch", key="chart_sup_compare")
