"""The Suppress page for a large file opened on the Data page: strict local suppression solved on the file's
class table, and its release written by the engine.

The same two core calls as ``kanon suppress --engine`` (:mod:`kanon_core.engines.local_suppression`): the
engine aggregates the file on its QIs, the strict model (every person has at least k consistent released
records, however an intruder matches blanks) is solved on the classes and recounted independently, and the
engine streams the release, blanking the cells of the ranks each pattern covers. Both run as background jobs
with progress and Cancel (kanon_app.big_file's jobs); the release appears only when complete.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from kanon_core.engines import get_engine
from kanon_core.engines.local_suppression import SuppressedAtScale, solve_at_scale, write_suppressed_release
from kanon_core.errors import KanonError
from kanon_core.progress import Progress
from kanon_core.treat.protection import DEFAULT_MODEL, MODELS

from . import big_file

SOLVE = "big_file_suppress"
"""Workflow key: the suppression the officer last asked for (file, engine, QIs, k, missing)."""
RELEASE = "big_file_suppress_release"
"""Workflow key: the release asked for (the suppression it belongs to, its path)."""


def solve_work(current: dict[str, Any], k: int, missing: str) -> Callable[[Progress], SuppressedAtScale]:
    """The class table counted by the engine, then the strict model solved and checked on it."""
    def work(progress: Progress) -> SuppressedAtScale:
        bridge = big_file.EngineProgress(progress, 0.0, 0.3)
        settings = bridge.settings()
        try:
            # the solver's steps move the bar over the rest; a Cancel raises from the job's own update
            solver = Progress(lambda f, m: progress.update(0.3 + 0.7 * min(max(f, 0.0), 1.0), m))
            found = solve_at_scale(get_engine(current["engine"]), current["stamp"][0], current["qis"], k, missing,
                                   settings=settings, progress=solver)
        finally:
            settings.close()
        progress.update(1.0, f"{found.result.n_suppressed:,} cells")
        return found
    return work


def release_work(current: dict[str, Any], found: SuppressedAtScale, target: Path) -> Callable[[Progress], str]:
    """The release written by the engine, as ``kanon suppress --engine ... -o`` writes it."""
    def work(progress: Progress) -> str:
        bridge = big_file.EngineProgress(progress, 0.0, 0.95)
        settings = bridge.settings()
        try:
            written = write_suppressed_release(get_engine(current["engine"]), current["stamp"][0], found, target,
                                               settings=settings)
        finally:
            settings.close()
        progress.update(1.0, "written")
        return ", ".join(written)
    return work


def _show(found: SuppressedAtScale) -> None:
    res = found.result
    n = found.table.n_records
    m = st.columns(5)
    m[0].metric("Cells suppressed", f"{res.n_suppressed:,}")
    m[1].metric("Records touched", f"{res.records_touched:,}", help=f"of {n:,} records")
    m[2].metric("Optimal", "proven" if res.optimal else f"gap {100 * found.gap:.1f} %",
                help=f"Cost {float(res.cost):g}, lower bound {float(res.lower_bound):g}.")
    m[3].metric(f"Records below k = {found.k} (recounted)", f"{res.check.violations:,}")
    m[4].metric(f"Findable among fewer than {found.k}", f"{res.check.findable_below_k:,}",
                help="People of the file with fewer than k consistent released records, counted from the "
                     "intruder's side (who knows their quasi-identifiers), independently of the solver.")
    per = found.per_variable()
    st.dataframe({"variable": list(per), "cells suppressed": list(per.values()),
                  "% of records": [round(100.0 * c / n, 2) if n else 0.0 for c in per.values()]},
                 hide_index=True)
    st.caption(f"{found.table.n_classes:,} classes; counted in {found.seconds_aggregate:.1f} s, solved in "
               f"{found.seconds_solve:.1f} s.")


def suppress_panel(k: int = 3) -> bool:
    """The Suppress page for the open large file; False (nothing shown) when none is open with QIs chosen."""
    current = big_file._open_with_qis("Local suppression")
    if current is None:
        return False
    st.caption(f"**{MODELS[DEFAULT_MODEL].title}.** {MODELS[DEFAULT_MODEL].promise} Solved exactly on the file's "
               "class table; every quasi-identifier costs 1 (the command line takes importances and protected "
               "variables: kanon suppress --engine).")
    c1, c2 = st.columns([1, 2])
    k = int(c1.number_input("k", min_value=2, value=max(2, int(k)), step=1, key="w_big_sup_k"))
    missing = c2.radio("Missing values", ("wildcard", "category"), horizontal=True, key="w_big_sup_missing")
    asked = (tuple(current["stamp"]), current["engine"], tuple(current["qis"]), k, missing)
    try:
        if not big_file.asked_for("Run suppression", "btn_big_suppress", SOLVE, "big_suppress", asked):
            return True
        found = big_file.drive("big_suppress", asked, "Local suppression", solve_work(current, k, missing),
                               current["engine"], again_label="Run suppression again")
        if found is None:
            return True
        _show(found)
        big_file.release_section(current, asked, RELEASE, "big_sup_release", "w_big_sup_release_path",
                                 "btn_big_sup_release", lambda target: release_work(current, found, target))
    except KanonError as exc:
        st.error(str(exc))
    return True
