"""Releases in CSV, Parquet, Stata and SPSS: round trips through kanon_core.io, labels, suppressed cells
as declared missing codes, direct identifiers dropped, and byte-for-byte determinism."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pyreadstat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.export import (
    FORMATS,
    LABELS_METADATA_KEY,
    STATA_SUPPRESSED,
    SUPPRESSED_LABEL,
    ExportOptions,
    export_bytes,
    labels_file,
    release,
    stat_names,
    suppressed_mask,
    write_release,
)
from kanon_core.io import FIXED_DTA_TIMESTAMP, FIXED_SAV_DATE, FIXED_SAV_TIME, load_dataset

EXTS = [f.ext for f in FORMATS.values()]


def _pair() -> tuple[Dataset, Dataset]:
    """An original and a treated version: suppressed cells (0, sex), (1, region), (2, code9)."""
    frame = pd.DataFrame({
        "id": np.arange(101, 107, dtype=np.int64),
        "sex": pd.array([1, 2, 1, 2, None, 1], dtype="Int64"),
        "region": ["North", "South", "North", "East", "South", None],
        "code9": pd.array([1, -9, 2, 2, 1, 1], dtype="Int64"),
        "age": [30.5, 41.0, 52.25, 60.0, 22.0, np.nan],
        "w": [1.5, 2.0, 1.0, 3.0, 2.5, 1.25],
    })
    meta = {
        "sex": VariableMeta(label="Sex", value_labels={1: "Male", 2: "Female"}),
        "region": VariableMeta(label="Region of school"),
        "code9": VariableMeta(label="Has a job", value_labels={1: "Yes", 2: "No", -9: "Don't know"},
                              missing_codes=(-9,)),
        "age": VariableMeta(label="Age in years"),
    }
    roles = Roles(qis=("sex", "region", "code9"), weight="w", direct_ids=("id",))
    original = Dataset(frame=frame, meta=meta, roles=roles, name="toy")
    t = frame.copy()
    t["sex"] = t["sex"].mask(pd.Series([True, False, False, False, False, False]))
    t["region"] = t["region"].astype(object)
    t.loc[1, "region"] = None
    t["code9"] = t["code9"].mask(pd.Series([False, False, True, False, False, False]))
    treated = original.with_frame(t)
    return original, treated


def _write(tmp_path, ext, options=None):
    options = options or ExportOptions()
    original, treated = _pair()
    path = tmp_path / f"rel{ext}"
    written = write_release(treated, path, original, options)
    return original, treated, path, written


def test_suppressed_cells_are_told_apart_from_original_missing():
    original, treated = _pair()
    assert suppressed_mask(original, treated, "sex").tolist() == [True, False, False, False, False, False]
    assert suppressed_mask(original, treated, "region").tolist() == [False, True, False, False, False, False]
    # -9 is a declared missing code: missing in both versions, so not suppressed
    assert suppressed_mask(original, treated, "code9").tolist() == [False, False, True, False, False, False]
    rel = release(treated, original)
    assert "id" not in rel.frame.columns
    assert rel.suppressed_counts() == {"sex": 1, "region": 1, "code9": 1}
    assert rel.n_suppressed == 3


@pytest.mark.parametrize("ext", EXTS)
def test_round_trip_values_labels_and_missing(tmp_path, ext):
    original, treated, path, written = _write(tmp_path, ext)
    back = load_dataset(path)
    rel = release(treated, original)
    assert back.columns == list(rel.frame.columns)  # direct identifier dropped, order kept
    for col in back.columns:
        # every missing cell stays missing: suppressed, missing in the original, declared codes (Stata
        # strings have no missing value: they are empty strings there, and an empty cell is missing)
        np.testing.assert_array_equal(back.missing_mask(col), treated.missing_mask(col), err_msg=f"{ext} {col}")
        obs = ~treated.missing_mask(col)
        got, want = back.frame[col].to_numpy(dtype=object)[obs], treated.frame[col].to_numpy(dtype=object)[obs]
        if col == "region":
            assert [str(x) for x in got] == [str(x) for x in want]
        else:
            np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float))
    assert back.meta_of("sex").label == "Sex"
    assert back.meta_of("age").label == "Age in years"
    assert back.value_label("sex", 1) == "Male" and back.value_label("sex", 2) == "Female"
    assert back.value_label("code9", 2) == "No"
    if ext in (".csv", ".parquet"):
        assert [p.name for p in written] == [path.name, "rel.labels.json"]
        assert back.meta_of("code9").missing_codes == (-9,)


def test_spss_declares_suppressed_code_as_user_missing(tmp_path):
    _, _, path, _ = _write(tmp_path, ".sav", ExportOptions(suppressed_code=-77))
    frame, meta = pyreadstat.read_sav(str(path), user_missing=True)
    assert frame["sex"].tolist()[0] == -77
    assert pd.isna(frame["sex"].tolist()[4])  # missing in the original: system-missing, not the code
    assert frame["region"].tolist()[1] == "-77" and frame["region"].tolist()[5] == ""
    assert frame["code9"].tolist()[1] == -9 and frame["code9"].tolist()[2] == -77
    ranges = {c: sorted(r["lo"] for r in rs) for c, rs in meta.missing_ranges.items()}
    assert ranges == {"sex": [-77], "region": ["", "-77"], "code9": [-77, -9]}
    labels = meta.value_labels[meta.variable_to_label["sex"]]
    assert labels[-77] == SUPPRESSED_LABEL and labels[1] == "Male"
    back = load_dataset(path)
    assert back.missing_mask("sex").tolist() == [True, False, False, False, True, False]


def test_stata_writes_suppressed_as_extended_missing_a(tmp_path):
    _, _, path, _ = _write(tmp_path, ".dta")
    frame, meta = pyreadstat.read_dta(str(path), user_missing=True)
    sex = frame["sex"].tolist()
    assert sex[0] == STATA_SUPPRESSED and pd.isna(sex[4]) and sex[1] == 2
    code9 = frame["code9"].tolist()
    assert code9[2] == STATA_SUPPRESSED and code9[1] == "b"  # the declared code -9 is .b
    labels = meta.value_labels[meta.variable_to_label["code9"]]
    assert labels["a"] == SUPPRESSED_LABEL and labels["b"] == "Don't know" and labels[1] == "Yes"
    assert frame["region"].tolist()[1] == ""  # Stata strings have no missing codes: empty


def test_csv_suppressed_empty_by_default_or_declared_code(tmp_path):
    _, _, path, _ = _write(tmp_path, ".csv")
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "sex,region,code9,age,w"
    assert lines[1].startswith(",North,1,30.5,")  # suppressed sex: empty
    (tmp_path / "coded").mkdir()
    _, _, path2, written = _write(tmp_path / "coded", ".csv", ExportOptions(csv_code=True))
    lines = path2.read_text(encoding="utf-8").split("\n")
    assert lines[1].startswith("-99,North,1,")
    assert lines[2].startswith("2,-99,-9,")
    spec = json.loads(written[1].read_text(encoding="utf-8"))
    assert spec["sex"]["missing_codes"] == ["-99"] and spec["sex"]["value_labels"]["-99"] == SUPPRESSED_LABEL
    assert spec["code9"]["missing_codes"] == ["-9", "-99"]
    back = load_dataset(path2)
    assert back.missing_mask("sex").tolist() == [True, False, False, False, True, False]
    assert back.missing_mask("region").tolist() == [False, True, False, False, False, True]


def test_parquet_nulls_and_labels_in_metadata(tmp_path):
    _, _, path, _ = _write(tmp_path, ".parquet")
    table = pq.read_table(path)
    assert table.column("sex").to_pylist()[0] is None
    spec = json.loads(table.schema.metadata[LABELS_METADATA_KEY.encode()])
    assert spec["sex"]["value_labels"] == {"1": "Male", "2": "Female"}


@pytest.mark.parametrize("ext", EXTS)
def test_writers_are_deterministic(tmp_path, ext, monkeypatch):
    original, treated = _pair()
    a = export_bytes(treated, ext, original).data
    # a different clock must not change the bytes (SPSS/Stata stamp the creation time)
    import time as _time

    real = _time.time
    monkeypatch.setattr(_time, "time", lambda: real() + 86400 * 400 + 3671)
    b = export_bytes(treated, ext, original).data
    assert a == b
    if ext == ".sav":
        assert a[92:109] == FIXED_SAV_DATE + FIXED_SAV_TIME
    if ext == ".dta":
        assert FIXED_DTA_TIMESTAMP in a[:300]


def test_spss_and_stata_timestamps_are_fixed_even_minutes_apart(tmp_path):
    """ReadStat stamps the clock: the fixed epoch replaces it (checked on the header's bytes)."""
    original, treated = _pair()
    sav = export_bytes(treated, "sav", original).data
    dta = export_bytes(treated, "dta", original).data
    assert sav[92:101] == b"01 Jan 70" and sav[101:109] == b"00:00:00"
    at = dta.find(b"<timestamp>")
    assert dta[at + 11] == 17 and dta[at + 12:at + 29] == b"01 Jan 1970 00:00"


@pytest.mark.parametrize("code", [1, 2])
def test_code_that_is_a_value_is_refused(code):
    original, treated = _pair()
    with pytest.raises(InputError, match=f"code for suppressed cells \\({code}\\) is also a value of sex"):
        export_bytes(treated, "sav", original, ExportOptions(suppressed_code=code))
    # Stata and Parquet do not use the code
    export_bytes(treated, "dta", original, ExportOptions(suppressed_code=code))
    export_bytes(treated, "parquet", original, ExportOptions(suppressed_code=code))


def test_bad_options_and_formats():
    with pytest.raises(InputError, match="whole number"):
        ExportOptions(suppressed_code=1.5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="at most 8"):
        ExportOptions(suppressed_code=-123456789)
    original, treated = _pair()
    with pytest.raises(InputError, match="Cannot export"):
        export_bytes(treated, "xlsx", original)


def test_invalid_names_are_made_valid_and_reported(tmp_path):
    frame = pd.DataFrame({"marital-status": [1, 2, 1], "1st": [3, 4, 5], "marital_status": [1, 1, 2],
                          "in": [0, 1, 0]})
    ds = Dataset(frame=frame, roles=Roles(qis=("marital-status",)))
    names = stat_names(list(frame.columns), "dta")
    assert names == {"marital-status": "marital_status", "1st": "v1st", "marital_status": "marital_status_2",
                     "in": "in_v"}
    out = export_bytes(ds, "dta")
    assert any("marital-status is named marital_status" in n for n in out.notes)
    p = tmp_path / "n.dta"
    p.write_bytes(out.data)
    assert load_dataset(p).columns == ["marital_status", "v1st", "marital_status_2", "in_v"]
    assert stat_names(["a" * 70], "sav") == {"a" * 70: "a" * 64}


def test_labels_file_name_matches_the_data_file():
    original, treated = _pair()
    lf = labels_file(treated, "csv", original, stem="toy_v3")
    assert lf is not None and lf.name == "toy_v3.labels.json"
    assert export_bytes(treated, "csv", original, stem="toy_v3").name == "toy_v3.csv"
    plain = Dataset(frame=pd.DataFrame({"a": [1, 2]}))
    assert labels_file(plain) is None


# -- property: any small release survives every format -------------------------------------------------------
@st.composite
def releases(draw):
    n = draw(st.integers(3, 12))
    a = draw(st.lists(st.sampled_from([1, 2, 3, None]), min_size=n, max_size=n))
    b = draw(st.lists(st.sampled_from(["x", "y", "zé", None]), min_size=n, max_size=n))
    c = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=n, max_size=n))
    sup_a = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    sup_b = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    frame = pd.DataFrame({"a": pd.array(a, dtype="Int64"), "b": pd.Series(b, dtype=object), "c": c})
    meta = {"a": VariableMeta(label="A", value_labels={1: "one", 2: "two", 3: "three"})}
    original = Dataset(frame=frame, meta=meta, roles=Roles(qis=("a", "b")))
    t = frame.copy()
    t["a"] = t["a"].mask(pd.Series(sup_a))
    t["b"] = t["b"].mask(pd.Series(sup_b))
    return original, original.with_frame(t)


