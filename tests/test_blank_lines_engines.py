"""Blank lines of a one-column CSV file, read by DuckDB as the default reader reads them.

In a file of one column a blank line and a record whose only cell is empty look alike to DuckDB, which
read both as a record with a missing cell. The default reader skips the blank line and keeps ``""`` (a
quoted empty cell on its own line) as a record whose cell is missing. Each case is compared with the
default reader: the record count, the class table, the summary and the release read back. A release of
one column must write a missing cell as ``""``: an empty line would be read back as a blank line.

A line of spaces and tabs alone is skipped by the default reader too, and by both out-of-core engines, which
read it as a record and must leave it out; a quoted cell of spaces (``"   "``) is a record every reader keeps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kanon_core.cli import main
from kanon_core.engines import get_engine
from kanon_core.engines.base import EngineSettings
from kanon_core.io import load_dataset
from tests.stderr_lines import without_progress
from tests.test_engines import assert_same_table, reference

ONE_COLUMN = {
    "blank in the middle": b"sex\nm\n\nf\nm\n",
    "blank at the end": b"sex\nm\nf\nm\n\n",
    "several blank at the end": b"sex\nm\nf\nm\n\n\n\n",
    "blank after the header": b"sex\n\nm\nf\nm\n",
    "crlf": b"sex\r\nm\r\n\r\nf\r\nm\r\n\r\n\r\n",
    "bom": b"\xef\xbb\xbfsex\nm\n\nf\nm\n\n",
    "bom and crlf": b"\xef\xbb\xbfsex\r\n\r\nm\r\nf\r\n\r\nm\r\n",
    "no final line end": b"sex\nm\n\n\nf\nm",
    "quoted empty cell": b'sex\nm\n""\nf\nm\n',
    "quoted empty cell last": b'sex\nm\nf\nm\n""',
    "quoted empty cells beside blank lines": b'sex\nm\n\n""\n\nf\n""\n\nm\n',
    "quoted empty cells, crlf": b'sex\r\n""\r\n\r\nm\r\n""\r\n\r\n',
    "quoted empty cell only": b'sex\n""\n',
    "blank line inside a quoted cell": b'sex\nm\n"f\n\nx"\n\nm\n',
}

RELEASE_PROBLEMS = {"quoted empty cell", "quoted empty cell last", "quoted empty cells beside blank lines",
                    "quoted empty cells, crlf", "quoted empty cell only"}
"""Cases whose release holds a missing cell, which an empty line would lose (read back as blank)."""


def write(tmp_path: Path, data: bytes, name: str = "one.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def frames_equal(got: pd.DataFrame, ref: pd.DataFrame) -> None:
    """The same records with the same values (missing as missing), in the same order."""
    assert list(got.columns) == list(ref.columns)
    assert got.astype(object).where(got.notna(), None).values.tolist() == \
        ref.astype(object).where(ref.notna(), None).values.tolist()


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Every value as its text, missing cells left missing."""
    return frame.astype(object).map(lambda v: None if pd.isna(v) else str(v))


@pytest.mark.parametrize("case", list(ONE_COLUMN))
def test_duckdb_reads_a_one_column_file_as_the_default_reader(tmp_path, case):
    path = write(tmp_path, ONE_COLUMN[case])
    ref = reference(path, ["sex"])
    duck = get_engine("duckdb")
    got = duck.class_table(path, ["sex"])
    assert got.n_records == ref.n_records
    assert_same_table(ref, got)
    summary, expected = duck.summary(path), get_engine("pandas").summary(path)
    assert summary.n_records == expected.n_records
    frames_equal(summary.preview, expected.preview)


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("case", sorted(RELEASE_PROBLEMS))
def test_a_one_column_release_keeps_its_missing_cells(tmp_path, engine, case):
    path = write(tmp_path, ONE_COLUMN[case])
    out = get_engine(engine).release(path, tmp_path / "release.csv")
    frames_equal(load_dataset(out).frame, load_dataset(path).frame)


def test_a_release_cut_to_one_column_keeps_its_missing_cells(tmp_path):
    path = write(tmp_path, b"sex,age\nm,30\n,40\nf,\n\nm,30\n", "two.csv")
    out = get_engine("duckdb").release(path, tmp_path / "release.csv", drop=["age"])
    frames_equal(load_dataset(out).frame, load_dataset(path).frame[["sex"]])


def test_a_one_column_release_of_a_parquet_file_keeps_its_missing_cells(tmp_path):
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"age": pa.array([30, None, 40, None], pa.int64())}), path)
    out = get_engine("duckdb").release(path, tmp_path / "release.csv")
    assert out.read_bytes() == b'age\n30\n""\n40\n""\n'
    frames_equal(load_dataset(out).frame, load_dataset(path).frame)


