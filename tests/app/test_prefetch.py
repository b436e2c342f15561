"""The Compare page's default table is computed ahead, off the script thread, after a page is complete: the
memo then holds exactly kanon_core's comparison, and the Compare page shows it without computing it again."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from kanon_app import prefetch
from kanon_app.samples import load_sample
from kanon_core.utility import compare_distributions
from kanon_core.utility.baseline import original_with_roles

from .helpers import APP, metric


def test_default_comparison_is_computed_ahead_and_shown(monkeypatch):
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    job = at.session_state["jobs"].get(prefetch.COMPARE)
    if job is not None:
        job.wait(120)
    h = at.session_state["history"]
    ds = load_sample("els")
    qis = tuple(ds.roles.qis)
    key = (h.uid, 0, prefetch.COMPARE, prefetch.compare_params(0, qis))
    ahead = at.session_state["memo"][key]
    ref = compare_distributions(original_with_roles(h, 0), ds, list(qis))
    assert ahead.table.equals(ref.table) and ahead.summary == ref.summary

    import kanon_core.utility as utility

    calls = []
    monkeypatch.setattr(utility, "compare_distributions", lambda *a, **k: calls.append(1))
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not calls  # the page took the table computed ahead
    s = ref.summary
    assert metric(at, "CIs overlapping") == f"{s.n_overlap} of {s.n_categories}"


def test_nothing_is_computed_ahead_without_quasi_identifiers():
    from kanon_core.dataset import Roles
    from kanon_core.steps import SetRoles

    at = AppTest.from_file(APP, default_timeout=120).run()
    h = at.session_state["history"]
    h.apply(SetRoles.from_roles(Roles()))
    at.run()
    assert not at.exception
    job = at.session_state["jobs"].get(prefetch.COMPARE)
    assert job is None or job.key[1] == 0  # only the first version's (which had QIs) was started


def _settle(at) -> None:
    """Every job of the process ends before the next step, the session's and those it replaced: a search
    cancelled when the parameters changed holds its heavy slot until it stops, and on a loaded machine it
    could still hold it when the next search ahead starts, which then finds no slot free and is skipped."""
    from kanon_app import background

    jobs = list(at.session_state["jobs"].values()) if "jobs" in at.session_state else []
    for job in [*jobs, *background.unfinished()]:
        job.wait(120)


def _hold_minuc_search(monkeypatch):
    """Hold the MINUC search (kanon_core.risk.minucs.find_minucs) until the returned event is set: it reports
    progress meanwhile (so a cancel stops it), then searches. Returns (release, the real find_minucs)."""
    import threading

    import kanon_core.risk.minucs as minucs_module

    release = threading.Event()
    real_find = minucs_module.find_minucs

    def held(*args, **kwargs):
        progress = kwargs.get("progress")
        while not release.is_set():
            if progress is not None:
                progress.update(0.1, "searching")  # raises once cancelled
            threading.Event().wait(0.01)
        return real_find(*args, **kwargs)

    monkeypatch.setattr(minucs_module, "find_minucs", held)
    return release, real_find


def test_minuc_search_starts_when_the_page_opens_and_shows_only_after_the_click():
    from kanon_core.risk.minucs import find_minucs

    from .helpers import open_page

    at = open_page("minucs.py")
    _settle(at)  # the searches ahead of each step end (cancelled ones too) before the next: each finds a slot
    qis = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME"]
    at.multiselect(key="w_minuc_qis").set_value(qis).run()
    _settle(at)
    at.number_input(key="w_minuc_k").set_value(2).run()
    _settle(at)
    h = at.session_state["history"]
    ds = h.current.dataset
    key = (h.uid, h.current_id, prefetch.MINUCS, (tuple(qis), 2, None, ds.missing))
    ahead = at.session_state["memo"][key]  # searched ahead, for the parameters shown
    ref = find_minucs(ds.qi_matrix(qis), k=2, missing=ds.missing)
    assert ahead.total == ref.total and (ahead.per_record_counts == ref.per_record_counts).all()
    at.run()
    assert not at.exception and not at.metric  # nothing shown before the click
    assert any(b.key == "btn_find_minucs" for b in at.button)
    at.button(key="btn_find_minucs").click().run()
    assert not at.exception
    assert metric(at, "MINUCs") == f"{ref.total:,}"
    assert metric(at, "Records with a MINUC") == f"{ref.records_with_minucs():,}"


def test_the_click_takes_the_search_started_ahead_and_a_cancel_is_not_undone(monkeypatch):

    from kanon_app import background

    from .helpers import open_page

    at = open_page("minucs.py")
    qis = ["BYSEX", "BYRACE", "BYPARED"]
    at.multiselect(key="w_minuc_qis").set_value(qis).run()
    _settle(at)
    starts = []
    real_start = background.start

    def counted(*args, **kwargs):
        starts.append(args[1])
        return real_start(*args, **kwargs)

    monkeypatch.setattr(background, "start", counted)
    at.button(key="btn_find_minucs").click().run()
    assert not at.exception and metric(at, "MINUCs")
    assert "MINUC search" not in starts  # the click found the search done ahead: none started again

    # new parameters: a search starts ahead, and is cancelled when the parameters change again; going back
    # does not start it a second time (a search cancelled, by the page or by the officer, stays cancelled)
    release, _ = _hold_minuc_search(monkeypatch)
    try:
        at.number_input(key="w_minuc_k").set_value(4).run()
        first = at.session_state["jobs"]["minucs"]
        assert not first.done and first.key[3][1] == 4 and not at.metric  # started ahead, nothing shown
        at.number_input(key="w_minuc_k").set_value(5).run()
        assert first.wait(30) and first.state == "cancelled"
        second = at.session_state["jobs"]["minucs"]
        assert second.key[3][1] == 5
        n = starts.count("MINUC search")
        at.number_input(key="w_minuc_k").set_value(4).run()
        assert starts.count("MINUC search") == n  # k = 4 was tried once: not again
        assert not second.done  # and the search ahead for k = 5 goes on (it is not the officer's)
    finally:
        release.set()


def test_a_search_ahead_skipped_for_want_of_a_slot_still_runs_on_the_click(monkeypatch):
    """With every heavy slot taken, the search ahead is skipped (it never waits for one); the click then
    runs the search itself and shows it."""
    import threading

    from kanon_app import background
    from kanon_core.risk.minucs import find_minucs

    from .helpers import open_page

    monkeypatch.setattr(background, "HEAVY_SLOTS", threading.BoundedSemaphore(1))
    busy, release = threading.Event(), threading.Event()

    def hold(progress):
        busy.set()
        release.wait(60)
        return "done"

    other = background.start("someone-else", "another officer's search", hold)
    assert busy.wait(30)
    at = open_page("minucs.py")
    qis = ["BYSEX", "BYRACE", "BYPARED"]
    at.multiselect(key="w_minuc_qis").set_value(qis).run()
    ahead = at.session_state["jobs"]["minucs"]
    assert ahead.wait(30) and ahead.state == "cancelled" and not at.metric
    release.set()
    assert other.wait(30)
    at.button(key="btn_find_minucs").click().run()
    assert not at.exception, [e.stack for e in at.exception]
    ds = at.session_state["history"].current.dataset
    assert metric(at, "MINUCs") == f"{find_minucs(ds.qi_matrix(qis), k=3, missing=ds.missing).total:,}"


def test_the_recode_page_does_not_wait_for_a_search_started_ahead_until_asked(monkeypatch):
    """The Recode page's suggestions share the MINUCs page's search. One that page started ahead of its own
    click is not waited for when the suggestions tab opens (the wait held the page for the search: 4 s on the
    sample); the suggestions' own "Find MINUCs" asks for it and waits."""
    import threading
    import time

    from .helpers import open_page

    at = open_page("minucs.py")
    qis = ["BYSEX", "BYRACE", "BYPARED"]
    release, real_find = _hold_minuc_search(monkeypatch)
    try:
        at.multiselect(key="w_minuc_qis").set_value(qis).run()
        job = at.session_state["jobs"]["minucs"]
        ds = at.session_state["history"].current.dataset
        params = (tuple(qis), 3, None, ds.missing)
        assert not job.done and job.key[3] == params
        at.switch_page("pages/recode.py")
        at.session_state["w_rec_qis"] = qis
        at.session_state["w_recode_section"] = "Suggestions from MINUCs"  # lazy tabs: only the open one runs
        at.run(timeout=20)  # returns while the search is held: the page did not wait for it
        assert not at.exception and not job.done
        assert any(b.key == "btn_sug_minucs" for b in at.button)
        assert job.key in at.session_state[prefetch.AHEAD]  # still a search ahead, not asked for

        def release_once_asked() -> None:  # the search ends only once the click has asked for it (a timer could
            deadline = time.monotonic() + 60  # end it before a slow click's run looks, which then finds it done)
            while job.deferral.deferred and time.monotonic() < deadline:
                time.sleep(0.01)
            release.set()

        threading.Thread(target=release_once_asked, daemon=True).start()
        at.button(key="btn_sug_minucs").click().run(timeout=60)  # asks for it, and waits for it
        assert not at.exception and job.state == "done"
        assert job.key not in at.session_state[prefetch.AHEAD]
        ref = real_find(ds.qi_matrix(qis), k=3, missing=ds.missing)
        assert any(f"{ref.total:,} MINUCs over" in c.value for c in at.caption)
    finally:
        release.set()


