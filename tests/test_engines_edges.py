"""The out-of-core engines (DuckDB, Polars) where they answered otherwise than the in-memory path:

* an engine's progress lines went to stderr whatever it was, so a refusal made two lines; now only on a terminal,
  as the in-memory path's progress;
* DuckDB could not read a file whose column names differ only by case (its names ignore case);
* ``risk --k`` beyond the records binned k + 1 sizes (memory growing with k, an OverflowError for a huge k);
* a record longer than DuckDB's default line limit (2 MB) was refused with a wrong diagnosis;
* a line ended by a CR alone among CR LF and LF ends was read as text of a cell (Polars) or refused without its
  cause (DuckDB);
* ``suppress -o x.csv`` left suppressed cells empty without a declared code, where the in-memory path writes the
  code and declares it: the same release is now written, byte for byte.

Blank lines before the header are in ``tests/test_blank_lines_engines.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from kanon_core.cli import main
from kanon_core.engines.csv_checks import check_quotes_closed
from kanon_core.engines.risk import violations_of
from kanon_core.engines.source import CR_ALONE

ENGINES = ["duckdb", "polars"]

COMPARED = ("n_records", "n_classes", "k", "k_achieved", "n_violating", "n_sample_uniques", "violations_by_k",
            "size_distribution", "per_qi")
"""The keys of ``kanon risk``'s JSON every engine gives alike."""


