"""A weight cell is read and checked the same way in memory and by the out-of-core engines.

In memory a CSV weight column whose cells are not all canonical numbers is text, and
:func:`kanon_core.dataset.validate_weights` reads each cell with pandas' ``to_numeric``: surrounding ASCII
whitespace is ignored, "1e3", "+3", ".5" and "5." are numbers, "inf" and "Infinity" (any case, signed, no
spaces) are infinite, and "nan", "1_000", "0x10", "1,5" or a non-breaking space are not numbers. The engines
used to cast leniently in their own ways (DuckDB read "1_000" as 1000 and "+-1" as -1, Polars refused " 2",
both called "nan" infinite), and checked neither the weights' total nor, before the other checks, a declared
missing code. Each case runs ``kanon risk`` on the same file with every engine: the same exit code, on success
the same weighted figures (and per-record Fk), on failure exit 2 and the same one-line message, which quotes
no cell.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kanon_core.cli import main
from kanon_core.dataset import WEIGHT_SPACES, WEIGHT_TEXT_NUMBER
from tests.stderr_lines import without_progress

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # a warning on stderr is no clean run either

ENGINES = ("pandas", "duckdb", "polars")
OTHERS = ["2", "3", "4", "5", "6"]
"""The weights of records 2 to 6 (canonical integers); each case sets the first record's cell."""

ACCEPTED = {  # first cell -> in memory a number: the engines must give the same figures
    "exponent": "1e3", "exponent upper": "1E3", "exponent signed": "2.5e+01", "exponent no fraction": "1.e1",
    "leading space": " 2", "trailing space": "2 ", "tab": "\t2", "spaces both": " 2.5 ", "carriage return": "2\r",
    "line break after": "2\n", "vertical tab, form feed": "\x0b2\x0c",
    "plus": "+3", "no integer part": ".5", "no fraction": "5.", "trailing zero": "2.50", "leading zeros": "007",
    "tiny": "1e-3", "beyond int64": "18446744073709551616", "repr float": "2.0",
}
REFUSED = {  # first cell -> in memory refused: the engines must refuse with the same message
    "inf": "inf", "Infinity": "Infinity", "minus Infinity": "-Infinity", "plus Inf": "+Inf",
    "overflowing exponent": "1e400", "nan": "nan", "NaN": "NaN", "minus nan": "-nan",
    "inf with space": " inf", "Infinity with space": "Infinity ", "inf, line break": "inf\n", "decimal comma": "1,5", "hex": "0x10",
    "underscore": "1_000", "two signs": "+-1", "nbsp": "\u00a02", "fullwidth digit": "\uff12", "d exponent": "1d3",
    "text": "abc", "NA": "NA", "dot": ".", "exponent only": "e3", "negative": "-1", "zero": "0", "minus zero": "-0",
    "minus zero float": "-0.0", "tiny negative": "-1e-300", "empty": "",
}
COLUMNS = {  # whole weight columns (six records)
    "all text": ["a", "b", "c", "d", "e", "f"],
    "all empty": [""] * 6,
    "total overflows": ["1e308"] * 6,
    "total overflows, canonical": ["1e+308"] * 6,
    "total just finite": ["2.9e+307"] * 6,
    "empty and text": ["", "x", "2", "3", "4", "5"],
    "empty and negative": ["", "-2", "2", "3", "4", "5"],
    "text and infinite": ["x", "inf", "2", "3", "4", "5"],
    "infinite and negative": ["-1", "inf", "2", "3", "4", "5"],
    "2 and 2.0": ["2", "2.0", "3", "4", "5", "6"],
}
DECLARED = {  # weight cells, --missing-codes: a declared code is a missing weight, whatever its value
    "negative code": (["-9", *OTHERS], "w=-9"),
    "text code": (["NA", *OTHERS], "w=NA"),
    "positive code": (["999", *OTHERS], "w=999"),
    "code and text": (["-9", "abc", "2", "3", "4", "5"], "w=-9"),
    "code and empty": (["-9", "", "2", "3", "4", "5"], "w=-9"),
    "code and zero": (["-9", "0", "2", "3", "4", "5"], "w=-9"),
    "code and infinite": (["-9", "inf", "2", "3", "4", "5"], "w=-9"),
    "code absent": (["2", *OTHERS], "w=-9"),
    "code absent, spaces": ([" 2", *OTHERS], "w=-9"),
}
CASES = {**{f"accepted: {k}": ([v, *OTHERS], None) for k, v in ACCEPTED.items()},
         **{f"refused: {k}": ([v, *OTHERS], None) for k, v in REFUSED.items()},
         **{f"column: {k}": (v, None) for k, v in COLUMNS.items()},
         **{f"declared: {k}": v for k, v in DECLARED.items()}}

