"""Bad input the command line used to accept silently, now refused or noted:

1. ``kanon kernels --list`` honours ``-o/--json`` (the families as JSON), as the warm-up does.
2. A k criterion below 2 (``--criterion k=1``) and ``kanon apply --k 1`` are refused by the rule of ``--k``.
3. A labels file naming a variable the data does not have is noted (one line naming it): a labels file may
   cover more variables than one file holds (the dashboard's import says "not in the data, ignored" too).
4. A text missing code declared for a column of numbers (which can match no cell) is refused.
5. A quasi-identifier with very many distinct values (an identifier picked by mistake) is noted.

Every refusal: exit 2, one line on stderr, no value of the data in it, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kanon_core import kernels
from kanon_core.cli import main
from tests.stderr_lines import one_line_refusal, without_progress

MARK = "ZQXmark"  # a value of the data that no message may repeat
ENGINES = ["pandas", "duckdb", "polars"]


def data(tmp_path: Path, n: int = 40) -> Path:
    path = tmp_path / "d.csv"
    rows = [f"{1 + i % 2},{20 + 10 * (i % 4)},{MARK}{'ns'[i % 3 == 0]},R{i:06d}" for i in range(n)]
    path.write_text("sex,age,region,rid\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def hierarchies(tmp_path: Path) -> Path:
    hier = tmp_path / "h"
    hier.mkdir(exist_ok=True)
    (hier / "sex.csv").write_text("1;*\n2;*\n", encoding="utf-8")
    (hier / "age.csv").write_text("".join(f"{a};{a // 40 * 40}-;*\n" for a in (20, 30, 40, 50)), encoding="utf-8")
    return hier


def refused(argv: list[str], capsys, *needles: str) -> str:
    line = one_line_refusal(argv, capsys, *needles)
    assert MARK not in line, line
    return line


def written(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out"))


def notices(capsys) -> list[str]:
    return [line for line in without_progress(capsys.readouterr().err) if "notice" in line]


# -- 1. kernels --list -o -----------------------------------------------------------------------------------------
def test_kernels_list_writes_the_families_as_json_to_a_file(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main(["kernels", "--list", "-o", str(out)]) == 0
    listed = json.loads(out.read_text(encoding="utf-8"))
    assert [f["name"] for f in listed] == list(kernels.FAMILIES)
    assert all(f["why"] and f["modules"] for f in listed)
    assert capsys.readouterr().out.strip() != ""  # the list is still shown, as without -o


def test_kernels_list_json_to_stdout_is_only_json(capsys):
    assert main(["kernels", "--list", "--json", "-"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in listed] == list(kernels.FAMILIES)


def test_kernels_list_refuses_an_output_in_a_missing_folder(tmp_path, capsys):
    refused(["kernels", "--list", "-o", str(tmp_path / "nowhere" / "out.json")], capsys, "-o/--json")


# -- 2. k below 2 in a criterion, and kanon apply --k 1 ---------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spec", ["k=1", "k=1:alpha=0.5"])
def test_generalize_refuses_a_k_criterion_of_1(tmp_path, capsys, engine, spec):
    argv = ["generalize", str(data(tmp_path)), "--qi", "sex,age", "--hierarchies", str(hierarchies(tmp_path)),
            "--criterion", spec, "-o", str(tmp_path / "out.csv"), "--json", str(tmp_path / "out.json"),
            "--engine", engine]
    refused(argv, capsys, "--criterion k must be at least 2", "k = 1 protects nobody")
    assert written(tmp_path) == []


def test_generalize_accepts_a_k_criterion_of_2(tmp_path, capsys):
    argv = ["generalize", str(data(tmp_path)), "--qi", "sex,age", "--hierarchies", str(hierarchies(tmp_path)),
            "--criterion", "k=2", "--json", str(tmp_path / "out.json")]
    assert main(argv) == 0


def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps({
        "format": "kanon-recipe", "format_version": 1,
        "initial": {"roles": {"qis": ["sex", "age", "region"]}, "missing": "wildcard"},
        "steps": [{"kind": "local_suppression", "qis": ["sex", "age", "region"], "k": 2}],
    }), encoding="utf-8")
    return path


@pytest.mark.parametrize("engine", ENGINES)
def test_apply_refuses_k_of_1(tmp_path, capsys, engine):
    argv = ["apply", str(recipe(tmp_path)), str(data(tmp_path)), "-o", str(tmp_path / "out.csv"),
            "--json", str(tmp_path / "out.json"), "--k", "1", "--engine", engine]
    refused(argv, capsys, "--k must be at least 2", "k = 1 protects nobody")
    assert written(tmp_path) == []


def test_apply_accepts_k_of_2(tmp_path, capsys):
    argv = ["apply", str(recipe(tmp_path)), str(data(tmp_path)), "-o", str(tmp_path / "out.csv"), "--k", "2",
            "--json", str(tmp_path / "out.json")]
    assert main(argv) == 0
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["k"] == 2


# -- 3. a labels file naming a variable the data does not have ----------------------------------------------------
def labelled(tmp_path: Path, spec: dict) -> Path:
    path = data(tmp_path)
    (tmp_path / "d.labels.json").write_text(json.dumps(spec), encoding="utf-8")
    return path


@pytest.mark.parametrize("engine", ENGINES)
def test_a_labels_file_naming_an_unknown_variable_is_noted(tmp_path, capsys, engine):
    path = labelled(tmp_path, {"sex": {"label": "Sex", "value_labels": {"1": "male"}},
                               "ghost": {"label": "Ghost", "value_labels": {"1": MARK}},
                               "spook": {"missing_codes": [MARK]}})
    capsys.readouterr()
    assert main(["risk", str(path), "--qi", "sex,age", "-o", str(tmp_path / "out.json"), "--engine", engine]) == 0
    lines = notices(capsys)
    assert len(lines) == 1, lines
    assert "d.labels.json" in lines[0] and "ghost" in lines[0] and "spook" in lines[0] and "2 variable" in lines[0]
    assert MARK not in lines[0]


def test_a_labels_file_of_the_data_own_variables_gives_no_notice(tmp_path, capsys):
    path = labelled(tmp_path, {"sex": {"label": "Sex", "value_labels": {"1": "male"}}})
    capsys.readouterr()
    assert main(["risk", str(path), "--qi", "sex,age", "-o", str(tmp_path / "out.json")]) == 0
    assert notices(capsys) == []


# -- 4. a text missing code for a column of numbers ---------------------------------------------------------------
@pytest.mark.parametrize("command", ["risk", "suppress", "minucs", "roles"])
def test_a_text_missing_code_on_a_numeric_column_is_refused(tmp_path, capsys, command):
    path = data(tmp_path)
    argv = {"risk": ["risk", str(path), "--qi", "sex,age", "-o", str(tmp_path / "out.json")],
            "suppress": ["suppress", str(path), "--qi", "sex,age", "--k", "2", "-o", str(tmp_path / "out.csv")],
            "minucs": ["minucs", str(path), "--qi", "sex,age", "-o", str(tmp_path / "out.json")],
            "roles": ["roles", str(path)]}[command]
    refused([*argv, "--missing-codes", f"age=-9|{MARK}", "--engine", "pandas"] if command != "roles"
            else [*argv, "--missing-codes", f"age=-9|{MARK}"], capsys, "'age'", "numbers")
    assert written(tmp_path) == []


def test_numeric_codes_on_numbers_and_text_codes_on_text_are_accepted(tmp_path, capsys):
    path = data(tmp_path)
    assert main(["risk", str(path), "--qi", "sex,age,region", "-o", str(tmp_path / "out.json"),
                 "--missing-codes", f"age=-9|99,region={MARK}n"]) == 0
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["n_records"] == 40


def test_a_text_code_on_an_empty_column_is_accepted(tmp_path, capsys):
    path = tmp_path / "e.csv"
    path.write_text("sex,empty\n" + "".join(f"{1 + i % 2},\n" for i in range(10)), encoding="utf-8")
    assert main(["risk", str(path), "--qi", "sex", "-o", str(tmp_path / "out.json"),
                 "--missing-codes", "empty=NA"]) == 0


# -- 5. a quasi-identifier with very many distinct values ---------------------------------------------------------
@pytest.mark.parametrize("command", ["risk", "minucs", "suppress", "generalize"])
def test_a_qi_with_very_many_levels_is_noted(tmp_path, capsys, command):
    path = data(tmp_path, n=400)
    (hierarchies(tmp_path) / "rid.csv").write_text("".join(f"R{i:06d};*\n" for i in range(400)), encoding="utf-8")
    argv = {"risk": ["risk", str(path), "-o", str(tmp_path / "out.json")],
            "minucs": ["minucs", str(path), "-o", str(tmp_path / "out.json"), "--max-size", "1"],
            "suppress": ["suppress", str(path), "--k", "2", "-o", str(tmp_path / "out.csv")],
            "generalize": ["generalize", str(path), "--hierarchies", str(tmp_path / "h"), "--k", "2",
                           "--json", str(tmp_path / "out.json")]}[command]
    capsys.readouterr()
    assert main([*argv, "--qi", "sex,rid", "--engine", "pandas"]) == 0
    lines = [line for line in notices(capsys) if "distinct" in line]
    assert len(lines) == 1, lines
    assert "rid (400)" in lines[0] and "R000" not in lines[0] and MARK not in lines[0]


def test_qis_with_few_levels_give_no_notice(tmp_path, capsys):
    path = data(tmp_path, n=400)
    capsys.readouterr()
    assert main(["risk", str(path), "--qi", "sex,age,region", "-o", str(tmp_path / "out.json")]) == 0
    assert [line for line in notices(capsys) if "distinct" in line] == []


def test_the_labels_notice_lists_ten_names_and_counts_the_rest(tmp_path, capsys):
    path = labelled(tmp_path, {f"ghost{i:02d}": {"label": MARK} for i in range(12)})
    capsys.readouterr()
    assert main(["risk", str(path), "--qi", "sex,age", "-o", str(tmp_path / "out.json")]) == 0
    lines = notices(capsys)
    assert len(lines) == 1 and "12 variable(s)" in lines[0] and "ghost09, and" not in lines[0], lines
    assert "ghost09 and 2 more." in lines[0] and "ghost10" not in lines[0] and MARK not in lines[0]
