"""A CSV release written by Spark holds, cell for cell, the text the default writer writes.

The default writer (:func:`kanon_core.io.csv_bytes`) writes a float as Python's shortest round-trip text
(:func:`kanon_core.io.float_cell`: "1e-07", "1e+16", "0.30000000000000004", "Infinity", "0.0" for -0.0), a
float32 widened to the float64 it is, a column of whole floats as integers, a boolean as "True"/"False", text
as it is. Spark's own CSV writer writes Java's text ("1.0E-7", "1.0E16", "-0.0", "true"), and on Java 17 not
even the shortest digits ("1.9999999999999998E23" for 2e+23). Spark writes a folder of part files, its
records in no set order: they are compared by an id column.

One Spark session serves the module (starting the JVM takes seconds) and is stopped at the end.
"""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java (openjdk-17-jre-headless)", allow_module_level=True)

from kanon_core.cli import main  # noqa: E402
from kanon_core.engines import get_engine  # noqa: E402
from kanon_core.engines.base import EngineSettings  # noqa: E402
from kanon_core.export import write_release  # noqa: E402
from kanon_core.io import float_cell, load_dataset  # noqa: E402

NAN, INF = float("nan"), float("inf")

FLOATS = [1e-07, 1.5e-05, 0.000123, 1e16, 1e22, 123456789.125, -0.0, INF, -INF, NAN, None, 2.0, 0.1 + 0.2,
          # Java 17 writes these with more digits than the shortest, or other digits of the same length
          2e23, 1e23, 8.41e21, 8.939817659706545e17, 2.9660096386720333e25, 1.6e-322, 5e-324, 9e-323,
          # Java's thresholds of its layout (1e-3, 1e7) and Python's (1e-4, 1e16)
          0.001, 0.0009, 1e-4, 9.99e-05, 1e7, 12345678.5, 1e15, 9999999999999998.0, 1.7976931348623157e308,
          -1e-07, -2.5e-05, 0.5, -123.25]
FLOAT32 = [0.1, 1e-07, 3.4e38, -0.0, None, 1.5, 16777216.5, 1e-45, NAN, INF, 2.0e-3, 7.0]
WHOLE = [1.0, None, -3.0, 0.0, -0.0, 1e15, NAN, 42.0]
TEXT = [" lead", "trail ", 'a"b', "x,y", "", "two\nlines", "plain", "  ", "NA", "1.0E-7"]


def spark_settings() -> EngineSettings:
    return EngineSettings(memory_limit=1 << 30, spark_master="local[2]")


@pytest.fixture(scope="module")
def spark():
    from kanon_core.engines import spark_engine

    s = spark_settings()
    yield s
    spark_engine.stop_sessions()
    s.close()


def cycle(values: list, n: int) -> list:
    return [values[i % len(values)] for i in range(n)]


def mixed_table() -> pa.Table:
    n = len(FLOATS)
    return pa.table({
        "id": pa.array([f"r{i:03d}" for i in range(n)]),
        "g": pa.array(cycle(["a", "b"], n)),
        "x": pa.array(FLOATS, pa.float64(), from_pandas=True),
        "f32": pa.array(cycle(FLOAT32, n), pa.float32(), from_pandas=True),
        "b": pa.array(cycle([True, False, None], n), pa.bool_()),
        "w": pa.array(cycle(WHOLE, n), pa.float64(), from_pandas=True),
        "i": pa.array(cycle([1, None, -7, 2**60], n), pa.int64()),
        "t": pa.array(cycle(TEXT, n), pa.string()),
    })


def csv_rows(out: Path) -> tuple[list[str], list[list[str]]]:
    """The header and the records of a CSV release (a file, or Spark's folder of part files), as the text
    of each cell."""
    files = sorted(out.glob("part-*.csv")) if out.is_dir() else [out]
    header, rows = None, []
    for f in files:
        with f.open(encoding="utf-8", newline="") as fh:
            lines = list(csv.reader(fh))
        if not lines:
            continue
        assert header is None or lines[0] == header
        header = lines[0]
        rows += lines[1:]
    assert header is not None
    return header, rows


def one_file(out: Path, folder: Path) -> Path:
    """Spark's part files as one CSV file, their bytes as Spark wrote them (the header line of all but the
    first left out), to read back with the default reader."""
    if not out.is_dir():
        return out
    parts = [f.read_bytes() for f in sorted(out.glob("part-*.csv"))]
    parts = [b for b in parts if b]
    path = folder / f"{out.stem}_joined.csv"
    path.write_bytes(parts[0] + b"".join(b.split(b"\n", 1)[1] for b in parts[1:]))
    return path


def by_id(out: Path) -> tuple[list[str], dict[str, list[str]]]:
    header, rows = csv_rows(out)
    at = header.index("id")
    keyed = {r[at]: r for r in rows}
    assert len(keyed) == len(rows)
    return header, keyed


