"""Risk: class sizes and k-anonymity violations, then individual and household risk, l-diversity and t-closeness,
the records failing each criterion and a sentence per record, for the chosen quasi-identifiers."""

from __future__ import annotations

import numpy as np
import plotly.express as px
import streamlit as st

from kanon_app import big_file, prefetch, shared_results, state
from kanon_app.navigation import ensure_app_navigation
from kanon_core.errors import KanonError
from kanon_core.risk.describe_record import READINGS, chance_in_words, describe_record, describe_records
from kanon_core.risk.household import HOUSEHOLD_ID_WARNING
from kanon_core.risk.summary import (
    failing_criteria,
    l_distribution,
    measure_records,
    risk_distribution,
    risk_measures,
    t_distribution,
    violating_records,
    wildcard_dependent_records,
    wildcard_dependent_statement,
)
from kanon_core.steps import SetRoles

ensure_app_navigation()

st.title("Risk")
state.keep_widget_values()  # the choices of the page left, for when it is opened again
state.show_flash()
if big_file.risk_panel(state.session_k()):  # a large file opened on the Data page: its class table
    st.stop()
ds = state.dataset()
settings = state.settings()

c1, c2, c3 = st.columns([4, 1, 1])
state.widget_value("w_risk_qis", list(ds.roles.qis), options=ds.columns)
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
    summary = state.memo("risk_summary", (tuple(qis), k, ds.missing, alpha),
                         lambda: shared_results.risk_summary(ds, tuple(qis), k, alpha))
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
    from kanon_core.utility.plots import class_size_figure  # log scale, tail of large classes in one bar

    fig = class_size_figure(summary.size_distribution, k)
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=70, b=10))
    st.plotly_chart(fig, width="stretch", key="chart_sizes")
with right:
    import pandas as pd

    viol = pd.DataFrame({"k": list(summary.violations), "violating records": list(summary.violations.values())})
    fig2 = px.bar(viol, x="k", y="violating records", title="Records violating k, for k = 2..10")
    fig2.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig2, width="stretch", key="chart_viol")

n_dep = summary.n_wildcard_dependent
if n_dep:
    st.warning(wildcard_dependent_statement(n_dep, k), icon=":material/warning:")
    with st.expander(f"The {n_dep:,} records resting on missing values"):
        dep = wildcard_dependent_records(qm, summary.sizes, k)
        st.caption("fk_alpha1: class size counting every match; fk_alpha0: counting only records with the same "
                   f"values and complete records. Showing {len(dep):,} of {n_dep:,}, fewest firm matches first.")
        st.dataframe(dep, hide_index=True, width="stretch")

st.page_link("pages/minucs.py", label="Which combinations make records unsafe? Explore the MINUCs", icon=":material/search:")
st.caption(READINGS["suda"])

st.subheader("Quasi-identifiers")
st.dataframe(summary.per_qi, hide_index=True, width="stretch")

st.subheader(f"Records violating k = {k}")
table = violating_records(qm, summary.sizes.fk, k, summary.sizes.Fk)
st.caption(f"Showing {len(table):,} of {summary.n_violating:,}, smallest classes first.")
st.dataframe(table, hide_index=True, width="stretch")

# -- risk beyond k: individual and household risk, l-diversity, t-closeness (issue 13) ---------------------
st.divider()
st.header("Risk beyond k")
st.caption("Individual risk (Benedetti & Franconi, as sdcMicro's measure_risk), household risk, and for sensitive "
           "variables l-diversity (Machanavajjhala et al.) and t-closeness (Li et al.). Each figure has a plain "
           "reading under its ⓘ.")
others = [c for c in ds.columns if c not in qis]
b = st.columns([1, 1, 2, 3])
max_risk = float(state.shared_number_input(
    b[0], "Max. individual risk", "max_risk", "w_max_risk", 0.01, min_value=0.0001, max_value=0.9999, step=0.005,
    format="%.4f", help=READINGS["records_above_max_risk"]))
# the officer's choices kept across pages (kanon_app.state.keep_widget_values)
state.widget_value("w_risk_method", "approx", options=["approx", "exact"])
state.widget_value("w_household", None, options=[None, *others])
method = b[1].selectbox("Risk method", ["approx", "exact"], key="w_risk_method",
                        help="Benedetti & Franconi's risk: sdcMicro's approximation (default) or the exact expectation.")
household = b[2].selectbox("Household identifier", [None] + others, key="w_household",
                           format_func=lambda v: "(none)" if v is None else v,
                           help=READINGS["household_risk"])
state.widget_value("w_sensitive", [], options=[c for c in others if c != household])
sensitive = b[3].multiselect("Sensitive variables", [c for c in others if c != household], key="w_sensitive",
                             help="Variables whose values must not be revealed (diagnosis, income...): for "
                                  "l-diversity and t-closeness.")
try:
    measures = state.memo(
        "risk_measures", (tuple(qis), k, ds.missing, alpha, max_risk, method, household, tuple(sensitive)),
        lambda: risk_measures(ds, summary.sizes, qis, max_risk=max_risk, method=method, household=household,
                              sensitive=sensitive))
except KanonError as exc:
    st.error(str(exc))
    st.stop()

g = measures.glob
m2 = st.columns(4)
m2[0].metric("Expected re-identifications", f"{g.expected_reidentifications:,.2f}",
             help=READINGS["expected_reidentifications"])
m2[1].metric("Global risk", f"{g.global_risk:.4%}", help=READINGS["global_risk"])
m2[2].metric(f"Records above {max_risk:g}", f"{g.n_above:,}", help=READINGS["records_above_max_risk"])
m2[3].metric("Highest individual risk", f"{g.max_risk:.3g}", help=READINGS["individual_risk"])
weights_note = ("from the sampling weights" if measures.weighted
                else "without a sampling weight, so it is 1 / fk (choose a weight on the Data page)")
