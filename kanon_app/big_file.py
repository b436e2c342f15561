"""Large files in the dashboard: a CSV or Parquet file opened by its path and read by an out-of-core engine.

An upload is read in memory, so a census file is opened by path instead (the dashboard runs on the
machine that holds the data). The engine gives the Data page its preview and column summary, and the
Risk page its figures from the class table, the Recode page the optimal generalization found on that table
(:func:`kanon_core.engines.generalize.optimal_at_scale`) and its release written by the engine, the Suppress
page the strict local suppression (kanon_app.big_suppress), the MINUCs page the MINUC counts of the class
table (:func:`minucs_panel`), and the Compare page the weighted
percentages of the file and of that release (:func:`compare_panel`); none ever holds the file. Everything
else stays on the in-memory data set.

The long steps (the file's summary, its class table, the wildcard class sizes) run off the script thread
(:mod:`kanon_app.background`) with a progress bar and a Cancel button: the engine's progress messages and,
for DuckDB, the running query's share done reach the bar's text. DuckDB stops a running query on Cancel
(``connection.interrupt()``); Polars cannot stop a collect mid-way, so there Cancel takes effect after the
current query, and the page says so. A cancelled step changes nothing (the open file, its QIs and every
cached result stay as they were) and is not restarted by itself: the page offers to run it again.

Results are memoised in the server's byte-bounded cache (:mod:`kanon_app.cache`) under the file's identity
(resolved path, modification time, size), the engine, the QIs and the weight; the class sizes also under
the missing-value semantics, and the figures under k. A new k is then a pass over the cached sizes, a
rerun nothing, and choosing the QIs on the Data page already starts counting the classes for the Risk page.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from kanon_core.classtable import ClassTable
from kanon_core.engines import get_engine
from kanon_core.engines.api import FileSummary
from kanon_core.engines.base import EngineSettings
from kanon_core.engines.generalize import (
    OptimalAtScale,
    optimal_at_scale,
    release_recodes,
    write_generalized_release,
)
from kanon_core.engines.risk import TableRisk, headline_of_table, per_qi_of, risk_of_table
from kanon_core.errors import Cancelled, InputError, KanonError
from kanon_core.export import formula_like_in_csv, formula_note
from kanon_core.outputs import check_outputs, data_inputs
from kanon_core.progress import Progress
from kanon_core.risk.classes import ClassSizes

from . import background, state

KEY = "big_file"
PENDING = "big_file_pending"
"""A file being opened, (stamp, engine), until its summary is ready; the open file stays until then."""
STOPPED = "big_file_stopped"
"""Job keys the user cancelled (or that failed), with what to say: not restarted without a click."""
ENGINES = ("duckdb", "polars")

AT_SCALE = (
    "Out of core, a file is never read into memory: the engine aggregates it into its class table (the "
    "distinct combinations of the quasi-identifiers with their counts and weight sums). The Data page shows "
    "its preview and column summary, and the Risk page its class sizes, k-anonymity violations, class-size "
    "distribution and per-variable counts, the Recode page the optimal generalization with automatic "
    "hierarchies and its release written by the engine, the MINUCs page the counts of every record's MINUCs "
    "found on the class table, the Suppress page the optimal strict local suppression solved on the class table "
    "and its release written by the engine, and the Compare page the weighted percentages of the file and of the "
    "generalized release. Export (its recipe, report and project) works on the data set loaded above; for a "
    "large file the command line replays a recipe (kanon apply --engine duckdb writes releases of any size)."
)

STAMP = tuple[str, float, int]


def _stamp(path: str) -> STAMP:
    """The file's identity in cache keys: a file changed on disk is a new file."""
    p = Path(path)
    st_ = p.stat()
    return str(p.resolve()), st_.st_mtime, st_.st_size


# -- engine progress and cancel ------------------------------------------------------------------------


@dataclass
class EngineProgress:
    """Bridges an engine's progress to a job's :class:`Progress`: the engine's messages (its ``say``, in
    the worker thread, a checkpoint where Cancel stops) and the running query's share done (from the
    engine's watcher thread, which must never raise) move the bar between ``lo`` and ``hi``."""

    progress: Progress
    lo: float = 0.0
    hi: float = 1.0
    message: str = ""

    def say(self, message: str) -> None:
        self.message = message
        self.progress.update(self.lo, message)

    def query(self, share: float) -> None:
        if self.progress.cancelled:
            return
        with contextlib.suppress(Cancelled):  # cancelled in between: the engine's own poll stops the query
            self.progress.update(self.lo + (self.hi - self.lo) * share, f"{self.message} ({share:.0%})")

    def settings(self) -> EngineSettings:
        """Engine settings whose messages, query progress and cancel flag are this job's."""
        return EngineSettings(progress=self.say, cancelled=lambda: self.progress.cancelled,
                              query_progress=self.query)


