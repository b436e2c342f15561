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
* a CSV input whose lines mix LF and CRLF ends (read by the default reader, refused by DuckDB in one line).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

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

