"""Refusals of badly named columns, and blank lines, read alike by every reader.

* A Parquet file with a duplicated or empty column name is refused in the CSV reader's words (one line, no
  cell), by the default reader and by the out-of-core engines, which open Parquet files their own way.
* A header with columns that have no name says which ones (by position), however many there are.
* A blank line is not a record for any reader: Polars reads one as a record of missing cells, so its engine
  must drop it as the default reader and DuckDB do, and keep a line of empty cells (",,"), which is a record.
* Counting duplicated names in a frame takes one pass over the names, not one pass per name.
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kanon_core.cli import main
from kanon_core.dataset import validate_frame
from kanon_core.engines import get_engine
from kanon_core.errors import InputError
from kanon_core.io import load_dataset, read_table
from tests.stderr_lines import without_progress
from tests.test_engines import assert_same_table, reference

READERS = ["pandas", "duckdb", "polars"]
SECRET = "SECRET-CELL"


def refusal(capsys, path: Path, qi: str, engine: str) -> str:
    """The one line of ``kanon risk PATH --qi QI --engine ENGINE``, which must refuse the file (exit 2)."""
    code = main(["risk", str(path), "--qi", qi, "--engine", engine])
    lines = without_progress(capsys.readouterr().err)
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert SECRET not in lines[0]
    return lines[0]


def parquet(path: Path, names: list[str]) -> Path:
    """A Parquet file whose columns are named exactly ``names`` (pyarrow writes duplicates and empty names)."""
    cells = [pa.array([SECRET if i == 1 else "M", "F", "M"]) for i in range(len(names))]
    pq.write_table(pa.Table.from_arrays(cells, names=names), path)
    return path


# -- 1. duplicated names in a Parquet file ----------------------------------------------------------------
def test_parquet_duplicated_names_are_refused_in_the_csv_readers_words(tmp_path, capsys):
    csv_path = tmp_path / "dup.csv"
    csv_path.write_text("sex,age,sex\nM,1,F\nF,2,M\n")
    with pytest.raises(InputError) as from_csv:
        read_table(csv_path)
    message = str(from_csv.value)
    assert message == "Duplicated column names: sex. Rename them so each variable is unique."
    path = parquet(tmp_path / "dup.parquet", ["sex", "age", "sex"])
    with pytest.raises(InputError) as from_parquet:
        read_table(path.read_bytes(), filename="dup.parquet")  # an upload as well as a path
    assert str(from_parquet.value) == message
    for engine in READERS:
        assert refusal(capsys, path, "sex", engine) == f"kanon risk: error: {message}", engine


# -- 2. columns without a name ----------------------------------------------------------------------------
@pytest.mark.parametrize("header, message", [
    ("a,,", "Columns 2 and 3 have no name in the header: name every column."),
    (",b,", "Columns 1 and 3 have no name in the header: name every column."),
    ("a, ,,d,", "Columns 2, 3 and 5 have no name in the header: name every column."),
    ("a,b,", "Column 3 has no name in the header: name every column."),
    ("a" + "," * 12, "Columns 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 2 more have no name in the header: name every column."),
])
def test_csv_columns_without_a_name_are_all_named_by_position(tmp_path, capsys, header, message):
    path = tmp_path / "unnamed.csv"
    width = header.count(",") + 1
    path.write_text(header + "\n" + ",".join([SECRET] * width) + "\n" + ",".join(["x"] * width) + "\n")
    with pytest.raises(InputError) as exc:
        read_table(path)
    assert str(exc.value) == message
    qi = next(n for n in header.split(",") if n.strip())
    for engine in READERS:
        assert refusal(capsys, path, qi, engine) == f"kanon risk: error: {message}", engine


def test_excel_columns_without_a_name_are_all_named(tmp_path):
    wb = openpyxl.Workbook()
    for row in (["sex", None, None, "w"], ["M", SECRET, "a", 1], ["F", "b", "c", 2]):
        wb.active.append(row)
    wb.save(tmp_path / "unnamed.xlsx")
    with pytest.raises(InputError, match="^Columns 2 and 3 have no name in the header: name every column.$"):
        read_table(tmp_path / "unnamed.xlsx")


@pytest.mark.parametrize("names, message", [
    (["sex", "", ""], "Columns 2 and 3 have no name in the header: name every column."),
    (["sex", ""], "Column 2 has no name in the header: name every column."),
    (["sex", "  "], "Column 2 has no name in the header: name every column."),
])
def test_parquet_columns_without_a_name_are_refused_by_every_reader(tmp_path, capsys, names, message):
    path = parquet(tmp_path / "unnamed.parquet", names)
    with pytest.raises(InputError) as exc:
        read_table(path)
    assert str(exc.value) == message
    for engine in READERS:
        assert refusal(capsys, path, "sex", engine) == f"kanon risk: error: {message}", engine


def test_a_frame_with_empty_names_is_not_called_duplicated():
    frame = pd.DataFrame([[1, 2, 3]], columns=["a", "", ""])
    with pytest.raises(InputError) as exc:
        validate_frame(frame)
    assert str(exc.value) == "Columns 2 and 3 have no name: name every column."


# -- 3. blank lines ---------------------------------------------------------------------------------------
BLANK_LINES = {
    "in the middle": "sex,age\nm,30\n\nf,40\nm,30\n",
    "at the end": "sex,age\nm,30\nf,40\nm,30\n\n\n",
    "after the header": "sex,age\n\nm,30\nf,40\nm,30\n",
    "crlf, middle and end": "sex,age\r\nm,30\r\n\r\nf,40\r\nm,30\r\n\r\n",
    "no final line end": "sex,age\nm,30\n\n\nf,40\nm,30",
    # a line of empty cells is a record (all missing); a blank line inside a quoted cell is the cell's
    "beside empty cells": "sex,age\nm,30\n,\n\nf,40\n\"m\n\nx\",30\n,\n",
    "one column": "sex\nm\n\nf\nm\n\n",
}


@pytest.mark.parametrize("case", list(BLANK_LINES))
@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_blank_lines_are_not_records_for_any_engine(tmp_path, engine, case):
    path = tmp_path / "blank.csv"
    path.write_bytes(BLANK_LINES[case].encode())
    qis = list(load_dataset(path).frame.columns)
    ref = reference(path, qis)
    e = get_engine(engine)
    got = e.class_table(path, qis)
    assert got.n_records == ref.n_records
    assert_same_table(ref, got)
    assert e.summary(path).n_records == ref.n_records
    out = e.release(path, tmp_path / "release.csv")
    assert load_dataset(out).frame.equals(load_dataset(path).frame)


@pytest.mark.parametrize("case", ["in the middle", "crlf, middle and end", "one column"])
def test_risk_on_a_file_with_blank_lines_equals_the_reader(tmp_path, capsys, case):
    import json

    path = tmp_path / "blank.csv"
    path.write_bytes(BLANK_LINES[case].encode())
    results = {}
    for engine in ("pandas", "polars"):
        out, per = tmp_path / f"{engine}.json", tmp_path / f"{engine}.per.csv"
        assert main(["risk", str(path), "--qi", "sex", "--k", "2", "--engine", engine,
                     "-o", str(out), "--per-record", str(per)]) == 0
        capsys.readouterr()
        results[engine] = json.loads(out.read_text()), per.read_text()
    (ref, ref_per), (got, got_per) = results["pandas"], results["polars"]
    for key in ("n_records", "n_classes", "n_violating", "size_distribution"):
        assert got[key] == ref[key], key
    assert got_per == ref_per


def test_a_long_record_after_blank_lines_is_numbered_as_the_reader_numbers_it(tmp_path, capsys):
    path = tmp_path / "ragged.csv"
    path.write_text("sex,age\nm,30\n\nf,40\n\nm,30,Atlantis\n")
    ref = refusal(capsys, path, "sex", "pandas")
    got = refusal(capsys, path, "sex", "polars")
    assert "Record 5 (line 6 " in ref and "Record 5 (line 6 " in got and "Atlantis" not in got


def test_only_blank_lines_after_the_header_is_a_file_without_records(tmp_path, capsys):
    path = tmp_path / "empty.csv"
    path.write_text("sex,age\n\n\n")
    assert refusal(capsys, path, "sex", "polars") == refusal(capsys, path, "sex", "pandas")


def test_blank_lines_beside_a_line_ended_by_cr_alone_are_refused_by_polars(tmp_path, capsys):
    """The default reader ends a line at a lone CR, Polars does not: the blank lines cannot be placed."""
    path = tmp_path / "cr.csv"
    path.write_bytes(b"sex\nm\rf\n\nm\n")
    assert "CR alone" in refusal(capsys, path, "sex", "polars")


# -- 4. duplicated names are counted in one pass ----------------------------------------------------------
class _CountedName(str):
    """A column name that counts how often it is compared (equality or hashing)."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _CountedName.compared += 1
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        _CountedName.compared += 1
        return str.__hash__(self)


class _Label:
    """A column label whose text is a :class:`_CountedName` (``validate_frame`` compares the labels' texts)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return _CountedName(self.text)


def test_duplicated_names_are_counted_in_linear_work():
    """With 3,000 columns a comparison of every name with every other is millions of comparisons; counting
    them once is a few per name. The comparisons are counted, not timed."""
    n = 3000
    names = [f"v{i}" for i in range(n - 2)] + ["v7", "v11"]
    frame = pd.DataFrame([list(range(n))], columns=[_Label(t) for t in names])
    _CountedName.compared = 0
    with pytest.raises(InputError) as exc:
        validate_frame(frame)
    assert str(exc.value) == "Duplicated column names: v11, v7. Rename them so each variable is unique."
    assert _CountedName.compared <= 10 * n
