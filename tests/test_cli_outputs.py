"""Writing rules of every command: never over an input, its labels or another output; atomic; one-line errors.

Each refusal must exit with status 2, print exactly one line on stderr, leave the input's bytes unchanged
and write nothing at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import build_parser, main
from kanon_core.history import History
from kanon_core.io import load_dataset
from kanon_core.outputs import OutputBatch
from kanon_core.recipe import Recipe
from kanon_core.steps import SetRoles
from kanon_core.treat.recode import RecodeStep
from tests.stderr_lines import without_progress

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A folder holding data.csv and its labels sidecar; the working directory during the test."""
    rng = np.random.default_rng(3)
    n = 40
    frame = pd.DataFrame({"a": rng.choice(["x", "y"], n), "b": rng.integers(1, 4, n), "c": rng.integers(1, 3, n),
                          "w": rng.uniform(1, 5, n).round(2), "y": rng.normal(size=n).round(3)})
    (tmp_path / "data.csv").write_text(frame.to_csv(index=False, lineterminator="\n"), encoding="utf-8")
    (tmp_path / "data.labels.json").write_text('{"a": {"label": "A"}}\n', encoding="utf-8")
    (tmp_path / "hier").mkdir()
    (tmp_path / "hier" / "b.csv").write_text("1;*\n2;*\n3;*\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(capsys, folder: Path, argv: list[str], phrase: str) -> None:
    before = _snapshot(folder)
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1, err
    assert phrase in err[0], err[0]
    assert _snapshot(folder) == before  # nothing written, nothing replaced, no temporary file left


def _recipe(folder: Path) -> Path:
    h = History.start(load_dataset(folder / "data.csv"))
    h.apply(SetRoles(qis=("a", "b")))
    h.apply(RecodeStep("b", merge=(2, 3), into=2))
    path = folder / "r.recipe.json"
    Recipe.from_history(h, input_path="data.csv", extra={"k": 2}).save(path)
    return path


OVER_INPUT = {
    "risk": ["risk", "data.csv", "--qi", "a,b", "-o", "data.csv"],
    "risk --per-record": ["risk", "data.csv", "--qi", "a,b", "--per-record", "./data.csv"],
    "minucs": ["minucs", "data.csv", "--qi", "a,b", "--list", "data.labels.json"],
    "suppress": ["suppress", "data.csv", "--qi", "a,b", "--k", "2", "-o", "data.csv"],
    "recode": ["recode", "data.csv", "--column", "b", "--merge", "2,3", "-o", "data.csv"],
    "recode --step": ["recode", "data.csv", "--column", "b", "--merge", "2,3", "--step", "data.labels.json"],
    "generalize": ["generalize", "data.csv", "--qi", "b", "--hierarchies", "hier", "--k", "2", "-o", "data.csv"],
    "generalize hierarchy": ["generalize", "data.csv", "--qi", "b", "--hierarchies", "hier", "--k", "2",
                             "--step", "hier/b.csv"],
    "estimate": ["estimate", "data.csv", "--var", "a", "--weight", "w", "-o", "data.csv"],
    "regress": ["regress", "data.csv", "--formula", "y ~ C(a)", "--weight", "w", "--json", "data.csv"],
}


@pytest.mark.parametrize("case", sorted(OVER_INPUT))
def test_no_command_writes_over_its_input(folder, capsys, case):
    _refused(capsys, folder, OVER_INPUT[case], "would write over")


def test_a_symlink_to_the_input_is_the_input(folder, capsys):
    (folder / "alias.csv").symlink_to(folder / "data.csv")
    _refused(capsys, folder, ["recode", "data.csv", "--column", "b", "--merge", "2,3", "-o", "alias.csv"],
             "would write over the input file")


def test_a_release_named_like_the_input_would_rewrite_its_labels(folder, capsys):
    _refused(capsys, folder, ["suppress", "data.csv", "--qi", "a,b", "--k", "2", "-o", "data.parquet"],
             "the labels file of --output would write over the input's labels file")
    recipe = _recipe(folder)
    _refused(capsys, folder, ["apply", str(recipe), "data.csv", "-o", "data.parquet"],
             "the labels file of --output would write over the input's labels file")


def test_apply_refuses_report_over_release_and_output_over_input_or_recipe(folder, capsys):
    recipe = _recipe(folder)
    _refused(capsys, folder, ["apply", str(recipe), "data.csv", "-o", "rel.csv", "--report", "rel.csv"],
             "--output and --report name the same file")
    _refused(capsys, folder, ["apply", str(recipe), "data.csv", "-o", "data.csv", "--report", "data.csv"],
             "--output would write over the input file")
    _refused(capsys, folder, ["apply", str(recipe), "data.csv", "-o", "rel.csv", "--json", str(recipe)],
             "--json would write over the recipe")
    _refused(capsys, folder, ["apply", str(recipe), "data.csv", "-o", "rel.csv", "--json", "rel.labels.json"],
             "name the same file")


def test_a_missing_output_folder_is_refused_before_any_work(folder, capsys):
    for argv in (["risk", "data.csv", "--qi", "a", "--per-record", "nope/fk.csv"],
                 ["suppress", "data.csv", "--qi", "a,b", "--k", "2", "-o", "nope/t.csv"],
                 ["recode", "data.csv", "--column", "b", "--merge", "2,3", "-o", "nope/r.csv"],
                 ["apply", str(_recipe(folder)), "data.csv", "-o", "rel.csv", "--report", "nope/r.html"]):
        _refused(capsys, folder, argv, "does not exist")


def test_bad_output_format_is_refused_before_any_work(folder, capsys, monkeypatch):
    import kanon_core.cli.common as common

    def no_loading(*args, **kwargs):
        raise AssertionError("the data must not be loaded")

    monkeypatch.setattr(common, "load_dataset", no_loading)
    _refused(capsys, folder, ["recode", "data.csv", "--column", "b", "--merge", "2,3", "-o", "r.txt"],
             "Cannot export '.txt'")
    _refused(capsys, folder, ["suppress", "data.csv", "--qi", "a", "--k", "2", "-o", "t.xlsx"],
             "Cannot export '.xlsx'")
    _refused(capsys, folder, ["suppress", "data.csv", "--qi", "a", "--k", "2", "--importance", "a", "-o", "t.csv"],
             "--importance expects")
    _refused(capsys, folder, ["recode", "data.csv", "--column", "b", "--top", "1", "--bottom", "2", "-o", "r.csv"],
             "bottom code must be below")
    _refused(capsys, folder, ["generalize", "data.csv", "--qi", "b", "--hierarchies", "hier", "--k", "2",
                              "--max-suppression", "5", "-o", "g.csv"], "suppression limit")


def test_every_command_accepts_dash_o():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) >= {"apply", "estimate", "generalize", "minucs", "recode", "regress", "risk", "suppress"}
    for name, sub in commands.items():
        options = {s for a in sub._actions for s in a.option_strings}
        assert {"-o", "--output"} <= options, name


