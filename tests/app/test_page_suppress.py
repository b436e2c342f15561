"""The Suppress page through AppTest: numbers equal kanon_core's, comparison, new version."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from kanon_app.samples import load_sample
from kanon_core.treat.protection import MODELS
from kanon_core.treat.suppress import suppress

from .helpers import metric, open_page

QIS = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION"]


@pytest.fixture
def page() -> AppTest:
    at = open_page("suppress.py")
    at.multiselect(key="w_sup_qis").set_value(QIS).run()
    return at


def test_exact_run_shows_the_core_result(page):
    page.number_input(key="w_sup_k").set_value(3).run()
    page.multiselect(key="w_sup_protected").set_value(["BYSEX"]).run()
    page.number_input(key="w_sup_imp_BYINCOME").set_value(2.0).run()
    assert not page.metric
    page.button(key="btn_run_suppress").click().run()
    assert not page.exception
    # the run waited for its job and drew the result: its progress bar and Cancel button are gone with it
    assert not [b for b in page.button if b.label == "Cancel"] and not page.get("progress")
    ref = suppress(load_sample("els"), 3, qis=QIS, protected=["BYSEX"], importance={"BYINCOME": 2.0})
    assert metric(page, "Cells suppressed") == f"{ref.n_suppressed:,}"
    assert metric(page, "Records touched") == f"{ref.records_touched:,}"
    assert metric(page, "Cost") == f"{ref.cost:,.1f}"
    assert metric(page, "Gap to the bound") == ("0 (optimal)" if ref.optimal else f"{100 * ref.gap:.1f} %")
    assert metric(page, "Findable below k") == "0"  # the strict model, the default
    assert ref.model == "strict" and ref.violations_after == 0
    assert ref.per_variable_counts[QIS.index("BYSEX")] == 0
    # what is proven of the cost, in the core's words: proven, or the bound, the gap and why not
    assert sum(ref.optimality().sentence() in c.value for c in page.caption) == 1


def test_model_comparison_and_new_version(page):
    page.button(key="btn_run_suppress").click().run()
    exact_cells = int(metric(page, "Cells suppressed").replace(",", ""))
    page.button(key="btn_run_other").click().run()
    assert not page.exception
    table = next(df.value for df in page.dataframe if "model" in df.value.columns)
    runs = table.set_index(["model", "method"])
    assert set(runs.index) == {("strict", "exact"), ("strict", "greedy"), ("record", "exact"), ("release", "greedy")}
    assert int(runs.loc[("strict", "exact"), "cells suppressed"]) == exact_cells
    assert int(runs.loc[("strict", "exact"), "people findable below k"]) == 0
    for model, method in runs.index:
        ref = suppress(load_sample("els"), 3, qis=QIS, model=model, method=method)
        assert int(runs.loc[(model, method), "cells suppressed"]) == ref.n_suppressed
        assert int(runs.loc[(model, method), "people findable below k"]) == ref.findable_below_k
    assert runs.loc[("strict", "exact"), "cost"] <= runs.loc[("strict", "greedy"), "cost"]
    hist = page.session_state["history"]
    original = hist.original.dataset
    before = original.frame.copy()
    page.button(key="btn_apply_suppress").click().run()
    assert hist.current.id == 1 and hist.current.step.kind == "local_suppression"
    # the version keeps what the run proved, for the report
    assert hist.current.outcome == suppress(load_sample("els"), 3, qis=QIS).optimality()
    treated = hist.current.dataset
    assert original.frame.equals(before)  # the original is never mutated
    sup = np.column_stack([treated.frame[q].isna().to_numpy() & original.frame[q].notna().to_numpy() for q in QIS])
    # the model's checker (itself tested against brute force in test_suppress_models.py)
    assert MODELS["strict"].counts(original.qi_matrix(QIS).codes, sup, treated.missing).min() >= 3
    n_missing_added = int(sum(treated.frame[q].isna().sum() - original.frame[q].isna().sum() for q in QIS))
    assert n_missing_added == exact_cells
    assert np.array_equal(treated.frame["F2BYWT"].to_numpy(), original.frame["F2BYWT"].to_numpy())


def test_risk_target_run_equals_the_core_and_becomes_a_version(page):
    from kanon_core.treat.suppress_risk import suppress_to_risk

    small = QIS  # 5 QIs: 19 records of the sample are above a risk of 0.01
    page.number_input(key="w_sup_maxrisk").set_value(0.01).run()
    page.button(key="btn_run_risk_sup").click().run()
    assert not page.exception
    ds = load_sample("els")
    ref = suppress_to_risk(ds, 0.01, qis=small).summary()
    assert metric(page, "Cells suppressed to the risk target") == f"{ref['n_suppressed']:,}"
    assert metric(page, "Records above the threshold") == (
        f"{ref['records_above_before']:,} → {ref['records_above_after']:,}")
    assert ref["records_above_after"] == 0 < ref["records_above_before"]
    page.button(key="btn_apply_risk_sup").click().run()
    hist = page.session_state["history"]
    assert hist.current.step.kind == "risk_suppression"
    added = sum(int(hist.current.dataset.frame[q].isna().sum() - ds.frame[q].isna().sum()) for q in small)
    assert added == ref["n_suppressed"]


def test_cells_the_school_code_gives_back_are_shown(page):
    """The sample's school code (the PSU) lies in one region: suppressed regions are read off it. The page says so
    with kanon_core's count (names and counts only), and not when the region is protected."""
    from kanon_core.risk.restore import restorable_cells
    from kanon_core.treat.suppress import SuppressStep, apply_mask

    page.button(key="btn_run_suppress").click().run()
    assert not page.exception
    ds = load_sample("els")
    step = SuppressStep(qis=tuple(QIS), k=3)
    ref = restorable_cells(ds, ds.with_frame(apply_mask(ds.frame, *step.release_mask(step.run(ds)))), QIS, 3)
    assert ref.n_restorable > 0 and ref.via["BYREGION"] == "SCH_ID"
    assert ref.sentence() in [w.value for w in page.warning]
    page.multiselect(key="w_sup_protected").set_value(["BYREGION"]).run()
    page.button(key="btn_run_suppress").click().run()
    assert not any("can be restored" in w.value for w in page.warning)