st.markdown(f"An intruder who tried every record would identify about **{g.expected_reidentifications:,.1f}** "
            f"people correctly ({g.global_risk:.3%} of the records); the riskiest record has "
            f"{chance_in_words(g.max_risk)} of being identified. Individual risk is estimated {weights_note}.")
if g.n_undefined:
    st.warning(g.undefined_note, icon=":material/warning:")
if alpha < 1 and bool(((summary.sizes.fk > 1) & (summary.sizes.fk < 2)).any()):
    st.caption("With alpha below 1 some class sizes fall between 1 and 2: sdcMicro's formula gives these records "
               "risk 0 (none of its cases applies), and kanon reports the same to agree with it.")

left2, right2 = st.columns(2)
with left2:
    fig3 = px.bar(risk_distribution(measures.individual), x="risk", y="records", title="Records by individual risk")
    fig3.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig3, width="stretch", key="chart_indiv_risk")
if measures.household is not None:
    with right2:
        h = measures.household
        fig4 = px.bar(risk_distribution(h.per_record), x="risk", y="records", title="Records by household risk")
        fig4.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=10))
        st.plotly_chart(fig4, width="stretch", key="chart_hh_risk")
    st.warning(HOUSEHOLD_ID_WARNING.format(name=h.variable), icon=":material/warning:")
    st.markdown(f"Household level: **{h.expected_reidentifications:,.1f}** expected re-identifications counted over "
                f"records ({h.global_risk:.3%}); {h.n_households:,} households, the largest with "
                f"{h.largest_household:,} members; {h.n_above:,} records in households above {max_risk:g}.")

l_target, t_target = 2, 0.2
if measures.sensitive:
    s_cols = st.columns([1, 1, 1, 3])
    state.widget_value("w_l_target", 2)
    state.widget_value("w_t_target", 0.2)
    l_target = int(s_cols[0].number_input("Target l", min_value=1, max_value=50, key="w_l_target",
                                          help=READINGS["l_distinct"]))
    t_target = float(s_cols[1].number_input("Target t", min_value=0.0, max_value=1.0, step=0.05,
                                            key="w_t_target", help=READINGS["t_closeness"]))
    s_cols[2].caption(f"Recursive (c,l) uses c = {measures.sensitive[0].c:g} (sdcMicro's default).")
    for s in measures.sensitive:
        st.subheader(f"Sensitive variable: {s.name}")
        lj, tj = s.to_json(measures.table.count)
        m3 = st.columns(4)
        m3[0].metric("Distinct l (min)", f"{lj['l_diversity']:,}", help=READINGS["l_distinct"])
        m3[1].metric("Entropy l (min)", f"{lj['entropy_l']:.2f}", help=READINGS["l_entropy"])
        m3[2].metric(f"Recursive ({s.c:g},l) (min)", f"{lj['recursive_l']:,}", help=READINGS["l_recursive"])
        m3[3].metric(f"t-closeness (worst, {s.distance})", f"{tj['t']:.3f}", help=READINGS["t_closeness"])
        if lj["records_with_l_1"]:
            st.markdown(f"**{lj['records_with_l_1']:,}** records are in groups where everyone has the same "
                        f"{s.name} (or it is missing): finding their group reveals it.")
        per_l = measures.table.per_record(s.l_distinct)
        per_t = measures.table.per_record(s.t)
        c1_, c2_ = st.columns(2)
        with c1_:
            f5 = px.bar(l_distribution(per_l), x="l", y="records", title=f"Records by distinct l of {s.name}")
            f5.update_layout(height=300, margin=dict(l=10, r=10, t=40, b=10))
            st.plotly_chart(f5, width="stretch", key=f"chart_l_{s.name}")
        with c2_:
            f6 = px.bar(t_distribution(per_t), x="t", y="records", title=f"Records by t-closeness of {s.name}")
            f6.update_layout(height=300, margin=dict(l=10, r=10, t=40, b=10))
            st.plotly_chart(f6, width="stretch", key=f"chart_t_{s.name}")

st.subheader("Records failing each criterion")
fails = failing_criteria(summary, measures, l_target, t_target)
tabs = st.tabs([f"{name} ({int(mask.sum()):,})" for name, mask in fails.items()])
for tab, (name, mask) in zip(tabs, fails.items()):
    with tab:
        idx = np.flatnonzero(mask)
        if not len(idx):
            st.success(f"No record fails {name}.")
            continue
        shown = measure_records(qm, summary, measures, idx)
        shown.insert(1, "in words", describe_records(shown["record"].to_numpy(), qm, summary.sizes, measures))
        st.caption(f"Showing {len(shown):,} of {len(idx):,}, highest individual risk first. Values are shown to you "
                   "here only; exports and logs never contain them.")
        st.dataframe(shown, hide_index=True, width="stretch")

st.subheader("One record in words")
d = st.columns([1, 1, 4])
top = int(np.nanargmax(measures.individual)) if np.isfinite(measures.individual).any() else 0
rec = int(d[0].number_input("Record", min_value=0, max_value=max(0, summary.n_records - 1), value=top,
                            key="w_describe_record", help="Row number in the file (0 = first); starts at the "
                                                          "riskiest record."))
show_values = d[1].checkbox("Show its values", value=False, key="w_show_values",
                            help="On this screen only; never exported.")
st.info(describe_record(rec, qm, summary.sizes, measures, show_values=show_values))
prefetch.start_default_minucs()  # the MINUCs page's search, while the officer reads this page