def default_release(path: Path, out: Path) -> Path:
    write_release(load_dataset(path), out, sidecar=False)
    return out


def read_back(path: Path) -> pd.DataFrame:
    frame = load_dataset(path).frame
    return frame.sort_values("id").reset_index(drop=True)


def assert_same_cells(spark_out: Path, default_out: Path, folder: Path) -> None:
    """Cell for cell the default writer's text (joined on the id), and read back as the same table."""
    h1, got = by_id(spark_out)
    h2, want = by_id(default_out)
    assert h1 == h2
    assert got.keys() == want.keys()
    differ = [(k, c, got[k][j], want[k][j]) for k in sorted(want) for j, c in enumerate(h2) if got[k][j] != want[k][j]]
    assert differ == []
    a, b = read_back(one_file(spark_out, folder)), read_back(default_out)
    assert list(a.dtypes) == list(b.dtypes)
    pd.testing.assert_frame_equal(a, b)


def test_a_parquet_release_through_spark_writes_the_default_writers_text(spark, tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(mixed_table(), path)
    default = default_release(path, tmp_path / "default.csv")
    out = get_engine("spark").release(path, tmp_path / "spark.csv", sidecar=False, settings=spark)
    assert out.is_dir()
    assert_same_cells(out, default, tmp_path)


def test_a_csv_release_through_spark_keeps_the_text_of_a_csv_input(spark, tmp_path):
    """A CSV input (the default writer's release of the Parquet file) is text, written as read: spaces around
    a cell kept (Spark trims them by default), a quote doubled (Spark escapes it with a backslash by default),
    a cell of spaces not made missing."""
    path = tmp_path / "in.parquet"
    pq.write_table(mixed_table(), path)
    source = default_release(path, tmp_path / "in.csv")
    default = default_release(source, tmp_path / "default.csv")
    out = get_engine("spark").release(source, tmp_path / "spark.csv", sidecar=False, settings=spark)
    assert_same_cells(out, default, tmp_path)
    assert {r[-1] for r in by_id(out)[1].values()} >= {" lead", "trail ", 'a"b', "  ", "two\nlines"}


def test_kanon_suppress_engine_spark_writes_the_default_writers_text(spark, tmp_path):
    """``kanon suppress ... --engine spark -o out.csv`` against ``--engine pandas``: every class of ``g`` has
    k records, so both write every record, with the same cells."""
    path = tmp_path / "in.parquet"
    pq.write_table(mixed_table(), path)
    outs = {}
    for engine in ("pandas", "spark"):
        outs[engine] = tmp_path / f"{engine}.csv"
        assert main(["suppress", str(path), "--qi", "g", "--k", "2", "--engine", engine,
                     "--spark-master", "local[2]", "-o", str(outs[engine])]) == 0
    assert outs["spark"].is_dir()
    assert_same_cells(outs["spark"], outs["pandas"], tmp_path)


def test_a_recoded_float_and_boolean_are_written_as_the_default_writer_writes_them(spark, tmp_path):
    """A recode's new values (floats and booleans) are the default writer's text too."""
    path = tmp_path / "in.parquet"
    table = mixed_table()
    pq.write_table(table, path)
    ds = load_dataset(path)
    new = {v: 1e-07 * (j + 1) if j % 2 else 1e23 for j, v in enumerate(ds.frame["g"].dropna().unique())}
    flags = {v: j % 2 == 0 for j, v in enumerate(ds.frame["t"].dropna().unique())}
    out = get_engine("spark").release(path, tmp_path / "spark.csv", recodes={"g": new, "t": flags},
                                      sidecar=False, settings=spark)
    frame = ds.frame.assign(g=ds.frame["g"].map(new), t=ds.frame["t"].map(flags).astype("boolean"))
    default = tmp_path / "default.csv"
    write_release(ds.with_frame(frame), default, sidecar=False)
    assert_same_cells(out, default, tmp_path)


# -- any double: Spark's text is repr's ----------------------------------------------------------------------

HARD = [2e23, 1e23, 8.41e21, 8.939817659706545e17, 2.1309563772829302e18, 2.9660096386720333e25,
        1.9343524807692296e25, 1.6e-322, 1.012e-320, 9e-323, 7e-323, 8.095e-320, 5e-324, 2.2250738585072014e-308,
        2.225073858507201e-308, 4.9406564584124654e-324, 1.7976931348623157e308, 9007199254740993.0, 0.1, 1 / 3]


def hypothesis_doubles(n_examples: int = 40) -> list[float]:
    """Doubles drawn by hypothesis (its floats strategy favours the edges: subnormals, the largest finite,
    powers of two and ten, negative zero), collected over a number of examples into one list, so that one
    Spark job checks them all."""
    drawn: list[float] = []

    @settings(max_examples=n_examples, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.floats(allow_nan=False, allow_infinity=True), min_size=50, max_size=100))
    def collect(xs: list[float]) -> None:
        drawn.extend(xs)

    collect()
    return drawn


