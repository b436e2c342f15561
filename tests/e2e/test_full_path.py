"""The whole officer's path in the real browser, then the batch replay of the exported recipe.

Sample data → choose QIs → MINUCs → recode (a suggestion from the MINUCs) → exact suppression → compare →
export the data, the recipe and the report; ``kanon apply`` with that recipe on the sample file must
write the exported CSV byte for byte. The exported release's k-anonymity is then recounted here with this
file's own code (pandas and numpy, nothing from kanon_core): as equivalence classes with a suppressed cell
as a value of its own, and as an intruder who knows each person's original values and counts the released
records consistent with them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from .conftest import ROOT, wait_idle

pytestmark = pytest.mark.e2e

QIS = ["BYSEX", "BYRACE", "BYDOB_P", "BYREGION", "BYGPARED", "BYINCOME", "BYOCCUM", "BYOCCUF"]
K = 3  # the Suppress page's k for this walk


# -- an independent recount of k-anonymity (no kanon code) ------------------------------------------------------
def read_texts(path: Path) -> pd.DataFrame:
    """A CSV as texts, an empty cell as ''."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def canonical(text: str) -> str:
    """A cell in one form: '' when missing, whole numbers without decimals ('3', '3.0' -> '3')."""
    t = str(text).strip()
    if t == "":
        return ""
    try:
        x = float(t)
    except ValueError:
        return t
    return str(int(x)) if x.is_integer() else repr(x)


def recoded(original: pd.DataFrame, recipe: dict) -> pd.DataFrame:
    """The original QIs with the recipe's recodes applied (merges, top and bottom codes), as an intruder who
    knows the person and reads the recipe would place them; missing stays ''."""
    out = original[QIS].map(canonical)
    for step in recipe["steps"]:
        if step["kind"] != "recode" or step["column"] not in QIS:
            continue
        col = out[step["column"]]
        if step.get("merge"):
            merge = {canonical(v) for v in step["merge"]}
            into = step.get("into")
            if into is None:
                into = min((float(v) for v in merge), default=None)
            col = col.where(~col.isin(merge), canonical(into))
        num = pd.to_numeric(col.where(col != ""), errors="coerce")
        if step.get("top") is not None:
            value = step.get("top_value") if step.get("top_value") is not None else step["top"]
            col = col.where(~(num >= float(step["top"])), canonical(value))
        if step.get("bottom") is not None:
            value = step.get("bottom_value") if step.get("bottom_value") is not None else step["bottom"]
            col = col.where(~(num <= float(step["bottom"])), canonical(value))
        out[step["column"]] = col
    other = {s["kind"] for s in recipe["steps"]} - {"set_roles", "recode", "local_suppression"}
    assert not other, f"the recount knows recodes and suppression only, not {other}"
    return out


def consistent_counts(people: pd.DataFrame, released: pd.DataFrame) -> np.ndarray:
    """For each person (row of ``people``), the number of released records consistent with their values:
    every QI released as that value or suppressed (''); a person's missing value is matched only by ''."""
    codes_p, codes_r = [], []
    for q in QIS:
        values = {v: i for i, v in enumerate(sorted((set(people[q]) | set(released[q])) - {""}))}
        values[""] = -1
        codes_p.append(people[q].map(values).to_numpy())
        codes_r.append(released[q].map(values).to_numpy())
    p, r = np.column_stack(codes_p), np.column_stack(codes_r)
    rows_r, mult = np.unique(r, axis=0, return_counts=True)
    rows_p, back = np.unique(p, axis=0, return_inverse=True)
    counts = np.empty(len(rows_p), dtype=np.int64)
    for i, row in enumerate(rows_p):
        ok = ((rows_r == row) | (rows_r == -1)).all(axis=1)
        counts[i] = mult[ok].sum()
    return counts[back.ravel()]


def strict_class_sizes(known: pd.DataFrame, released: pd.DataFrame) -> np.ndarray:
    """For each released record, the size of its class under the strict model: a suppressed cell (released
    empty where the person had a value) is a value of its own, a cell already missing in the input matches
    any value (the session's default missing semantics, sdcMicro's convention), other cells must be equal."""
    cols = []
    for q in QIS:
        values = {v: i for i, v in enumerate(sorted(set(released[q]) - {""}))}
        code = released[q].map(lambda v, values=values: values.get(v, -1)).to_numpy()
        cols.append(np.where((released[q] == "") & (known[q] != ""), -2, code))  # -2: suppressed
    x = np.column_stack(cols)
    rows, back, mult = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    sizes = np.empty(len(rows), dtype=np.int64)
    for i, row in enumerate(rows):
        ok = ((rows == row) | (rows == -1) | (row == -1)).all(axis=1)
        sizes[i] = mult[ok].sum()
    return sizes[back.ravel()]


