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
    reused = _session(find_first=True)
    searched_on_page = len(calls)
    assert searched_on_page == 1
    html_reused = _build(reused)
    assert len(calls) == searched_on_page  # the report took the page's result
    html_own = _build(_session(find_first=False))
    assert len(calls) > searched_on_page  # this one searched itself
    assert b"MINUCs were not computed" not in html_own
    assert html_reused == html_own


def test_report_after_the_compare_page_reuses_its_percentages(monkeypatch):
    """Compare first (its default Before: the original with the release's roles, all QIs, Wald intervals):
    the report takes those weighted percentages instead of computing them again, and is the same report."""
    import kanon_core.utility as utility

    calls = []
    real = utility.compare_distributions

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(utility, "compare_distributions", counted)
    at = _session(find_first=True)  # the MINUCs found first: this test counts comparisons only
    at.switch_page("pages/compare.py").run()
    assert not at.exception and len(calls) == 1
    at.switch_page("pages/export.py").run()
    html_reused = _build(at)
    assert len(calls) == 1  # the report took the Compare page's result
    own = _session(find_first=True)
    html_own = _build(own)
    assert len(calls) == 2  # without a visit to Compare the report computes its own
    assert html_reused == html_own
