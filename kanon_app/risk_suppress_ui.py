"""The Suppress page's second target: suppress until no record's individual risk exceeds a threshold.

sdcMicro offers "suppress values with high risks" (``localSupp``); kanon's version (``kanon_core.treat.
suppress_risk``) treats every record above the threshold, all records of one combination alike, cell by cell,
and recounts after. The work runs off
the script thread like the k-anonymity suppression, and its result becomes a new version only on request.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from kanon_core.dataset import Dataset
from kanon_core.errors import KanonError
from kanon_core.risk.describe_record import chance_in_words
from kanon_core.risk.individual import DEFAULT_MAX_RISK
from kanon_core.treat.suppress import apply_mask
from kanon_core.treat.suppress_risk import RiskSuppressionResult, RiskSuppressStep

from . import state

RISK_METHOD_TEXT = ("Every combination of quasi-identifier values above the threshold has cells blanked in all "
                    "its records, the least important first and those that lower its risk most, one per round, "
                    "until it is at most the threshold; the risks are then recounted for every record. Not "
                    "proven optimal.")
"""How the cells are chosen, in the officer's words (the same on the in-memory and the large-file panels)."""


def show_summary(result: RiskSuppressionResult) -> None:
    """The before/after figures of a risk-targeted suppression (in memory or on a large file's classes)."""
    s = result.summary()
    m = st.columns(3) + st.columns(3)
    m[0].metric("Cells suppressed to the risk target", f"{s['n_suppressed']:,}")
    m[1].metric("Records touched", f"{s['records_touched']:,}")
    m[2].metric("Records above the threshold", f"{s['records_above_before']:,} → {s['records_above_after']:,}")
    m[3].metric("Expected re-identifications",
                f"{s['expected_reidentifications_before']:,.1f} → {s['expected_reidentifications_after']:,.1f}")
    m[4].metric("Highest risk after", f"{s['highest_risk_after']:.4f}")
    m[5].metric("Seconds", f"{s['seconds']:,.2f}")
    if s["records_above_after"]:
        st.warning(f"{s['records_above_after']:,} records stay above the threshold: every cell they could "
                   "lose is protected or already missing.")


def _make_current(ds: Dataset, step: RiskSuppressStep, result: RiskSuppressionResult) -> None:
    try:
        new = ds.with_frame(apply_mask(ds.frame, list(result.names), result.mask))
        state.history().add(step, new)
    except KanonError as exc:
        state.flash(str(exc), "error")
    else:
        state.flash(f"Risk-targeted suppression applied: version v{state.current().id} is now current.")


def risk_target_section(ds: Dataset, qis: Sequence[str], importance: Sequence[tuple[str, float]],
                        protected: Sequence[str], alpha: float) -> None:
    """An expander: threshold, run (with progress and Cancel), before/after figures, make current."""
    with st.expander("Or: suppress until no record's individual risk exceeds a threshold", expanded=False):
        st.caption("The individual risk is Benedetti & Franconi's estimate (as sdcMicro's indivRisk) from the "
                   "sample frequency and the sampling weights. " + RISK_METHOD_TEXT + " Importance and "
                   "protected variables are the ones set above.")
        state.widget_value("w_sup_maxrisk", DEFAULT_MAX_RISK)
        threshold = float(st.number_input("Maximum individual risk", min_value=0.0001, max_value=0.99,
                                          step=0.005, format="%.4f", key="w_sup_maxrisk"))
        st.caption(f"A risk of {threshold:g} is {chance_in_words(threshold)} that an intruder who finds a "
                   "person's combination picks the right record.")
        step = RiskSuppressStep(qis=tuple(qis), max_risk=threshold, importance=tuple(importance),
                                protected=tuple(protected), alpha=alpha)
        params = (step, ds.missing)
        result = state.memo_peek("risk_suppression", params)
        if result is None:
            clicked = (not state.job_running("risk_suppression", params)
                       and st.button("Run risk-targeted suppression", key="btn_run_risk_sup"))
            result = state.run_in_background("risk_suppression", params, "Risk-targeted suppression",
                                             lambda progress: step.run(ds, progress), start_now=clicked)
            if result is None:
                return
        show_summary(result)
        st.button("Make this the new current version", key="btn_apply_risk_sup", on_click=_make_current,
                  args=(ds, step, result))