def stops_mid_query(engine: str) -> bool:
    """Whether Cancel stops the engine's running query (DuckDB) or only takes effect after it (Polars)."""
    return bool(getattr(get_engine(engine), "stops_mid_query", False))


def summary_work(stamp: STAMP, engine: str) -> Callable[[Progress], FileSummary]:
    """The Data page's summary of the file (column types, distinct and missing counts, first rows)."""
    def work(progress: Progress) -> FileSummary:
        bridge = EngineProgress(progress, 0.0, 0.95)
        settings = bridge.settings()
        try:
            summary = get_engine(engine).summary(stamp[0], settings)
        finally:
            settings.close()
        progress.update(1.0, f"{summary.n_records:,} records")  # a Cancel that came too late still counts
        return summary
    return work


def table_work(stamp: STAMP, engine: str, qis: tuple[str, ...],
               weight: str | None) -> Callable[[Progress], ClassTable]:
    """The class table of the file on ``qis`` (one GROUP BY by the engine, then its values typed)."""
    def work(progress: Progress) -> ClassTable:
        bridge = EngineProgress(progress, 0.0, 0.8)
        settings = bridge.settings()
        try:
            table = get_engine(engine).class_table(stamp[0], list(qis), weight, settings=settings)
        finally:
            settings.close()
        progress.update(1.0, f"{table.n_classes:,} classes")
        return table
    return work


def sizes_work(table: ClassTable, missing: str) -> Callable[[Progress], ClassSizes]:
    """Class sizes of the table under ``missing`` (the wildcard kernel at scale; it cannot stop mid-way)."""
    def work(progress: Progress) -> ClassSizes:
        progress.update(0.05, f"matching the missing patterns of {table.n_classes:,} classes")
        sizes = table.class_sizes(missing, 1.0, wildcard_split=True)
        progress.update(1.0, "done")
        return sizes
    return work


# -- jobs ----------------------------------------------------------------------------------------------------


def job_key(name: str, params: Hashable) -> tuple:
    """The key of a big-file job and of its memoised result (the session's original version: a large file
    does not depend on the in-memory data set's versions)."""
    hist = state.history()
    return (hist.uid, hist.original.id, name, params)


def _stopped() -> dict:
    return st.session_state.setdefault(STOPPED, {})


def _peek(name: str, params: Hashable) -> Any | None:
    return state.memo_peek(name, params, version=state.history().original)


def _cached(name: str, params: Hashable, compute: Callable[[], Any]) -> Any:
    """Memoised in the session's view of the server's byte-bounded cache (kanon_app.cache): no copy on a
    hit (a class table of millions of classes is not pickled on every rerun), evicted by bytes."""
    return state.memo(name, params, compute, version=state.history().original)


def _job(name: str, key: tuple) -> background.Job | None:
    """This session's job ``name`` for ``key``, running or finished but not yet reported, else None."""
    job = st.session_state.get("jobs", {}).get(name)
    return job if job is not None and job.key == key else None


def start(name: str, params: Hashable, label: str, work: Callable[[Progress], Any],
          again: bool = False, then: Callable[[Any], None] | None = None) -> background.Job | None:
    """Start job ``name`` for ``params`` unless its result is cached, it has a job already, or the user
    stopped it (``again``: the user asked for it, so a stopped job starts anew). A job of the same name for
    other parameters is cancelled (its result is no longer wanted). ``then(result)`` runs in the worker
    thread just before the result is stored (to start what the next page will need). Returns the job for
    ``params``, if any."""
    key = job_key(name, params)
    if _peek(name, params) is not None:
        return None
    job = _job(name, key)
    if job is not None:
        return job
    if key in _stopped():
        if not again:
            return None
        del _stopped()[key]
    jobs = st.session_state.setdefault("jobs", {})  # kanon_app.background's per-session jobs
    old = jobs.get(name)
    if old is not None and not old.done:
        old.cancel()
    view = st.session_state["memo"]

    def store(value: Any) -> bool:
        # what follows is registered before the result is visible: a page that finds the result in the memo
        # (it does not wait for this job then) finds the follow-up job too, and does not start a second one
        if then is not None:
            then(value)
        return view.put(key, value)

    job = background.start(key, label, work, store=store)
    jobs[name] = job
    return job