def write(tmp_path: Path, data: bytes, name: str = "d.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def risk(tmp_path: Path, path: Path, engine: str, *args: str) -> dict:
    out = tmp_path / f"risk_{engine}.json"
    assert main(["risk", str(path), *args, "--engine", engine, "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    return {k: payload[k] for k in COMPARED}


# -- progress and errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_refusal_is_one_line_and_progress_shows_on_a_terminal_only(tmp_path, capsys, monkeypatch,
                                                                             engine):
    bad = write(tmp_path, b"sex,age\nm,30\nf,40,x\n")
    assert main(["risk", str(bad), "--qi", "sex", "--k", "2", "--engine", engine]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kanon risk: error: Record 2 ")
    good = write(tmp_path, b"sex,age\nm,30\nf,40\nm,30\n", "good.csv")
    assert main(["risk", str(good), "--qi", "sex", "--k", "2", "--engine", engine, "--json", str(tmp_path / "o.json")]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["risk", str(good), "--qi", "sex", "--k", "2", "--engine", engine, "--json", str(tmp_path / "o.json")]) == 0
    assert f"kanon risk: {engine}: counting classes" in capsys.readouterr().err


# -- names that differ only by case ------------------------------------------------------------------------

CASES = b"A,a,w\n1,x,1\n1,y,1\n2,x,1\n2,x,1\n3,z,2\n2,y,1\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_columns_whose_names_differ_only_by_case_are_read_as_two(tmp_path, engine):
    path = write(tmp_path, CASES)
    for qis in ("a", "A", "A,a"):
        assert risk(tmp_path, path, engine, "--qi", qis, "--k", "2") == risk(tmp_path, path, "pandas", "--qi", qis,
                                                                                "--k", "2")
    assert main(["risk", str(path), "--qi", "A,a", "--k", "2", "--engine", engine, "--weight", "w",
                 "--per-record", str(tmp_path / "per.csv"), "--json", str(tmp_path / "o.json")]) == 0
    assert len(pd.read_csv(tmp_path / "per.csv", keep_default_na=False)) == 6


@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_of_columns_whose_names_differ_only_by_case_keeps_their_names(tmp_path, engine):
    path = write(tmp_path, CASES)
    common = ["suppress", str(path), "--qi", "A,a", "--k", "2", "--json", str(tmp_path / "o.json")]
    assert main([*common, "--engine", "pandas", "-o", str(tmp_path / "m.csv")]) == 0
    assert main([*common, "--engine", engine, "-o", str(tmp_path / "s.csv")]) == 0
    assert (tmp_path / "s.csv").read_bytes() == (tmp_path / "m.csv").read_bytes()
    assert (tmp_path / "s.csv").read_bytes().startswith(b"A,a,w\n")
    assert main([*common, "--engine", engine, "-o", str(tmp_path / "s.parquet")]) == 0
    assert pq.read_schema(tmp_path / "s.parquet").names == ["A", "a", "w"]


# -- a huge k ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_k_beyond_the_records_gives_the_in_memory_result(tmp_path, engine):
    path = write(tmp_path, b"a,b,w\nNA,1,1\nx,2,1\nx,2,1\n")
    for k in ("5", "50000000", "99999999999999999999999"):
        assert risk(tmp_path, path, engine, "--qi", "a", "--k", k) == risk(tmp_path, path, "pandas", "--qi", "a",
                                                                            "--k", k)


def test_violations_are_counted_without_a_bin_per_k():
    fk, count = np.array([1.0, 2.0, 2.5, 7.0]), np.array([1, 2, 2, 7])
    got = violations_of(fk, count, [0, 1, 2, 3, 7, 8, 10**18, 10**30])  # 10**18 bins would not fit in memory
    assert got == {0: 0, 1: 0, 2: 1, 3: 5, 7: 5, 8: 12, 10**18: 12, 10**30: 12}
    assert violations_of(np.array([]), np.array([], np.int64), [3, 10**20]) == {3: 0, 10**20: 0}


# -- a record longer than DuckDB's default line limit -----------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_record_longer_than_two_megabytes_is_read(tmp_path, engine):
    long = b"S" * 2_500_000
    path = write(tmp_path, b"a,b,w\n" + long + b",1,1\nx,2,1\n" + long + b"T,1,1\nx,2,1\n")
    assert risk(tmp_path, path, engine, "--qi", "a,b", "--k", "2") == risk(tmp_path, path, "pandas", "--qi", "a,b",
                                                                            "--k", "2")


# -- a line ended by a CR alone ---------------------------------------------------------------------------

LONE_CR = {
    "among crlf and lf": (b"a,b,w\r\nSECRETX,1,1\nSECRETY,2,2\rSECRETX,1,3\r\n", 3),
    "among lf": (b"a,b,w\nx,1,1\ny,2,2\rx,1,3\nz,1,1\n", 3),
    "among crlf": (b"a,b,w\r\nx,1,1\r\ny,2,2\rx,1,3\r\n", 3),
    "ending the file": (b"a,b,w\nx,1,1\ny,2,2\r", 3),
    "after a quoted cell": (b'a,b,w\nx,1,1\n"y",2,2\rx,1,3\n', 3),
    "far down the file": (b"a,b,w\n" + b"x,1,1\n" * 5000 + b"y,2,2\rx,1,3\n", 5002),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(LONE_CR))
def test_a_line_ended_by_a_cr_alone_is_refused_in_the_readers_words(tmp_path, capsys, engine, case):
    path = write(tmp_path, LONE_CR[case][0])
    assert main(["risk", str(path), "--qi", "a,b", "--k", "2", "--engine", engine]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"kanon risk: error: {CR_ALONE}"]


@pytest.mark.parametrize("case", list(LONE_CR))
@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 24])
def test_the_quote_scan_finds_the_first_line_ended_by_a_cr_alone_across_blocks(tmp_path, case, chunk):
    data, line = LONE_CR[case]
    assert check_quotes_closed(write(tmp_path, data), ",", chunk).cr_alone == line


@pytest.mark.parametrize("data", [b'a,b\n"x\ry",1\n"x\ry",1\n', b"a,b\r\nx,1\r\ny,1\r\n", b"a,b\nx,1\ny,1"])
@pytest.mark.parametrize("chunk", [1, 3, 1 << 24])
def test_a_cr_in_a_quoted_cell_or_before_lf_is_no_lone_cr(tmp_path, data, chunk):
    assert check_quotes_closed(write(tmp_path, data), ",", chunk).cr_alone == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cr_in_a_quoted_cell_is_read_alike(tmp_path, engine):
    path = write(tmp_path, b'a,b,w\n"x\ry",1,1\n"x\ry",1,1\nz,2,1\n')
    assert risk(tmp_path, path, engine, "--qi", "a,b", "--k", "2") == risk(tmp_path, path, "pandas", "--qi", "a,b",
                                                                            "--k", "2")


# -- suppress -o x.csv: the same release whichever engine writes it ---------------------------------------

def survey(tmp_path: Path) -> Path:
    rng = np.random.default_rng(11)
    n = 300
    df = pd.DataFrame({
        "id": np.arange(n),
        "region": rng.choice(["north", "south", "east", "west", "centre", ""], n, p=[.3, .3, .2, .1, .06, .04]),
        "age": rng.choice(["20", "30", "40", "50", "60", "99", ""], n),
        "score": rng.choice(["1.5", "2.5", "3.5", "4.25", ""], n),
        "sex": rng.choice(["f", "m"], n),
    })
    path = tmp_path / "survey.csv"
    df.to_csv(path, index=False)
    (tmp_path / "survey.labels.json").write_text(json.dumps({
        "sex": {"label": "Sex", "value_labels": {"f": "female", "m": "male"}},
        "age": {"label": "Age", "missing_codes": ["99"]}}))
    return path


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("extra", [[], ["--suppressed-code", "-7"], ["--max-risk", "0.3"]],
                         ids=["default", "code", "max-risk"])
def test_suppress_writes_the_in_memory_release_byte_for_byte(tmp_path, engine, extra):
    path = survey(tmp_path)
    common = ["suppress", str(path), "--qi", "region,age,score,sex", *([] if "--max-risk" in extra else ["--k", "3"]),
              *extra]
    assert main([*common, "--engine", "pandas", "-o", str(tmp_path / "m.csv"), "--json", str(tmp_path / "m.json")]) == 0
    assert main([*common, "--engine", engine, "-o", str(tmp_path / "s.csv"), "--json", str(tmp_path / "s.json")]) == 0
    mine = json.loads((tmp_path / "m.json").read_text())
    got = json.loads((tmp_path / "s.json").read_text())
    assert got["n_suppressed"] > 0
    assert mine["n_suppressed"] == got["n_suppressed"]  # the same solution on this file (ties could differ)
    code = extra[1] if "--suppressed-code" in extra else "-99"
    data = (tmp_path / "s.csv").read_text()
    assert f",{code}," in data or f",{code}.0," in data
    assert (tmp_path / "s.csv").read_bytes() == (tmp_path / "m.csv").read_bytes()
    assert (tmp_path / "s.labels.json").read_bytes() == (tmp_path / "m.labels.json").read_bytes()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_code_that_is_a_value_kept_is_refused_as_in_memory(tmp_path, capsys, engine):
    path = survey(tmp_path)
    common = ["suppress", str(path), "--qi", "region,age,score,sex", "--k", "3", "--suppressed-code", "30",
              "--json", str(tmp_path / "o.json")]
    assert main([*common, "--engine", "pandas", "-o", str(tmp_path / "m.csv")]) == 2
    mine = capsys.readouterr().err.strip().splitlines()
    assert main([*common, "--engine", engine, "-o", str(tmp_path / "s.csv")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == mine == [
        "kanon suppress: error: The code for suppressed cells (30) is also a value of age; choose another code."]
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_parquet_release_keeps_suppressed_cells_null(tmp_path, engine):
    path = survey(tmp_path)
    common = ["suppress", str(path), "--qi", "region,age,score,sex", "--k", "3", "--json", str(tmp_path / "o.json")]
    assert main([*common, "--engine", engine, "-o", str(tmp_path / "s.parquet")]) == 0
    table = pq.read_table(tmp_path / "s.parquet").to_pandas()
    assert not table.isin(["-99", -99, -99.0]).any().any()
