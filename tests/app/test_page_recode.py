"""The Recode page through AppTest: previews, search, recodes and suggestions equal kanon_core's results."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from kanon_app.samples import load_sample
from kanon_core.fmt import markdown_literal
from kanon_core.risk.minucs import find_minucs
from kanon_core.treat import lattice
from kanon_core.treat.default_hierarchy import default_hierarchies
from kanon_core.treat.explain import search_summary
from kanon_core.treat.recode import GeneralizeStep, RecodeStep, risk_effect
from kanon_core.treat.suggest import suggest_recodes, suggestion_effect

from .helpers import frame_with, metric, open_recode

QIS = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION"]


@pytest.fixture
def page() -> AppTest:
    return open_recode(QIS)


def current(at: AppTest):
    return at.session_state["history"].current


def open_tab(at: AppTest, label: str) -> AppTest:
    """Open the page's tab ``label``: the tabs are lazy (kanon_app.sections), only the open one is drawn."""
    at.session_state["w_recode_section"] = label
    return at.run()


def test_level_preview_equals_core_and_applies(page):
    ds = load_sample("els")
    hs = default_hierarchies(ds, QIS)
    page.select_slider(key="w_lvl_BYINCOME").set_value(2).run()
    assert not page.exception
    risk = frame_with(page, "measure").set_index("measure")
    step = GeneralizeStep.build({q: (2 if q == "BYINCOME" else 0) for q in QIS}, hs, qis=tuple(QIS))
    ref = risk_effect(ds, step.apply(ds), 3, QIS).set_index("measure")
    assert risk["after"].tolist() == ref["after"].tolist()
    assert risk["before"].tolist() == ref["before"].tolist()
    page.button(key="btn_apply_levels").click().run()
    assert not page.exception
    assert current(page).id == 1
    assert current(page).dataset.frame["BYINCOME"].equals(step.apply(ds).frame["BYINCOME"])


def test_optimal_search_equals_core_and_its_step_applies(page):
    ds = load_sample("els")
    open_tab(page, "Optimal generalization")
    page.number_input(key="w_gen_sup").set_value(0.5).run()
    page.button(key="btn_gen_search").click().run()
    assert not page.exception
    problem = lattice.build_problem(ds, default_hierarchies(ds, QIS), QIS)
    ref = lattice.search_optimal(problem, 3, 0.005, "prec")
    assert metric(page, "Records suppressed") == f"{ref.n_suppressed_records:,}"
    assert metric(page, "Loss") == f"{ref.loss:,.4g}"
    levels = frame_with(page, "level").set_index("variable")["level"].to_dict()
    assert levels == ref.levels
    # the result in words, fully suppressed variables named as such (kanon_core.treat.explain)
    assert any(m.value == markdown_literal(search_summary(ref)) for m in page.markdown)
    effects = frame_with(page, "effect").set_index("variable")["effect"]
    for q, lv in ref.levels.items():
        if lv == problem.heights[QIS.index(q)] - 1:
            assert effects[q].startswith("fully suppressed")
    page.button(key="btn_apply_search").click().run()
    assert not page.exception
    out = current(page).dataset
    assert out.frame.equals(ref.step().apply(ds).frame)


def test_discernibility_search_with_suppression_equals_core_and_offers_the_k_minimal_list(page):
    """Discernibility under wildcard semantics (the sample has missing values) is searched with its bound from
    the levels: the page shows kanon_core's node and loss, and offers the k-minimal nodes on request, since
    only the nodes that could win were classified."""
    ds = load_sample("els")
    open_tab(page, "Optimal generalization")
    page.selectbox(key="w_gen_metric").set_value("dm").run()
    page.number_input(key="w_gen_sup").set_value(1.0).run()
    page.button(key="btn_gen_search").click().run()
    assert not page.exception
    problem = lattice.build_problem(ds, default_hierarchies(ds, QIS), QIS)
    ref = lattice.search_optimal(problem, 3, 0.01, "dm")
    assert ref.k_minimal is None and ref.n_anonymous is None
    assert metric(page, "Records suppressed") == f"{ref.n_suppressed_records:,}"
    assert metric(page, "Loss") == f"{ref.loss:,.4g}"
    assert frame_with(page, "level").set_index("variable")["level"].to_dict() == ref.levels
    assert "btn_gen_kminimal" in [b.key for b in page.button]