def wildcard_sizes_after(params: tuple) -> Callable[[ClassTable], None]:
    """What runs once the Data page's class table is counted, in its worker thread: the wildcard class sizes
    the Risk page shows by default (when the table has missing cells), as that page's own job, so they are
    computed while the officer is still on the Data page. Captured here in the script thread: the session's
    jobs and memo, and the job's key."""
    jobs = st.session_state.setdefault("jobs", {})
    view = st.session_state["memo"]
    sizes = (params, "wildcard")
    key = job_key("big_sizes", sizes)
    stopped = _stopped()

    def then(table: ClassTable) -> None:
        if key in view or key in stopped or not bool((table.codes < 0).any()):
            return
        old = jobs.get("big_sizes")
        if old is not None and old.key == key:
            return
        if old is not None and not old.done:
            old.cancel()
        jobs["big_sizes"] = background.start(key, "Wildcard class sizes", sizes_work(table, "wildcard"),
                                             store=lambda v: view.put(key, v))
    return then


def drive(name: str, params: Hashable, label: str, work: Callable[[Progress], Any], engine: str | None = None,
          again_label: str | None = None, stoppable: bool = False) -> Any | None:
    """The result of job ``name`` for ``params``: from the cache, or started (unless stopped by the user)
    and waited for with a progress bar and Cancel. None while not available, said on the page: cancelled
    or failed (with ``again_label``, a button to run it again)."""
    found = _peek(name, params)
    if found is not None:
        return found
    key = job_key(name, params)
    job = _job(name, key)
    button_shown = False
    if job is None:
        said = _stopped().get(key)
        clicked = False
        if said is not None:
            (st.info if said == "cancelled" else st.error)(
                f"{label} cancelled: nothing was changed." if said == "cancelled" else said)
            button_shown = again_label is not None
            clicked = button_shown and st.button(again_label, key=f"btn_big_again_{name}")
            if not clicked:
                return None
        job = start(name, params, label, work, again=clicked)
        if job is None:
            return _peek(name, params)
    if not job.done and not stoppable:  # ``stoppable``: the step checks Cancel as it goes
        if engine is None:
            st.caption("This step cannot stop mid-way: Cancel takes effect when it ends.")
        elif not stops_mid_query(engine):
            st.caption(f"{engine} cannot stop a query mid-way: Cancel takes effect when the current query ends.")
    result = background.run(name, key, label, work, start_now=False)
    if result is None and job.done:
        _stopped()[key] = "cancelled" if job.state == "cancelled" else (job.error or f"{label} failed.")
        if again_label is not None and not button_shown:  # the button of the next runs (its click is read there)
            st.button(again_label, key=f"btn_big_again_{name}")
    return result


# -- Data page -----------------------------------------------------------------------------------------------


def active() -> dict[str, Any] | None:
    """The open large file (path, engine, QIs, weight), or None."""
    return st.session_state.get(KEY)


def _open_clicked(path: str, engine: str) -> None:
    try:
        stamp = _stamp(os.path.expanduser(path))
    except OSError as exc:
        st.error(f"Cannot open the file ({type(exc).__name__}).")
        return
    st.session_state[PENDING] = (stamp, engine)
    _stopped().pop(job_key("big_summary", (stamp, engine)), None)  # Open is the user asking again


def data_panel() -> None:
    """The Data page's "large file" block: open by path, preview, column summary, QIs and weight."""
    current = active()
    with st.expander("Open a large file (CSV or Parquet, out of core)",
                     expanded=current is not None or PENDING in st.session_state, icon=":material/database:"):
        st.caption(AT_SCALE)
        c1, c2, c3 = st.columns([5, 1, 1])
        path = c1.text_input("Path of the file on this machine", key="w_big_path")
        engine = c2.selectbox("Engine", ENGINES, key="w_big_engine")
        if c3.button("Open", key="w_big_open", disabled=not path):
            _open_clicked(path, engine)
        pending = st.session_state.get(PENDING)
        if pending is not None:
            stamp, eng = pending
            try:
                summary = drive("big_summary", pending, "Summarising the file", summary_work(stamp, eng), eng)
            except KanonError as exc:
                summary = None
                st.error(str(exc))
            if summary is not None:
                st.session_state[KEY] = {"stamp": stamp, "engine": eng, "qis": (), "weight": None}
                current = active()
            if background.running("big_summary", job_key("big_summary", pending)) is None:
                st.session_state.pop(PENDING, None)  # opened, cancelled or failed: nothing is pending
        if current is None:
            return
        params = (current["stamp"], current["engine"])
        summary = drive("big_summary", params, "Summarising the file", summary_work(*params), current["engine"],
                        again_label="Summarise again")
        if summary is None:
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
        if qis and stops_mid_query(current["engine"]):  # counting starts now; a new choice interrupts it
            params = _table_params(current)
            if start("big_table", params, "Counting classes", table_work(*params),
                     then=wildcard_sizes_after(params)) is not None:
                st.caption("Counting the classes for the Risk page in the background ...")
        if q3.button("Close", key="w_big_close"):
            del st.session_state[KEY]
            st.rerun()


