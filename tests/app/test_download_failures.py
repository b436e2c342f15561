"""A data download the Export page makes on click and that fails (its read-back check, or a writer's error):
the reason reaches the page at its next run, and neither the exception Streamlit logs nor that reason quotes
a cell."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from kanon_app import export_ui
from kanon_app.export_ui import DownloadFailed, made_or_recorded
from kanon_app.state import DOWNLOAD_FAILURES
from kanon_core.export import ExportOptions
from kanon_core.io import load_dataset
from kanon_core.recipe import Recipe
from kanon_core.release_check import ReleaseCheckError
from tests.release_faults import blank_first_cell_of

from .helpers import open_page

ROOT = Path(__file__).resolve().parents[2]
SECRET = "Smith-1987-04-02"


@pytest.fixture(scope="module")
def demo_history():
    recipe_path = ROOT / "sample_data" / "demo.recipe.json"
    recipe = Recipe.load(recipe_path)
    return recipe.replay(load_dataset(recipe.resolve_input(recipe_path)))


def _logged(exc: BaseException) -> str:
    """What Python's logging prints for ``exc`` (Streamlit's logger.exception): its traceback with its chain."""
    return "".join(traceback.format_exception(exc))


def test_a_kanon_refusal_is_recorded_and_the_raised_error_names_only_the_file():
    failures: dict[str, str] = {}

    def refuse() -> bytes:
        raise ReleaseCheckError("BYRACE reads back with 3 more missing cells than were checked.")

    with pytest.raises(DownloadFailed) as caught:
        made_or_recorded(refuse, "demo_v3.csv", failures)
    assert failures == {"demo_v3.csv": "BYRACE reads back with 3 more missing cells than were checked."}
    assert str(caught.value) == "demo_v3.csv was not made: the Export page says why."
    assert "BYRACE" not in _logged(caught.value)  # the chain is cut: the log says what the page will say, no more


def test_another_error_keeps_only_its_type_so_a_quoted_cell_reaches_neither_page_nor_log():
    failures: dict[str, str] = {}

    def crash() -> bytes:
        raise ValueError(f"cannot encode value {SECRET!r}")

    with pytest.raises(DownloadFailed) as caught:
        made_or_recorded(crash, "demo_v3.sav", failures)
    assert "ValueError" in failures["demo_v3.sav"] and SECRET not in failures["demo_v3.sav"]
    assert SECRET not in _logged(caught.value)


def test_a_file_made_is_returned_and_nothing_recorded():
    failures: dict[str, str] = {}
    assert made_or_recorded(lambda: b"data", "x.csv", failures) == b"data" and failures == {}


def test_the_page_downloads_record_a_failed_read_back_check(monkeypatch, demo_history):
    """The real path: a CSV writer that blanks a cell, the read-back check refusing the file, the reason kept
    under the file's name; the other formats are still made."""
    blank_first_cell_of(monkeypatch, demo_history.current.dataset.roles.qis[0])
    failures: dict[str, str] = {}
    downloads = {Path(d.file_name).suffix: d for d in
                 export_ui.data_downloads(demo_history, demo_history.current, ExportOptions(), failures)}
    with pytest.raises(DownloadFailed):
        downloads[".csv"].make()
    name = downloads[".csv"].file_name
    assert list(failures) == [name] and "1 cell" in failures[name]
    assert downloads[".parquet"].make()[:4] == b"PAR1" and list(failures) == [name]


def test_the_export_page_says_why_once():
    at = open_page("export.py", timeout=180)
    at.session_state[DOWNLOAD_FAILURES] = {"els_like_v0.csv": "BYRACE reads back with 1 more missing cell."}
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["els_like_v0.csv was not downloaded: BYRACE reads back with 1 more "
                                           "missing cell."]
    at.run()
    assert not at.error and at.session_state[DOWNLOAD_FAILURES] == {}
