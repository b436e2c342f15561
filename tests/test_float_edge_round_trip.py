"""Reading back exactly what a release writes, at the edges of the number types.

* A float column (from a Parquet file) holding -0.0, inf or -inf, released as CSV by the in-memory writer or
  an out-of-core engine, reads back as the same float column: infinities are written "Infinity" and
  "-Infinity", a zero without a sign (kanon counts -0.0 and 0.0 as one value, so the release writes one text
  for both). A person's "inf", "-0.0" or "nan" in a CSV file stays text.
* A Parquet uint64 column with values beyond 2**63 - 1 (kanon's whole numbers are signed 64-bit) is refused
  in one line (exit 2, no data value quoted) by every reader; within that range it is read as exact integers.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.engines import get_engine
from kanon_core.errors import InputError
from kanon_core.export import write_release
from kanon_core.io import csv_bytes, load_dataset, read_table, type_column
from tests.stderr_lines import without_progress

EMBEDDED = ["duckdb", "polars"]
INF = math.inf
EDGES = [1.5, -0.0, INF, -INF, 0.0, None, 2.25, -INF, -0.0, math.nan]


def parquet(tmp_path: Path, columns: dict[str, pa.Array], name: str = "d.parquet") -> Path:
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    return path


def cells(s: pd.Series) -> list:
    """The values of a column, missing as None (NaN and pd.NA alike)."""
    return [None if pd.isna(v) else v for v in s.tolist()]


def same_floats(got: list, want: list) -> bool:
    """Equal as numbers (-0.0 equals 0.0, as in every count kanon makes), infinities included."""
    return len(got) == len(want) and all(
        (g is None and w is None) or (g is not None and w is not None and float(g) == float(w))
        for g, w in zip(got, want, strict=True))


# -- 1. floats: -0.0, inf, -inf ---------------------------------------------------------------------------------
def test_a_released_float_column_with_infinities_and_signed_zeros_reads_back_as_floats(tmp_path):
    src = parquet(tmp_path, {"x": pa.array(EDGES, pa.float64()), "k": pa.array(list("abcdefghij"))})
    ds = load_dataset(src)
    out = tmp_path / "r.csv"
    write_release(ds, out)
    text = out.read_text()
    assert "-0.0" not in text and ",inf" not in text.replace("Infinity", "")
    back = load_dataset(out).frame["x"]
    assert str(back.dtype) == "float64"
    assert same_floats(cells(back), cells(ds.frame["x"]))
    assert [math.copysign(1, v) for v in cells(back) if v == 0] == [1.0, 1.0, 1.0]  # one zero, one text
    assert csv_bytes(load_dataset(out).frame) == out.read_bytes()  # written again: the same bytes


def test_a_float_column_of_whole_numbers_and_an_infinity_stays_floats(tmp_path):
    """Whole numbers with an infinity cannot be integers: the column stays float (it was an OverflowError)."""
    src = parquet(tmp_path, {"x": pa.array([1.0, INF, None, 3.0, -INF], pa.float64())})
    ds = load_dataset(src)
    assert str(ds.frame["x"].dtype) == "float64" and same_floats(cells(ds.frame["x"]), [1.0, INF, None, 3.0, -INF])
    out = tmp_path / "r.csv"
    write_release(ds, out)
    assert out.read_text().splitlines() == ["x", "1.0", "Infinity", '""', "3.0", "-Infinity"]  # (one column: the empty cell quoted)
    back = load_dataset(out).frame["x"]
    assert str(back.dtype) == "float64" and same_floats(cells(back), cells(ds.frame["x"]))


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("column", [EDGES, [1.0, INF, None, 3.0, -INF]], ids=["edges", "whole and infinite"])
def test_an_engine_release_of_edge_floats_is_the_in_memory_release(tmp_path, engine, column):
    src = parquet(tmp_path, {"x": pa.array(column, pa.float64()), "k": pa.array([str(i) for i in range(len(column))])})
    ds = load_dataset(src)
    ref, out = tmp_path / "ref.csv", tmp_path / "out.csv"
    write_release(ds, ref, sidecar=False)
    get_engine(engine).release(src, out, sidecar=False)
    assert out.read_bytes() == ref.read_bytes()
    back = load_dataset(out).frame["x"]
    assert str(back.dtype) == "float64" and same_floats(cells(back), cells(ds.frame["x"]))


@pytest.mark.parametrize("engine", EMBEDDED)
def test_an_engine_counts_edge_floats_as_the_in_memory_reader(tmp_path, engine):
    from tests.test_engines import assert_same_table, reference

    src = parquet(tmp_path, {"x": pa.array([1.0, INF, None, 3.0, -INF, 1.0], pa.float64())})
    assert_same_table(reference(src, ["x"]), get_engine(engine).class_table(src, ["x"]))


@pytest.mark.parametrize("texts, dtype, style", [
    (["inf", "1.5"], "str", "repr"),  # a person's abbreviation (or R's lower case): text, as it always was
    (["-inf", "1.5"], "str", "repr"),
    (["Inf", "1.5"], "str", "repr"),  # R's spelling
    (["infinity", "1.5"], "str", "repr"),
    (["+Infinity", "1.5"], "str", "repr"),  # no sign but "-", as for every number
    (["Infinity ", "1.5"], "str", "repr"),
    (["nan", "1.5"], "str", "repr"),  # a missing value is written empty, never "nan"
    (["NaN", "1.5"], "str", "repr"),
    (["-0.0", "1.5"], "str", "repr"),  # the writer writes no sign on a zero
    (["-0", "1"], "str", "repr"),
    (["Infinity", "x"], "str", "repr"),
    (["Infinity", "-Infinity", "1.5", ""], "float64", "repr"),
    (["Infinity", "2", ""], "float64", "plain"),
    (["-Infinity", "0.0"], "float64", "repr"),
])
def test_which_texts_of_infinity_are_numbers(texts, dtype, style):
    s, got_style = type_column(pd.Series(texts, dtype=object))
    assert (str(s.dtype), got_style) == (dtype, style)
    if dtype == "str":
        assert cells(s) == [t or None for t in texts]  # text unchanged


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                          st.sampled_from([0.0, -0.0, INF, -INF, 1.0, 2.0])), min_size=1, max_size=12))
def test_any_float_column_reads_back_from_its_csv_release(tmp_path_factory, values):
    """Whatever floats a Parquet column holds (NaN and None are missing), its CSV release reads back as the
    same numbers and the same dtype, and writing it again gives the same bytes."""
    tmp = tmp_path_factory.mktemp("f")
    ds = load_dataset(parquet(tmp, {"x": pa.array(values, pa.float64())}))
    out = tmp / "r.csv"
    write_release(ds, out, sidecar=False)
    back = read_table(out).frame["x"]
    kind = "i" if pd.api.types.is_integer_dtype(ds.frame["x"].dtype) else "f"
    assert (pd.api.types.is_integer_dtype(back.dtype) if kind == "i" else str(back.dtype) == "float64")
    assert same_floats(cells(back), cells(ds.frame["x"]))
    assert csv_bytes(back.to_frame()) == out.read_bytes()


# -- 2. unsigned 64-bit integers --------------------------------------------------------------------------------
BIG = 2**64 - 1


def wide(tmp_path: Path) -> Path:
    return parquet(tmp_path, {"u": pa.array([BIG, 2**63, 5], pa.uint64()),
                              "k": pa.array(["a", "b", "c"])}, "u.parquet")


def wide_with_a_gap(tmp_path: Path) -> Path:
    return parquet(tmp_path, {"u": pa.array([BIG, None, 5], pa.uint64()),
                              "k": pa.array(["a", "b", "c"])}, "v.parquet")


def assert_quotes_no_value(message: str) -> None:
    assert "\n" not in message.strip()
    for v in (BIG, 2**63, 1.8446744073709552e19):
        assert str(v) not in message and f"{v:,}" not in message


@pytest.mark.parametrize("make", [wide, wide_with_a_gap], ids=["no gap", "a gap"])
def test_uint64_beyond_int64_is_refused_in_memory_never_rounded(tmp_path, make):
    with pytest.raises(InputError, match="'u'") as err:
        load_dataset(make(tmp_path))
    assert_quotes_no_value(str(err.value))


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("make", [wide, wide_with_a_gap], ids=["no gap", "a gap"])
def test_uint64_beyond_int64_is_refused_by_the_engines(tmp_path, engine, make):
    src = make(tmp_path)
    with pytest.raises(InputError, match="'u'") as err:
        get_engine(engine).class_table(src, ["u"])
    assert_quotes_no_value(str(err.value))
    with pytest.raises(InputError, match="'u'"):  # released as it is, it would read back as text
        get_engine(engine).release(src, tmp_path / "r.csv", sidecar=False)
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("engine", ["pandas", *EMBEDDED])
def test_uint64_beyond_int64_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys, engine):
    src = wide_with_a_gap(tmp_path)
    code = main(["risk", str(src), "--qi", "u", "--k", "2", "--engine", engine])
    err = [line for line in without_progress(capsys.readouterr().err) if line.strip()]
    assert code == 2 and len(err) == 1 and "'u'" in err[0] and "unexpected" not in err[0]
    assert_quotes_no_value(err[0])


@pytest.mark.parametrize("gap", [False, True])
def test_uint64_within_int64_is_read_exactly_and_its_release_reads_back(tmp_path, gap):
    values = [2**63 - 1, 2**53 + 1, None if gap else 7, 5]
    src = parquet(tmp_path, {"u": pa.array(values, pa.uint64())})
    ds = load_dataset(src)
    assert cells(ds.frame["u"]) == values and pd.api.types.is_signed_integer_dtype(ds.frame["u"].dtype)
    out = tmp_path / "r.csv"
    write_release(ds, out, sidecar=False)
    back = load_dataset(out).frame["u"]
    assert cells(back) == values and pd.api.types.is_signed_integer_dtype(back.dtype)
    for engine in EMBEDDED:
        got = tmp_path / f"{engine}.csv"
        get_engine(engine).release(src, got, sidecar=False)
        assert got.read_bytes() == out.read_bytes()
        assert get_engine(engine).class_table(src, ["u"]).values == (tuple(sorted(v for v in values if v is not None)),)


def test_the_message_names_every_wide_column_once(tmp_path):
    src = parquet(tmp_path, {"a": pa.array([BIG], pa.uint64()), "b": pa.array([1], pa.uint64()),
                             "c": pa.array([2**63], pa.uint64())})
    with pytest.raises(InputError) as err:
        load_dataset(src)
    assert "'a'" in str(err.value) and "'c'" in str(err.value) and "'b'" not in str(err.value)


@pytest.mark.parametrize("statistics", [True, False])
def test_the_engines_find_a_wide_value_in_any_row_group_with_or_without_statistics(tmp_path, statistics):
    path = tmp_path / "d.parquet"
    column = pa.array([1, 2, None, 3, 2**63, 4], pa.uint64())
    pq.write_table(pa.table({"u": column}), path, row_group_size=2, write_statistics=statistics)
    for engine in EMBEDDED:
        with pytest.raises(InputError, match="'u'"):
            get_engine(engine).class_table(path, ["u"])
    pq.write_table(pa.table({"u": pa.array([1, 2, None, 3, 2**63 - 1, 4], pa.uint64())}), path, row_group_size=2,
                   write_statistics=statistics)
    for engine in EMBEDDED:
        assert get_engine(engine).class_table(path, ["u"]).values == ((1, 2, 3, 4, 2**63 - 1),)