def test_recount_finds_a_record_below_k():
    """The recount itself can fail: on a hand-made release it finds the records below k."""
    people = pd.DataFrame({q: ["1", "1", "2", "2"] for q in QIS})
    people.loc[3, "BYSEX"] = "1"  # unique: differs from person 2 on sex only
    released = people.copy()
    released.loc[3, "BYSEX"] = ""  # suppressed: consistent with persons 2 and 3, but person 3 stays alone
    assert strict_class_sizes(people, released).tolist() == [2, 2, 1, 1]
    assert consistent_counts(people, released).tolist() == [2, 2, 2, 1]
    # a cell missing in the input matches any value; a suppressed one only another suppressed one
    people.loc[2, "BYRACE"] = released.loc[2, "BYRACE"] = ""
    assert strict_class_sizes(people, released).tolist() == [2, 2, 1, 1]
    people.loc[2, "BYSEX"] = released.loc[2, "BYSEX"] = ""
    assert strict_class_sizes(people, released).tolist() == [2, 2, 2, 2]


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
    # the suggestions are a clickable table: select the first row (its row marker), its effect shows inline
    page.get_by_text("Select a suggestion in the table").wait_for()  # the tab is drawn once it is clicked
    # one k for the session: the MINUCs page's search (k = 3) is reused, no second search here
    assert page.get_by_role("button", name="Find MINUCs").count() == 0
    grid = page.locator('[data-testid="stDataFrame"]:visible').first
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 16, box["y"] + 35 + 17)  # header row 35 px, then the first row's marker
    wait_idle(page)
    # the effect table (MINUCs and records below k); grid cells are in the page, drawn on a canvas
    page.get_by_text("Records below k = 3").first.wait_for(state="attached")
    page.get_by_role("button", name="Apply this suggestion").click()
    wait_idle(page)
    page.get_by_text("applied.").first.wait_for()
    no_exception(page)

    # -- exact local suppression at k = 3 ------------------------------------------------------------------
    go(page, "Suppress")
    page.get_by_role("button", name="Run suppression").click()
    wait_idle(page)
    page.get_by_text("Cells suppressed").first.wait_for()
    assert page.get_by_text("Strict model, exact").count() > 0  # the default protection model
    assert page.get_by_text("Records below k after, recounted independently: 0.").count() > 0
    assert page.get_by_text(re.compile(r"(Proven optimal|Not proven optimal)")).count() > 0  # what was proven
    # the run's progress bar and Cancel button went with the finished work
    assert page.get_by_role("button", name="Cancel").count() == 0
    assert metric_value(page, "Findable below k") == "0"
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
    # the coefficient plot (tabs are lazy: only the open tab's charts are drawn)
    page.locator("[data-testid='stPlotlyChart']:visible").first.wait_for()
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

    # -- k-anonymity of the exported release, recounted here ---------------------------------------------------
    release = read_texts(tmp_path / "release.csv")[QIS].map(canonical)
    original = read_texts(ROOT / "sample_data" / "els_like.csv")
    assert len(release) == len(original) == 16197
    known = recoded(original, recipe)
    kept = release != ""
    # the release is the recoded original with some cells suppressed: every released cell is the person's own
    assert ((release == known) | ~kept).all().all()
    assert 0 < int((~kept & (known != "")).sum().sum()) < len(release)  # suppression happened, not everywhere
    # STRICT MODEL (the Suppress page's default). Every released record's class, a suppressed cell being a
    # value of its own and a cell missing in the input matching anything, has at least k records.
    sizes = strict_class_sizes(known, release)
    # The intruder's view: for every person, at least k released records are consistent with their original
    # (recoded) values, a released empty cell being consistent with anything (and a value missing in the
    # input matched only by an empty cell: the cautious reading).
    counts = consistent_counts(known, release)
    assert len(sizes) == len(counts) == len(release)
    small, alone = int((sizes < K).sum()), int((counts < K).sum())
    assert small == 0, f"{small} released records are in strict classes smaller than k={K}"
    assert alone == 0, f"{alone} persons have fewer than k={K} consistent released records"