def test_single_recode_merges_and_applies(page):
    open_tab(page, "Single recode")
    page.selectbox(key="w_single_var").set_value("BYINCOME").run()
    page.multiselect(key="w_single_merge_BYINCOME").set_value([10, 11, 12]).run()
    assert not page.exception
    page.button(key="btn_apply_single").click().run()
    assert not page.exception
    ds = load_sample("els")
    vals = ds.qi_matrix(["BYINCOME"]).values[0]
    expect = RecodeStep(column="BYINCOME", merge=(vals[10], vals[11], vals[12])).apply(ds)
    assert current(page).dataset.frame["BYINCOME"].equals(expect.frame["BYINCOME"])


def test_the_suggestions_search_after_a_recode_carries_the_earlier_versions_minucs(page):
    """Find MINUCs on the suggestions tab, recode, find them again: the second search keeps the MINUCs of the
    records the recode did not touch (as the MINUCs page does), and equals a search from scratch."""
    open_tab(page, "Suggestions from MINUCs")
    page.button(key="btn_sug_minucs").click().run()
    assert not page.exception
    hist = page.session_state["history"]
    hist.apply(RecodeStep(column="BYRACE", merge=(1, 2)))
    page.run()
    page.button(key="btn_sug_minucs").click().run()
    assert not page.exception
    ds = hist.current.dataset
    found = page.session_state["memo"].get(
        next(key for key in page.session_state["memo"] if key[1] == hist.current_id and key[2] == "minucs"))
    assert 0 < found.rows_carried < len(found.row_mult)
    fresh = find_minucs(ds.qi_matrix(QIS), k=3, missing=ds.missing)
    assert found.total == fresh.total
    assert [set(found.masks_of(r).tolist()) for r in range(ds.n_records)] == \
        [set(fresh.masks_of(r).tolist()) for r in range(ds.n_records)]


def test_suggestions_and_their_effect_equal_core(page):
    open_tab(page, "Suggestions from MINUCs")
    page.button(key="btn_sug_minucs").click().run()
    assert not page.exception
    ds = load_sample("els")
    res = find_minucs(ds.qi_matrix(QIS), k=3)
    sugs = suggest_recodes(ds, res)
    table = frame_with(page, "MINUCs touched")
    assert table["recode"].tolist()[:5] == [s.description for s in sugs[:5]]
    # no row numbers to type: a row is selected in the table (as a click does) and its effect shows inline
    assert not [n for n in page.number_input if n.key == "w_sug_pick"]
    assert any("Select a suggestion" in i.value for i in page.info)
    page.session_state["w_sug_table"] = {"selection": {"rows": [1], "columns": []}}
    page.run()
    assert not page.exception
    title = markdown_literal(f"{sugs[1].variable}: {sugs[1].description}")  # labels shown as text
    assert any(m.value == f"**{title}**" for m in page.markdown)
    eff = frame_with(page, "change").set_index("measure")
    ref = suggestion_effect(ds, sugs[1], res)
    assert int(eff.loc["MINUCs", "after"]) == ref.minucs_after
    assert int(eff.loc["Records with a MINUC", "after"]) == ref.records_at_risk_after
    assert int(eff.loc["Records below k = 3", "before"]) == ref.violating_before
    assert int(eff.loc["Records below k = 3", "after"]) == ref.violating_after
    page.button(key="btn_sug_apply").click().run()
    assert current(page).id == len(sugs[1].steps)