WEIGHT_MESSAGES = re.compile(
    r"Weight 'w'( has \d+ non-numeric value\(s\)| is missing for \d+ record\(s\); every record needs a weight"
    r"| has infinite values| has \d+ zero or negative value\(s\); weights must be positive"
    r"|: the weights' total is too large to compute \(overflow\))\.")
"""The in-memory refusals of a weight: they give counts, never a cell."""

FIGURES = ("n_records", "n_classes", "k_achieved", "n_violating", "risk_weighted", "expected_reidentifications",
           "global_risk", "records_above_max_risk", "highest_individual_risk", "records_risk_undefined")


def csv_file(tmp_path: Path, cells: list[str]) -> Path:
    """Three classes of two records; every weight cell quoted, so that each reader sees its exact text."""
    path = tmp_path / "w.csv"
    rows = [f'{"abc"[i // 2]},"{c}"' for i, c in enumerate(cells)]
    path.write_text("q,w\n" + "\n".join(rows) + "\n", encoding="utf-8", newline="")
    return path


def run(path: Path, engine: str, capsys, *extra: str) -> tuple[int, dict | None, pd.DataFrame | None, list[str]]:
    out, per = path.parent / f"{engine}.json", path.parent / f"{engine}.per.csv"
    code = main(["risk", str(path), "--qi", "q", "--weight", "w", "--k", "2", "--engine", engine,
                 "--json", str(out), "--per-record", str(per), *extra])
    lines = without_progress(capsys.readouterr().err)
    if code != 0:
        return code, None, None, lines
    return code, json.loads(out.read_text()), pd.read_csv(per), lines


def error_text(line: str) -> str:
    """The message of a refusal line without its prefix (``kanon risk: error:``)."""
    return line.split(": error: ", 1)[-1]


def assert_all_engines_agree(path: Path, capsys, *extra: str) -> None:
    code, ref, ref_per, ref_lines = run(path, "pandas", capsys, *extra)
    if code != 0:
        assert code == 2 and len(ref_lines) == 1, ref_lines
        assert WEIGHT_MESSAGES.fullmatch(error_text(ref_lines[0])), ref_lines
    for engine in ENGINES[1:]:
        got_code, got, got_per, lines = run(path, engine, capsys, *extra)
        assert got_code == code, (engine, lines, ref_lines)
        if code != 0:
            assert len(lines) == 1, (engine, lines)
            assert error_text(lines[0]) == error_text(ref_lines[0]), engine  # so it quotes no cell either
            continue
        for key in FIGURES:
            assert got[key] == pytest.approx(ref[key], rel=1e-12), (engine, key)
        assert got_per["Fk"].to_numpy() == pytest.approx(ref_per["Fk"].to_numpy(), rel=1e-12), engine


@pytest.mark.parametrize("case", list(CASES))
def test_csv_weight_cell_same_on_every_engine(tmp_path, capsys, case):
    cells, codes = CASES[case]
    extra = ("--missing-codes", codes) if codes else ()
    assert_all_engines_agree(csv_file(tmp_path, cells), capsys, *extra)


def test_the_cases_are_accepted_and_refused_in_memory_as_listed(tmp_path, capsys):
    """The tables above say what the in-memory path does (so a case cannot pass by being refused everywhere)."""
    for name, cell in {**ACCEPTED, **REFUSED}.items():
        code = run(csv_file(tmp_path, [cell, *OTHERS]), "pandas", capsys)[0]
        assert code == (0 if name in ACCEPTED else 2), name


def test_the_engines_pattern_is_what_the_in_memory_check_reads():
    """WEIGHT_TEXT_NUMBER, which the engines match, says which texts pandas' to_numeric (the in-memory check)
    reads as numbers, and the number is the text's without the spaces around it."""
    texts = [*ACCEPTED.values(), *REFUSED.values(), "1e", "1e+", "+", "-", "Infinityy", "infinite", "INFINITY",
             "-iNf", "\tinf", "inf\t", "1 000", "1.5.2", "--1", "0b1", "1j", "True", "\u0661", "1e-400", "-1e400",
             "\x1c2", "\u20002", " - 2", "+ 2", "1.e3", "00.5", "0." + "0" * 400 + "1", "9" * 400, "\x00"]
    for text in texts:
        got = pd.to_numeric(pd.Series([text, "x"], dtype=object), errors="coerce").iloc[0]
        matched = re.fullmatch(WEIGHT_TEXT_NUMBER, text) is not None
        assert matched == (not pd.isna(got)), repr(text)
        if matched:
            assert got == float(text.strip(WEIGHT_SPACES)), repr(text)


def test_a_weight_missing_code_declared_in_the_labels_sidecar(tmp_path, capsys):
    """A code the ``.labels.json`` sidecar declares missing for the weight is a missing weight on every engine,
    not a weight of that value (999 was summed by the engines)."""
    path = csv_file(tmp_path, ["999", *OTHERS])
    (tmp_path / "w.labels.json").write_text(json.dumps({"w": {"missing_codes": ["999"]}}), encoding="utf-8")
    assert_all_engines_agree(path, capsys)
    assert run(path, "duckdb", capsys)[0] == 2