@given(releases(), st.sampled_from(EXTS))
def test_any_release_round_trips(tmp_path_factory, pair, ext):
    original, treated = pair
    d = tmp_path_factory.mktemp("rt")
    path = d / f"r{ext}"
    write_release(treated, path, original)
    back = load_dataset(path)
    for col in ("a", "b", "c"):  # (Stata strings: missing is the empty string, read back as missing)
        np.testing.assert_array_equal(back.missing_mask(col), treated.missing_mask(col))
    obs = ~treated.missing_mask("a")
    np.testing.assert_array_equal(back.frame["a"].to_numpy(dtype=object)[obs].astype(float),
                                  treated.frame["a"].to_numpy(dtype=object)[obs].astype(float))
    obs_b = ~treated.missing_mask("b")
    assert [str(x) for x in back.frame["b"][obs_b]] == [str(x) for x in treated.frame["b"][obs_b]]
    np.testing.assert_allclose(back.frame["c"].to_numpy(float), treated.frame["c"].to_numpy(float), rtol=1e-6)
    if obs.any():
        v = int(treated.frame["a"][obs].iloc[0])
        assert back.value_label("a", v) == {1: "one", 2: "two", 3: "three"}[v]
    assert export_bytes(treated, ext, original).data == export_bytes(treated, ext, original).data