# -- Risk page -----------------------------------------------------------------------------------------------


def _table_params(current: dict[str, Any]) -> tuple:
    return (current["stamp"], current["engine"], tuple(current["qis"]), current["weight"])


def _has_missing(params: tuple, table: ClassTable) -> bool:
    return bool(_cached("big_has_missing", params, lambda: bool((table.codes < 0).any())))


def _sizes_now(table: ClassTable, missing: str) -> ClassSizes:
    """Class sizes computed in the page run: category sizes (each class's own count) and tables without
    missing values need no kernel, so no job."""
    return table.class_sizes(missing, 1.0, wildcard_split=True)


def _risk(params: tuple, table: ClassTable, sizes: ClassSizes, k: int, missing: str) -> TableRisk:
    per_qi = _cached("big_per_qi", params, lambda: per_qi_of(table))
    return _cached("big_risk", (params, k, missing),
                   lambda: risk_of_table(table, k, missing, sizes=sizes, per_qi=per_qi))


def _show_headline(p: dict, k: int) -> None:
    """The four figures of :data:`kanon_core.engines.risk.HEADLINE`."""
    m = st.columns(4)
    m[0].metric("Records", f"{p['n_records']:,}")
    m[1].metric("Classes", f"{p['n_classes']:,}")
    m[2].metric("k achieved", p["k_achieved"])
    m[3].metric(f"Records below k = {k}", f"{p['n_violating']:,}")


def _show(risk: TableRisk, k: int) -> None:
    p = risk.payload
    _show_headline(p, k)
    if p["wildcard_dependent"]:
        st.caption(f"{p['wildcard_dependent']:,} records reach k only through records with missing values.")
    st.subheader("Violations by k")
    st.bar_chart({"records below k": {int(kk): v for kk, v in p["violations_by_k"].items()}})
    st.subheader("Class-size distribution")
    st.dataframe(p["size_distribution"], hide_index=True)
    st.subheader("Per variable")
    st.dataframe(p["per_qi"], hide_index=True)


def _open_with_qis(what: str) -> dict[str, Any] | None:
    """The open large file when its QIs are chosen (None otherwise), announced as the page's subject."""
    current = active()
    if not current or not current.get("qis"):
        return None
    name = Path(current["stamp"][0]).name
    st.info(f"{what} of the large file **{name}** on its class table ({current['engine']}, out of core). "
            "Close it on the Data page to return to the data set in memory.")
    return current


def in_memory_notice(what: str) -> None:
    """Say, on a page that works only on the data set in memory, that a large file is open and is not what
    the page shows (so nobody exports the wrong file believing it is the large one)."""
    current = active()
    if current:
        st.info(f"The large file **{Path(current['stamp'][0]).name}** is open on the Data page; {what} works on "
                f"the data set in memory (**{state.dataset().name}**). The large file's releases are written on "
                "the Recode and Suppress pages.", icon=":material/info:")


def counted_table(current: dict[str, Any]) -> ClassTable | None:
    """The open file's class table on its QIs: cached, or counted by a background job (progress, Cancel);
    None while not available (the page says why)."""
    params = _table_params(current)
    return drive("big_table", params, "Counting classes", table_work(*params), current["engine"],
                 again_label="Count the classes again")


def asked_for(label: str, button: str, workflow_key: str, job: str, params: Hashable) -> bool:
    """Whether the officer asked for job ``job`` with these parameters: a click on the primary button records
    them (and forgets a Cancel of the same job, since the click asks again); reruns keep them, and a change
    of the parameters waits for the next click."""
    if st.button(label, key=button, type="primary"):
        st.session_state[workflow_key] = params
        _stopped().pop(job_key(job, params), None)
    return st.session_state.get(workflow_key) == params