def test_the_risk_page_starts_the_minucs_pages_default_search_which_that_page_takes(monkeypatch):
    """Once the Risk page is drawn, the MINUCs page's default search (the roles' QIs, the session's k, all
    sizes) starts ahead: the MINUCs page then finds its distinct records and estimate made, shows nothing
    before the click, and the click shows that search's results without searching again. While it runs, the
    MINUCs page lifts its wait for pages being drawn, the Recode page does not. A search started ahead for
    an earlier version is cancelled when a new version's Risk page starts its own."""
    from kanon_app import background
    from kanon_core import threads
    from kanon_core.risk import minucs as minucs_module

    from .helpers import open_page

    monkeypatch.setattr(threads, "STARTING_PAGE_SECONDS", 0.0)
    at = open_page("risk.py")
    first = at.session_state["jobs"]["minucs"]  # the first version's default search (19 QIs), started ahead
    release, real_find = _hold_minuc_search(monkeypatch)
    made = []
    real_rows = minucs_module.minuc_rows
    shown = []
    try:
        qis = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION"]
        at.multiselect(key="w_risk_qis").set_value(qis).run()
        at.button(key="btn_risk_set_qis").click().run()  # a new version with these QIs
        assert not at.exception
        h = at.session_state["history"]
        ds = h.current.dataset
        assert h.current_id == 1 and ds.roles.qis == tuple(qis)
        assert first.wait(60) and first.state in ("cancelled", "done")
        key = (h.uid, 1, prefetch.MINUCS, (tuple(qis), 3, None, ds.missing))
        job = at.session_state["jobs"]["minucs"]
        assert job.key == key and not job.done  # held in its search
        monkeypatch.setattr(minucs_module, "minuc_rows", lambda *a, **kw: (made.append(1), real_rows(*a, **kw))[1])
        monkeypatch.setattr(background.Job, "shown_here", lambda j: shown.append(j.key))
        at.session_state["w_recode_section"] = "Suggestions from MINUCs"  # lazy tabs: only the open one runs
        at.switch_page("pages/recode.py").run()  # its suggestions share the search but do not wait for it unasked
        assert not at.exception and not shown  # so the Recode page does not lift the search's wait for pages
        at.switch_page("pages/minucs.py").run()
        assert not at.exception and set(shown) == {key}  # the page it was started for does
        assert not at.metric and any("Estimated from" in i.value for i in at.info)  # nothing shown before the click
    finally:
        release.set()
    _settle(at)
    ahead = at.session_state["memo"][key]
    ref = real_find(ds.qi_matrix(qis), k=3, missing=ds.missing)
    assert ahead.total == ref.total and (ahead.per_record_counts == ref.per_record_counts).all()

    starts = []
    real_start = background.start
    monkeypatch.setattr(background, "start", lambda *a, **kw: (starts.append(a[1]), real_start(*a, **kw))[1])
    at.button(key="btn_find_minucs").click().run()
    assert not at.exception
    assert metric(at, "MINUCs") == f"{ref.total:,}"
    assert metric(at, "Records with a MINUC") == f"{ref.records_with_minucs():,}"
    assert "MINUC search" not in starts and not made  # the Risk page's search and rows, not made again


