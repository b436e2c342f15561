"""The whole officer's path in the real browser, then the batch replay of the exported recipe.

Sample data → choose QIs → MINUCs → recode (a suggestion from the MINUCs) → exact suppression → compare →
export the data, the recipe and the report; ``kanon apply`` with that recipe on the sample file must
write the exported CSV byte for byte.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from .conftest import ROOT, wait_idle

pytestmark = pytest.mark.e2e

QIS = ["BYSEX", "BYRACE", "BYDOB_P", "BYREGION", "BYGPARED", "BYINCOME", "BYOCCUM", "BYOCCUF"]


def go(page, title: str) -> None:
    """Open a page through the sidebar navigation (keeps the session, unlike a new URL)."""
    page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True).click()
    wait_idle(page)
    page.locator("h1", has_text=title).first.wait_for()


def metric_value(page, label: str) -> str:
    m = page.locator("[data-testid='stMetric']", has_text=label).first
    return m.locator("[data-testid='stMetricValue']").inner_text().strip()


def no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("[data-testid='stAlert']", has_text=re.compile("Traceback")).count() == 0


def download(page, button_text: str | re.Pattern, target) -> bytes:
    with page.expect_download() as info:
        page.locator("[data-testid='stDownloadButton'] button", has_text=button_text).first.click()
    info.value.save_as(str(target))
    return target.read_bytes()


def test_sample_to_export_and_batch_replay(page, app_url, tmp_path):
    try:
        _walk(page, app_url, tmp_path)
    except Exception:
        page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
        raise


def _walk(page, app_url, tmp_path):
    page.goto(app_url)
    wait_idle(page)
    page.get_by_text("16,197 records").first.wait_for()

    # -- quasi-identifiers on the Data page ----------------------------------------------------------------
    page.get_by_role("tab", name="Roles").click()
    qi_box = page.locator("[data-testid='stMultiSelect']", has_text="Quasi-identifiers").first
    box_input = qi_box.locator("input")
    box_input.click()
    for _ in range(25):  # empty the preset list, then pick each QI from the filtered options
        box_input.press("Backspace")
    for q in QIS:
        box_input.fill(q)
        page.get_by_role("option", name=q, exact=True).click()
    box_input.press("Escape")
    assert sorted(qi_box.locator("[data-tag] span[title]").all_inner_texts()) == sorted(QIS)
    page.get_by_role("button", name="Apply roles").click()
    wait_idle(page)
    page.get_by_text("Roles applied as a new version.").wait_for()
    no_exception(page)

    # -- MINUCs ----------------------------------------------------------------------------------------------
    go(page, "MINUCs")
    page.get_by_role("button", name="Find MINUCs").click()
    wait_idle(page)
    page.get_by_text("MINUCs by size").first.wait_for()
    no_exception(page)

    # -- recode: the top suggestion from the MINUCs (k = 3) -------------------------------------------------
    go(page, "Recode")
    page.get_by_role("tab", name="Suggestions from MINUCs").click()
    page.get_by_role("button", name="Find MINUCs").click()
    wait_idle(page)
    page.get_by_role("button", name="Compute effect").click()
    wait_idle(page)
    page.get_by_role("button", name="Compute effect").wait_for(state="detached")  # the effect table replaced it
    page.get_by_role("button", name="Apply this suggestion").click()
    wait_idle(page)
    page.get_by_text("applied.").first.wait_for()
    no_exception(page)

    # -- exact local suppression at k = 3 ------------------------------------------------------------------
    go(page, "Suppress")
    page.get_by_role("button", name="Run suppression").click()
    wait_idle(page)
    page.get_by_text("Cells suppressed").first.wait_for()
    assert metric_value(page, "Records below k after") == "0"
    assert metric_value(page, "Proven optimal") == "yes"
    page.get_by_role("button", name="Make this the new current version").click()
    wait_idle(page)
    page.get_by_text("Suppression applied").first.wait_for()
    no_exception(page)

    # -- compare original vs current -------------------------------------------------------------------------
    go(page, "Compare")
    page.get_by_text("CIs overlapping").first.wait_for()
    overlap = metric_value(page, "CIs overlapping")
    n_overlap, n_categories = (int(x) for x in re.findall(r"\d+", overlap))
    assert 0 < n_overlap <= n_categories
    page.get_by_role("tab", name="Regression").click()
    page.get_by_role("button", name="Fit the three models").click()
    wait_idle(page)
    page.get_by_role("button", name="Fit the three models").wait_for(state="detached")
    page.locator("[data-testid='stPlotlyChart']").nth(2).wait_for()  # CI plot, histogram, coefficient plot
    no_exception(page)

    # -- export the data, the recipe and the report -----------------------------------------------------------
    go(page, "Export")
    exported = download(page, "CSV", tmp_path / "release.csv")
    page.get_by_role("tab", name="Recipe").click()
    recipe_bytes = download(page, "Download the recipe", tmp_path / "release.recipe.json")
    recipe = json.loads(recipe_bytes)
    kinds = [s["kind"] for s in recipe["steps"]]
    assert kinds[0] == "set_roles" and "recode" in kinds and kinds[-1] == "local_suppression"
    page.get_by_role("tab", name="Report").click()
    page.get_by_role("button", name="Build the report").click()
    wait_idle(page)
    report = download(page, "Download the report", tmp_path / "report.html")
    assert b"<html" in report[:2000].lower() and b"Suppress" in report
    no_exception(page)

    # -- batch replay reproduces the exported data byte for byte -----------------------------------------------
    out = tmp_path / "replayed.csv"
    run = subprocess.run(
        [sys.executable, "-m", "kanon_core", "apply", str(tmp_path / "release.recipe.json"),
         str(ROOT / "sample_data" / "els_like.csv"), "-o", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == exported