def test_built_hierarchy_is_used_by_the_level_sliders(page):
    open_tab(page, "Hierarchies")
    page.selectbox(key="w_hb_var").set_value("BYINCOME").run()
    page.selectbox(key="w_hb_kind_BYINCOME").set_value("intervals").run()
    page.text_input(key="w_hb_intervals_BYINCOME").set_value("3, 6").run()
    assert not page.exception
    page.button(key="btn_hb_use").click().run()
    assert not page.exception
    h = page.session_state["hierarchies"]["BYINCOME"]
    assert h.n_groups()[1:] == (5, 3, 1)  # codes 1..13 in widths 3 (from 0) and 6, then *
    open_tab(page, "Levels")
    assert page.select_slider(key="w_lvl_BYINCOME").options == ["0 (13 values)", "1 (5 values)", "2 (3 values)",
                                                                  "3 (*)"]


def test_dropping_a_variable_is_a_new_version(page):
    open_tab(page, "Single recode")
    page.multiselect(key="w_drop_vars").set_value(["BYDOB_P"]).run()
    page.button(key="btn_drop").click().run()
    assert not page.exception
    assert "BYDOB_P" not in current(page).dataset.columns
    assert "BYDOB_P" in page.session_state["history"].original.dataset.columns


def test_tradeoff_curve_equals_core(page):
    ds = load_sample("els")
    open_tab(page, "Optimal generalization")
    page.button(key="btn_gen_search").click().run()
    page.button(key="btn_gen_curve").click().run()
    assert not page.exception
    problem = lattice.build_problem(ds, default_hierarchies(ds, QIS), QIS)
    ref = lattice.tradeoff(problem, 3)
    shown = frame_with(page, "suppression limit")
    feasible = ref["feasible"].to_numpy()
    got = [float(str(x).replace(",", "")) for x in shown["loss"][feasible]]
    assert got == ref["loss"][feasible].round(4).tolist()
    assert all(str(x).startswith("undefined: no generalization") for x in shown["loss"][~feasible])
    assert shown["records suppressed"].tolist() == ref["n_suppressed"].tolist()


def test_k_minimal_nodes_are_listed_on_request_as_core_lists_them(page):
    """The search classifies only the nodes that could win; the k-minimal nodes come from the complete
    classification, asked for on the page, and are those of kanon_core's."""
    ds = load_sample("els")
    open_tab(page, "Optimal generalization")
    page.number_input(key="w_gen_sup").set_value(0.0).run()
    page.button(key="btn_gen_search").click().run()
    assert not page.exception
    assert not any(m.value.startswith("**k-minimal nodes") for m in page.markdown)
    page.button(key="btn_gen_kminimal").click().run()
    assert not page.exception
    problem = lattice.build_problem(ds, default_hierarchies(ds, QIS), QIS)
    ref = lattice.search_optimal(problem, 3, 0.0, "prec", k_minimal=True)
    assert len(ref.k_minimal) > 1
    assert any(m.value.startswith(f"**k-minimal nodes ({len(ref.k_minimal):,})**") for m in page.markdown)
    shown = frame_with(page, "records suppressed")
    assert shown[QIS].astype(int).values.tolist() == ref.k_minimal[QIS].values.tolist()
    assert shown["records suppressed"].tolist() == ref.k_minimal["n_suppressed"].tolist()
    assert "btn_gen_kminimal" not in [b.key for b in page.button]


def test_search_says_plainly_when_a_variable_is_removed(page):
    open_tab(page, "Optimal generalization")
    page.number_input(key="w_rec_k").set_value(100).run()
    page.number_input(key="w_gen_sup").set_value(0.0).run()
    page.button(key="btn_gen_search").click().run()
    assert not page.exception
    ds = load_sample("els")
    hs = default_hierarchies(ds, QIS)
    ref = lattice.search_optimal(lattice.build_problem(ds, hs, QIS), 100, 0.0, "prec")
    gone = [q for q, lv in ref.levels.items() if lv == hs[q].max_level]
    assert gone  # k = 100 without suppression on 5 QIs takes some variable away
    text = next(m.value for m in page.markdown if m.value.startswith("Removed entirely"))
    for q in gone:
        assert markdown_literal(f"{q}: fully suppressed") in text