def test_a_suppressed_one_column_release_keeps_the_records_and_their_order(tmp_path):
    """Many records on several threads: the release (numbered, joined and sorted) has the records of the
    default reader, in its order, with the suppressed class blanked and written as ``""``."""
    rng = np.random.default_rng(7)
    cells = rng.choice(["a", "b", "c", '""', ""], 20_000)
    path = write(tmp_path, ("sex\n" + "\n".join(cells) + "\n").encode())
    ds = load_dataset(path)
    sup = pd.DataFrame({"sex": ["a"], "suppress_sex": [True]})
    out = get_engine("duckdb").release(path, tmp_path / "release.csv", qis=["sex"], recodes={}, suppress=sup,
                                       settings=EngineSettings(threads=4))
    expected = ds.frame.where(ds.frame["sex"] != "a", None)
    assert len(expected) == int((cells != "").sum())
    frames_equal(load_dataset(out).frame, expected)


def test_a_one_column_file_of_blank_lines_has_no_records(tmp_path, capsys):
    path = write(tmp_path, b"sex\n\n\n\n")
    lines = {}
    for engine in ("pandas", "duckdb"):
        assert main(["risk", str(path), "--qi", "sex", "--engine", engine]) == 2
        lines[engine] = without_progress(capsys.readouterr().err)
    assert lines["duckdb"] == lines["pandas"] and len(lines["pandas"]) == 1


SPACES = {
    "one column": b"sex\nm\n   \nf\nm\n",
    "one column, tab and spaces": b"sex\nm\n \t \nf\nm\n",
    "one column, after the header and at the end": b"sex\n  \nm\nf\n\t\n",
    "one column, last line without a line end": b"sex\nm\nf\n   ",
    "one column, beside blank lines": b"sex\nm\n\n  \n\nf\n \n\n",
    "one column, crlf": b"sex\r\n \r\nm\r\n\r\nf\r\n\t \r\n",
    "one column, quoted spaces beside lines of spaces": b'sex\nm\n"   "\n   \nf\n"\t"\n',
    "one column, lines of spaces beside a quoted one": b'sex\n"  "\n  \nm\n \nf\n\t\n',
    "two columns": b"sex,age\nm,30\n   \nf,40\nm,30\n",
    "two columns, crlf": b"sex,age\r\nm,30\r\n  \r\nf,40\r\nm,30\r\n",
    "two columns, after the header": b"sex,age\n \t\nm,30\nf,40\n",
    "two columns, at the end": b"sex,age\nm,30\nf,40\n   \n  \n",
    "two columns, last line without a line end": b"sex,age\nm,30\nf,40\n\t",
    "two columns, bom and crlf": b"\xef\xbb\xbfsex,age\r\n  \r\nm,30\r\nf,40\r\n \t\r\n",
    "two columns, records of spaces kept": b'sex,age\nm,30\n  ,\n  ,40\n"  "\nf,40\n',
    "two columns, a short quoted record of spaces beside lines of spaces": b'sex,age\nm,30\n"  "\n   \nf,40\n',
    "two columns, spaces before text": b"sex,age\nm,30\n  x\nf,40\n",
    "two columns, spaces inside a quoted cell": b'sex,age\nm,"30\n  \n"\n   \nf,40\n',
    "semicolons": b"sex;age\nm;30\n \t \nf;40\nm;30\n",
    "pipes": b"sex|age\nm|30\n   \nf|40\nm|30\n",
    "tabs, a line of spaces": b"sex\tage\nm\t30\n   \nf\t40\nm\t30\n",
    "tabs, a line of one tab is a record": b"sex\tage\nm\t30\n\t\nf\t40\nm\t30\n",
    "tabs, spaces around a tab are a record": b"sex\tage\nm\t30\n \t \nf\t40\nm\t30\n",
}
"""Lines of spaces and tabs alone, which the default reader skips (pandas, as R's read.csv), beside records
that hold only spaces and that it keeps: a quoted cell of spaces, spaces before a delimiter or text, and in a
tab-separated file a line with a tab (a record of empty cells)."""


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("case", list(SPACES))
def test_a_line_of_spaces_is_read_alike_by_every_reader(tmp_path, engine, case):
    assert_read_alike(tmp_path, engine, write(tmp_path, SPACES[case], "spaces.csv"))


