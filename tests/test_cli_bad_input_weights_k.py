"""Bad input on the command line refused alike by every command and engine:
exit 2, one line on stderr, no value of the data in it, nothing written.

* ``kanon apply`` checks the weight its recipe's roles name, in memory and at scale.
* ``kanon suppress --engine duckdb|polars`` checks ``--weight`` as the in-memory engine does.
* An SPSS release of text cells ending in spaces is refused as a format limit, not "a fault of kanon's".
* k = 1 is refused wherever k is a target or a threshold; k above the file's records where the result
   would be meaningless (``risk`` keeps measuring there).
* ``kanon recode --merge`` with a category that does not occur says so, as ``kanon apply`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kanon_core.cli import main
from tests.stderr_lines import one_line_refusal, without_progress

ENGINES = ["pandas", "duckdb", "polars"]
MARK = "ZQXmark"  # a value of the data that no message may repeat

HEADER = "id,sex,age,region,w\n"
ROWS = [f"ID{i:03d},{1 + i % 2},{20 + 10 * (i % 4)},{MARK}{'ns'[i % 3 == 0]},{1.25 + i % 3}" for i in range(40)]

BAD_WEIGHTS = {  # the weight cell of one record, and what the refusal says
    "negative": ("-1.5", "zero or negative"),
    "zero": ("0", "zero or negative"),
    "text": (MARK + "w", "non-numeric"),
    "empty": ("", "missing for 1 record"),
    "inf": ("inf", "infinite"),
    "nan": ("NaN", "non-numeric"),
    "overflow": ("1e400", "infinite"),
}


def data(tmp_path: Path, weight: str | None = None, name: str = "d.csv") -> Path:
    rows = list(ROWS)
    if weight is not None:
        parts = rows[3].split(",")
        parts[4] = weight
        rows[3] = ",".join(parts)
    path = tmp_path / name
    path.write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps({
        "format": "kanon-recipe", "format_version": 1,
        "initial": {"roles": {"qis": ["sex", "age", "region"], "weight": "w"}, "missing": "wildcard"},
        "steps": [{"kind": "recode", "column": "age", "merge": [], "into": None, "top": 40.0, "bottom": None,
                   "top_value": None, "bottom_value": None},
                  {"kind": "local_suppression", "qis": ["sex", "age", "region"], "k": 2}],
    }), encoding="utf-8")
    return path


def refused(argv: list[str], capsys, *needles: str) -> str:
    line = one_line_refusal(argv, capsys, *needles)
    assert MARK not in line, line
    assert "fault of kanon" not in line, line
    return line


def written(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out"))


# -- 1. kanon apply checks the recipe's weight ------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bad", sorted(BAD_WEIGHTS))
def test_apply_refuses_a_bad_weight_the_recipe_names(tmp_path, capsys, engine, bad):
    cell, says = BAD_WEIGHTS[bad]
    path = data(tmp_path, cell)
    refused(["apply", str(recipe(tmp_path)), str(path), "-o", str(tmp_path / "out.csv"),
             "--json", str(tmp_path / "out.json"), "--engine", engine], capsys, "Weight 'w'", says)
    assert written(tmp_path) == []


def test_apply_with_a_report_refuses_a_bad_weight_before_writing_anything(tmp_path, capsys):
    path = data(tmp_path, "-1.5")
    refused(["apply", str(recipe(tmp_path)), str(path), "-o", str(tmp_path / "out.csv"),
             "--report", str(tmp_path / "out.html"), "--json", str(tmp_path / "out.json")], capsys,
            "Weight 'w'", "zero or negative")
    assert written(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_apply_with_good_weights_still_writes_the_release(tmp_path, capsys, engine):
    path = data(tmp_path)
    assert main(["apply", str(recipe(tmp_path)), str(path), "-o", str(tmp_path / "out.csv"),
                 "--engine", engine]) == 0
    assert "out.csv" in written(tmp_path)


# -- 3. kanon suppress --weight on every engine --------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bad", sorted(BAD_WEIGHTS))
def test_suppress_refuses_a_bad_weight_on_every_engine(tmp_path, capsys, engine, bad):
    cell, says = BAD_WEIGHTS[bad]
    path = data(tmp_path, cell)
    refused(["suppress", str(path), "--qi", "sex,age,region", "--weight", "w", "--k", "2",
             "-o", str(tmp_path / "out.csv"), "--json", str(tmp_path / "out.json"), "--engine", engine],
            capsys, "Weight 'w'", says)
    assert written(tmp_path) == []


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_suppress_at_scale_with_good_weights_writes_what_it_wrote_without_them(tmp_path, capsys, engine):
    path = data(tmp_path)
    common = ["suppress", str(path), "--qi", "sex,age,region", "--k", "2", "--engine", engine]
    assert main([*common, "--weight", "w", "-o", str(tmp_path / "out_w.csv")]) == 0
    assert main([*common, "-o", str(tmp_path / "out_n.csv")]) == 0
    assert (tmp_path / "out_w.csv").read_bytes() == (tmp_path / "out_n.csv").read_bytes()


# -- 4. SPSS and trailing spaces ------------------------------------------------------------------------------
def spaced(tmp_path: Path) -> Path:
    path = tmp_path / "sp.csv"
    path.write_text(f"id,sex,age,t\n1,1,20,{MARK} \n2,1,20,{MARK}\n3,2,30, \n4,2,30,b\n5,1,20,\n6,2,30,b\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("command", [["recode", "--column", "age", "--top", "25"], ["suppress", "--k", "2"]])
def test_spss_release_of_text_ending_in_spaces_is_refused_as_a_format_limit(tmp_path, capsys, command):
    path = spaced(tmp_path)
    line = refused([command[0], str(path), "--qi", "sex,age", *command[1:], "-o", str(tmp_path / "out.sav")],
                   capsys, "Variable t", "2 text cell(s)", "SPSS", "CSV, Parquet or Stata")
    assert "' '" not in line
    assert written(tmp_path) == []


@pytest.mark.parametrize("ext", ["csv", "parquet", "dta"])
def test_the_same_file_is_released_in_the_formats_that_keep_the_spaces(tmp_path, ext):
    path = spaced(tmp_path)
    assert main(["recode", str(path), "--qi", "sex,age", "--column", "age", "--top", "25",
                 "-o", str(tmp_path / f"out.{ext}")]) == 0


def test_apply_to_spss_refuses_text_ending_in_spaces(tmp_path, capsys):
    path = spaced(tmp_path)
    rec = tmp_path / "r.json"
    rec.write_text(json.dumps({"format": "kanon-recipe", "format_version": 1,
                               "initial": {"roles": {"qis": ["sex", "age"]}, "missing": "wildcard"},
                               "steps": [{"kind": "recode", "column": "age", "top": 25.0}]}), encoding="utf-8")
    refused(["apply", str(rec), str(path), "-o", str(tmp_path / "out.sav")], capsys, "Variable t", "SPSS")
    assert written(tmp_path) == []


# -- 5. k = 1 and k above the records --------------------------------------------------------------------------
def k_commands(tmp_path: Path, k: str) -> dict[str, list[str]]:
    path = data(tmp_path)
    hier = tmp_path / "h"
    hier.mkdir(exist_ok=True)
    (hier / "sex.csv").write_text("1;*\n2;*\n", encoding="utf-8")
    (hier / "age.csv").write_text("".join(f"{a};{a // 40 * 40}-;*\n" for a in (20, 30, 40, 50)), encoding="utf-8")
    out = str(tmp_path / "out.csv")
    return {
        "risk": ["risk", str(path), "--qi", "sex,age", "--k", k, "-o", str(tmp_path / "out.json")],
        "recode": ["recode", str(path), "--qi", "sex,age", "--column", "age", "--top", "50", "--k", k, "-o", out],
        "generalize": ["generalize", str(path), "--qi", "sex,age", "--hierarchies", str(hier), "--k", k, "-o", out,
                       "--max-suppression", "1"],
        "suppress": ["suppress", str(path), "--qi", "sex,age", "--k", k, "-o", out],
        "minucs": ["minucs", str(path), "--qi", "sex,age", "--k", k, "-o", str(tmp_path / "out.json")],
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("command", ["risk", "recode", "generalize", "suppress", "minucs"])
def test_k_of_1_is_refused_by_every_command(tmp_path, capsys, command, engine):
    argv = k_commands(tmp_path, "1")[command]
    if command != "recode":  # recode has no engine option
        argv += ["--engine", engine]
    elif engine != "pandas":
        pytest.skip("recode runs in memory")
    refused(argv, capsys, "--k must be at least 2", "k = 1 protects nobody")
    assert written(tmp_path) == []


@pytest.mark.parametrize("command", ["recode", "generalize", "suppress", "minucs"])
def test_k_above_the_records_is_refused_where_the_result_would_be_meaningless(tmp_path, capsys, command):
    # one sentence wherever k is checked, the generalization search's included
    refused(k_commands(tmp_path, "41")[command], capsys, "The file has 40 records, so no record can be in a group "
                                                         "of k=41.")
    assert written(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_risk_still_measures_at_a_k_above_the_records(tmp_path, capsys, engine):
    argv = k_commands(tmp_path, "41")["risk"]
    assert main([*argv, "--engine", engine]) == 0
    got = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert got["n_violating"] == 40


@pytest.mark.parametrize("command", ["risk", "recode", "generalize", "suppress", "minucs"])
def test_k_of_2_and_of_the_file_size_are_accepted(tmp_path, capsys, command):
    for k in ("2", "40"):
        capsys.readouterr()
        assert main(k_commands(tmp_path, k)[command]) == 0, without_progress(capsys.readouterr().err)


# -- 7. recode --merge of a category that does not occur -----------------------------------------------------
def test_recode_notes_a_category_to_merge_that_does_not_occur(tmp_path, capsys):
    path = data(tmp_path)
    capsys.readouterr()
    assert main(["recode", str(path), "--qi", "sex,age,region", "--column", "region",
                 "--merge", f"{MARK}n,{MARK}absent", "-o", str(tmp_path / "out.csv")]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "note" in line]
    assert err == ["kanon recode: note: 1 of the 2 categories to merge does not occur in region; the others are "
                   "merged."]


def test_recode_of_categories_that_all_occur_prints_no_note(tmp_path, capsys):
    path = data(tmp_path)
    capsys.readouterr()
    assert main(["recode", str(path), "--qi", "sex,age,region", "--column", "region",
                 "--merge", f"{MARK}n,{MARK}s", "-o", str(tmp_path / "out.csv")]) == 0
    assert "note" not in capsys.readouterr().err
