"""Large files in the dashboard: a CSV or Parquet file opened by its path and read by an out-of-core engine.

An upload is read in memory, so a census file is opened by path instead (the dashboard runs on the
machine that holds the data). The engine gives the Data page its preview and column summary, and the
Risk page its figures from the class table; neither ever holds the file. Pages call :func:`data_panel`
and :func:`risk_panel`; everything else stays on the in-memory data set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import streamlit as st

from kanon_core.classtable import ClassTable
from kanon_core.engines import get_engine
from kanon_core.engines.api import FileSummary
from kanon_core.engines.risk import risk_of_table
from kanon_core.errors import KanonError

KEY = "big_file"
ENGINES = ("duckdb", "polars")

AT_SCALE = (
    "Out of core, a file is never read into memory: the engine aggregates it into its class table (the "
    "distinct combinations of the quasi-identifiers with their counts and weight sums). The Data page shows "
    "its preview and column summary, and the Risk page its class sizes, k-anonymity violations, class-size "
    "distribution and per-variable counts. MINUCs, Recode, Suppress, Compare and Export need the records in "
    "memory and keep working on the data set loaded above; for a large file use the command line "
    "(kanon generalize --engine duckdb writes a generalized release of any size)."
)


def _stamp(path: str) -> tuple[str, float, int]:
    p = Path(path)
    st_ = p.stat()
    return str(p.resolve()), st_.st_mtime, st_.st_size


def _cached(name: str, params: tuple, compute):
    """Memoised in the session's view of the server's byte-bounded cache (kanon_app.cache): no copy on a
    hit (a class table of millions of classes is not pickled on every rerun), evicted by bytes."""
    from . import state

    return state.memo(name, params, compute, version=state.history().original)


def _summary(stamp: tuple[str, float, int], engine: str) -> FileSummary:
    return _cached("big_summary", (stamp, engine), lambda: get_engine(engine).summary(stamp[0]))


def _table(stamp: tuple[str, float, int], engine: str, qis: tuple[str, ...], weight: str | None) -> ClassTable:
    return _cached("big_table", (stamp, engine, qis, weight),
                   lambda: get_engine(engine).class_table(stamp[0], list(qis), weight))


def _risk(stamp: tuple[str, float, int], engine: str, qis: tuple[str, ...], weight: str | None, k: int,
          missing: str):
    table = _table(stamp, engine, qis, weight)
    return _cached("big_risk", (stamp, engine, qis, weight, k, missing), lambda: risk_of_table(table, k, missing))


def active() -> dict[str, Any] | None:
    """The open large file (path, engine, QIs, weight), or None."""
    return st.session_state.get(KEY)


def data_panel() -> None:
    """The Data page's "large file" block: open by path, preview, column summary, QIs and weight."""
    current = active()
    with st.expander("Open a large file (CSV or Parquet, out of core)", expanded=current is not None,
                     icon=":material/database:"):
        st.caption(AT_SCALE)
        c1, c2, c3 = st.columns([5, 1, 1])
        path = c1.text_input("Path of the file on this machine", key="w_big_path")
        engine = c2.selectbox("Engine", ENGINES, key="w_big_engine")
        if c3.button("Open", key="w_big_open", disabled=not path):
            try:
                stamp = _stamp(os.path.expanduser(path))
                with st.spinner("Summarising the file ..."):
                    _summary(stamp, engine)
                st.session_state[KEY] = {"stamp": stamp, "engine": engine, "qis": (), "weight": None}
                current = active()
            except (KanonError, OSError) as exc:
                st.error(str(exc) if isinstance(exc, KanonError) else f"Cannot open the file ({type(exc).__name__}).")
        if current is None:
            return
        try:
            summary = _summary(current["stamp"], current["engine"])
        except KanonError as exc:
            st.error(str(exc))
            return
        st.markdown(f"**{Path(current['stamp'][0]).name}** — {summary.n_records:,} records, "
                    f"{len(summary.columns)} variables ({summary.engine})")
        st.dataframe(summary.columns, hide_index=True, width="stretch")
        st.caption("First rows (as read: empty cells are missing, all text kept)")
        st.dataframe(summary.preview, hide_index=True, width="stretch")
        names = list(summary.columns["variable"])
        q1, q2, q3 = st.columns([4, 2, 1])
        qis = q1.multiselect("Quasi-identifiers (for the Risk page)", names, default=list(current["qis"]),
                             key="w_big_qis")
        weight = q2.selectbox("Weight", [None, *names], index=0 if current["weight"] is None else
                              [None, *names].index(current["weight"]), key="w_big_weight")
        current.update(qis=tuple(qis), weight=weight)
        if q3.button("Close", key="w_big_close"):
            del st.session_state[KEY]
            st.rerun()


def risk_panel(k: int = 3) -> bool:
    """The Risk page for the open large file; False (nothing shown) when none is open with QIs chosen."""
    current = active()
    if not current or not current.get("qis"):
        return False
    name = Path(current["stamp"][0]).name
    st.info(f"Risk of the large file **{name}** on its class table ({current['engine']}, out of core). "
            "Close it on the Data page to return to the data set in memory.")
    c1, c2 = st.columns([1, 2])
    k = int(c1.number_input("k", min_value=1, value=int(k), step=1, key="w_big_k"))
    missing = c2.radio("Missing values", ("wildcard", "category"), horizontal=True, key="w_big_missing")
    try:
        with st.spinner("Counting classes ..."):
            risk = _risk(current["stamp"], current["engine"], tuple(current["qis"]), current["weight"], k, missing)
    except KanonError as exc:
        st.error(str(exc))
        return True
    p = risk.payload
    m = st.columns(4)
    m[0].metric("Records", f"{p['n_records']:,}")
    m[1].metric("Classes", f"{p['n_classes']:,}")
    m[2].metric("k achieved", p["k_achieved"])
    m[3].metric(f"Records below k = {k}", f"{p['n_violating']:,}")
    if p["wildcard_dependent"]:
        st.caption(f"{p['wildcard_dependent']:,} records reach k only through records with missing values.")
    st.subheader("Violations by k")
    st.bar_chart({"records below k": {int(kk): v for kk, v in p["violations_by_k"].items()}})
    st.subheader("Class-size distribution")
    st.dataframe(p["size_distribution"], hide_index=True)
    st.subheader("Per variable")
    st.dataframe(p["per_qi"], hide_index=True)
    st.caption(AT_SCALE)
    return True
