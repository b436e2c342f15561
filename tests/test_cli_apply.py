"""``kanon apply``: the demo recipe replays in batch, byte-identical across runs (separate processes with
different hash seeds), equal to a replay through History in Python and to the dashboard's downloads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kanon_app.export_ui import data_downloads, labels_download
from kanon_core.cli import main
from kanon_core.dataset import Roles
from kanon_core.export import ExportOptions, export_bytes, labels_file
from kanon_core.history import History
from kanon_core.io import load_dataset
from kanon_core.recipe import Recipe
from kanon_core.steps import SetRoles
from kanon_core.treat.recode import RecodeStep
from kanon_core.treat.suppress import SuppressStep

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "sample_data" / "demo.recipe.json"


@pytest.fixture(scope="module")
def demo_history() -> History:
    """The demo recipe replayed through History step by step in Python (not through Recipe.replay)."""
    recipe = Recipe.load(DEMO)
    ds = load_dataset(ROOT / "sample_data" / "els_like.csv")
    h = History.start(ds.with_roles(recipe.roles))
    for step in recipe.steps:
        h.apply(step)
    return h


def test_demo_recipe_in_a_fresh_process_matches_python_and_the_dashboard(tmp_path, demo_history):
    out = tmp_path / "out.csv"
    env = {**os.environ, "PYTHONHASHSEED": "20261", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "kanon_core", "apply", str(DEMO), "-o", str(out)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "22 step(s) replayed (22 matching the recipe's recorded results)" in proc.stderr
    assert "0 records below k=3" in proc.stderr
    # a second run, in this process (another hash seed), gives the same bytes
    again = tmp_path / "again.csv"
    assert main(["apply", str(DEMO), "-o", str(again)]) == 0
    assert out.read_bytes() == again.read_bytes()
    assert (tmp_path / "out.labels.json").read_bytes() == (tmp_path / "again.labels.json").read_bytes()
    # equal to replaying through History in Python, and to the Export page's download
    original, treated = demo_history.original.dataset, demo_history.current.dataset
    assert out.read_bytes() == export_bytes(treated, "csv", original).data
    page_csv = next(d for d in data_downloads(demo_history, demo_history.current, ExportOptions())
                    if d.file_name.endswith(".csv"))
    assert out.read_bytes() == page_csv.make()
    labels = labels_download(demo_history, demo_history.current, ExportOptions())
    assert labels is not None and (tmp_path / "out.labels.json").read_bytes() == labels.make()
    assert (tmp_path / "out.labels.json").read_bytes() == labels_file(treated, "csv", original).data
    # the release: direct identifier gone, 3-anonymous, suppressed cells empty
    frame = pd.read_csv(out)
    assert "STU_ID" not in frame.columns and len(frame) == 16197


@pytest.mark.parametrize("ext", [".parquet", ".dta", ".sav"])
def test_binary_formats_are_byte_identical_to_python(tmp_path, demo_history, ext):
    out = tmp_path / f"out{ext}"
    assert main(["apply", str(DEMO), "-o", str(out)]) == 0
    original, treated = demo_history.original.dataset, demo_history.current.dataset
    assert out.read_bytes() == export_bytes(treated, ext, original).data


def _small(tmp_path) -> tuple[Path, Path]:
    data = tmp_path / "wave1.csv"
    rows = [f"{i},{20 + i % 9},{1 + i % 2},{1 + i % 6},{10 + i % 4}.5" for i in range(90)]
    data.write_text("id,age,sex,job,score\n" + "\n".join(rows) + "\n", encoding="utf-8")
    h = History.start(load_dataset(data))
    h.apply(SetRoles(qis=("age", "sex", "job"), outcomes=("score",), direct_ids=("id",)))
    h.apply(RecodeStep("job", merge=(5, 6), into=5))
    h.apply(SuppressStep(qis=("age", "sex", "job"), k=3))
    recipe = tmp_path / "wave.recipe.json"
    Recipe.from_history(h, input_path="wave1.csv", extra={"k": 3}).save(recipe)
    return data, recipe


def test_file_argument_report_and_json_summary(tmp_path, capsys):
    data, recipe = _small(tmp_path)
    out, report = tmp_path / "o.sav", tmp_path / "report.html"
    assert main(["apply", str(recipe), "-o", str(out), "--report", str(report), "--json", "-"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["input"] == "wave1.csv" and summary["same_input"] is True
    assert summary["steps"] == 3 and summary["records_below_k"] == 0 and summary["k_achieved"] >= 3
    assert summary["steps_verified"] == 3  # the recipe's own file: every step's result checked
    assert summary["written"] == ["o.sav", "report.html"]
    text = report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and 'id="suppression-overall"' in text
    # the next wave, given explicitly
    wave2 = tmp_path / "wave2.csv"
    wave2.write_text(data.read_text(encoding="utf-8").replace("\n3,", "\n3000,"), encoding="utf-8")
    assert main(["apply", str(recipe), str(wave2), "-o", str(tmp_path / "w2.csv"), "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["same_input"] is False and json.loads(captured.out)["steps_verified"] == 0
    notes = [line for line in captured.err.splitlines() if "note:" in line]
    assert notes == ["kanon apply: note: The input file differs from the one the recipe was made on (replaying on "
                     "new data; the steps' recorded results are not checked)."]


def test_mismatch_is_a_clear_error_naming_the_step(tmp_path, capsys):
    data, recipe = _small(tmp_path)
    frame = pd.read_csv(data).drop(columns=["job"])
    other = tmp_path / "nojob.csv"
    frame.to_csv(other, index=False)
    assert main(["apply", str(recipe), str(other), "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err == ("kanon apply: error: Step 1 (Roles: 3 quasi-identifier(s)) cannot be applied: role(s) name "
                   "unknown variable(s), not in the data: job.\n")
    assert not (tmp_path / "x.csv").exists()


def test_strict_stops_at_warnings(tmp_path, capsys):
    data, recipe = _small(tmp_path)
    frame = pd.read_csv(data)
    frame["job"] = frame["job"].replace(6, 5)  # category 6 is gone in this wave
    other = tmp_path / "w.csv"
    frame.to_csv(other, index=False)
    assert main(["apply", str(recipe), str(other), "-o", str(tmp_path / "a.csv")]) == 0
    assert "Step 2 (Recode job: merge 2 categories): 1 of the 2 categories" in capsys.readouterr().err
    assert main(["apply", str(recipe), str(other), "-o", str(tmp_path / "b.csv"), "--strict"]) == 2
    assert "(strict replay)" in capsys.readouterr().err


def test_missing_input_and_bad_output(tmp_path, capsys):
    recipe = tmp_path / "r.json"
    Recipe(steps=(), roles=Roles(), input_path="gone.csv").save(recipe)
    assert main(["apply", str(recipe), "-o", str(tmp_path / "o.csv")]) == 2
    assert "File not found: gone.csv" in capsys.readouterr().err
    data, recipe2 = _small(tmp_path)
    assert main(["apply", str(recipe2), "-o", str(tmp_path / "o.xlsx")]) == 2
    assert "Cannot export '.xlsx'" in capsys.readouterr().err


def test_demo_recipe_is_in_step_with_the_sample():
    """The shipped recipe records the sample's fingerprint: replaying it is a replay on the same file."""
    recipe = Recipe.load(DEMO)
    ds = load_dataset(ROOT / "sample_data" / "els_like.csv")
    rerun = "regenerate it: python sample_data/make_demo_recipe.py"
    assert recipe.input_fingerprint == ds.fingerprint and recipe.input_records == ds.n_records, rerun
    assert recipe.check_input(ds) == []
    assert len(recipe.step_fingerprints) == len(recipe.steps) and all(recipe.step_fingerprints), rerun
    assert recipe.resolve_input(DEMO) == (ROOT / "sample_data" / "els_like.csv").resolve()
    assert recipe.steps[-1].kind == "local_suppression" and recipe.steps[-1].k == 3