def risk_panel(k: int = 3) -> bool:
    """The Risk page for the open large file; False (nothing shown) when none is open with QIs chosen."""
    current = _open_with_qis("Risk")
    if current is None:
        return False
    c1, c2 = st.columns([1, 2])
    k = int(c1.number_input("k", min_value=1, value=int(k), step=1, key="w_big_k"))
    missing = c2.radio("Missing values", ("wildcard", "category"), horizontal=True, key="w_big_missing")
    params = _table_params(current)
    try:
        table = counted_table(current)
        if table is None:
            st.caption(AT_SCALE)
            return True
        if missing == "category" or not _has_missing(params, table):
            sizes = _cached("big_sizes", (params, missing), lambda: _sizes_now(table, missing))
            _show(_risk(params, table, sizes, k, missing), k)
        else:
            sizes = _peek("big_sizes", (params, missing))
            if sizes is None:  # the category figures now; the wildcard sizes computed meanwhile
                top = st.container()
                label = "Wildcard class sizes"
                work = sizes_work(table, missing)
                start("big_sizes", (params, missing), label, work)
                cat = _cached("big_sizes", (params, "category"), lambda: _sizes_now(table, "category"))
                first = st.empty()
                with first.container():
                    st.warning("Shown first: missing values counted as a **category** (a record with a missing "
                               "value matches only the same missing pattern). The wildcard figures, where a missing "
                               "value matches any value, and the page's charts and tables replace them when their "
                               "class sizes are ready.", icon=":material/hourglass_top:")
                    # the headline only: the charts and tables would share the cores with the kernel counting
                    # the wildcard sizes, in the server and in the browser, and delay the figures that matter
                    _show_headline(headline_of_table(table, k, cat), k)
                # the per-variable counts the full figures need, counted here while the kernel runs on the
                # other core
                _cached("big_per_qi", params, lambda: per_qi_of(table))
                with top:
                    sizes = drive("big_sizes", (params, missing), label, work,
                                  again_label="Compute the wildcard sizes again")
                if sizes is None:  # cancelled or failed: the category figures in full stay
                    with first.container():
                        st.warning("Shown: missing values counted as a **category** (a record with a missing "
                                   "value matches only the same missing pattern); the wildcard class sizes were "
                                   "not counted.", icon=":material/info:")
                        _show(_risk(params, table, cat, k, "category"), k)
                    st.caption(AT_SCALE)
                    return True
                st.rerun()
            _show(_risk(params, table, sizes, k, missing), k)
    except KanonError as exc:
        st.error(str(exc))
        return True
    st.caption(AT_SCALE)
    return True



# -- Recode page ---------------------------------------------------------------------------------------------

SEARCH = "big_file_search"
RELEASE = "big_file_release"  # workflow key: the release asked for (the search it belongs to, its path)
"""The search parameters the officer last asked for (table parameters, k, suppression limit, missing)."""

AUTOMATIC_ONLY = ("A large file is generalized with the automatic hierarchies (numbers binned by Angiuli & Waldo's "
                  "greedy capacity binning, categories grouped by rarity); the hierarchy editor works on the data set "
                  "in memory.")


def optimal_work(table: ClassTable, qis: tuple[str, ...], k: int, max_suppression: float,
                 missing: str) -> Callable[[Progress], OptimalAtScale]:
    """The optimal generalization on the class table (Kohlmayer et al.'s lattice search, with Cancel checked
    at each of its progress reports)."""
    def work(progress: Progress) -> OptimalAtScale:
        progress.update(0.02, f"automatic hierarchies and lattice search on {table.n_classes:,} classes")
        return optimal_at_scale(table, list(qis), k, max_suppression, missing, progress=progress)
    return work


def _show_optimal(found: OptimalAtScale) -> None:
    r = found.result
    m = st.columns(5)
    m[0].metric(f"Loss ({r.metric})", f"{r.loss:.4f}")
    m[1].metric("Records suppressed", f"{r.n_suppressed_records:,}")
    m[2].metric("Classes before", f"{found.n_classes_before:,}")
    m[3].metric("Classes after", f"{found.n_classes_after:,}")
    m[4].metric("Nodes evaluated", f"{r.nodes_evaluated:,} of {r.n_nodes:,}")
    st.dataframe({"variable": list(r.qis), "level": [r.levels[q] for q in r.qis],
                  "levels": [h.height for h in found.hierarchies],
                  "generalized values": [found.n_values[q] for q in r.qis]}, hide_index=True)
    st.caption("Classes after: at the chosen levels, before the records of classes still smaller than k are "
               "suppressed (blanked on every quasi-identifier).")


