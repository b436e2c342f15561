"""The report reuses MINUCs the MINUCs page already found (same QIs, k, semantics and codes): no second
search, and the same report as one that searched itself."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

import kanon_core.risk.minucs as minucs_module
from kanon_core.steps import SetRoles

from .helpers import APP

QIS = ("BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION")


def _session(find_first: bool) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    h = at.session_state["history"]
    r = h.current.dataset.roles
    h.apply(SetRoles(QIS, r.weight, r.strata, r.psu, r.outcomes, r.direct_ids))  # v1: roles only
    if find_first:
        at.switch_page("pages/minucs.py").run()
        at.button(key="btn_find_minucs").click().run()
        assert not at.exception
    at.switch_page("pages/export.py").run()
    assert not at.exception
    return at


def _build(at: AppTest) -> bytes:
    at.button(key="btn_build_report").click().run()
    assert not at.exception and not at.error
    return next(v for key, v in at.session_state["memo"].items() if key[2] == "report_html" and v is not None)


def test_report_after_the_minucs_page_does_not_search_again(monkeypatch):
    calls = []
    real = minucs_module.find_minucs

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(minucs_module, "find_minucs", counted)
    real_counts = minucs_module.summarize_minucs  # the report's own search keeps only the counts

    def counted_counts(*args, **kwargs):
        calls.append(1)
        return real_counts(*args, **kwargs)

    monkeypatch.setattr(minucs_module, "summarize_minucs", counted_counts)
    reused = _session(find_first=True)
    searched_on_page = len(calls)
    assert searched_on_page == 1
    html_reused = _build(reused)
    assert len(calls) == searched_on_page  # the report took the page's result
    html_own = _build(_session(find_first=False))
    assert len(calls) > searched_on_page  # this one searched itself
    assert b"MINUCs were not computed" not in html_own
    assert html_reused == html_own


def _settle(at: AppTest) -> None:
    """Wait for the session's computations started ahead (kanon_app.prefetch) to finish."""
    for job in list(at.session_state["jobs"].values()) if "jobs" in at.session_state else []:
        job.wait(120)


def test_report_reuses_the_compare_pages_percentages(monkeypatch):
    """The Compare page's default table (the original with the release's roles against the release, all QIs,
    Wald intervals; computed ahead or on the page) is what the report shows: it computes none itself, and is
    the same report as one that computed its own."""
    import kanon_core.utility as utility

    calls = []
    real = utility.compare_distributions

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(utility, "compare_distributions", counted)
    at = _session(find_first=True)  # the MINUCs found first: this test counts comparisons only
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    at.switch_page("pages/export.py").run()
    _settle(at)
    before = len(calls)
    html_reused = _build(at)
    assert len(calls) == before  # the report took the memoised table
    own = _session(find_first=True)
    _settle(own)
    memo = own.session_state["memo"]
    for key in [k for k in memo if k[2] == "compare_pct"]:
        memo.store.pop((memo.token, key))  # nothing computed ahead: the report computes its own
    before = len(calls)
    html_own = _build(own)
    assert len(calls) == before + 1
    assert html_reused == html_own


def test_report_takes_the_minuc_counts_computed_ahead(monkeypatch):
    """Opening the report tab starts the report's MINUC counts (kanon_app.prefetch); the build then searches
    nothing itself, and gives the same report as one that searched while building."""
    calls = []
    real_counts = minucs_module.summarize_minucs

    def counted_counts(*args, **kwargs):
        calls.append(1)
        return real_counts(*args, **kwargs)

    monkeypatch.setattr(minucs_module, "summarize_minucs", counted_counts)
    at = _session(find_first=False)
    _settle(at)
    assert len(calls) == 1  # roles only: the release's MINUCs are the original's, searched once
    ahead = [v for key, v in at.session_state["memo"].items() if key[2] == "report_minucs"]
    assert len(ahead) == 1 and isinstance(ahead[0], tuple)
    html_ahead = _build(at)
    assert len(calls) == 1  # the build took the counts computed ahead
    import kanon_app.prefetch as prefetch

    monkeypatch.setattr(prefetch, "start_report_minucs", lambda *a, **kw: None)  # nothing computed ahead
    own = _session(find_first=False)
    _settle(own)
    assert not [key for key in own.session_state["memo"] if key[2] == "report_minucs"]
    before = len(calls)
    html_own = _build(own)  # the report searches while building
    assert len(calls) == before + 1
    assert html_ahead == html_own


