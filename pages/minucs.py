"""MINUCs: every minimal unsafe combination of every record, what drives them, and who is most at risk."""

from __future__ import annotations

import pandas as pd

# the Records tab's styled record view: pandas' Styler and its templates load with the page (about 60 ms),
# not on the first switch to that tab
import pandas.io.formats.style  # noqa: F401
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from kanon_app import big_file, minuc_carry, prefetch, state
from kanon_app.minuc_estimate_text import bounded_estimate_text
from kanon_app.navigation import ensure_app_navigation
from kanon_app.pager import paged
from kanon_app.sections import lazy_tabs
from kanon_core.errors import KanonError
from kanon_core.fmt import readable_table
from kanon_core.risk.minucs import (
    RESPONSIVE_ESTIMATE_SECONDS,
    estimate_cost,
    find_minucs,
    minuc_rows,
)
from kanon_core.risk.minucs_by_subsets import METHOD_TEXT
from kanon_core.risk.qid import minimal_qids_from_minucs
from kanon_core.risk.suda import suda_scores
from kanon_core.utility.plots import histogram_data, inert_frame, label_every_category, wrap_title

ensure_app_navigation()

st.title("MINUCs")
st.caption("A **MINUC** (minimal unsafe combination) of a record is a set of quasi-identifiers whose values "
           "occur in fewer than k records while every smaller part of it occurs at least k times. "
           "For k = 2 these are the minimal sample uniques that SUDA scores. Recode the variables and values "
           "that sit in most MINUCs first, then re-run.")
state.keep_widget_values()  # the choices of the page left, for when it is opened again
state.show_flash()
if big_file.minucs_panel(state.session_k()):  # a large file opened on the Data page: its class table
    st.stop()
ds = state.dataset()

c1, c2, c3 = st.columns([5, 1, 1])
state.widget_value("w_minuc_qis", list(ds.roles.qis), options=ds.columns)
state.widget_value("w_minuc_max", 0)
qis = c1.multiselect("Quasi-identifiers", ds.columns, key="w_minuc_qis")
k = state.k_input(c2, "w_minuc_k", max_value=50,
                  help="A combination is unsafe when it occurs in fewer than k records (2: sample uniques). "
                       "The session's k: Risk, Suppress, Recode and the report use the same.")
max_size = int(c3.number_input("Max size", min_value=0, max_value=64, step=1, key="w_minuc_max",
                               help="Largest MINUC size to search; 0 = all sizes."))
if not qis:
    st.info("Choose at least one quasi-identifier.")
    st.stop()
st.caption(f"Missing values count as **{ds.missing}** (change on the Data page). "
           f"Version v{state.current().id}: {ds.n_records:,} records.")

params = (tuple(qis), k, max_size or None, ds.missing)
try:
    qm = state.memo("qi_matrix", tuple(qis), lambda: ds.qi_matrix(qis))
except KanonError as exc:
    st.error(str(exc))
    st.stop()

# the search runs off the script thread (kanon_app.background): the page stays responsive, Cancel works. When
# cheap enough it starts as the page opens (kanon_app.prefetch), its results shown only after the click.
ahead = prefetch.minucs_ahead(params, shown_here=True)
result = None if ahead else state.memo_peek("minucs", params)
# after a recode, the records it did not touch keep the MINUCs an earlier version's search found
carry = None if result is not None else minuc_carry.earlier_search(params, tuple(qis), qm, k, ds.missing,
                                                                    max_size or None)


plan = None if carry is None else carry.plan
# the distinct records and their class sizes, made once for this version's QIs (whatever k and the size
# limit) and shared by the estimate and the search
rows = None if result is not None else state.memo("minuc_rows", prefetch.minuc_rows_params(tuple(qis), ds.missing),
                                                  lambda: minuc_rows(qm, ds.missing))


def _search(progress):
    return find_minucs(qm, k=k, missing=ds.missing, max_size=max_size or None, progress=progress, carry=plan,
                       rows=rows)


