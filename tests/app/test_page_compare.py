"""The Compare page through AppTest: every number equals kanon_core's on the same two versions."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from kanon_app.samples import load_sample
from kanon_core import fmt
from kanon_core.treat.recode import RecodeStep
from kanon_core.treat.suppress import SuppressStep
from kanon_core.utility import compare_distributions, compare_models
from kanon_core.utility.bias import suppressed_cells

from .helpers import APP, frame_with, metric


def num(x) -> float:
    """A number shown in a table, as a float (text cells are formatted numbers)."""
    return float(str(x).replace(",", "")) if x not in ("", None) else float("nan")


def shown_numbers(col) -> list:
    """The numbers of a display column (NaN where the cell says why it is empty)."""
    out = []
    for x in col:
        try:
            out.append(round(num(x), 6))
        except ValueError:
            out.append(None)
    return out


def rounded(col, digits: int = 2) -> list:
    import math

    return [None if math.isnan(x) else round(round(float(x), digits) + 0.0, 6) for x in col]

QIS = ("BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION")
STEPS = (RecodeStep(column="BYINCOME", merge=(11, 12, 13), into=11),
         SuppressStep(qis=QIS, k=3))


def treated():
    ds = load_sample("els")
    out = ds
    for s in STEPS:
        out = s.apply(out)
    return ds, out


@pytest.fixture
def page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    hist = at.session_state["history"]
    for s in STEPS:
        hist.apply(s)
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    at.multiselect(key="w_cmp_vars").set_value(list(QIS)).run()
    assert not at.exception
    return at


def test_percentages_and_summary_equal_core(page):
    original, after = treated()
    ref = compare_distributions(original, after, list(QIS))
    s = ref.summary
    assert metric(page, "CIs overlapping") == f"{s.n_overlap} of {s.n_categories}"
    assert metric(page, "Mean difference (pp)") == fmt.number(s.mean_difference)  # never "-0.00"
    assert metric(page, "Categories completely suppressed") == f"{s.n_completely_suppressed}"
    table = next(df.value for df in page.dataframe if "% after" in df.value.columns)
    assert shown_numbers(table["% after"]) == rounded(ref.table["pct_treated"])
    page.radio(key="w_cmp_ci").set_value("logit").run()
    logit = compare_distributions(original, after, list(QIS), ci="logit")
    table = next(df.value for df in page.dataframe if "% after" in df.value.columns)
    assert shown_numbers(table["CI low after"]) == rounded(logit.table["ci_low_treated"])


def test_three_models_equal_core(page):
    formula = "BYTXMSTD ~ C(BYSEX) + C(BYRACE) + C(BYPARED)"
    key = f"w_cmp_formula_{len(STEPS)}"
    page.session_state["w_cmp_tab"] = "Regression"  # lazy tabs: only the open one is computed
    page.run()
    page.text_input(key=key).set_value(formula).run()
    page.button(key="btn_cmp_fit").click().run()
    assert not page.exception
    assert "btn_cmp_fit" not in [b.key for b in page.button]  # the models are drawn in the click's own run
    original, after = treated()
    ref = compare_models(original, after, formula)
    sig = next(df.value for df in page.dataframe if "significant covariates" in df.value.columns)
    assert sig["records used"].tolist() == ref.significance_table()["n_used"].tolist()
    assert sig["significant"].tolist() == ref.significance_table()["significant"].tolist()
    pv = next(df.value for df in page.dataframe if "conclusion changes" in df.value.columns)
    expected = ref.pvalue_table()
    assert pv["p-value, original"].tolist() == [fmt.p_value(p) for p in expected["p_original"]]
    assert pv["p-value, suppressed as a category"].tolist() == [fmt.p_value(p) for p in expected["p_treated_category"]]


def test_suppressed_cells_equal_core(page):
    original, after = treated()
    ref = suppressed_cells(original, after, list(QIS))
    page.session_state["w_cmp_tab"] = "Bias and information loss"  # lazy tabs: only the open one is computed
    page.run()
    cells = next(df.value for df in page.dataframe if "value suppressed most" in df.value.columns)
    assert cells["values suppressed"].tolist() == ref["n_suppressed"].tolist()
    assert int(ref["n_suppressed"].sum()) > 0


def test_same_version_twice_is_explained(page):
    page.selectbox(key="w_cmp_before").set_value(len(STEPS)).run()
    assert not page.exception
    assert any("two different versions" in i.value for i in page.info)


def test_information_loss_equals_core(page):
    from kanon_core.treat.default_hierarchy import default_hierarchies
    from kanon_core.utility.info_loss import information_loss

    original, after = treated()
    qis = list(original.roles.qis)
    ref = information_loss(original, after, qis, default_hierarchies(original, qis))
    page.session_state["w_cmp_tab"] = "Bias and information loss"
    page.run()
    table = frame_with(page, "loss metric (LM)")
    assert shown_numbers(table["loss metric (LM)"]) == rounded(ref.table["loss_metric"], 4)
    summary = frame_with(page, "measure").set_index("measure")
    assert num(summary.loc["Discernibility (sum of squared class sizes)", "treated"]) == ref.discernibility_treated


def test_before_defaults_to_the_original_with_the_current_roles():
    """Roles set as a step after loading: the default Before is the original with those roles (weighted),
    not version 0 as loaded (unweighted)."""
    from kanon_core.steps import SetRoles

    at = AppTest.from_file(APP, default_timeout=120).run()
    hist = at.session_state["history"]
    v0 = hist.original.dataset
    hist.apply(SetRoles(qis=QIS, weight=None))  # v1: no weight
    hist.apply(SetRoles(qis=QIS, weight=v0.roles.weight, strata=v0.roles.strata, psu=v0.roles.psu))
    hist.apply(STEPS[1])
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert at.selectbox(key="w_cmp_before").value == -1
    caption = " ".join(c.value for c in at.caption)
    assert f"weight {v0.roles.weight}" in caption
    at.multiselect(key="w_cmp_vars").set_value(list(QIS)).run()
    from kanon_core.utility.baseline import original_with_roles

    ref = compare_distributions(original_with_roles(hist, hist.current_id), hist.current.dataset, list(QIS))
    table = next(df.value for df in at.dataframe if "% after" in df.value.columns)
    assert shown_numbers(table["% before"]) == rounded(ref.table["pct_original"])
    assert "F2BYWT" in ref.design


def test_information_loss_follows_the_saved_hierarchies(page):
    """A hierarchy saved on the Recode page (session state) changes the information-loss table at once: with
    one that has incomes 11, 12, 13 under "11", the recode of the steps gets a Prec (NaN without it)."""

    from kanon_core.treat.default_hierarchy import default_hierarchies
    from kanon_core.treat.hierarchy import Hierarchy, value_key
    from kanon_core.utility.info_loss import information_loss

    original, after = treated()
    qis = list(original.roles.qis)
    page.session_state["w_cmp_tab"] = "Bias and information loss"
    page.run()
    prec = frame_with(page, "loss metric (LM)").set_index("variable").loc["BYINCOME", "Prec"]
    assert prec == "undefined: recoded without a hierarchy, or no cell measured"  # says why, never None or nan
    values = [value_key(v) for v in sorted(original.frame["BYINCOME"].dropna().unique())]
    h = Hierarchy(tuple((v, "11" if v in ("11", "12", "13") else v, "*") for v in values), "BYINCOME")
    page.session_state["hierarchies"] = {**page.session_state["hierarchies"], "BYINCOME": h}
    page.run()
    assert not page.exception
    shown = frame_with(page, "loss metric (LM)").set_index("variable")
    ref = information_loss(original, after, qis, {**default_hierarchies(original, qis), "BYINCOME": h})
    assert 0 < num(shown.loc["BYINCOME", "Prec"]) < 1
    assert shown_numbers(shown["Prec"]) == rounded(ref.table["prec"], 4)
