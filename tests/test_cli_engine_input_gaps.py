"""The input checks of :mod:`tests.test_cli_input_gaps` on the large-file engines, as in memory:

4. A text missing code declared (``--missing-codes``) for a column of numbers is refused where an engine types
   the column, by the in-memory path's rule and in its words (exit 2, one line, no value of the data, nothing
   written).
5. Quasi-identifiers with very many distinct values are noted in the in-memory path's line, their distinct
   values counted on the class table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kanon_core.cli import main
from tests.test_cli_input_gaps import MARK, data, hierarchies, notices, refused, written

ENGINES = ["duckdb", "polars"]


def argv_of(command: str, path: Path, tmp_path: Path, qis: str) -> list[str]:
    return {"risk": ["risk", str(path), "--qi", qis, "-o", str(tmp_path / "out.json")],
            "suppress": ["suppress", str(path), "--qi", qis, "--k", "2", "-o", str(tmp_path / "out.csv")],
            "minucs": ["minucs", str(path), "--qi", qis, "-o", str(tmp_path / "out.json"), "--max-size", "1"],
            "generalize": ["generalize", str(path), "--qi", qis, "--hierarchies", str(hierarchies(tmp_path)),
                           "--k", "2", "--json", str(tmp_path / "out.json")]}[command]


# -- 4. a text missing code for a column of numbers ---------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("command", ["risk", "suppress", "minucs", "generalize"])
def test_a_text_missing_code_on_a_numeric_qi_is_refused_as_in_memory(tmp_path, capsys, command, engine):
    path = data(tmp_path)
    argv = [*argv_of(command, path, tmp_path, "sex,age"), "--missing-codes", f"age=-9|{MARK}"]
    expected = refused([*argv, "--engine", "pandas"], capsys, "'age'", "numbers")
    assert refused([*argv, "--engine", engine], capsys, "'age'", "numbers") == expected
    assert written(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_text_missing_code_on_a_numeric_weight_is_refused(tmp_path, capsys, engine):
    path = tmp_path / "w.csv"
    path.write_text("sex,wt\n" + "".join(f"{1 + i % 2},{1 + i % 3}\n" for i in range(30)), encoding="utf-8")
    argv = ["risk", str(path), "--qi", "sex", "--weight", "wt", "-o", str(tmp_path / "out.json"),
            "--missing-codes", f"wt={MARK}"]
    expected = refused([*argv, "--engine", "pandas"], capsys, "'wt'", "numbers")
    assert refused([*argv, "--engine", engine], capsys, "'wt'", "numbers") == expected
    assert written(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_text_code_on_a_numeric_column_of_the_release_is_refused(tmp_path, capsys, engine):
    # age is no QI: the engine types it for the release's labels, and nothing is written
    path = data(tmp_path)
    argv = [*argv_of("suppress", path, tmp_path, "sex,region"), "--missing-codes", f"age={MARK}"]
    expected = refused([*argv, "--engine", "pandas"], capsys, "'age'", "numbers")
    assert refused([*argv, "--engine", engine], capsys, "'age'", "numbers") == expected
    assert written(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_numeric_codes_on_numbers_and_text_codes_on_text_are_accepted(tmp_path, capsys, engine):
    path = data(tmp_path)
    assert main(["risk", str(path), "--qi", "sex,age,region", "-o", str(tmp_path / "out.json"),
                 "--missing-codes", f"age=-9|99,region={MARK}n", "--engine", engine]) == 0
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["n_records"] == 40


@pytest.mark.parametrize("engine", ENGINES)
def test_a_text_code_on_an_empty_column_is_accepted(tmp_path, capsys, engine):
    path = tmp_path / "e.csv"
    path.write_text("sex,empty\n" + "".join(f"{1 + i % 2},\n" for i in range(10)), encoding="utf-8")
    assert main(["risk", str(path), "--qi", "sex,empty", "-o", str(tmp_path / "out.json"),
                 "--missing-codes", "empty=NA", "--engine", engine]) == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_text_code_on_a_numeric_parquet_column_is_refused(tmp_path, capsys, engine):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "d.parquet"
    pd.DataFrame({"sex": [1, 2] * 10, "age": [20.5, 30.0] * 10}).to_parquet(path)
    argv = ["risk", str(path), "--qi", "sex,age", "-o", str(tmp_path / "out.json"), "--missing-codes",
            f"age={MARK}"]
    expected = refused([*argv, "--engine", "pandas"], capsys, "'age'", "numbers")
    assert refused([*argv, "--engine", engine], capsys, "'age'", "numbers") == expected
    assert written(tmp_path) == []


# -- 5. a quasi-identifier with very many distinct values ---------------------------------------------------------
def many_levels_lines(capsys) -> list[str]:
    return [line for line in notices(capsys) if "distinct" in line]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("command", ["risk", "minucs", "suppress", "generalize"])
def test_a_qi_with_very_many_levels_is_noted_as_in_memory(tmp_path, capsys, command, engine):
    path = data(tmp_path, n=400)
    (hierarchies(tmp_path) / "rid.csv").write_text("".join(f"R{i:06d};*\n" for i in range(400)), encoding="utf-8")
    argv = argv_of(command, path, tmp_path, "sex,rid")
    capsys.readouterr()
    assert main([*argv, "--engine", "pandas"]) == 0
    expected = many_levels_lines(capsys)
    assert len(expected) == 1 and "rid (400)" in expected[0], expected
    assert main([*argv, "--engine", engine]) == 0
    lines = many_levels_lines(capsys)
    assert lines == expected
    assert "R000" not in lines[0] and MARK not in lines[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_declared_missing_codes_are_not_counted_as_levels(tmp_path, capsys, engine):
    # 120 records: the limit is 60 distinct values; rid has 61, one of them declared missing, as in memory
    path = tmp_path / "m.csv"
    path.write_text("sex,rid\n" + "".join(f"{1 + i % 2},{i % 61}\n" for i in range(120)), encoding="utf-8")
    for codes, noted in ((None, True), ("rid=60", False)):
        argv = ["risk", str(path), "--qi", "sex,rid", "-o", str(tmp_path / "out.json"),
                *(["--missing-codes", codes] if codes else [])]
        capsys.readouterr()
        assert main([*argv, "--engine", "pandas"]) == 0
        expected = many_levels_lines(capsys)
        assert len(expected) == noted and all("rid (61)" in line for line in expected), expected
        assert main([*argv, "--engine", engine]) == 0
        assert many_levels_lines(capsys) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_qis_with_few_levels_give_no_notice(tmp_path, capsys, engine):
    path = data(tmp_path, n=400)
    capsys.readouterr()
    assert main(["risk", str(path), "--qi", "sex,age,region", "-o", str(tmp_path / "out.json"),
                 "--engine", engine]) == 0
    assert many_levels_lines(capsys) == []
