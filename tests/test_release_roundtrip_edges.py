"""A release read back by the default reader gives exactly the released records, whichever engine wrote it.

Each case writes a release with an out-of-core engine (and with the default in-memory writer), reads it back
with :func:`kanon_core.io.load_dataset` and compares it with the default engine's release read back: the same
records, the same cells, text still text, numbers still numbers, missing still missing. The cases are the
edges where a CSV writer's bytes can read back as something else:

* a missing cell of a one-column release, which an empty line would turn into a blank line (no record);
* a float NaN of a Parquet input, missing for the default reader, which the text ``nan`` would turn into text;
  an infinite float is a value for the default reader, so every writer writes it as the default writer does;
* a one-column cell of only spaces and tabs, which the default reader skips as a blank line unless quoted;
* suppressions given without recodes;
* a CSV input whose lines mix LF and CRLF ends (read by the default reader, refused by DuckDB in one line);
* the floats, booleans and integers of a Parquet input, which every engine writes byte for byte as the default
  writer does ("1e-07" and never "1e-7", which reads back as text; "True", not "true"), integers beyond 2**53
  with missing values included, read back exactly.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.dataset import Roles
from kanon_core.engines import get_engine
from kanon_core.export import write_release
from kanon_core.io import load_dataset
from tests.stderr_lines import without_progress
from tests.test_engines import assert_same_table, reference

ENGINES = ["duckdb", "polars"]


def records(path: Path) -> tuple[list[str], list[list[object]]]:
    """What the default reader makes of a file: each column's kind (number or text) and the records, with
    missing cells as None (so a missing cell and the text "nan" can never compare equal)."""
    frame = load_dataset(path).frame
    kinds = ["number" if pd.api.types.is_numeric_dtype(frame[c].dtype) else "text" for c in frame.columns]
    rows = frame.astype(object).where(frame.notna(), None).values.tolist()
    return kinds, rows


def default_release(path: Path, out: Path, drop: tuple[str, ...] = (), blank: pd.Series | None = None) -> Path:
    """The default engine's release of ``path``: read in memory, ``drop`` left out, the cells of the column
    ``blank`` names blanked where it is True, written by the in-memory writer."""
    ds = load_dataset(path)
    frame = ds.frame.drop(columns=list(drop))
    if blank is not None:
        frame = frame.assign(**{blank.name: frame[blank.name].where(~blank.to_numpy(), None)})
    write_release(ds.with_frame(frame), out, sidecar=False)
    return out


def assert_round_trip(path: Path, engine: str, tmp_path: Path, suffix: str = "", **kwargs) -> Path:
    """The engine's CSV release of ``path`` reads back as the default engine's release does."""
    drop = tuple(kwargs.get("drop", ()))
    expected = records(default_release(path, tmp_path / f"default{suffix}.csv", drop))
    out = get_engine(engine).release(path, tmp_path / f"{engine}{suffix}.csv", sidecar=False, **kwargs)
    assert records(out) == expected
    return out


# -- 1. a missing cell of a one-column release -------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_cut_to_one_column_keeps_its_missing_cells(tmp_path, engine):
    path = tmp_path / "two.csv"
    path.write_bytes(b"sex,age\nm,30\n,40\nf,\n\nm,30\n")
    out = assert_round_trip(path, engine, tmp_path, drop=["age"])
    assert len(records(out)[1]) == 4


@pytest.mark.parametrize("engine", ENGINES)
def test_a_one_column_parquet_release_keeps_its_missing_cells(tmp_path, engine):
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"age": pa.array([30, None, 40, None], pa.int64())}), path)
    out = assert_round_trip(path, engine, tmp_path)
    assert records(out) == (["number"], [[30], [None], [40], [None]])


# -- 2. NaN and infinite floats of a Parquet input ---------------------------------------------------------

NAN, INF = float("nan"), float("inf")
FLOAT_CASES = {
    "nan and null": [1.5, NAN, None, 2.25],
    "nan only beside numbers": [1.5, NAN, 3.0],
    "nan first": [NAN, 0.5, -2.0],
    "infinite values": [1.5, INF, -INF, None],
    "nan and infinite values": [1.5, NAN, INF, -INF, None],
}


@pytest.mark.parametrize("width", ["one column", "two columns"])
@pytest.mark.parametrize("float_type", [pa.float64(), pa.float32()], ids=["float64", "float32"])
@pytest.mark.parametrize("case", list(FLOAT_CASES))
@pytest.mark.parametrize("engine", ENGINES)
def test_a_parquet_float_column_reads_back_as_the_default_release(tmp_path, engine, case, float_type, width):
    """NaN is missing for the default reader, so a release writes an empty cell, never the text ``nan``
    (which would read back as text); an infinite value is a value, written as the default writer writes it."""
    values = FLOAT_CASES[case]
    columns = {"x": pa.array(values, float_type)}
    if width == "two columns":
        columns["id"] = pa.array([str(i) for i in range(len(values))])
    path = tmp_path / "floats.parquet"
    pq.write_table(pa.table(columns), path)
    out = assert_round_trip(path, engine, tmp_path)
    assert b"nan" not in out.read_bytes().lower()
    if not any(v is not None and np.isinf(v) for v in values):
        assert records(out)[0][0] == "number"


@pytest.mark.parametrize("case", list(FLOAT_CASES))
def test_duckdb_counts_a_parquet_nan_as_missing(tmp_path, case):
    """The class table and the summary (DuckDB's optimizer must not drop the NaN test on the strength of the
    Parquet statistics, which leave NaN out)."""
    path = tmp_path / "floats.parquet"
    values = [v for v in FLOAT_CASES[case] if v is None or not np.isinf(v)]
    pq.write_table(pa.table({"x": pa.array(values, pa.float64())}), path)
    duck = get_engine("duckdb")
    assert_same_table(reference(path, ["x"]), duck.class_table(path, ["x"]))
    summary = duck.summary(path).columns.set_index("variable").loc["x"]
    assert summary["missing"] == int(load_dataset(path).frame["x"].isna().sum())


# -- 3. cells of only spaces and tabs in one column --------------------------------------------------------

SPACES = b'sex\nm\n"   "\nf\n" \t"\n"\t"\nm\n'


@pytest.mark.parametrize("engine", ENGINES)
def test_a_one_column_release_keeps_cells_of_spaces(tmp_path, engine):
    path = tmp_path / "spaces.csv"
    path.write_bytes(SPACES)
    out = assert_round_trip(path, engine, tmp_path)
    assert records(out) == (["text"], [["m"], ["   "], ["f"], [" \t"], ["\t"], ["m"]])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_cut_to_one_column_keeps_cells_of_spaces(tmp_path, engine):
    path = tmp_path / "two.csv"
    path.write_bytes(b'sex,age\nm,30\n   ,40\n"  ",\n\t,1\n')
    out = assert_round_trip(path, engine, tmp_path, drop=["age"])
    assert records(out) == (["text"], [["m"], ["   "], ["  "], ["\t"]])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_one_column_parquet_release_keeps_cells_of_spaces(tmp_path, engine):
    path = tmp_path / "spaces.parquet"
    pq.write_table(pa.table({"note": ["a", "  ", None, "\t\t", "a b", 'say "hi", then go']}), path)
    out = assert_round_trip(path, engine, tmp_path)
    assert records(out)[1] == [["a"], ["  "], [None], ["\t\t"], ["a b"], ['say "hi", then go']]


def test_the_default_writer_keeps_cells_of_spaces_in_one_column(tmp_path):
    path = tmp_path / "spaces.csv"
    path.write_bytes(SPACES)
    out = default_release(path, tmp_path / "release.csv")
    assert records(out) == records(path)
    assert len(records(out)[1]) == 6


# -- 4. suppressions without recodes -----------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_with_suppressions_and_no_recodes(tmp_path, engine):
    path = tmp_path / "d.csv"
    path.write_bytes(b"sex,age\nm,30\nf,40\nm,50\nf,40\nx,30\n")
    sup = pd.DataFrame({"sex": ["x", "f"], "suppress_sex": [True, False]})
    out = get_engine(engine).release(path, tmp_path / f"{engine}.csv", qis=["sex"], recodes=None,
                                     suppress=sup, sidecar=False)
    ds = load_dataset(path, roles=Roles(qis=("sex",)))
    expected = default_release(path, tmp_path / "default.csv", blank=(ds.frame["sex"] == "x").rename("sex"))
    assert records(out) == records(expected)
    assert records(out)[1][-1] == [None, 30]


# -- 5. lines that mix LF and CRLF ends --------------------------------------------------------------------

MIXED = {
    "LF then CRLF": b"sex,age\nm,30\r\nf,40\nm,30\r\nf,50\n",
    "CRLF then LF": b"sex,age\r\nm,30\nf,40\r\nm,30\nf,50\r\n",
    "one column": b"sex\nm\r\nf\nm\r\n",
}


@pytest.mark.parametrize("case", list(MIXED))
def test_duckdb_refuses_mixed_line_ends_in_one_line(tmp_path, capsys, case):
    path = tmp_path / "mixed.csv"
    path.write_bytes(MIXED[case])
    assert main(["risk", str(path), "--qi", "sex", "--engine", "pandas"]) == 0
    capsys.readouterr()
    assert main(["risk", str(path), "--qi", "sex", "--engine", "duckdb"]) == 2
    lines = without_progress(capsys.readouterr().err)
    assert len(lines) == 1 and "line ends" in lines[0]
    assert "--engine polars" in lines[0] or "--engine pandas" in lines[0]



# -- 6. numbers and booleans of a Parquet input ------------------------------------------------------------
# The default writer writes a float as Python's shortest round-trip text ("1e-07", "1e+16", "0.1", a float32
# widened to the float64 it is), a column of whole floats (below 2**53) as integers, a boolean as "True" or
# "False", and an integer as its digits. Each engine must write the same bytes: text the reader did not
# accept as a number ("1e-7") would turn the whole column into text, and other text reads back as another
# number or a value no other writer writes.

def assert_same_bytes(table: pa.Table, engine: str, folder: Path) -> Path:
    """The engine's CSV release of a Parquet file of ``table`` is byte for byte the default writer's, and so
    reads back as the default release does."""
    path = folder / "in.parquet"
    pq.write_table(table, path)
    expected = default_release(path, folder / "default.csv")
    out = get_engine(engine).release(path, folder / f"{engine}.csv", sidecar=False)
    assert out.read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")
    assert records(out) == records(expected)
    return out


def with_ids(column: pa.Array) -> pa.Table:
    """The column ``x`` beside a text column, so that the release has the usual several columns."""
    return pa.table({"x": column, "id": pa.array([str(i) for i in range(len(column))])})


FLOAT_TEXTS = {
    "small exponents": [1e-07, -1e-07, 1e-05, 1.5e-05, -2.5e-05, 9.99e-06, 3e-09, 1e-10, 2.5e-100, 5e-324],
    "large exponents": [1e16, 1e22, 1.2345678901234568e16, 1.7976931348623157e308, -3e200, 0.5],
    "positional": [0.1, 1 / 3, 123456789.5, 1e15 + 0.5, 0.0001, 0.00012, -0.5],
    "negative zero": [-0.0, 0.5, 2.5],
    "whole floats": [1.0, -3.0, 0.0, -0.0, 1e15, None, NAN],
    "whole floats beyond 2**53": [1.0, 2.0**53, -(2.0**60), None],
    "whole floats and fractions": [1.0, 123456789.0, 2.5],
    "missing only": [None, NAN, None],
}


@pytest.mark.parametrize("float_type", [pa.float64(), pa.float32()], ids=["float64", "float32"])
@pytest.mark.parametrize("case", list(FLOAT_TEXTS))
@pytest.mark.parametrize("engine", ENGINES)
def test_a_parquet_float_is_written_as_the_default_writer_writes_it(tmp_path, engine, case, float_type):
    values = FLOAT_TEXTS[case]
    out = assert_same_bytes(with_ids(pa.array(values, float_type, from_pandas=True)), engine, tmp_path)
    if case not in ("negative zero", "whole floats beyond 2**53") and float_type == pa.float64():
        assert records(out)[0][0] == "number"  # (the default reader reads "-0.0" as text, "-0" is not 0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_column_mixing_every_kind_of_float_is_written_as_the_default_writer_writes_it(tmp_path, engine):
    values = [v for case in ("small exponents", "large exponents", "positional") for v in FLOAT_TEXTS[case]]
    out = assert_same_bytes(with_ids(pa.array(values + [None], pa.float64())), engine, tmp_path)
    kinds, rows = records(out)
    assert kinds[0] == "number" and [r[0] for r in rows] == values + [None]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_one_column_float_release_is_written_as_the_default_writer_writes_it(tmp_path, engine):
    values = [1e-07, None, 1.5e-05, 0.1, 1e16]
    out = assert_same_bytes(pa.table({"x": pa.array(values, pa.float64())}), engine, tmp_path)
    assert records(out) == (["number"], [[v] for v in values])


@settings(max_examples=60, deadline=None)
@given(st.data(), st.sampled_from([32, 64]), st.sampled_from(ENGINES))
def test_any_finite_floats_are_written_as_the_default_writer_writes_them(data, width, engine):
    """Random finite floats (with missing cells), float64 or float32: the same bytes as the default writer."""
    values = data.draw(st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=width),
                                          st.none()), min_size=1, max_size=12))
    with tempfile.TemporaryDirectory() as folder:
        assert_same_bytes(with_ids(pa.array(values, pa.float64() if width == 64 else pa.float32())), engine,
                          Path(folder))


@pytest.mark.parametrize("width", ["one column", "two columns"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_parquet_boolean_is_written_as_the_default_writer_writes_it(tmp_path, engine, width):
    column = pa.array([True, False, None, True])
    table = with_ids(column) if width == "two columns" else pa.table({"x": column})
    out = assert_same_bytes(table, engine, tmp_path)
    assert [r[0] for r in records(out)[1]] == ["True", "False", None, "True"]


INT_CASES = {
    "int64 with missing values": (pa.int64(), [1, None, -7, 0]),
    "int32 with missing values": (pa.int32(), [None, 2**31 - 1, -(2**31)]),
    "int8 with missing values": (pa.int8(), [1, None, -128]),
    "uint32 with missing values": (pa.uint32(), [2**32 - 1, None, 0]),
    "int64 beyond 2**53": (pa.int64(), [2**53 + 1, -(2**63), 2**63 - 1, 1]),
    "int64 beyond 2**53 with missing values": (pa.int64(), [2**53 + 1, None, -(2**63), 2**63 - 1, 1]),
}


@pytest.mark.parametrize("case", list(INT_CASES))
@pytest.mark.parametrize("engine", ENGINES)
def test_a_parquet_integer_is_written_and_read_back_exactly(tmp_path, engine, case):
    """Every writer writes an integer's digits, and the release reads back as the very integers of the input
    (a float64 holds no integer beyond 2**53 exactly: 2**53 + 1 would come back as 2**53)."""
    int_type, values = INT_CASES[case]
    out = assert_same_bytes(with_ids(pa.array(values, int_type)), engine, tmp_path)
    kinds, rows = records(out)
    assert kinds[0] == "number" and [r[0] for r in rows] == values


@pytest.mark.parametrize("engine", ENGINES)
def test_integers_beyond_2_53_with_missing_values_are_different_classes(tmp_path, engine):
    """Read as float64, 2**53 and 2**53 + 1 would be one value, one class of two records: the in-memory
    reader and every engine keep them apart."""
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"i": pa.array([2**53, 2**53 + 1, None, 2**53 + 1], pa.int64())}), path)
    for table in (reference(path, ["i"]), get_engine(engine).class_table(path, ["i"])):
        sizes = {table.values[0][code] if code >= 0 else None: int(n)
                 for code, n in zip(table.codes[:, 0], table.count, strict=True)}
        assert sizes == {2**53: 1, 2**53 + 1: 2, None: 1}
