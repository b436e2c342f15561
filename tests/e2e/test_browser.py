"""The real app in headless Chromium: open, see the sample data, change k, see the count change."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import VIEWPORT, choose_data_file, wait_idle

pytestmark = pytest.mark.e2e


def metric_value(page, label: str) -> str:
    m = page.locator("[data-testid='stMetric']", has_text=label).first
    return m.locator("[data-testid='stMetricValue']").inner_text().strip()


def test_open_sample_change_k_and_undo(page, app_url, tmp_path):
    page.goto(app_url)
    wait_idle(page)
    page.get_by_text("16,197 records").first.wait_for()
    page.goto(app_url + "/risk")
    wait_idle(page)
    page.get_by_text("Records violating k=3").wait_for()
    v3 = int(metric_value(page, "Records violating k=3").replace(",", ""))
    box = page.locator("[data-testid='stNumberInput'] input").first
    box.fill("2")
    box.press("Enter")
    wait_idle(page)
    page.get_by_text("Records violating k=2").wait_for()
    v2 = int(metric_value(page, "Records violating k=2").replace(",", ""))
    assert v2 < v3
    assert v2 == int(metric_value(page, "Sample uniques").replace(",", ""))
    # the sidebar, drawn before the page, shows the same count for the same k on the same run
    sidebar = page.locator("[data-testid='stSidebar']").inner_text()
    assert f"{v2:,} < k=2" in sidebar and "k=3" not in sidebar
    page.screenshot(path=str(tmp_path / "risk.png"), full_page=True)


def test_every_page_opens_at_its_own_address(page, app_url):
    """Streamlit serves the first page at "/" only: /data answered "Page not found" over the page."""
    for path, text in (("/data", "Variables and roles"), ("/risk", "Records violating k=3"), ("/", "Variables and roles")):
        page.goto(app_url + path)
        wait_idle(page)
        page.get_by_text(text).first.wait_for()
        assert "Page not found" not in page.locator("body").inner_text(), path


def test_bad_upload_shows_a_message(page, app_url, tmp_path):
    bad = tmp_path / "broken.csv"
    bad.write_text("a,b,a\n1,2,3\n")
    page.goto(app_url)
    wait_idle(page)
    page.locator("[data-testid='stExpander'] summary").filter(has_text="Load data").first.click()
    wait_idle(page)
    choose_data_file(page, bad)  # read at once, no second click
    wait_idle(page)
    alert = page.locator("[data-testid='stAlert']", has_text=re.compile("Duplicated column names"))
    alert.wait_for()
    assert page.locator("[data-testid='stFileUploader']").first.is_visible()  # the load block stays open
    assert page.locator("[data-testid='stException']").count() == 0


def test_a_page_opened_by_its_url_works(browser, app_url):
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    try:
        pg.goto(app_url + "/minucs")
        wait_idle(pg)
        # the estimate, or its stop at its time budget (of the page thread's CPU time, which a slow or contended
        # machine can spend): either is the page at work. Under the full suite the server can be busy with work
        # an earlier test's session left running, and the estimate waits for a compute slot: a longer wait
        try:
            pg.get_by_text(re.compile("Estimated from|The estimate stopped at its time limit")).first.wait_for(
                timeout=180_000)
            pg.get_by_role("button", name="Find MINUCs").wait_for()
        except PlaywrightTimeout:  # what the page showed instead says why
            pytest.fail("the MINUCs page opened by its URL did not offer its search; the page showed:\n"
                        + pg.inner_text("body")[:3000])
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        context.close()


def test_a_deep_link_as_the_servers_first_request_gets_the_app_navigation(browser, fresh_app_url):
    """A ``pages/`` folder puts a fresh Streamlit server in its legacy multipage mode until st.navigation runs:
    the first request being a deep link must still get app.py's navigation and version timeline."""
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    try:
        pg.goto(fresh_app_url + "/recode")
        wait_idle(pg)
        pg.locator("h1", has_text="Recode").first.wait_for()
        pg.get_by_text("Versions").first.wait_for()
        nav = pg.locator("[data-testid='stSidebarNav']")
        assert nav.get_by_text("Suppress", exact=True).count() == 1
        assert nav.get_by_text("suppress", exact=True).count() == 0
        assert pg.locator("[data-testid='stException']").count() == 0
    finally:
        context.close()


def test_the_served_page_loads_the_chart_code_before_any_chart(browser, app_url):
    """The launcher's page (kanon_app.page_head) imports Streamlit's chart module while the browser is idle,
    before the app has drawn anything: here the app's connection is held back (no run, so no chart and no
    empty chart can load the module), and the module still loads, without an error on the page."""
    from kanon_app.page_head import CHART_MODULE_PATTERN

    prefix = CHART_MODULE_PATTERN.split("*")[0]
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.route_web_socket("**/_stcore/stream", lambda ws: None)  # never connected to the server
    try:
        pg.goto(app_url + "/")
        pg.wait_for_function("""prefix => performance.getEntriesByType('resource').some(
            e => e.name.split('/').pop().startsWith(prefix) && e.responseEnd > 0)""", arg=prefix)
        assert pg.locator("[data-testid='stPlotlyChart']").count() == 0
        assert pg.locator("script[data-kanon-chart-code]").count() == 1
        assert errors == []
    finally:
        context.close()
    # and the module run early draws the charts (a module whose run failed would fail every chart after it)
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        pg.goto(app_url + "/risk")
        pg.wait_for_function("""prefix => performance.getEntriesByType('resource').some(
            e => e.name.split('/').pop().startsWith(prefix) && e.responseEnd > 0)""", arg=prefix)
        pg.locator(".st-key-chart_sizes .main-svg").first.wait_for()  # the Risk page's class-size chart, drawn
        assert errors == []
    finally:
        context.close()
