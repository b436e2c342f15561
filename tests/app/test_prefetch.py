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