def test_a_default_search_estimated_too_long_is_not_made_ahead_and_says_nothing(monkeypatch):
    """The Risk page's search ahead makes the distinct records and the estimate, and no search when the
    estimate is above AHEAD_SECONDS: the job ends without a result, the Recode page says nothing of a
    search (none was cancelled), the report does not take it, and "Find MINUCs" searches as usual."""
    from kanon_core import threads

    from .helpers import open_page

    monkeypatch.setattr(threads, "STARTING_PAGE_SECONDS", 0.0)
    monkeypatch.setattr(prefetch, "AHEAD_SECONDS", 0.0)
    at = open_page("risk.py")
    at.multiselect(key="w_risk_qis").set_value(["BYSEX", "BYRACE", "BYPARED"]).run()
    at.button(key="btn_risk_set_qis").click().run()
    job = at.session_state["jobs"]["minucs"]
    assert job.wait(60) and job.state == "done" and job.result is None
    h = at.session_state["history"]
    assert not any(key[2] == prefetch.MINUCS for key in at.session_state["memo"] if key[1] == h.current_id)
    at.session_state["w_recode_section"] = "Suggestions from MINUCs"  # lazy tabs: only the open one runs
    at.switch_page("pages/recode.py").run()
    assert not at.exception
    assert not any("cancelled" in i.value for i in at.info)
    at.switch_page("pages/export.py").run()  # the report tab starts its own MINUC counts: none to take
    assert not at.exception and at.session_state["jobs"][prefetch.REPORT_MINUCS].key[1] == h.current_id
    _settle(at)
    at.switch_page("pages/minucs.py").run()
    assert any("Estimated from" in i.value for i in at.info) and not at.metric
    at.button(key="btn_find_minucs").click().run()
    assert not at.exception and metric(at, "MINUCs")


def test_a_default_search_whose_estimate_stops_at_its_budget_is_not_made_ahead(monkeypatch):
    """The search ahead makes the page's estimate with the page's time budget (40 QIs: minutes unbudgeted, on
    a core the officer's pages need). An estimate stopped by it has no cost (its seconds are infinite), so the
    job ends without a search, and the MINUCs page finds that estimate and says its cost is not known."""
    from kanon_core import threads
    from kanon_core.risk import minucs as minucs_module

    from .helpers import open_page

    monkeypatch.setattr(threads, "STARTING_PAGE_SECONDS", 0.0)
    monkeypatch.setattr(minucs_module, "RESPONSIVE_ESTIMATE_SECONDS", 0.0)  # every estimate stops at once
    at = open_page("risk.py")
    job = at.session_state["jobs"]["minucs"]
    assert job.wait(60) and job.state == "done" and job.result is None
    h = at.session_state["history"]
    estimates = [v for key, v in at.session_state["memo"].items()
                 if key[2] == "minuc_estimate" and key[1] == h.current_id]
    assert len(estimates) == 1 and estimates[0].at_least is not None
    assert not any(key[2] == prefetch.MINUCS for key in at.session_state["memo"] if key[1] == h.current_id)