if result is None:
    offer = st.empty()
    clicked = False
    if ahead or not state.job_running("minucs", params):
        with offer.container():
            try:
                # with a carry-over, the time is that of the records searched again; made on this page's
                # thread, so within a time budget (40 QIs could take minutes: the page would not open)
                est = state.memo("minuc_estimate",
                                 prefetch.minuc_estimate_params(params, None if carry is None else carry.version_id),
                                 lambda: estimate_cost(qm, k=k, missing=ds.missing, max_size=max_size or None,
                                                       carry=plan, rows=rows,
                                                       budget_seconds=RESPONSIVE_ESTIMATE_SECONDS))
            except KanonError as exc:
                st.error(str(exc))
                st.stop()
            if est.at_least is None:
                st.info(f"Estimated from {est.sampled_rows:,} of {est.n_distinct_rows:,} distinct records: about "
                        f"**{est.seconds:,.1f} s**, **{est.minucs:,.0f} MINUCs**, "
                        f"{est.memory_bytes / 2**20:,.0f} MB, found {METHOD_TEXT[est.method]}.")
            else:
                st.warning(bounded_estimate_text(est))
            if carry is not None:
                st.caption(carry.text())
            clicked = st.button("Find MINUCs", key="btn_find_minucs", type="primary")
        if clicked:
            prefetch.ask_minucs(params)
            ahead = False
        elif est.at_least is None:  # a search of unknown cost is never started unasked
            prefetch.start_minucs_ahead(params, est, _search)
            ahead = prefetch.minucs_ahead(params, shown_here=True)
    if ahead:
        st.stop()
    result = state.run_in_background("minucs", params, "MINUC search", _search, start_now=clicked)
    if result is None:
        st.stop()
    offer.empty()

# -- results ------------------------------------------------------------------------------------------------
m = st.columns(5)
m[0].metric("MINUCs", f"{result.total:,}", help="Over all records; a combination shared by several records "
                                                 "(possible for k > 2) counts once per record.")
m[1].metric("Records with a MINUC", f"{result.records_with_minucs():,}")
sizes = {s: v for s, v in result.totals_by_size().items() if v}
m[2].metric("Smallest MINUC", f"{min(sizes) if sizes else 0}",
            help="Fewest quasi-identifiers that single out some record (the minimum violating QID).")
m[3].metric("Seconds", f"{result.seconds:,.2f}",
            help="From the search's start to its end. A search started ahead of the click (when this page or the "
                 "Risk page opened) also waited, within this time, while pages were drawn.")
m[4].metric("Complete", "yes" if result.complete else "no",
            help="No when a maximum size may have cut larger MINUCs off.")
if result.rows_carried:
    st.caption(f"{result.rows_carried:,} of {len(result.row_mult):,} distinct records kept the MINUCs an earlier "
               "version's search found (the change did not touch them); the others were searched again.")

left, right = st.columns(2)
with left:
    by_size = [{"size": s, "MINUCs": v} for s, v in result.totals_by_size().items()]
    fig = px.bar(by_size, x="size", y="MINUCs", title="MINUCs by size")
    fig.update_layout(height=330, margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig, width="stretch", key="chart_minuc_sizes")
with right:
    contrib = state.memo("minuc_var_contrib", params, result.variable_contributions)
    fig = px.bar(inert_frame(contrib), x="share_percent", y="variable", orientation="h",
                 title=wrap_title("Share of MINUCs containing each variable (%)", 40),
                 labels={"share_percent": "share of MINUCs (%)", "variable": ""})
    fig.update_layout(margin=dict(l=10, r=10, t=60, b=10), yaxis={"categoryorder": "total ascending"})
    label_every_category(fig, "y", contrib["variable"], min_height=330)  # all 19 names, none skipped
    st.plotly_chart(fig, width="stretch", key="chart_minuc_vars")


# the tabs' bodies; kanon_app.sections.lazy_tabs (at the end) runs only the open one, and a tab switch
# reruns only the tabs
def _tab_values() -> None:
    values = state.memo("minuc_values", params, lambda: result.value_contributions(qm))
    st.caption("Which values of which variables sit in the most MINUCs: the first candidates for recoding.")
    st.dataframe(readable_table(values.drop(columns="code").head(100)), hide_index=True, width="stretch")

