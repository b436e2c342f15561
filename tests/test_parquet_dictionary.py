"""A Parquet column stored dictionary-encoded holds the same values as one stored plainly, and every reader
reads it so: the in-memory reader used to keep an empty text cell there as a category "" (pandas makes such a
column categorical) where it reads it as missing in a plain column, in CSV and on the engines; and Polars'
class table failed on it with an OverflowError (its indices are unsigned)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.engines import get_engine
from kanon_core.io import load_dataset
from tests.test_engines import assert_same_table, reference

TEXTS = st.sampled_from(["a", "", " ", "NA", "02138", " 7", "x y", None])
NUMBERS = st.sampled_from([0, 1, -5, 7, 2**40, None])


def write(path, columns: dict[str, pa.Array], dictionary: bool) -> None:
    pq.write_table(pa.table({n: a.dictionary_encode() if dictionary else a for n, a in columns.items()}), path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=8), data=st.data())
def test_a_dictionary_column_reads_as_the_same_column_stored_plainly(tmp_path, texts, data):
    numbers = data.draw(st.lists(NUMBERS, min_size=len(texts), max_size=len(texts)))
    columns = {"t": pa.array(texts, pa.string()), "n": pa.array(numbers, pa.int64())}
    plain, encoded = tmp_path / "plain.parquet", tmp_path / "encoded.parquet"
    write(plain, columns, dictionary=False)
    write(encoded, columns, dictionary=True)
    ref = reference(plain, ["t", "n"])
    assert_same_table(ref, reference(encoded, ["t", "n"]))
    for engine in ("duckdb", "polars"):
        assert_same_table(ref, get_engine(engine).class_table(encoded, ["t", "n"]))


def test_an_empty_text_cell_is_missing_in_a_dictionary_column(tmp_path, capsys):
    path = tmp_path / "encoded.parquet"
    write(path, {"region": pa.array(["north", "", None, "south"], pa.string())}, dictionary=True)
    ds = load_dataset(path)
    assert ds.frame["region"].isna().tolist() == [False, True, True, False]
    for engine in ("pandas", "duckdb", "polars"):
        assert main(["risk", str(path), "--qi", "region", "--engine", engine]) == 0, engine
    capsys.readouterr()


@pytest.mark.parametrize("values", [["a", None, ""], ["", " 7"]])
def test_polars_reads_a_dictionary_column_with_missing_cells(tmp_path, values):
    path = tmp_path / "encoded.parquet"
    write(path, {"c0": pa.array(values, pa.string())}, dictionary=True)
    assert_same_table(reference(path, ["c0"]), get_engine("polars").class_table(path, ["c0"]))