def _release_target(current: dict[str, Any], out: str) -> Path:
    """The release's path, refused in one line if it is not .csv/.parquet, is an input or exists already."""
    target = Path(os.path.expanduser(out))
    if target.suffix.lower() not in (".csv", ".parquet"):
        raise InputError("The release is written as .csv or .parquet.")
    check_outputs({"the release": target}, data_inputs(current["stamp"][0]))
    if target.exists():
        raise InputError("The release file exists already; choose a new name.")
    return target


def release_section(current: dict[str, Any], result_of: Hashable, workflow_key: str, job: str, path_key: str,
                    button_key: str, work: Callable[[Path], Callable[[Progress], str]]) -> None:
    """A release file's name and "Write the release": the path is checked (new, .csv/.parquet, not an
    input) when clicked, and the engine writes the release of ``result_of`` (the result shown) as
    background job ``job`` with Cancel; the workflow key keeps what was asked across reruns."""
    w1, w2 = st.columns([5, 1])
    out = w1.text_input("Release file (.csv or .parquet, a new file)", key=path_key)
    if w2.button("Write the release", key=button_key, disabled=not out):
        target = _release_target(current, out)
        st.session_state[workflow_key] = (result_of, str(target))
        _stopped().pop(job_key(job, (result_of, str(target))), None)
    asked = st.session_state.get(workflow_key)
    if asked is None or asked[0] != result_of:
        return
    written = drive(job, asked, "Writing the release", _with_notes(work(Path(asked[1])), Path(asked[1])),
                    current["engine"])
    if written is not None:
        names, notes = written
        st.success(f"Release written: {names}")
        for note in notes:
            st.info(note)


def _with_notes(work: Callable[[Progress], str], target: Path) -> Callable[[Progress], tuple[str, tuple[str, ...]]]:
    """The release job, then what its users must be told: the formula-like cells of a CSV release, counted in
    the written file (:func:`kanon_core.export.formula_like_in_csv`), as the command line says them."""
    def run(progress: Progress) -> tuple[str, tuple[str, ...]]:
        names = work(progress)
        note = formula_note(formula_like_in_csv(target)) if target.suffix.lower() == ".csv" else None
        return names, (note,) if note else ()
    return run


def release_work(current: dict[str, Any], table: ClassTable, found: OptimalAtScale, k: int, missing: str,
                 target: Path) -> Callable[[Progress], str]:
    """The release written by the engine, as ``kanon generalize --engine ... -o`` writes it; the file appears
    only when complete (written beside it and renamed), so a Cancel or a failure leaves no partial file."""
    def work(progress: Progress) -> str:
        bridge = EngineProgress(progress, 0.0, 0.95)
        settings = bridge.settings()
        try:
            write_generalized_release(get_engine(current["engine"]), current["stamp"][0], table,
                                      list(current["qis"]), found.hierarchies, found.tabs, found.result.levels, k,
                                      missing, {}, target, settings)
        finally:
            settings.close()
        progress.update(1.0, "written")
        return target.name
    return work


def recode_panel(k: int = 3) -> bool:
    """The Recode page for the open large file: the optimal generalization on its class table and the
    release written by the engine; False (nothing shown) when none is open with QIs chosen."""
    current = _open_with_qis("Optimal generalization")
    if current is None:
        return False
    st.caption(AUTOMATIC_ONLY)
    c1, c2, c3 = st.columns([1, 1, 2])
    k = int(c1.number_input("k", min_value=1, value=int(k), step=1, key="w_big_rec_k"))
    limit = float(c2.number_input("Record suppression limit (%)", min_value=0.0, max_value=100.0, value=0.0,
                                  step=0.5, key="w_big_rec_sup"))
    missing = c3.radio("Missing values", ("wildcard", "category"), horizontal=True, key="w_big_rec_missing")
    params = _table_params(current)
    try:
        table = counted_table(current)
        if table is None:
            return True
        search = (params, k, limit, missing)
        if not asked_for("Find the optimal generalization", "btn_big_optimal", SEARCH, "big_optimal", search):
            return True
        found = drive("big_optimal", search, "Searching the lattice",
                      optimal_work(table, tuple(current["qis"]), k, limit / 100, missing), stoppable=True,
                      again_label="Search again")
        if found is None:
            return True
        _show_optimal(found)
        release_section(current, search, RELEASE, "big_release", "w_big_release_path", "btn_big_release",
                        lambda target: release_work(current, table, found, k, missing, target))
    except KanonError as exc:
        st.error(str(exc))
    return True