def _tab_records() -> None:
    state.widget_value("w_minuc_filter", [])
    only = st.multiselect("Only MINUCs containing all of", list(result.names), key="w_minuc_filter")
    ranking = state.memo("minuc_ranking", params, result.record_ranking)
    if only:
        counts = result.count_containing(only)
        ranking = ranking[counts[ranking.record.to_numpy()] > 0].assign(
            matching=lambda t: counts[t.record.to_numpy()])
    st.caption(f"{len(ranking):,} records, smallest MINUC first, then most MINUCs.")
    shown = paged(ranking, "w_minuc_rank_page", noun="records")  # a page of rows: 500 took a second to draw
    st.dataframe(readable_table(shown, rename={"smallest": "smallest MINUC", **{
        c: f"MINUCs of size {c[4:]}" for c in shown.columns if c.startswith("size") and c[4:].isdigit()}}),
        hide_index=True, width="stretch")
    if len(ranking):
        state.widget_value("w_minuc_record", int(ranking.record.iloc[0]))
        rec = int(st.number_input("Record (row number) to inspect", min_value=0, max_value=ds.n_records - 1,
                                  step=1, key="w_minuc_record"))
        view = result.record_view(rec, qm)
        if only:
            view = view[[all(view.at[i, v] != "" for v in only) for i in view.index]]
        st.caption(f"Record {rec}: {int(result.per_record_counts[rec]):,} MINUC(s); each row is one, "
                   "showing the record's values on its variables.")
        view = paged(view, f"w_minuc_view_page_{rec}", noun="MINUCs")  # styled a page at a time
        st.dataframe(view.style.map(lambda v: "background-color: #ffe08a" if v not in ("", None) else ""),
                     hide_index=True, width="stretch")

def _tab_suda() -> None:
    if k != 2:
        st.info("SUDA scores are defined on minimal sample uniques: set k = 2.")
    else:
        suda = state.memo("suda", params, lambda: suda_scores(result, qm))
        s = suda.summary()
        c = st.columns(4)
        c[0].metric("Records with a SUDA score", f"{s['records_with_score']:,}")
        c[1].metric("Largest SUDA score", f"{s['max_score']:,.0f}")
        c[2].metric("Mean DIS-SUDA", f"{s['mean_dis_suda']:.5f}")
        c[3].metric("DIS (f = 0.01)", f"{s['dis']:.4f}", help="Probability that a unique match is correct.")
        scored = suda.score[suda.score > 0]
        if len(scored):
            # counted into their bins here when there are many: 200,000 scores sent as such took megabytes
            fig = go.Figure(go.Histogram(**histogram_data(scored, 50), hovertemplate="%{x}: %{y:,} records"
                                                                                       "<extra></extra>"))
            fig.update_layout(title="SUDA scores of records with at least one MSU", xaxis_title="SUDA score",
                              yaxis={"title": "records", "type": "log"}, height=320,
                              margin=dict(l=10, r=10, t=40, b=10))
            st.plotly_chart(fig, width="stretch", key="chart_suda")
        st.dataframe(readable_table(suda.variable_contributions, digits=4), hide_index=True, width="stretch")

def _tab_qids() -> None:
    if not result.complete:
        st.info("Run without a maximum size to list the minimal violating sets exactly.")
    else:
        qids = state.memo("minimal_qids", params, lambda: minimal_qids_from_minucs(result))
        st.caption(f"{len(qids):,} minimal sets of quasi-identifiers on which some record is in a class "
                   f"smaller than k = {k} (no smaller part of them is). The smallest ones first.")
        table = pd.DataFrame({"variables": [", ".join(q) for q in qids], "size": [len(q) for q in qids]})
        st.dataframe(paged(table, "w_minuc_qid_page", noun="sets"), hide_index=True, width="stretch")


lazy_tabs(["Values to recode", "Records", "SUDA scores", "Violating QI sets"], "w_minuc_section",
          [_tab_values, _tab_records, _tab_suda, _tab_qids])
