"""The weighted-percentages comparison on screen (Wilson et al.'s overlap count and differences, the interval
chart of one variable, the histogram of relative differences, the table and its download), for two versions
in memory (the Compare page) and for a large file and its release (its large-file panel).

A variable of 100,000 categories (a postcode) makes a table of 100,000 rows: the chart draws its largest
categories and says what it leaves out (:mod:`kanon_core.utility.plots`), the table is shown a page at a
time, and the download (every row) is written only when it is clicked."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from kanon_core.fmt import number, readable_table
from kanon_core.utility.compare import DistributionComparison
from kanon_core.utility.plots import ci_comparison_figure, relative_difference_histogram

from .pager import paged

NOT_COMPARED = {c: "not compared (category absent or fully suppressed)" for c in (
    "pct_original", "pct_treated", "se_original", "se_treated", "ci_low_original", "ci_high_original",
    "ci_low_treated", "ci_high_treated", "difference", "relative_difference")} | {
    "overlap": "not judged (category not on both sides, or an interval that does not exist)"}


def show_comparison(comp: DistributionComparison, variables: Sequence[str], file_name: str, key: str = "cmp") -> None:
    """Everything the officer reads about one comparison; ``key`` keeps the widgets of two panels apart."""
    s = comp.summary
    m = st.columns(3) + st.columns(2)  # two rows: the labels are not cut off
    m[0].metric("CIs overlapping", f"{s.n_overlap} of {s.n_judged}",
                help="Categories compared on both sides whose two 95 % intervals exist"
                + (f"; {s.n_without_interval} have no interval on one side or both" if s.n_without_interval else "")
                + ".")
    m[1].metric("Mean difference (pp)", number(s.mean_difference, why="no category compared"))
    m[2].metric("Median difference (pp)", number(s.median_difference, why="no category compared"))
    m[3].metric("Largest |difference| (pp)", number(max(abs(s.min_difference), abs(s.max_difference)),
                                                    why="no category compared"))
    m[4].metric("Categories completely suppressed", f"{s.n_completely_suppressed}")
    st.caption(s.sentence() + f" Design: {comp.design}.")
    left, right = st.columns([3, 2])
    with left:
        var = st.selectbox("Variable to plot", list(variables), key=f"w_{key}_plot_var")
        st.plotly_chart(ci_comparison_figure(comp.table, var), width="stretch", key=f"chart_{key}_ci")
    with right:
        st.plotly_chart(relative_difference_histogram(comp.table), width="stretch", key=f"chart_{key}_hist")
    shown = paged(comp.table, f"w_{key}_table_page", noun="categories")  # a page of a postcode's 100,000
    st.dataframe(readable_table(shown, why=NOT_COMPARED), hide_index=True, width="stretch", height=360)
    st.download_button("Download the table (CSV)", lambda: comp.table.to_csv(index=False), file_name=file_name,
                       mime="text/csv", key=f"btn_{key}_download", on_click="ignore")