@pytest.mark.parametrize("fmt", ["dta", "sav"])
@pytest.mark.parametrize("dtype", ["int64", "Int64", "object"])
def test_whole_numbers_a_double_would_round_are_refused_for_stata_and_spss(fmt, dtype):
    """SPSS and Stata store numbers as doubles: 9007199254740993 came back as ...992, two long codes made one,
    with no word. Refused, naming the variable and no value; 2^53 itself and the text formats are fine."""
    big = 2 ** 53 + 1
    ds = Dataset(frame=pd.DataFrame({"id": pd.Series([big, 5, -big, 7], dtype=dtype), "v": [1, 1, 2, 2]}))
    with pytest.raises(InputError) as err:
        export_bytes(ds, fmt)
    assert "Variable id has 2 whole number(s) too long" in str(err.value) and str(big)[:6] not in str(err.value)
    exact = ds.with_frame(ds.frame.assign(id=pd.Series([2 ** 53, 5, -(2 ** 53), 7], dtype=dtype)))
    assert export_bytes(exact, fmt).data
    for text_fmt in ("csv", "parquet"):
        assert export_bytes(ds, text_fmt).data


def test_a_text_missing_code_is_refused_for_stata_in_words():
    """Stata's missing values are numbers: a declared text code (NA) would be released as an ordinary value, so
    the read-back check refused it calling it a fault of kanon's. Refused up front, naming the variable and the
    formats that can declare it; SPSS declares it."""
    frame = pd.DataFrame({"c": ["NA", "NA", "FR", "FR"], "s": ["m", "m", "f", "f"]})
    ds = Dataset(frame=frame, meta={"c": VariableMeta(missing_codes=("NA",))})
    with pytest.raises(InputError, match=r"^Variable c is text with a declared missing code in its cells, which "
                                         r"Stata cannot declare"):
        export_bytes(ds, "dta")
    assert export_bytes(ds, "sav").data
