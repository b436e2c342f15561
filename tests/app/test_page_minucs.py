"""The MINUCs page through AppTest: estimate, run, numbers equal to kanon_core's, filter, record view."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from kanon_app.pager import PAGE_ROWS
from kanon_app.samples import load_sample
from kanon_core.risk.minucs import find_minucs
from kanon_core.risk.suda import suda_scores

from .helpers import APP, metric, open_page

QIS = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION", "BYURBAN"]


@pytest.fixture
def page() -> AppTest:
    at = open_page("minucs.py")
    at.multiselect(key="w_minuc_qis").set_value(QIS).run()
    at.number_input(key="w_minuc_k").set_value(2).run()  # sample uniques (the session's k starts at 3)
    return at


def test_estimate_then_run_shows_core_numbers(page):
    assert any("Estimated from" in i.value and "by comparing every distinct record" in i.value for i in page.info)
    assert not page.metric  # nothing computed before the click
    page.button(key="btn_find_minucs").click().run()
    assert not page.exception
    ds = load_sample("els")
    ref = find_minucs(ds.qi_matrix(QIS), k=2, missing=ds.missing)
    assert metric(page, "MINUCs") == f"{ref.total:,}"
    assert metric(page, "Records with a MINUC") == f"{ref.records_with_minucs():,}"
    smallest = min(s for s, v in ref.totals_by_size().items() if v)
    assert metric(page, "Smallest MINUC") == str(smallest)
    suda = suda_scores(ref, ds.qi_matrix(QIS))
    memo = page.session_state["memo"]
    searched = {key for key in memo if key[2] == "minucs"}  # (searches ahead of other parameters may be kept)
    assert sum(1 for key in searched if key[3][:2] == (tuple(QIS), 2)) == 1
    page.session_state["w_minuc_section"] = "SUDA scores"  # one section at a time, computed when chosen
    page.run()
    assert metric(page, "Records with a SUDA score") == f"{int((suda.score > 0).sum()):,}"
    # cached per version and parameters: a rerun does not search again
    assert {key for key in memo if key[2] == "minucs"} == searched


def test_filter_by_variable_and_record_view(page):
    page.button(key="btn_find_minucs").click().run()
    ds = load_sample("els")
    ref = find_minucs(ds.qi_matrix(QIS), k=2, missing=ds.missing)
    page.session_state["w_minuc_section"] = "Records"
    page.run()
    page.multiselect(key="w_minuc_filter").set_value(["BYINCOME"]).run()
    assert not page.exception
    ranking = next(df.value for df in page.dataframe if "matching" in df.value.columns)
    counts = ref.count_containing(["BYINCOME"])
    n_match = int((counts > 0).sum())
    assert len(ranking) == min(PAGE_ROWS, n_match)  # a page of rows; the pager reaches the others
    assert any(c.value.startswith(f"{n_match:,} records") for c in page.caption)
    assert (counts[ranking.record.to_numpy()] == ranking.matching.to_numpy()).all()
    first = int(ranking.record.iloc[0])
    page.number_input(key="w_minuc_record").set_value(first).run()
    views = [df.value for df in page.dataframe if "size" in df.value.columns and "BYINCOME" in df.value.columns]
    view = views[-1].data if hasattr(views[-1], "data") else views[-1]
    assert len(view) == min(int(counts[first]), PAGE_ROWS)
    assert (view["BYINCOME"] != "").all()


def test_k3_hides_suda_and_max_size_marks_incomplete(page):
    page.number_input(key="w_minuc_k").set_value(3).run()
    page.number_input(key="w_minuc_max").set_value(2).run()
    page.button(key="btn_find_minucs").click().run()
    assert not page.exception
    assert metric(page, "Complete") in ("yes", "no")
    page.session_state["w_minuc_section"] = "SUDA scores"
    page.run()
    assert any("set k = 2" in i.value for i in page.info)


def test_sidebar_timeline_shows_minucs_once_computed():
    from kanon_core.steps import SetRoles

    at = AppTest.from_file(APP, default_timeout=120).run()
    hist = at.session_state["history"]
    r = hist.current.dataset.roles
    hist.apply(SetRoles(tuple(QIS), r.weight, r.strata, r.psu, r.outcomes, r.direct_ids))
    at.switch_page("pages/minucs.py").run()
    assert not any("MINUCs (k=" in m.value for m in at.sidebar.markdown)
    at.button(key="btn_find_minucs").click().run()
    total = metric(at, "MINUCs")
    # AppTest drops the sidebar after a rerun of an st.navigation app: look at a fresh run on the same state
    fresh = AppTest.from_file(APP, default_timeout=120)
    for key in ("history", "source", "memo", "settings"):
        fresh.session_state[key] = at.session_state[key]
    fresh.run()
    assert any(f"{total} MINUCs (k=3)" in m.value for m in fresh.sidebar.markdown)  # the session's k


def test_sidebar_timeline_shows_minucs_at_the_sessions_k_once_asked_for():
    """The CI run that found this: the Risk page's search ahead (k = 3) finished, the officer set k = 2, and
    the line read "15,149 < k=2 · 15,296,239 MINUCs (k=3)": a search nobody asked for, at another k."""
    from kanon_app import prefetch
    from kanon_core.steps import SetRoles

    at = AppTest.from_file(APP, default_timeout=120).run()
    hist = at.session_state["history"]
    r = hist.current.dataset.roles
    hist.apply(SetRoles(tuple(QIS), r.weight, r.strata, r.psu, r.outcomes, r.direct_ids))
    at.switch_page("pages/minucs.py").run()
    at.button(key="btn_find_minucs").click().run()
    total = metric(at, "MINUCs")
    (searched,) = [key for key in at.session_state["memo"] if key[2] == "minucs" and key[3][:2] == (tuple(QIS), 3)]

    def sidebar_after(settings: dict, ahead: set) -> list[str]:
        fresh = AppTest.from_file(APP, default_timeout=120)
        for key in ("history", "source", "memo"):
            fresh.session_state[key] = at.session_state[key]
        fresh.session_state["settings"] = settings
        fresh.session_state[prefetch.AHEAD] = ahead
        fresh.run()
        return [m.value for m in fresh.sidebar.markdown]

    assert any(f"{total} MINUCs (k=3)" in line for line in sidebar_after({"k": 3}, set()))
    assert not any("MINUCs (k=" in line for line in sidebar_after({"k": 2}, set()))  # found at k = 3 only
    assert not any("MINUCs (k=" in line for line in sidebar_after({"k": 3}, {searched}))  # not asked for yet
    # a search limited to MINUCs of up to 2 variables counts some only: not shown as the version's MINUCs
    memo = at.session_state["memo"]
    memo.put(searched[:3] + ((searched[3][0], 3, 2, searched[3][3]),), memo.get(searched))
    memo.store.discard_where(lambda key: key == (memo.token, searched))
    assert not any("MINUCs (k=" in line for line in sidebar_after({"k": 3}, set()))


def test_variable_chart_names_all_19_quasi_identifiers():
    import json

    at = open_page("minucs.py")
    at.number_input(key="w_minuc_max").set_value(2).run()
    at.button(key="btn_find_minucs").click().run()
    assert not at.exception
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    chart = next(s for s in specs if "each variable" in s["layout"]["title"]["text"])
    qis = at.session_state["history"].current.dataset.roles.qis
    assert len(qis) == 19
    assert sorted(chart["layout"]["yaxis"]["ticktext"]) == sorted(qis)  # every label, none skipped
    assert chart["layout"]["yaxis"]["tickmode"] == "array"
    assert "<br>" in chart["layout"]["title"]["text"]  # wrapped, not cut off in a half-width column


def test_records_pager_shows_every_record_a_page_at_a_time(page):
    """The ranking is shown a page of rows at a time; page 2 holds exactly the ranking's next rows, and the
    last page its last ones (nothing is cut off, as the former first-500 cut did)."""
    page.button(key="btn_find_minucs").click().run()
    ds = load_sample("els")
    ref = find_minucs(ds.qi_matrix(QIS), k=2, missing=ds.missing)
    full = ref.record_ranking()
    assert len(full) > 2 * PAGE_ROWS  # the sample has many pages of records with a MINUC
    page.session_state["w_minuc_section"] = "Records"
    page.run()
    first = next(df.value for df in page.dataframe if "smallest MINUC" in df.value.columns)
    assert first["record"].tolist() == full["record"].head(PAGE_ROWS).tolist()
    assert any(c.value == f"records 1–{PAGE_ROWS} of {len(full):,}" for c in page.caption)
    page.number_input(key="w_minuc_rank_page").set_value(2).run()
    assert not page.exception
    second = next(df.value for df in page.dataframe if "smallest MINUC" in df.value.columns)
    assert second["record"].tolist() == full["record"].iloc[PAGE_ROWS:2 * PAGE_ROWS].tolist()
    assert any(c.value == f"records {PAGE_ROWS + 1}–{2 * PAGE_ROWS} of {len(full):,}" for c in page.caption)
    last_page = -(-len(full) // PAGE_ROWS)
    page.number_input(key="w_minuc_rank_page").set_value(last_page).run()
    last = next(df.value for df in page.dataframe if "smallest MINUC" in df.value.columns)
    assert last["record"].tolist() == full["record"].iloc[(last_page - 1) * PAGE_ROWS:].tolist()


def test_violating_sets_are_paged_in_the_cores_order(page):
    from kanon_core.risk.qid import minimal_qids_from_minucs

    page.button(key="btn_find_minucs").click().run()
    ds = load_sample("els")
    qids = minimal_qids_from_minucs(find_minucs(ds.qi_matrix(QIS), k=2, missing=ds.missing))
    page.session_state["w_minuc_section"] = "Violating QI sets"
    page.run()
    assert not page.exception
    shown = next(df.value for df in page.dataframe if list(df.value.columns) == ["variables", "size"])
    assert shown["variables"].tolist() == [", ".join(q) for q in qids[:PAGE_ROWS]]
    if len(qids) > PAGE_ROWS:
        page.number_input(key="w_minuc_qid_page").set_value(2).run()
        shown = next(df.value for df in page.dataframe if list(df.value.columns) == ["variables", "size"])
        assert shown["variables"].tolist() == [", ".join(q) for q in qids[PAGE_ROWS:2 * PAGE_ROWS]]


def test_after_a_recode_the_untouched_records_keep_their_minucs(page):
    """Search v0, merge two race categories (v1), search again: the records the merge did not touch keep
    v0's MINUCs, the page says so, and every figure equals a search from scratch."""
    from kanon_core.treat.recode import RecodeStep

    page.button(key="btn_find_minucs").click().run()
    assert metric(page, "Records with a MINUC")
    page.session_state["history"].apply(RecodeStep(column="BYRACE", merge=(1, 2)))
    page.run()
    assert not page.exception
    assert any("Version v0's search is reused" in c.value for c in page.caption)
    estimates = [v for key, v in page.session_state["memo"].items() if key[1] == 1 and key[2] == "minuc_estimate"]
    page.button(key="btn_find_minucs").click().run()
    assert not page.exception
    ds = page.session_state["history"].current.dataset
    fresh = find_minucs(ds.qi_matrix(QIS), k=2, missing=ds.missing)
    shown = [v for key, v in page.session_state["memo"].items()
             if key[1] == 1 and key[2] == "minucs" and key[3][:2] == (tuple(QIS), 2)]
    assert len(shown) == 1 and 0 < shown[0].rows_carried < len(shown[0].row_mult)
    # the estimate shown before the click sampled only the records searched again, and counted the others'
    from kanon_core.risk.minucs import estimate_cost
    from kanon_core.risk.minucs_carry import plan_carry

    h = page.session_state["history"]
    qm0 = h.original.dataset.qi_matrix(QIS)
    plan = plan_carry(find_minucs(qm0, k=2, missing=ds.missing), qm0, ds.qi_matrix(QIS), 2, ds.missing, None)
    want = estimate_cost(ds.qi_matrix(QIS), k=2, missing=ds.missing, carry=plan)
    assert len(estimates) == 1
    assert (estimates[0].sampled_rows, estimates[0].minucs) == (want.sampled_rows, want.minucs)
    assert estimates[0].minucs != estimate_cost(ds.qi_matrix(QIS), k=2, missing=ds.missing).minucs
    assert metric(page, "MINUCs") == f"{fresh.total:,}"
    assert metric(page, "Records with a MINUC") == f"{fresh.records_with_minucs():,}"
    assert [set(shown[0].masks_of(r).tolist()) for r in range(ds.n_records)] == \
        [set(fresh.masks_of(r).tolist()) for r in range(ds.n_records)]
    assert any("kept the MINUCs an earlier version's search found" in c.value for c in page.caption)
