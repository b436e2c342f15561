"""The Export page through AppTest: downloads offered, the page's recipe reproduces its downloads through
``kanon apply`` byte for byte, code clashes refused, recipe replay (and its errors), report, project files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kanon_app import export_ui
from kanon_core.cli import main
from kanon_core.export import ExportOptions
from kanon_core.recipe import Recipe
from kanon_core.steps import SetRoles
from kanon_core.treat.recode import RecodeStep
from kanon_core.treat.suppress import SuppressStep

from .helpers import frame_with, open_page

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLE = ROOT / "sample_data" / "els_like.csv"
DEMO = ROOT / "sample_data" / "demo.recipe.json"
QIS = ("BYSEX", "BYRACE", "BYREGION", "BYINCOME", "BYDOB_P")


def labels(at: AppTest) -> list[str]:
    return [b.proto.label for b in at.get("download_button")]


def button(at: AppTest, start: str):
    return next(b for b in at.get("download_button") if b.proto.label.startswith(start))


@pytest.fixture
def page() -> AppTest:
    at = open_page("export.py", timeout=180)
    return at


def _treat(at: AppTest) -> None:
    """A short session: 5 QIs, a recode, suppression to k = 3 (as the other pages would record it)."""
    h = at.session_state["history"]
    r = h.current.dataset.roles
    h.apply(SetRoles(QIS, r.weight, r.strata, r.psu, r.outcomes, r.direct_ids))
    h.apply(RecodeStep("BYINCOME", merge=(1, 2, 3), into=1))
    h.apply(SuppressStep(qis=QIS, k=3))
    at.run()
    assert not at.exception


def test_downloads_are_offered_for_every_format(page):
    got = labels(page)
    for name in ("CSV (.csv)", "Parquet (.parquet)", "Stata (.dta)", "SPSS (.sav)",
                 "Labels for CSV/Parquet (.labels.json)", "Download the recipe (0 steps)", "Download the project file"):
        assert name in got
    assert not any(b.proto.disabled for b in page.get("download_button"))
    assert "16,197 records, 25 variables released (1 direct identifier(s) dropped)" in page.markdown[0].value


def test_page_recipe_reproduces_the_page_downloads_with_kanon_apply(page, tmp_path):
    _treat(page)
    page.text_area(key="w_export_notes").set_value("Scenario: three variables.").run()
    assert "Download the recipe (3 steps)" in labels(page)
    recipe_text = page.code[0].value
    recipe = Recipe.from_json(recipe_text)
    assert recipe.notes == "Scenario: three variables." and recipe.input_path == "els_like.csv"
    assert recipe.extra == {"k": 3}
    path = tmp_path / "session.recipe.json"
    path.write_text(recipe_text, encoding="utf-8")
    h = page.session_state["history"]
    downloads = {Path(d.file_name).suffix: d for d in export_ui.data_downloads(h, h.current, ExportOptions())}
    assert set(downloads) == {".csv", ".parquet", ".dta", ".sav"}
    for ext in (".csv", ".sav"):
        out = tmp_path / f"out{ext}"
        assert main(["apply", str(path), str(SAMPLE), "-o", str(out)]) == 0
        assert out.read_bytes() == downloads[ext].make(), ext


def test_a_code_that_is_a_value_disables_the_downloads(page):
    _treat(page)
    h = page.session_state["history"]
    first = next(c for c in QIS if (h.current.dataset.missing_mask(c) & ~h.original.dataset.missing_mask(c)).any())
    page.number_input(key="w_export_code").set_value(2).run()
    assert not page.exception
    assert any(f"code for suppressed cells (2) is also a value of {first}" in e.value for e in page.error)
    assert button(page, "SPSS").proto.disabled and button(page, "CSV").proto.disabled
    page.number_input(key="w_export_code").set_value(-99).run()
    assert not page.error and not button(page, "SPSS").proto.disabled


def test_replaying_the_demo_recipe_adds_a_branch(page):
    h = page.session_state["history"]
    h.apply(SetRoles(qis=("BYSEX",)))  # work already done stays
    page.file_uploader(key="w_recipe_upload").upload("demo.recipe.json", DEMO.read_bytes(), "application/json")
    page.run()
    page.button(key="btn_replay_recipe").click().run()
    assert not page.exception
    h = page.session_state["history"]
    assert 1 in h.versions and h.versions[1].step == SetRoles(qis=("BYSEX",))
    recipe = Recipe.load(DEMO)
    assert h.steps() == list(recipe.steps)
    assert h.lineage()[1].parent == 0
    assert any("Recipe replayed: 22 step(s), 22 matching the recipe's recorded results" in s.value
               for s in page.success)
    assert "Download the recipe (22 steps)" in labels(page)


def test_a_bad_recipe_is_a_message_not_a_traceback(page):
    page.file_uploader(key="w_recipe_upload").upload("x.json", b'{"format": "other"}', "application/json")
    page.run()
    page.button(key="btn_replay_recipe").click().run()
    assert not page.exception
    assert any("not a kanon recipe" in e.value for e in page.error)
    bad = {"format": "kanon-recipe", "initial": {"roles": {"qis": ["NOPE"]}}, "steps": []}
    page.file_uploader(key="w_recipe_upload").upload("y.json", json.dumps(bad).encode(), "application/json")
    page.run()
    page.button(key="btn_replay_recipe").click().run()
    assert any("initial roles name variable(s) not in this file: NOPE" in e.value for e in page.error)
    assert len(page.session_state["history"].versions) == 1


def test_report_is_built_on_request(page):
    _treat(page)
    assert not any(lab.startswith("Download the report") for lab in labels(page))
    page.checkbox(key="w_report_minucs").uncheck().run()
    formula = next(t for t in page.text_input if t.key.startswith("w_report_formula_"))
    assert formula.value == "BYTXCSTD ~ " + " + ".join(f"C({q})" for q in QIS)
    page.button(key="btn_build_report").click().run()
    assert not page.exception and not page.error
    assert any(lab.startswith("Download the report") for lab in labels(page))
    built = [v for key, v in page.session_state["memo"].items() if key[2] == "report_html"]
    text = built[0].decode("utf-8")
    assert text.startswith("<!DOCTYPE html>") and "MINUCs were not computed for this report." in text
    from html import escape

    step = page.session_state["history"].current.step
    assert step.kind == "local_suppression" and escape(step.describe()) in text


def test_project_file_round_trip(page):
    _treat(page)
    page.session_state["settings"]["k"] = 4
    h = page.session_state["history"]
    project = export_ui.project_for(h, page.session_state["source"], page.session_state["settings"])
    assert project.data.sample == "els" and project.data.path == "els_like.csv"
    assert project.settings["k"] == 4
    before = [v.label for v in h.lineage()]
    page.session_state["settings"]["k"] = 3
    page.file_uploader(key="w_project_upload").upload("p.kanon.json", project.to_json().encode(), "application/json")
    page.run()
    page.button(key="btn_open_project").click().run()
    assert not page.exception
    again = page.session_state["history"]
    assert again is not h and [v.label for v in again.lineage()] == before
    assert sorted(again.versions) == sorted(h.versions) and again.current_id == h.current_id  # the whole tree
    assert page.session_state["settings"]["k"] == 4
    assert any("Project opened" in s.value for s in page.success)


def test_project_on_other_data_needs_that_data(page):
    _treat(page)
    h = page.session_state["history"]
    src = {"kind": "upload", "title": "mine.csv", "name": "mine.csv"}
    project = export_ui.project_for(h, src, {"k": 3})
    data = json.loads(project.to_json())
    data["data"]["fingerprint"] = "0" * 64
    page.file_uploader(key="w_project_upload").upload("p.kanon.json", json.dumps(data).encode(), "application/json")
    page.run()
    page.button(key="btn_open_project").click().run()
    assert not page.exception
    assert any("upload it together with the project" in e.value for e in page.error)


def test_report_measures_prec_with_the_session_hierarchies(page):
    """The report built on the page measures Prec with the hierarchies of the version and the session (as the
    Compare page does): one with incomes 1, 2, 3 under "1" gives the recoded income a Prec."""
    import math

    from kanon_core.treat.hierarchy import Hierarchy, value_key
    from kanon_core.utility.baseline import original_with_roles
    from kanon_core.utility.info_loss import information_loss

    from ..test_report import Page, num

    _treat(page)
    page.checkbox(key="w_report_minucs").uncheck().run()

    def build() -> dict[str, float]:
        page.button(key="btn_build_report").click().run()
        assert not page.exception and not page.error
        built = [v for key, v in page.session_state["memo"].items() if key[2] == "report_html"]
        table = Page(built[-1].decode("utf-8")).frame("info-loss-variables").set_index("variable")
        shown.update(table["Prec"].to_dict())
        return {q: num(table.loc[q, "Prec"]) for q in QIS}

    shown: dict[str, str] = {}
    assert math.isnan(build()["BYINCOME"])  # a free recode: no hierarchy says where 2 and 3 went
    assert shown["BYINCOME"] == "undefined: recoded without a hierarchy, or no cell measured"  # says why, not an empty cell
    hist = page.session_state["history"]
    original = original_with_roles(hist, hist.current_id)
    values = [value_key(v) for v in sorted(original.frame["BYINCOME"].dropna().unique())]
    h = Hierarchy(tuple((v, "1" if v in ("1", "2", "3") else v, "*") for v in values), "BYINCOME")
    page.session_state["hierarchies"] = {**page.session_state["hierarchies"], "BYINCOME": h}
    page.run()
    got = build()
    ref = information_loss(original, hist.current.dataset, list(QIS), {"BYINCOME": h}).table.set_index("variable")
    assert 0 < got["BYINCOME"] < 1
    assert got["BYINCOME"] == pytest.approx(ref.loc["BYINCOME", "prec"], abs=0.006)  # shown to 2 decimals
    # the Compare page, in the same session, shows the same Prec for every QI (it used to disagree)
    page.session_state["w_cmp_tab"] = "Bias and information loss"  # lazy tabs: only the open one is computed
    page.switch_page("pages/compare.py").run()
    assert not page.exception
    shown = frame_with(page, "loss metric (LM)").set_index("variable")["Prec"].map(lambda x: num(str(x)))
    assert set(shown.index) == set(QIS)
    for q in QIS:
        assert (math.isnan(got[q]) and math.isnan(shown[q])) or got[q] == pytest.approx(shown[q], abs=0.006), q


def test_the_page_says_what_the_release_users_must_be_told():
    """Under its downloads, the Export page says what ``kanon apply`` prints as notices: variables renamed for
    Stata and SPSS, CSV text cells a spreadsheet may run as formulas (counts and names, never the cells)."""
    import pandas as pd

    from kanon_core.dataset import Dataset, Roles

    from .helpers import session_on

    frame = pd.DataFrame({"marital-status": [1, 2] * 10, "city": ["=ZQX", "town"] * 10})
    at = session_on(Dataset(frame=frame, roles=Roles(qis=("marital-status",)), name="notes"))
    at.switch_page("pages/export.py").run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("CSV: 10 text cell(s) begin with") and "city (10)" in c for c in captions), captions
    assert "Variable marital-status is named marital_status in the Stata file." in captions
    assert "Variable marital-status is named marital_status in the SPSS file." in captions
    assert not any("ZQX" in c for c in captions)
