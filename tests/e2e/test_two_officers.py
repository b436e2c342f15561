"""Two officers at once on one real server (issue 15's thread-safety check): in two browser sessions, one
clicks "Find MINUCs" and the other "Run suppression" together, so the compiled kernels and the solver run
in two script threads of the same process at the same time. Each must get what the core gives alone,
and neither page may show an error."""

from __future__ import annotations

import pytest

from kanon_app.samples import load_sample
from kanon_core.risk.minucs import find_minucs
from kanon_core.treat.suppress import suppress

from .conftest import VIEWPORT, wait_idle
from .test_browser import metric_value

pytestmark = pytest.mark.e2e


def _open(browser, url: str):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(180_000)
    page.goto(url)
    wait_idle(page)
    return context, page


def test_minuc_search_and_suppression_in_two_sessions_at_once(browser, fresh_app_url):
    ctx_m, minucs = _open(browser, fresh_app_url + "/minucs")
    ctx_s, supp = _open(browser, fresh_app_url + "/suppress")
    try:
        find = minucs.get_by_role("button", name="Find MINUCs")
        run = supp.get_by_role("button", name="Run suppression")
        find.wait_for()
        run.wait_for()
        k_m = int(minucs.locator("[data-testid='stNumberInput'] input").first.input_value())
        find.click()
        run.click()  # no wait in between: both searches run in the server at once
        minucs.get_by_text("Records with a MINUC").first.wait_for()
        supp.get_by_text("Cells suppressed").first.wait_for()
        wait_idle(minucs)
        wait_idle(supp)
        for page in (minucs, supp):
            assert page.locator("[data-testid='stException']").count() == 0
        ds = load_sample()
        ref_m = find_minucs(ds.qi_matrix(), k=k_m, missing=ds.missing)
        ref_s = suppress(ds, 3)
        assert metric_value(minucs, "MINUCs") == f"{ref_m.total:,}"
        assert metric_value(minucs, "Records with a MINUC") == f"{ref_m.records_with_minucs():,}"
        assert metric_value(supp, "Cells suppressed") == f"{ref_s.n_suppressed:,}"
        assert metric_value(supp, "Records touched") == f"{ref_s.records_touched:,}"
    finally:
        ctx_m.close()
        ctx_s.close()