# -- Compare page --------------------------------------------------------------------------------------------
def compare_work(current: dict[str, Any], target: Path, variables: tuple[str, ...], recodes: dict[str, dict],
                 ci: str) -> Callable[[Progress], Any]:
    """Weighted percentages of the file and of its release, each aggregated by the engine
    (:func:`kanon_core.engines.design.compare_at_scale`)."""
    def work(progress: Progress) -> Any:
        from kanon_core.engines.design import compare_at_scale
        from kanon_core.engines.source import open_source

        bridge = EngineProgress(progress, 0.0, 0.95)
        settings = bridge.settings()
        try:
            engine = get_engine(current["engine"])
            comp = compare_at_scale(engine, open_source(current["stamp"][0]), open_source(target), list(variables),
                                    recodes, current["weight"], ci=ci, settings=settings)
        finally:
            settings.close()
        progress.update(1.0, f"{len(comp.table):,} categories")
        return comp
    return work


def compare_panel() -> bool:
    """The Compare page for the open large file: the weighted percentages of the file and of the release the
    Recode page wrote, with their intervals (Wilson et al.'s comparison), computed by the engine; False
    (nothing shown) when no large file is open with QIs chosen."""
    from kanon_app import compare_ui
    from kanon_core.engines.source import open_source

    current = _open_with_qis("Weighted percentages before and after")
    if current is None:
        return False
    asked = st.session_state.get(RELEASE)
    if asked is None or _peek("big_release", asked) is None:
        st.info("Write a release of the large file on the Recode page first: this page then compares its "
                "weighted percentages with the file's, both computed by the engine.")
        return True
    search, target = asked[0], Path(asked[1])
    table, found = _peek("big_table", search[0]), _peek("big_optimal", search)
    if table is None or found is None or not target.exists():
        st.info("The release or the search it was written from is no longer at hand: write the release again "
                "on the Recode page.")
        return True
    st.caption(f"Before: the file; after: the release {target.name} (the generalization found on the Recode "
               "page, records of classes still below k blanked). Percentages among the records where the "
               "variable is not missing, with 95 % intervals for the weight chosen on the Data page.")
    try:
        summary = _peek("big_summary", (current["stamp"], current["engine"]))  # the Data page's, cached
        names = list(summary.columns["variable"]) if summary is not None else list(open_source(current["stamp"][0]).columns)
        c1, c2 = st.columns([4, 1])
        variables = tuple(c1.multiselect("Variables", names, default=[q for q in current["qis"] if q in names],
                                         key="w_big_cmp_vars"))
        ci = c2.radio("Confidence interval", ["wald", "logit"], horizontal=True, key="w_big_cmp_ci")
        if not variables:
            st.info("Choose at least one variable.")
            return True
        recodes = release_recodes(table, list(current["qis"]), found)
        params = (current["stamp"], current["engine"], str(target), variables, current["weight"], ci, search)
        comp = drive("big_compare", params, "Weighted percentages", compare_work(current, target, variables,
                                                                                    recodes, ci),
                     current["engine"], again_label="Compute the percentages again")
        if comp is not None:
            compare_ui.show_comparison(comp, variables, f"percentages_{target.stem}.csv", key="big_cmp")
    except KanonError as exc:
        st.error(str(exc))
    return True


# -- MINUCs page ---------------------------------------------------------------------------------------------
MINUC_SEARCH = "big_file_minuc_search"  # workflow key: the MINUC search asked for (table params, k, size, semantics)


def minucs_work(table: ClassTable, k: int, max_size: int | None, missing: str) -> Callable[[Progress], Any]:
    """The MINUC counts of the class table (:func:`kanon_core.risk.minucs.summarize_minucs_of_table`; Cancel is
    checked between its parts)."""
    def work(progress: Progress) -> Any:
        from kanon_core.risk.minucs import summarize_minucs_of_table

        return summarize_minucs_of_table(table, k, missing, max_size, progress=progress)
    return work