def test_report_waits_for_the_minucs_pages_search_under_way(monkeypatch):
    """The MINUCs page's search (started as the page opens) is still running when the officer opens the report
    tab: the report starts no search of its own, takes the page's search when built, and gives the same report as
    one that searched itself."""
    import threading

    import kanon_app.prefetch as prefetch

    release = threading.Event()
    finds, counts = [], []
    real_find, real_counts = minucs_module.find_minucs, minucs_module.summarize_minucs

    def slow_find(*args, **kwargs):
        finds.append(1)
        release.wait(60)
        return real_find(*args, **kwargs)

    def counted_counts(*args, **kwargs):
        counts.append(1)
        return real_counts(*args, **kwargs)

    monkeypatch.setattr(minucs_module, "find_minucs", slow_find)
    monkeypatch.setattr(minucs_module, "summarize_minucs", counted_counts)
    at = AppTest.from_file(APP, default_timeout=180).run()
    h = at.session_state["history"]
    r = h.current.dataset.roles
    h.apply(SetRoles(QIS, r.weight, r.strata, r.psu, r.outcomes, r.direct_ids))  # v1: roles only
    try:
        at.switch_page("pages/minucs.py").run()
        page_job = at.session_state["jobs"][prefetch.MINUCS]
        assert not page_job.done and page_job.key[3][:2] == (QIS, 3)  # searching ahead, held back
        at.switch_page("pages/export.py").run()
        assert not at.exception
        assert prefetch.REPORT_MINUCS not in at.session_state["jobs"]  # no second search of the same data
    finally:
        release.set()
    # (the page's search is let finish first: a Build finding every heavy slot taken, by work other tests
    # left running, would cancel it, as speculative work gives way to work asked for)
    assert page_job.wait(60)
    html_waited = _build(at)
    assert page_job.state == "done" and len(finds) == 1 and not counts  # the report took the page's search
    monkeypatch.setattr(minucs_module, "find_minucs", real_find)
    html_own = _build(_session(find_first=False))
    assert counts  # this one searched itself
    assert html_waited == html_own


def test_report_after_a_recode_takes_the_originals_minucs_from_the_minucs_page(monkeypatch):
    """The MINUCs page searched the original; the officer recodes and opens the report tab: the report's counts
    computed ahead do not search the original again, carry its untouched records' MINUCs over to the release's
    search, and give the same report as one that searched both files itself."""
    from kanon_core.treat.recode import RecodeStep

    finds, counts = [], []
    real_find, real_counts = minucs_module.find_minucs, minucs_module.summarize_minucs

    def counted_find(*args, **kwargs):
        finds.append(kwargs.get("carry"))
        return real_find(*args, **kwargs)

    def counted_counts(*args, **kwargs):
        counts.append(kwargs.get("carry"))
        return real_counts(*args, **kwargs)

    monkeypatch.setattr(minucs_module, "find_minucs", counted_find)
    monkeypatch.setattr(minucs_module, "summarize_minucs", counted_counts)

    def session(find_first: bool) -> AppTest:
        at = _session(find_first=find_first)
        at.session_state["history"].apply(RecodeStep(column="BYRACE", merge=(1, 2)))  # v2: a recode
        at.switch_page("pages/export.py").run()
        assert not at.exception
        _settle(at)
        return at

    at = session(find_first=True)
    assert len(finds) == 1  # the page's search of the original only
    assert len(counts) == 1 and counts[0] is not None  # the release's, carrying the original's over
    ahead = next(v for key, v in at.session_state["memo"].items() if key[2] == "report_minucs")
    assert 0 < ahead[1].rows_carried < len(ahead[1].row_mult)
    html_carried = _build(at)
    assert len(finds) == 1 and len(counts) == 1  # the build took the counts computed ahead
    import kanon_app.prefetch as prefetch

    monkeypatch.setattr(prefetch, "start_report_minucs", lambda *a, **kw: None)  # nothing computed ahead
    finds.clear()
    counts.clear()
    html_own = _build(session(find_first=False))
    assert finds and counts  # this one searched both files itself
    assert html_carried == html_own