def assert_read_alike(tmp_path, engine: str, path) -> None:
    """``engine`` reads the file at ``path`` as the default reader does: its records, its preview's text, its
    class table and a release of it."""
    ds = load_dataset(path)
    columns = list(ds.frame.columns)
    eng = get_engine(engine)
    summary, expected = eng.summary(path), get_engine("pandas").summary(path)
    assert summary.n_records == len(ds.frame)
    frames_equal(as_text(summary.preview), as_text(expected.preview))  # an engine's preview shows the text
    assert_same_table(reference(path, columns), eng.class_table(path, columns))
    frames_equal(load_dataset(eng.release(path, tmp_path / "release.csv")).frame, ds.frame)


def spaced_file(rng: np.random.Generator, n: int, quoted_share: float, spaces_share: float) -> bytes:
    """Records (some with a first cell of quoted spaces and no age), lines of spaces and blank lines, mixed."""
    lines = []
    for i in range(n):
        draw = rng.random()
        if draw < quoted_share:
            lines.append(f'"{" " * (1 + i % 3)}",')
        elif draw < quoted_share + spaces_share:
            lines.append(" " * (1 + i % 4) if i % 5 else "\t ")
        elif draw < quoted_share + spaces_share + 0.02:
            lines.append("")
        else:
            lines.append(f"{'abc'[i % 3]},{i % 90}")
    return ("sex,age\n" + "\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("shares", [(0.0, 0.05), (0.01, 0.05), (0.05, 0.01)],
                         ids=["spaces only", "more lines of spaces", "more quoted spaces"])
def test_many_lines_of_spaces_are_left_out_in_order(tmp_path, engine, shares):
    """Many records on several threads, lines of spaces among records that DuckDB and Polars read alike
    (quoted spaces): a suppressed release has the default reader's records, in its order."""
    path = write(tmp_path, spaced_file(np.random.default_rng(11), 20_000, *shares), "many.csv")
    ds = load_dataset(path)
    settings = EngineSettings(threads=4)
    eng = get_engine(engine)
    assert eng.summary(path, settings).n_records == len(ds.frame)
    assert_same_table(reference(path, ["sex", "age"]), eng.class_table(path, ["sex", "age"], settings=settings))
    sup = pd.DataFrame({"sex": ["a"], "age": [30], "suppress_sex": [True], "suppress_age": [False]})
    out = eng.release(path, tmp_path / "release.csv", qis=["sex", "age"], recodes={}, suppress=sup,
                      settings=settings)
    expected = ds.frame.copy()
    blanked = ((expected["sex"] == "a") & (expected["age"] == 30)).fillna(False).astype(bool)
    expected.loc[blanked, "sex"] = None
    frames_equal(load_dataset(out).frame, expected)


@pytest.mark.parametrize("data", [b"sex,age\n   \n\t\n", b"sex\n \n\n  \n"], ids=["two columns", "one column"])
def test_a_file_of_lines_of_spaces_has_no_records(tmp_path, capsys, data):
    path = write(tmp_path, data)
    lines = {}
    for engine in ("pandas", "duckdb", "polars"):
        assert main(["risk", str(path), "--qi", "sex", "--engine", engine]) == 2
        lines[engine] = without_progress(capsys.readouterr().err)
    assert lines["duckdb"] == lines["pandas"] == lines["polars"] and len(lines["pandas"]) == 1


LEADING = {
    "a blank line": b"\nsex,age\nm,30\nf,40\nm,30\n",
    "crlf": b"\r\nsex,age\r\nm,30\r\nf,40\r\n",
    "bom and a blank line": b"\xef\xbb\xbf\nsex,age\nm,30\nf,40\n",
    "several, and a line of spaces": b"\n\n  \nsex,age\nm,30\n\nf,40\n",
    "one column": b"\n\nsex\nm\n\nf\nm\n",
    "a quoted name with a line break": b'\n"se\nx",age\nm,30\nf,40\n',
    "semicolons": b"\nsex;age\nm;30\nf;40\n",
}
"""Files starting with blank lines, which the default reader skips (pandas takes the next record for the
header); the engines were told the file was empty."""


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("case", list(LEADING))
def test_blank_lines_before_the_header_are_skipped_by_every_reader(tmp_path, engine, case):
    path = write(tmp_path, LEADING[case], "leading.csv")
    assert len(load_dataset(path).frame) > 0
    assert_read_alike(tmp_path, engine, path)


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_a_record_too_long_after_leading_blank_lines_is_named_as_the_default_reader_names_it(tmp_path, engine,
                                                                                              capsys):
    path = write(tmp_path, b"\n\nsex,age\nm,30\nf,40,x\n", "leading.csv")
    assert main(["risk", str(path), "--qi", "sex", "--k", "2", "--engine", engine]) == 2
    err = without_progress(capsys.readouterr().err)
    assert len(err) == 1 and "Record 2 " in err[0]