def minucs_panel(k: int = 3) -> bool:
    """The MINUCs page for the open large file: the counts of every record's MINUCs found on its class table
    (distinct rows with their record counts), with the variables and values they involve and the minimal
    violating QI sets; False (nothing shown) when no large file is open with QIs chosen."""
    import pandas as pd
    import plotly.express as px

    from kanon_app.minuc_estimate_text import bounded_estimate_text
    from kanon_core.fmt import readable_table
    from kanon_core.risk.minucs import RESPONSIVE_ESTIMATE_SECONDS, estimate_cost_of_table
    from kanon_core.risk.minucs_by_subsets import METHOD_TEXT
    from kanon_core.risk.qid import minimal_qids_from_minucs

    current = _open_with_qis("MINUCs")
    if current is None:
        return False
    qis = list(current["qis"])
    c1, c2, c3 = st.columns([1, 1, 2])
    k = int(c1.number_input("k", min_value=2, value=max(2, int(k)), step=1, key="w_big_minuc_k"))
    size = int(c2.number_input("Max size", min_value=0, max_value=len(qis), value=min(3, len(qis)), step=1,
                               key="w_big_minuc_max", help="Largest MINUC size to search; 0 = all sizes. A "
                                                           "census file has millions of classes: start small."))
    missing = c3.radio("Missing values", ("wildcard", "category"), horizontal=True, key="w_big_minuc_missing")
    params = _table_params(current)
    try:
        table = counted_table(current)
        if table is None:
            return True
        search = (params, k, size or None, missing)
        if not asked_for("Find MINUCs", "btn_big_minucs", MINUC_SEARCH, "big_minucs", search):
            est = _cached("big_minuc_estimate", search, lambda: estimate_cost_of_table(
                table, k, missing, size or None, budget_seconds=RESPONSIVE_ESTIMATE_SECONDS))  # on the page's thread
            if est.at_least is not None:
                st.warning(bounded_estimate_text(est, "classes"))
                return True
            st.info(f"The search runs on the {table.n_classes:,} classes of {table.n_records:,} records, each "
                    f"class once with its record count, {METHOD_TEXT[est.method]}. Estimated: about "
                    f"**{est.seconds:,.0f} s** and **{est.minucs:,.0f} MINUCs** (from {est.sampled_rows:,} "
                    f"classes).")
            return True
        found = drive("big_minucs", search, "MINUC search", minucs_work(table, k, size or None, missing),
                      stoppable=True, again_label="Search again")
        if found is None:
            return True
        m = st.columns(4)
        m[0].metric("MINUCs", f"{found.total:,}", help="Over all records; a combination shared by several "
                                                        "records counts once per record.")
        m[1].metric("Records with a MINUC", f"{found.records_with_minucs():,}")
        sizes = {s: v for s, v in found.totals_by_size().items() if v}
        m[2].metric("Smallest MINUC", f"{min(sizes) if sizes else 0}")
        m[3].metric("Complete", "yes" if found.complete else "no", help="No when the maximum size may have cut "
                                                                        "larger MINUCs off.")
        st.caption(f"Found {METHOD_TEXT[found.method].split(' (')[0]} in {found.seconds:,.1f} s.")
        left, right = st.columns(2)
        by_size = [{"size": s, "MINUCs": v} for s, v in found.totals_by_size().items()]
        left.plotly_chart(px.bar(by_size, x="size", y="MINUCs", title="MINUCs by size"), width="stretch",
                          key="chart_big_minuc_sizes")
        right.dataframe(readable_table(found.variable_contributions()), hide_index=True, width="stretch")
        values = [(found.names[j], "(missing)" if code < 0 else str(table.labels[j][code]), int(round(v)))
                  for j, code, _, v in found.value_rows(found.value_counts(), None)]
        frame = pd.DataFrame(values, columns=["variable", "value", "minucs"]).sort_values(
            ["minucs", "variable"], ascending=[False, True], ignore_index=True)
        st.caption("Which values of which variables sit in the most MINUCs: the first candidates for recoding "
                   "(shown here only, never exported).")
        st.dataframe(readable_table(frame.head(100)), hide_index=True, width="stretch")
        if found.complete:
            sets = minimal_qids_from_minucs(found)
            st.caption(f"{len(sets):,} minimal sets of quasi-identifiers on which some record is in a class "
                       f"smaller than k = {k}, the smallest first.")
            st.dataframe(pd.DataFrame({"variables": [", ".join(q) for q in sets[:200]],
                                       "size": [len(q) for q in sets[:200]]}), hide_index=True, width="stretch")
    except KanonError as exc:
        st.error(str(exc))
    return True