def spread_doubles(n: int, seed: int = 7) -> list[float]:
    """Doubles spread over every exponent (uniform bit patterns, both signs), short decimals at every power of
    ten, and subnormals of few bits: where Java's text and Python's differ most."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**63, n, dtype=np.int64).view(np.float64)
    bits = np.where(rng.random(n) < 0.5, -bits, bits)
    short = rng.integers(1, 1000, n) * np.power(10.0, rng.integers(-326, 306, n))
    sub = rng.integers(1, 2**12, n) * 5e-324
    out = np.concatenate([bits, short, sub])
    return [float(v) for v in out if not math.isnan(v)]


def test_any_double_is_written_as_python_writes_it(spark, tmp_path):
    """Some 33,000 doubles (hypothesis's and spread over every exponent) in one Spark release: each cell is
    :func:`kanon_core.io.float_cell` of its value (Python's repr, the infinities spelt out, -0.0 as 0.0)."""
    values = hypothesis_doubles() + spread_doubles(10_000) + HARD + [-v for v in HARD]
    assert len(values) > 30_000
    path = tmp_path / "many.parquet"
    pq.write_table(pa.table({"id": pa.array([str(i) for i in range(len(values))]),
                             "x": pa.array(values, pa.float64())}), path)
    out = get_engine("spark").release(path, tmp_path / "spark.csv", sidecar=False, settings=spark)
    header, got = by_id(out)
    at = header.index("x")
    differ = [(repr(v), got[str(i)][at]) for i, v in enumerate(values) if got[str(i)][at] != float_cell(v)]
    assert differ == [], f"{len(differ)} of {len(values)} differ, e.g. {differ[:10]}"


@pytest.mark.parametrize("width", ["one column", "two columns"])
def test_a_float_column_of_few_columns_keeps_its_missing_cells(spark, tmp_path, width):
    """A release of one float column: a missing cell cannot be an empty line (read back as a blank line, the
    record lost)."""
    values = [1e-07, None, 2e23, -0.0, INF]
    table = pa.table({"x": pa.array(values, pa.float64())})
    if width == "two columns":
        table = table.append_column("id", pa.array([str(i) for i in range(len(values))]))
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    default = default_release(path, tmp_path / "default.csv")
    out = get_engine("spark").release(path, tmp_path / "spark.csv", sidecar=False, settings=spark)
    got = sorted(csv_rows(out)[1], key=str)
    want = sorted(csv_rows(default)[1], key=str)
    assert got == want
    a, b = load_dataset(one_file(out, tmp_path)).frame, load_dataset(default).frame
    assert len(a) == len(values) and list(a.dtypes) == list(b.dtypes)
    pd.testing.assert_frame_equal(a.sort_values(list(a.columns)).reset_index(drop=True),
                                  b.sort_values(list(b.columns)).reset_index(drop=True))


def test_a_ranked_suppression_keeps_the_input_order_with_the_cells_formatted(spark, tmp_path):
    """Ranked suppressions need the input order (a record number, sorted on at the end); the cells formatted
    after the sort keep it: Spark's part files, in name order, hold DuckDB's CSV release line for line."""
    from kanon_core.engines.local_suppression import ranked_plan
    from kanon_core.engines.source import open_source
    from kanon_core.engines.table import aggregate_table
    from kanon_core.treat.strict.classes import suppress_classes

    rng = np.random.default_rng(5)
    n = 3000
    table = pa.table({"g": pa.array(rng.choice(["a", "b", "c", "d"], n)), "h": pa.array(rng.choice(["x", "y"], n)),
                      "x": pa.array(rng.choice(FLOATS[:9] + FLOATS[11:], n), pa.float64()),
                      "b": pa.array(rng.random(n) < 0.5), "id": pa.array([f"r{i:05d}" for i in range(n)])})
    path = tmp_path / "in.parquet"
    pq.write_table(table, path, row_group_size=500)
    qis = ["g", "h", "x"]
    ct, keys, class_of_row, _ = aggregate_table(get_engine("spark"), open_source(path), qis, None, None, spark)
    res = suppress_classes(ct.codes, ct.count, 60, np.ones(3), np.zeros(3, bool), "category")
    assert res.n_suppressed > 0
    plan = ranked_plan(keys, class_of_row, ct.n_classes, res.assignment, len(qis))
    outs = {e: get_engine(e).release(path, tmp_path / f"{e}.csv", qis=qis, ranked=plan, sidecar=False,
                                     settings=spark) for e in ("duckdb", "spark")}
    assert csv_rows(outs["spark"]) == csv_rows(outs["duckdb"])