PARQUET = {  # Parquet weight columns (the records' QIs as in the CSV cases)
    "text accepted": pa.array([" 2", "1e3", "+3", ".5", "5.", "2.50"]),
    "text nan": pa.array(["nan", *OTHERS]),
    "text underscore": pa.array(["1_000", *OTHERS]),
    "text inf with space": pa.array([" inf", *OTHERS]),
    "text empty": pa.array(["", *OTHERS]),
    "float NaN is missing": pa.array([float("nan"), 2.0, 3.0, 4.0, 5.0, 6.0]),
    "float null": pa.array([None, 2.0, 3.0, 4.0, 5.0, 6.0], pa.float64()),
    "float infinite": pa.array([float("inf"), 2.0, 3.0, 4.0, 5.0, 6.0]),
    "float overflow": pa.array([1e308] * 6),
    "float negative zero": pa.array([-0.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    "int zero": pa.array([0, 2, 3, 4, 5, 6], pa.int64()),
    "int": pa.array([7, 2, 3, 4, 5, 6], pa.int64()),
    "bool": pa.array([True] * 6),
}


@pytest.mark.parametrize("case", list(PARQUET))
def test_parquet_weight_same_on_every_engine(tmp_path, capsys, case):
    path = tmp_path / "w.parquet"
    pq.write_table(pa.table({"q": pa.array(["a", "a", "b", "b", "c", "c"]), "w": PARQUET[case]}), path)
    assert_all_engines_agree(path, capsys)


ESTIMATE = {"spaces": [" 2", *OTHERS], "nan": ["nan", *OTHERS], "underscore": ["1_000", *OTHERS],
            "overflow": ["1e308"] * 6}


@pytest.mark.parametrize("case", list(ESTIMATE))
def test_estimate_reads_weight_cells_as_in_memory(tmp_path, capsys, case):
    """``kanon estimate`` aggregates the weight through the same engine code: same exit code, same shares."""
    path = csv_file(tmp_path, ESTIMATE[case])
    results = {}
    for engine in ENGINES:
        out = tmp_path / f"{engine}.est.json"
        code = main(["estimate", str(path), "--var", "q", "--weight", "w", "--engine", engine, "-o", str(out)])
        lines = without_progress(capsys.readouterr().err)
        results[engine] = (code, json.loads(out.read_text()) if code == 0 else error_text(lines[0]))
        if code != 0:
            assert code == 2 and len(lines) == 1, (engine, lines)
    codes = {e: r[0] for e, r in results.items()}
    assert len(set(codes.values())) == 1, codes
    if codes["pandas"] != 0:
        assert len({r[1] for r in results.values()}) == 1, results
        return
    ref = [r["estimate"] for r in results["pandas"][1]]
    for engine in ENGINES[1:]:
        assert [r["estimate"] for r in results[engine][1]] == pytest.approx(ref, rel=1e-12), engine


APPLY = {"sidecar code": (["999", *OTHERS], ["999"]), "nan": (["nan", *OTHERS], None),
         "spaces": ([" 2", *OTHERS], None), "overflow": (["1e308"] * 6, None)}


@pytest.mark.parametrize("case", list(APPLY))
def test_apply_checks_weight_cells_as_in_memory(tmp_path, capsys, case):
    """``kanon apply`` with a step that uses the weight: the engines refuse what memory refuses (in memory the
    message names the step first), a missing code the labels declare included."""
    from kanon_core.dataset import Roles
    from kanon_core.recipe import Recipe
    from kanon_core.treat.suppress_risk import RiskSuppressStep

    cells, side = APPLY[case]
    path = csv_file(tmp_path, cells)
    if side:
        (tmp_path / "w.labels.json").write_text(json.dumps({"w": {"missing_codes": side}}), encoding="utf-8")
    recipe = tmp_path / "recipe.json"
    Recipe(steps=(RiskSuppressStep(qis=("q",), max_risk=0.5),), roles=Roles(qis=("q",), weight="w"),
           missing="wildcard", extra={"k": 2}).save(recipe)
    results = {}
    for engine in ENGINES:
        code = main(["apply", str(recipe), str(path), "-o", str(tmp_path / f"{engine}.out.csv"), "--engine", engine])
        lines = without_progress(capsys.readouterr().err)
        results[engine] = code, lines
        if code != 0:
            assert code == 2 and len(lines) == 1, (engine, lines)
    code, ref_lines = results["pandas"]
    for engine in ENGINES[1:]:
        assert results[engine][0] == code, (engine, results)
        if code != 0:
            assert ref_lines[0].endswith(": " + error_text(results[engine][1][0])), (engine, results)
    if code == 0:
        assert (tmp_path / "duckdb.out.csv").read_bytes() == (tmp_path / "pandas.out.csv").read_bytes()
