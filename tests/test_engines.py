"""The out-of-core engines give the class table, the summary and the release of the in-memory path.

Generated CSV and Parquet files hold what the exact reader must get right: empty cells (missing), the
text "NA" (a value), leading zeros and signs ("02138", " 7", "+3": text), integers, floats in both styles,
declared missing codes (a labels sidecar and --missing-codes) and weights. Every engine's class table is
compared with :meth:`ClassTable.from_dataset` on the same file read by :func:`kanon_core.io.load_dataset`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.classtable import ClassTable
from kanon_core.dataset import Roles
from kanon_core.engines import choose_engine, engine_for, get_engine, parse_memory
from kanon_core.engines.base import EngineSettings
from kanon_core.errors import InputError
from kanon_core.io import load_dataset

EMBEDDED = ["duckdb", "polars"]
TEXTS = ["NA", "x", "02138", " 7", "+3", "", "n/a", "Zürich"]
INTS = ["1", "2", "10", "-4", ""]
FLOATS = ["1.5", "2.0", "-0.25", ""]


def canon(t: ClassTable):
    """Rows of a class table in a fixed order (engines return classes in any order)."""
    order = np.lexsort(t.codes.T[::-1])
    return t.codes[order], t.count[order], None if t.weight is None else t.weight[order]


def assert_same_table(ref: ClassTable, got: ClassTable) -> None:
    assert got.qis == ref.qis
    assert got.values == ref.values
    assert got.labels == ref.labels
    rc, rn, rw = canon(ref)
    gc, gn, gw = canon(got)
    np.testing.assert_array_equal(gc, rc)
    np.testing.assert_array_equal(gn, rn)
    if rw is None:
        assert gw is None
    else:
        np.testing.assert_allclose(gw, rw, rtol=1e-12)
    for name, rs in ref.sensitive.items():
        gs = got.sensitive[name]
        assert gs.values == rs.values
        # class indices differ between tables: compare through the class codes
        rkey = {(tuple(ref.codes[c]), v): n for c, v, n in zip(rs.class_index, rs.value_code, rs.count)}
        gkey = {(tuple(got.codes[c]), v): n for c, v, n in zip(gs.class_index, gs.value_code, gs.count)}
        assert gkey == rkey


def random_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "t": rng.choice(TEXTS, n),
        "i": rng.choice(INTS, n),
        "f": rng.choice(FLOATS, n),
        "z": rng.choice(["02138", "10001", ""], n),  # leading zeros: text, never the number 2138
        "w": np.round(rng.uniform(0.5, 3.0, n), 3).astype(str),
        "s": rng.choice(["low", "high", "NA", ""], n),
    })


def write_csv(df: pd.DataFrame, path: Path, sep: str = ",") -> Path:
    df.to_csv(path, index=False, sep=sep)
    return path


def reference(path: Path, qis, weight=None, sensitive=(), missing_codes=None) -> ClassTable:
    ds = load_dataset(path, roles=Roles(qis=tuple(qis), weight=weight), missing_codes=missing_codes)
    return ClassTable.from_dataset(ds, tuple(qis), weighted=weight is not None, sensitive=tuple(sensitive))


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("sep", [",", ";"])
def test_csv_class_table_equals_pandas(tmp_path, engine, sep):
    path = write_csv(random_frame(np.random.default_rng(3), 3000), tmp_path / "d.csv", sep)
    qis = ["t", "i", "f", "z"]
    ref = reference(path, qis, "w", ["s"])
    got = get_engine(engine).class_table(path, qis, "w", ["s"])
    assert_same_table(ref, got)
    # the class sizes computed on both tables agree under both semantics
    for missing in ("wildcard", "category"):
        rs, gs = ref.class_sizes(missing), got.class_sizes(missing)
        assert sorted(zip(map(tuple, canon(ref)[0]), rs.fk[np.lexsort(ref.codes.T[::-1])], strict=True)) == \
            sorted(zip(map(tuple, canon(got)[0]), gs.fk[np.lexsort(got.codes.T[::-1])], strict=True))


@given(st.lists(st.tuples(st.sampled_from(TEXTS), st.sampled_from(INTS), st.sampled_from(FLOATS)),
                min_size=1, max_size=40))
def test_engines_type_every_column_as_the_reader(tmp_path_factory, rows):
    """Any mix of cells: the engines' values (typed on distinct values only) equal the reader's."""
    path = tmp_path_factory.mktemp("h") / "d.csv"
    pd.DataFrame(rows, columns=["a", "b", "c"]).to_csv(path, index=False)
    ref = reference(path, ["a", "b", "c"])
    for engine in EMBEDDED:
        assert_same_table(ref, get_engine(engine).class_table(path, ["a", "b", "c"]))


@pytest.mark.parametrize("engine", EMBEDDED)
def test_declared_missing_codes_sidecar_and_option(tmp_path, engine):
    df = random_frame(np.random.default_rng(5), 800)
    path = write_csv(df, tmp_path / "d.csv")
    (tmp_path / "d.labels.json").write_text(json.dumps(
        {"i": {"missing_codes": ["-4"], "value_labels": {"1": "one"}}, "t": {"label": "Text"}}))
    codes = {"t": ("NA",), "f": ("2.0",)}
    ref = reference(path, ["t", "i", "f"], missing_codes=codes)
    got = get_engine(engine).class_table(path, ["t", "i", "f"], missing_codes=codes)
    assert "NA" not in got.values[0] and -4 not in got.values[1] and 2.0 not in got.values[2]
    assert got.labels[1][got.values[1].index(1)] == "one"
    assert_same_table(ref, got)


@pytest.mark.parametrize("engine", EMBEDDED)
def test_parquet_class_table_equals_pandas(tmp_path, engine):
    rng = np.random.default_rng(7)
    n = 2000
    ints = rng.integers(0, 5, n).astype(float)
    ints[rng.random(n) < 0.1] = np.nan  # a whole-number float column with NaN: integers in memory
    floats = rng.choice([0.5, 1.25, np.nan], n)
    text = rng.choice(["a", "NA", "", "b"], n).astype(object)
    text[rng.random(n) < 0.05] = None
    table = pa.table({"i": pa.array(ints, pa.float64()), "f": floats, "t": pa.array(text, pa.string()),
                      "n": pa.array(rng.integers(0, 3, n), pa.int32()), "b": rng.random(n) < 0.3,
                      "w": rng.uniform(1, 2, n)})
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    qis = ["i", "f", "t", "n", "b"]
    assert_same_table(reference(path, qis, "w"), get_engine(engine).class_table(path, qis, "w"))


@pytest.mark.parametrize("engine", EMBEDDED)
def test_weight_errors_as_in_memory(tmp_path, engine):
    df = pd.DataFrame({"a": ["1", "2", "2"], "w": ["1.5", "", "2"]})
    path = write_csv(df, tmp_path / "d.csv")
    with pytest.raises(InputError) as ref:
        reference(path, ["a"], "w")
    with pytest.raises(InputError) as got:
        get_engine(engine).class_table(path, ["a"], "w")
    assert str(got.value) == str(ref.value)
    write_csv(pd.DataFrame({"a": ["1", "2"], "w": ["1.5", "-2"]}), path)
    with pytest.raises(InputError, match="zero or negative"):
        get_engine(engine).class_table(path, ["a"], "w")


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("content, message", [
    ("a,b\n1,2\n".encode("utf-16"), "UTF-16"),
    (b"a,b\r1,2\r3,4\r", "CR only"),
    (b"a,a\n1,2\n", "Duplicated"),
    (b"a,b\n1,2\n" + b"x\xe9,2\n" + "é,1\n".encode(), "UTF-8"),
    (b"a,b\n1,2\n1,2,3\n", "more fields"),
])
def test_refuses_in_one_line_what_it_cannot_read_exactly(tmp_path, engine, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        get_engine(engine).class_table(path, ["a"])
    assert "\n" not in str(err.value)


def test_unsupported_parquet_type_is_refused(tmp_path):
    path = tmp_path / "d.parquet"
    import datetime

    pq.write_table(pa.table({"d": pa.array([datetime.date(2020, 1, 1)] * 3), "a": [1, 2, 3]}), path)
    for engine in EMBEDDED:
        with pytest.raises(InputError, match="--engine pandas"):
            get_engine(engine).class_table(path, ["d"])
        get_engine(engine).class_table(path, ["a"])  # other columns are fine


@pytest.mark.parametrize("engine", EMBEDDED)
def test_summary_equals_pandas(tmp_path, engine):
    path = write_csv(random_frame(np.random.default_rng(9), 500), tmp_path / "d.csv")
    ref = get_engine("pandas").summary(path)
    got = get_engine(engine).summary(path)
    assert got.n_records == ref.n_records == 500
    cols = ["variable", "type", "distinct", "missing"]
    pd.testing.assert_frame_equal(got.columns[cols], ref.columns[cols])
    assert len(got.preview) == 20 and list(got.preview.columns) == list(ref.preview.columns)


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_release_applies_recodes_and_suppressions_in_order(tmp_path, engine, ext):
    df = random_frame(np.random.default_rng(11), 400)
    src = write_csv(df, tmp_path / "d.csv")
    ds = load_dataset(src)
    recode = {v: ("low" if v < 2 else "high") for v in ds.qi_matrix(["i"]).values[0]}
    classes = ds.frame[["t", "i"]].assign(i=ds.frame["i"].map(recode, na_action="ignore"))
    sup = classes.drop_duplicates().head(5).reset_index(drop=True)
    sup["suppress_t"] = [True, False, True, False, True]
    sup["suppress_i"] = [False, True, True, False, False]
    out = tmp_path / f"r{ext}"
    get_engine(engine).release(src, out, qis=["t", "i"], recodes={"i": recode}, suppress=sup)
    got = load_dataset(out).frame
    expected = classes.copy()
    for _, row in sup.iterrows():
        hit = np.ones(len(expected), bool)
        for q in ("t", "i"):
            hit &= (expected[q].isna() if pd.isna(row[q]) else expected[q] == row[q]).to_numpy()
        for q in ("t", "i"):
            if row[f"suppress_{q}"]:
                expected.loc[hit, q] = np.nan
    assert list(got.columns) == list(df.columns)
    for q in ("t", "i"):
        pd.testing.assert_series_equal(got[q].astype(object).where(got[q].notna(), None),
                                       expected[q].astype(object).where(expected[q].notna(), None),
                                       check_names=False)
    pd.testing.assert_series_equal(got["z"].astype(object), ds.frame["z"].astype(object), check_names=False)


def test_auto_picks_pandas_for_small_files_and_the_embedded_engine_above(tmp_path):
    path = write_csv(random_frame(np.random.default_rng(1), 50), tmp_path / "d.csv")
    assert choose_engine("auto", path) == "pandas"
    assert choose_engine("auto", path, threshold=10) == "duckdb"
    assert choose_engine("auto", tmp_path / "d.sav") == "pandas"
    assert engine_for("polars", path).name == "polars"
    with pytest.raises(InputError, match="Unknown engine"):
        choose_engine("hadoop", path)


def test_memory_limit_parsing():
    assert parse_memory("2GiB") == 2 << 30
    assert parse_memory("512MB") == 512 * 10**6
    assert parse_memory("0.5") == EngineSettings().memory_limit
    for bad in ("lots", "1MB", "nan", "inf", "nanGB", "-1", "0", "-2GB"):  # float() reads nan and inf
        with pytest.raises(InputError):
            parse_memory(bad)


def test_duckdb_spills_under_a_small_memory_limit(tmp_path):
    """A memory limit below what the aggregate needs in memory: DuckDB spills and the table is the same."""
    rng = np.random.default_rng(2)
    n = 200_000
    df = pd.DataFrame({"a": rng.integers(0, 10**6, n).astype(str), "b": rng.integers(0, 50, n).astype(str)})
    path = write_csv(df, tmp_path / "big.csv")
    settings = EngineSettings(memory_limit=64 << 20, threads=1)
    got = get_engine("duckdb").class_table(path, ["a", "b"], settings=settings)
    settings.close()
    assert_same_table(reference(path, ["a", "b"]), got)


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 6)), min_size=1, max_size=40),
       st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), st.booleans())
def test_weighted_quantile_equals_numpy_on_the_repeated_records(pairs, q, fractional):
    """The medians of the risk JSON (per class, weighted by records) equal numpy's on the records."""
    from kanon_core.engines.risk import _weighted_quantile

    values = np.array([v for v, _ in pairs], dtype=np.float64) + (0.25 if fractional else 0.0)
    weights = np.array([w for _, w in pairs], dtype=np.int64)
    expected = np.quantile(np.repeat(values, weights), q, method="lower")
    assert _weighted_quantile(values, weights, q) == expected