def test_recode_dash_o_writes_the_recoded_data_as_the_readme_shows(folder):
    assert main(["recode", "data.csv", "--column", "b", "--merge", "2,3", "--into", "2", "-o", "recoded.csv",
                 "--json", "recode.json"]) == 0
    out = pd.read_csv(folder / "recoded.csv")
    src = pd.read_csv(folder / "data.csv")
    assert (src["b"] == 3).any() and not (out["b"] == 3).any()
    assert (out["b"] == src["b"].where(src["b"] != 3, 2)).all()
    assert json.loads((folder / "recode.json").read_text())["step"]["column"] == "b"


def test_json_output_alias_for_summary_commands(folder):
    assert main(["risk", "data.csv", "--qi", "a,b", "--missing", "category", "-o", "risk.json"]) == 0
    assert json.loads((folder / "risk.json").read_text())["qis"] == ["a", "b"]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name)


def test_a_writer_failing_half_way_leaves_no_partial_file(folder, capsys, monkeypatch):
    from kanon_core.outputs import OutputBatch

    real = OutputBatch.write_bytes

    def half_then_fail(self, target, data):
        if str(target).endswith("r.csv"):  # the release: half of it, then the disk is full
            Path(self.temp_path(target)).write_bytes(data[: len(data) // 2])
            raise OSError(28, "No space left on device", str(target))
        real(self, target, data)

    monkeypatch.setattr(OutputBatch, "write_bytes", half_then_fail)
    before = _snapshot(folder)
    assert main(["recode", "data.csv", "--column", "b", "--merge", "2,3", "-o", "r.csv", "--json", "r.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0]
    assert _snapshot(folder) == before and _leftovers(folder) == []


def test_apply_writes_nothing_when_the_report_fails(folder, capsys, monkeypatch):
    import kanon_core.report as report

    recipe = _recipe(folder)

    def failing_report(*args, **kwargs):
        raise ValueError("cell value 'secret-42' broke the report")

    monkeypatch.setattr(report, "report_html", failing_report)
    before = _snapshot(folder)
    assert main(["apply", str(recipe), "data.csv", "-o", "rel.csv", "--report", "r.html", "--json", "s.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "secret-42" not in err[0] and "ValueError" in err[0]
    assert _snapshot(folder) == before  # no release without its report


def test_apply_writes_release_report_and_summary_together(folder, capsys):
    recipe = _recipe(folder)
    assert main(["apply", str(recipe), "data.csv", "-o", "rel.csv", "--report", "r.html", "--json", "s.json"]) == 0
    summary = json.loads((folder / "s.json").read_text())
    assert summary["written"] == ["rel.csv", "rel.labels.json", "r.html"]
    assert all((folder / name).exists() for name in summary["written"]) and _leftovers(folder) == []


def test_os_errors_are_one_line_with_the_file_name_only(folder, capsys, monkeypatch):
    def denied(self, target, data):
        raise PermissionError(13, "Permission denied", str(folder / "deep" / "r.json"))

    monkeypatch.setattr(OutputBatch, "write_bytes", denied)
    assert main(["risk", "data.csv", "--qi", "a", "--missing", "category", "-o", "r.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["kanon risk: error: Permission denied (r.json)."]


def test_unexpected_errors_show_no_values(folder, capsys, monkeypatch):
    import kanon_core.risk.summary as summary  # kanon risk imports it when it runs

    def leaky(*args, **kwargs):
        raise KeyError("value 'Jane Doe, 1961-03-02'")

    monkeypatch.setattr(summary, "risk_summary", leaky)
    assert main(["risk", "data.csv", "--qi", "a"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Jane" not in err[0] and "KeyError" in err[0]


def test_argument_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["risk", "data.csv", "--qi", "a", "--k", "many"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--k" in err[0]


def _kanon(args: list[str], cwd: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "kanon_core", *args], cwd=cwd, env=env,
                            stderr=subprocess.PIPE, **kwargs)


def test_a_closed_pipe_is_one_line_and_exit_2(folder):
    """``kanon risk ... | head`` with a reader that is gone: no traceback, one line, status 2."""
    proc = _kanon(["risk", "data.csv", "--qi", "a,b", "--missing", "category"], folder, stdout=subprocess.PIPE)
    proc.stdout.close()  # the reader leaves before kanon writes
    _, err = proc.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 2 and lines == ["kanon risk: error: the output pipe was closed before everything "
                                              "was written."]


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
def test_output_to_dev_stdout_reaches_the_pipe(folder):
    """``-o /dev/stdout`` writes into the pipe (renaming a file over it would leave the reader with nothing)."""
    proc = _kanon(["risk", "data.csv", "--qi", "a,b", "--missing", "category", "-o", "/dev/stdout"], folder,
                  stdout=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["n_records"] == 40
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs a device that is always full")
def test_output_to_a_full_device_is_one_line_and_exit_2(folder, capsys):
    _refused(capsys, folder, ["risk", "data.csv", "--qi", "a,b", "-o", "/dev/full"], "kanon risk: error: No space")
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")


def test_pipe_into_head_prints_no_traceback(folder):
    cmd = (f"{sys.executable} -m kanon_core risk data.csv --qi a,b --missing category | head -1; "
           "echo \"status=${PIPESTATUS[0]}\" >&2")
    done = subprocess.run(["bash", "-c", cmd], cwd=folder, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout == "{\n"
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    status = done.stderr.strip().splitlines()[-1]
    assert status in ("status=0", "status=2")  # 0 when everything fit in the pipe before head left
    assert len(done.stderr.strip().splitlines()) == (1 if status == "status=0" else 2)



@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000, '{"steps": [], "version": ' + "9" * 50_000 + "}",
                                  '{"steps": "not a list"}', '{"steps": [{"kind": 5}]}', "\xff\xfe"])
def test_broken_recipes_are_one_line_and_exit_2(folder, capsys, text):
    recipe = folder / "bad.recipe.json"
    recipe.write_bytes(text.encode("latin-1"))
    _refused(capsys, folder, ["apply", str(recipe), "data.csv", "-o", "rel.csv"], "kanon apply: error:")


def test_a_failure_after_a_notice_is_still_one_line(tmp_path, capsys):
    """The notice about text that often means missing waits for the command's success: a command that fails
    after reading such a file prints its error alone."""
    p = tmp_path / "na.csv"
    p.write_text("a,b,y\nNA,1,2.0\nx,2,3.5\nx,1,1.0\n", encoding="utf-8")
    assert main(["risk", str(p), "--qi", "a,b", "--k", "2", "--sensitive", "nosuchvariable"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kanon risk: error:"), err
    assert main(["risk", str(p), "--qi", "a,b", "--k", "2", "--json", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kanon: notice: columns with text that often means missing"), err


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
@pytest.mark.parametrize("release", ["data.parquet", "per-record"])
def test_an_input_read_through_a_link_keeps_the_real_files_labels(folder, capsys, kind, release):
    """Reading ``link.csv`` (a link to ``data.csv``), ``-o data.parquet`` replaced ``data.labels.json`` by the
    release's, and every label and declared missing code of ``data.csv`` was lost."""
    link = folder / "link.csv"
    if kind == "symlink":
        link.symlink_to(folder / "data.csv")
    else:
        os.link(folder / "data.csv", link)
    if release == "data.parquet":
        argv = ["suppress", "link.csv", "--qi", "a,b", "--k", "2", "-o", "data.parquet", "--json", "s.json"]
        phrase = "the labels file of --output would write over the input's labels file"
    else:
        argv = ["risk", "link.csv", "--qi", "a,b", "--per-record", "data.labels.json"]
        phrase = "--per-record would write over the input's labels file"
    _refused(capsys, folder, argv, phrase)


DASH = {
    "risk --per-record": (["risk", "data.csv", "--qi", "a,b", "-o", "s.json", "--per-record", "-"], "--per-record"),
    "risk both": (["risk", "data.csv", "--qi", "a,b", "-o", "-", "--per-record", "-"], "--per-record"),
    "risk duckdb": (["risk", "data.csv", "--qi", "a,b", "--engine", "duckdb", "--per-record", "-"], "--per-record"),
    "minucs --list": (["minucs", "data.csv", "--qi", "a,b", "--list", "-", "-o", "s.json"], "--list"),
    "minucs both": (["minucs", "data.csv", "--qi", "a,b", "--per-record", "-", "--list", "-", "-o", "s.json"],
                    "--per-record"),
    "suppress -o": (["suppress", "data.csv", "--qi", "a,b", "--k", "2", "-o", "-", "--json", "s.json"],
                    "Cannot export '-'"),
    "recode --step": (["recode", "data.csv", "--column", "b", "--merge", "2,3", "--step", "-"], "--step"),
    "generalize --step": (["generalize", "data.csv", "--qi", "b", "--hierarchies", "hier", "--k", "2", "--step", "-"],
                          "--step"),
}


@pytest.mark.parametrize("case", sorted(DASH))
def test_dash_for_a_file_option_is_refused_not_a_file_named_dash(folder, capsys, case):
    """``-`` is standard output for the JSON summaries only; elsewhere the writers created a file named ``-``,
    and two such options overwrote each other."""
    argv, option = DASH[case]
    _refused(capsys, folder, argv, option)
    assert not (folder / "-").exists()


def test_dash_for_the_report_of_apply_is_refused(folder, capsys):
    recipe = _recipe(folder)
    _refused(capsys, folder, ["apply", str(recipe), "data.csv", "-o", "rel.csv", "--report", "-"],
             "--report writes a file, not standard output")
    assert main(["apply", str(recipe), "data.csv", "-o", "rel.csv", "--json", "-"]) == 0  # the summary may
    assert json.loads(capsys.readouterr().out)["written"] == ["rel.csv", "rel.labels.json"]


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_release_without_labels_next_to_an_earlier_release_s_labels_is_refused(folder, capsys, engine):
    """`apply --no-labels` left the labels file of an earlier release beside the new one; kanon's reader (and
    anyone's) read its codes and labels (e.g. a code -99 for suppressed cells) with data written otherwise.
    Refused before any work."""
    recipe = _recipe(folder)
    args = ["apply", str(recipe), "data.csv", "-o", "rel.csv", "--engine", engine]
    assert main(args) == 0 and (folder / "rel.labels.json").exists()  # the input's labels
    capsys.readouterr()
    before = _snapshot(folder)
    assert main([*args, "--no-labels"]) == 2
    assert without_progress(capsys.readouterr().err) == [
        "kanon apply: error: A labels file rel.labels.json of an earlier release is next to the output and would be "
        "read with this release; remove it, or write the labels with the release."]
    assert _snapshot(folder) == before
    (folder / "rel.labels.json").unlink()
    assert main([*args, "--no-labels"]) == 0
    assert not (folder / "rel.labels.json").exists()


def test_a_notice_naming_a_column_with_a_line_break_stays_one_line(folder, capsys):
    """A notice names variables; a name holding a line break split it in two lines, the second free to read
    as another message of kanon's."""
    (folder / "nl.csv").write_text('"a\nerror: b",c\nNA,1\nNA,2\n', encoding="utf-8")
    assert main(["risk", "nl.csv", "--qi", "c", "-o", "nl.json"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a error: b" in err[0], err