def test_scale_override_rebuilds_the_automatic_hierarchy(page):
    import re

    open_tab(page, "Hierarchies")
    page.selectbox(key="w_hb_var").set_value("BYREGION").run()
    assert page.radio(key="w_hb_scale_BYREGION").value == "nominal"  # labels name regions
    assert any("Inferred: nominal" in c.value for c in page.caption)
    page.radio(key="w_hb_scale_BYREGION").set_value("ordinal").run()
    assert not page.exception
    h = page.session_state["hierarchies"]["BYREGION"]
    labels = {lab for lv in range(1, h.max_level) for lab in h.labels_at(lv)}
    assert any(re.fullmatch(r"<\d+|\d+-\d+|>=\d+", lab) for lab in labels)  # the officer asked for intervals
    page.radio(key="w_hb_scale_BYREGION").set_value("nominal").run()
    h = page.session_state["hierarchies"]["BYREGION"]
    labels = {lab for lv in range(1, h.max_level) for lab in h.labels_at(lv)}
    assert not any(re.fullmatch(r"\d+-\d+", lab) for lab in labels)


def test_single_recode_preview_with_minucs_takes_the_minucs_pages_search(page, monkeypatch):
    """The preview's MINUC count: with the MINUCs page's search of this version in the memo, that search is the
    count before (not searched again) and the count after carries it over; the numbers are fresh searches'."""
    import kanon_core.risk.minucs as minucs_module

    ds = load_sample("els")
    found = find_minucs(ds.qi_matrix(QIS), k=3, missing=ds.missing)
    memo = page.session_state["memo"]
    memo.put((page.session_state["history"].uid, 0, "minucs", (tuple(QIS), 3, None, ds.missing)), found)
    calls = []
    real = minucs_module.find_minucs
    monkeypatch.setattr(minucs_module, "find_minucs", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    open_tab(page, "Single recode")
    page.selectbox(key="w_single_var").set_value("BYRACE").run()
    page.multiselect(key="w_single_merge_BYRACE").set_value([0, 1]).run()
    page.checkbox(key="w_prev_minucs_single").check().run()
    assert not page.exception
    risk = frame_with(page, "measure").set_index("measure")
    step = RecodeStep(column="BYRACE", merge=tuple(ds.qi_matrix(["BYRACE"]).values[0][:2]))
    after = step.apply(ds)
    assert not calls  # the count before is the page's search; the one after counts, carrying it over
    assert risk.loc["MINUCs", "before"] == found.total
    assert risk.loc["MINUCs", "after"] == real(after.qi_matrix(QIS), k=3, missing=ds.missing).total


def test_the_date_builder_is_offered_for_texts_not_for_numbers(page):
    """The date builder refuses numbers (20190115 is no date to it): a column of numbers is offered the
    interval builders instead; a column of date texts is offered it."""
    import pandas as pd

    from kanon_core.dataset import Dataset, Roles

    from .helpers import session_on

    open_tab(page, "Hierarchies")
    page.selectbox(key="w_hb_var").set_value("BYINCOME").run()
    offered = page.selectbox(key="w_hb_kind_BYINCOME").options
    assert "Dates to month/quarter/year" not in offered and "Fixed-width intervals" in offered
    frame = pd.DataFrame({"visit": [f"2024-0{1 + i % 9}-1{i % 10}" for i in range(40)], "sex": ["f", "m"] * 20})
    at = session_on(Dataset(frame=frame, roles=Roles(qis=("visit", "sex")), name="visits"))
    at.switch_page("pages/recode.py").run()
    open_tab(at, "Hierarchies")
    at.selectbox(key="w_hb_var").set_value("visit").run()
    offered = at.selectbox(key="w_hb_kind_visit").options
    assert "Dates to month/quarter/year" in offered and "Fixed-width intervals" not in offered
    assert not at.exception
