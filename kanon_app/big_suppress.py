"""The Suppress page for a large file opened on the Data page: strict local suppression, or suppression to a
limit on individual risk, solved on the file's class table, and its release written by the engine.

The same core calls as ``kanon suppress --engine`` (:mod:`kanon_core.engines.local_suppression`): the engine
aggregates the file on its QIs (with the weight's sums for the risk), the strict model (every person has at
least k consistent released records, however an intruder matches blanks) or the risk target is solved on
the classes and recounted independently, and the engine streams the release, blanking the cells of the ranks
each pattern covers. Both run as background jobs with progress and Cancel (kanon_app.big_file's jobs); the
release appears only when complete. Each target is one :class:`Target` object.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from kanon_core.engines import get_engine
from kanon_core.engines.local_suppression import (
    RiskSuppressedAtScale,
    SuppressedAtScale,
    solve_at_scale,
    solve_risk_at_scale,
    write_suppressed_release,
)
from kanon_core.errors import KanonError
from kanon_core.progress import Progress
from kanon_core.risk.describe_record import chance_in_words
from kanon_core.risk.individual import DEFAULT_MAX_RISK
from kanon_core.risk.restore import NOT_COUNTED_AT_SCALE
from kanon_core.treat.protection import DEFAULT_MODEL, MODELS

from . import big_file, risk_suppress_ui, state

SOLVE = "big_file_suppress"
"""Workflow key: the suppression the officer last asked for (file, engine, QIs, k, missing)."""
RELEASE = "big_file_suppress_release"
"""Workflow key: the release asked for (the suppression it belongs to, its path)."""


def solve_work(current: dict[str, Any], solve: Callable[..., Any]) -> Callable[[Progress], Any]:
    """The class table counted by the engine, then ``solve(engine, path, settings=, progress=)`` on it."""
    def work(progress: Progress) -> Any:
        bridge = big_file.EngineProgress(progress, 0.0, 0.3)
        settings = bridge.settings()
        try:
            # the solver's steps move the bar over the rest; a Cancel raises from the job's own update
            solver = Progress(lambda f, m: progress.update(0.3 + 0.7 * min(max(f, 0.0), 1.0), m))
            found = solve(get_engine(current["engine"]), current["stamp"][0], settings=settings, progress=solver)
        finally:
            settings.close()
        progress.update(1.0, f"{found.result.n_suppressed:,} cells")
        return found
    return work


def release_work(current: dict[str, Any], found: SuppressedAtScale | RiskSuppressedAtScale,
                 target: Path) -> Callable[[Progress], str]:
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
    st.caption(f"{res.optimality().sentence()} "
               f"{found.table.n_classes:,} classes; counted in {found.seconds_aggregate:.1f} s, solved in "
               f"{found.seconds_solve:.1f} s.")
    if res.n_suppressed:
        st.warning(NOT_COUNTED_AT_SCALE)


class Target:
    """One target of the large-file Suppress page: its parameters on the page, its core call, its figures."""

    label: str = ""
    job: str = ""
    button: str = ""

    def ask(self, current: dict[str, Any], k: int, missing: str) -> tuple[tuple, Callable[..., Any]]:
        """Draws the target's own inputs; the parameters asked for and the core call for them."""
        raise NotImplementedError

    def show(self, found: Any) -> None:
        raise NotImplementedError


class StrictTarget(Target):
    label = "k-anonymity (strict model, exact)"
    job, button = "big_suppress", "btn_big_suppress"

    def ask(self, current: dict[str, Any], k: int, missing: str) -> tuple[tuple, Callable[..., Any]]:
        st.caption(f"**{MODELS[DEFAULT_MODEL].title}.** {MODELS[DEFAULT_MODEL].promise} Solved exactly on the "
                   "file's class table; every quasi-identifier costs 1 (the command line takes importances and "
                   "protected variables: kanon suppress --engine).")
        k = int(st.number_input("k", min_value=2, value=max(2, int(k)), step=1, key="w_big_sup_k"))
        asked = (tuple(current["stamp"]), current["engine"], tuple(current["qis"]), k, missing)
        return asked, lambda engine, path, **kw: solve_at_scale(engine, path, current["qis"], k, missing, **kw)

    def show(self, found: SuppressedAtScale) -> None:
        _show(found)


class RiskTarget(Target):
    label = "individual risk at most a limit"
    job, button = "big_risk_suppress", "btn_big_risk_suppress"

    def ask(self, current: dict[str, Any], k: int, missing: str) -> tuple[tuple, Callable[..., Any]]:
        st.caption("The individual risk is Benedetti & Franconi's estimate (as sdcMicro's indivRisk) from each "
                   "combination's sample frequency and, when a weight is chosen on the Data page, its summed "
                   f"weights. {risk_suppress_ui.RISK_METHOD_TEXT} Every quasi-identifier costs 1 (the command "
                   "line takes importances and protected variables: kanon suppress --max-risk --engine).")
        state.widget_value("w_big_sup_maxrisk", DEFAULT_MAX_RISK)
        limit = float(st.number_input("Maximum individual risk", min_value=0.0001, max_value=0.99, step=0.005,
                                      format="%.4f", key="w_big_sup_maxrisk"))
        st.caption(f"A risk of {limit:g} is {chance_in_words(limit)} that an intruder who finds a person's "
                   "combination picks the right record.")
        weight = current["weight"]
        asked = (tuple(current["stamp"]), current["engine"], tuple(current["qis"]), weight, limit, missing)
        return asked, lambda engine, path, **kw: solve_risk_at_scale(engine, path, current["qis"], limit, weight,
                                                                     missing, **kw)

    def show(self, found: RiskSuppressedAtScale) -> None:
        risk_suppress_ui.show_summary(found.result)
        per = found.result.per_variable
        n = found.table.n_records
        st.dataframe({"variable": list(per), "cells suppressed": list(per.values()),
                      "% of records": [round(100.0 * c / n, 2) if n else 0.0 for c in per.values()]},
                     hide_index=True)
        st.caption(f"{found.table.n_classes:,} classes; counted in {found.seconds_aggregate:.1f} s, treated in "
                   f"{found.seconds_solve:.1f} s ({found.result.passes} rounds).")


TARGETS: dict[str, Target] = {t.label: t for t in (StrictTarget(), RiskTarget())}


def suppress_panel(k: int = 3) -> bool:
    """The Suppress page for the open large file; False (nothing shown) when none is open with QIs chosen."""
    current = big_file._open_with_qis("Local suppression")
    if current is None:
        return False
    c1, c2 = st.columns([2, 1])
    target = TARGETS[c1.radio("Target", list(TARGETS), horizontal=True, key="w_big_sup_target")]
    missing = c2.radio("Missing values", ("wildcard", "category"), horizontal=True, key="w_big_sup_missing")
    try:
        asked, solve = target.ask(current, k, missing)
        if not big_file.asked_for("Run suppression", target.button, SOLVE, target.job, asked):
            return True
        found = big_file.drive(target.job, asked, "Local suppression", solve_work(current, solve),
                               current["engine"], again_label="Run suppression again")
        if found is None:
            return True
        target.show(found)
        big_file.release_section(current, asked, RELEASE, "big_sup_release", "w_big_sup_release_path",
                                 "btn_big_sup_release", lambda out: release_work(current, found, out))
    except KanonError as exc:
        st.error(str(exc))
    return True
