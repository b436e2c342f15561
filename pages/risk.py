"""Risk: equivalence-class sizes and k-anonymity violations for the chosen quasi-identifiers."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from kanon_app import state
from kanon_app.navigation import ensure_app_navigation
from kanon_core.errors import KanonError
from kanon_core.risk.summary import (
    risk_summary,
    violating_records,
    wildcard_dependent_records,
    wildcard_dependent_statement,
)
from kanon_core.steps import SetRoles

ensure_app_navigation()

st.title("Risk")
state.show_flash()
ds = state.dataset()
settings = state.settings()

c1, c2, c3 = st.columns([4, 1, 1])
state.widget_value("w_risk_qis", list(ds.roles.qis))
qis = c1.multiselect("Quasi-identifiers", ds.columns, key="w_risk_qis")
k = state.k_input(c2, "w_k")
alpha = float(state.shared_number_input(
    c3, "alpha", "alpha", "w_alpha", 1.0, min_value=0.0, max_value=1.0, step=0.1, format="%.2f",
    help="How much a matching record with missing values (and other values than this record) counts toward "
         "its class size, as sdcMicro's freqCalc: 1 = a full match (sdcMicro's default), 0 = not at all."))
if tuple(qis) != ds.roles.qis and qis:
    r = ds.roles
    step = SetRoles(tuple(qis), r.weight, r.strata, r.psu, r.outcomes, tuple(c for c in r.direct_ids if c not in qis),
                    r.fpc)
    st.button("Use these as the quasi-identifiers (new version)", key="btn_risk_set_qis",
              on_click=state.run_step, args=(step, "Quasi-identifiers applied as a new version."))
if not qis:
    st.info("Choose at least one quasi-identifier.")
    st.stop()

try:
    qm = ds.qi_matrix(qis)
    weights = ds.weights()
    summary = state.memo("risk_summary", (tuple(qis), k, ds.missing, alpha),
                         lambda: risk_summary(qm, k, ds.missing, weights, alpha=alpha))
except KanonError as exc:
    st.error(str(exc))
    st.stop()

alpha_note = f"; a match with a record that has missing values counts **{alpha:g}**" if alpha < 1 else ""
st.caption(f"Missing values count as **{ds.missing}** (change on the Data page){alpha_note}.")
m = st.columns(5)
m[0].metric("Records", f"{summary.n_records:,}")
m[1].metric("k achieved", f"{summary.k_achieved:,}")
m[2].metric(f"Records violating k={k}", f"{summary.n_violating:,}",
            help="Records whose equivalence class (fk) is smaller than k.")
m[3].metric("Sample uniques", f"{summary.n_sample_uniques:,}", help="Records with fk = 1.")
m[4].metric("Distinct patterns", f"{summary.n_classes:,}")

left, right = st.columns(2)
with left:
    fig = px.bar(summary.size_distribution, x="class_size", y="records", title="Records by class size (fk)")
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig, width="stretch", key="chart_sizes")
with right:
    import pandas as pd

    viol = pd.DataFrame({"k": list(summary.violations), "violating records": list(summary.violations.values())})
    fig2 = px.bar(viol, x="k", y="violating records", title="Records violating k, for k = 2..10")
    fig2.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig2, width="stretch", key="chart_viol")

n_dep = summary.n_wildcard_dependent
if n_dep:
    st.warning(wildcard_dependent_statement(n_dep, k), icon="⚠️")
    with st.expander(f"The {n_dep:,} records resting on missing values"):
        dep = wildcard_dependent_records(qm, summary.sizes, k)
        st.caption("fk_alpha1: class size counting every match; fk_alpha0: counting only records with the same "
                   f"values and complete records. Showing {len(dep):,} of {n_dep:,}, fewest firm matches first.")
        st.dataframe(dep, hide_index=True, width="stretch")

st.page_link("pages/minucs.py", label="Which combinations make records unsafe? Explore the MINUCs", icon="🔎")

st.subheader("Quasi-identifiers")
st.dataframe(summary.per_qi, hide_index=True, width="stretch")

st.subheader(f"Records violating k = {k}")
table = violating_records(qm, summary.sizes.fk, k, summary.sizes.Fk)
st.caption(f"Showing {len(table):,} of {summary.n_violating:,}, smallest classes first.")
st.dataframe(table, hide_index=True, width="stretch")