def test_a_step_that_does_not_reproduce_stops_the_replay_with_one_line(tmp_path, capsys):
    data, recipe = _small(tmp_path)
    d = json.loads(recipe.read_text(encoding="utf-8"))
    d["steps"][1]["into"] = 6  # the recode now gives another result than the one recorded
    bad = tmp_path / "bad.recipe.json"
    bad.write_text(json.dumps(d), encoding="utf-8")
    assert main(["apply", str(bad), "-o", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err == ("kanon apply: error: Step 2 (recode) does not reproduce the result recorded in "
                                       "the recipe on this file; the replay stops there.\n")
    assert not (tmp_path / "x.csv").exists()
    # the same recipe untouched proves every step
    assert main(["apply", str(recipe), "-o", str(tmp_path / "y.csv")]) == 0
    assert "3 step(s) replayed (3 matching the recipe's recorded results)" in capsys.readouterr().err


def test_recorded_input_outside_the_recipe_folder_needs_the_command_line(tmp_path, capsys):
    data, recipe = _small(tmp_path)
    sub = tmp_path / "recipes"
    sub.mkdir()
    d = json.loads(recipe.read_text(encoding="utf-8"))
    d["input"]["path"] = "../wave1.csv"
    moved = sub / "wave.recipe.json"
    moved.write_text(json.dumps(d), encoding="utf-8")
    assert main(["apply", str(moved), "-o", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err == ("kanon apply: error: The recipe's input path leads outside the recipe's "
                                       "folder; give the data file on the command line.\n")
    assert main(["apply", str(moved), str(data), "-o", str(tmp_path / "x.csv")]) == 0
    assert (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("text", [
    '{"format": "kanon-recipe", "steps": ' + "[" * 50_000 + "]" * 50_000 + "}",
    '{"format": "kanon-recipe", "extra": {"k": 1e999}}',
    '{"format": "kanon-recipe", "extra": {"k": ' + "9" * 400 + "}}",
    '{"format": "kanon-recipe", "steps": [{"kind": "recode", "column": "job", "merge": "SECRET"}]}',
    '{"format": "kanon-recipe", "steps": [{"kind": "local_suppression", "k": "SECRET"}]}',
    '{"format": "kanon-recipe", "steps": [{"kind": "SECRET"}]}',
    '{"format": "kanon-recipe", "input": {"path": 12}}',
    '{"format": "kanon-recipe", "steps": [{"kind": "recode", "column": "job", "merge": [1, 2], "into": NaN}]}',
])
def test_bad_recipe_files_are_one_line_exit_2(tmp_path, capsys, text):
    data, _ = _small(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    assert main(["apply", str(bad), str(data), "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kanon apply: error: ") and err.count("\n") == 1 and "SECRET" not in err
    assert "Traceback" not in err and not (tmp_path / "x.csv").exists()
