"""Readers and writers: formats, delimiters, labels, and clear errors on bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.export import ExportOptions, write_release
from kanon_core.io import load_dataset, read_table


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_csv_delimiter_is_sniffed(tmp_path, sep):
    p = _write(tmp_path, "d.csv", sep.join(["a", "b", "c"]) + "\n" + "\n".join(sep.join(["1", "x", "2.5"]) for _ in range(5)))
    t = read_table(p)
    assert list(t.frame.columns) == ["a", "b", "c"]
    assert t.frame.shape == (5, 3)


def test_semicolon_file_with_commas_in_values(tmp_path):
    p = _write(tmp_path, "d.csv", "name;amount\nA, B;1\nC, D;2\n")
    assert read_table(p).frame["amount"].tolist() == [1, 2]


def test_unicode_column_names_and_values(tmp_path):
    p = _write(tmp_path, "ü.csv", "Geschlecht;Région;年齢\nmännlich;Île-de-France;30\nweiblich;Québec;31\n")
    ds = load_dataset(p, roles=Roles(qis=("Geschlecht", "Région", "年齢")))
    assert ds.qi_matrix().n_qis == 3
    assert ds.qi_matrix().labels[0] == ("männlich", "weiblich")


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("empty.csv", b"", "empty"),
        ("blank.csv", b"   \n\n", "empty"),
        ("header_only.csv", b"a,b\n", "0 rows"),
        ("dup.csv", b"a,b,a\n1,2,3\n", "Duplicated column names"),
        ("data.pdf", b"%PDF-1.4", "Unsupported file type"),
        ("bin.csv", b"\x00\x01\x02\x03abc\x00", "binary"),
        ("bad.parquet", b"not parquet at all", "Could not read the file as Parquet"),
        ("bad.sav", b"not spss", "Could not read the file as SPSS"),
    ],
)
def test_bad_files_give_clear_errors(tmp_path, name, content, message):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_table(p)
    with pytest.raises(InputError, match=message):
        read_table(content, filename=name)


def test_error_messages_never_contain_cell_values(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("id,w\n1,SECRETVALUE\n2,3\n")
    ds = load_dataset(p)
    with pytest.raises(InputError) as exc:
        ds.with_roles(Roles(weight="w")).weights()
    assert "SECRETVALUE" not in str(exc.value)


@pytest.mark.parametrize(
    "values,message",
    [(["a", "1"], "non-numeric"), (["-1", "2"], "zero or negative"), (["0", "2"], "zero or negative"),
     (["", "2"], "missing")],
)
def test_weight_validation(tmp_path, values, message):
    p = tmp_path / "w.csv"
    p.write_text("id,w\n" + "\n".join(f"{i},{v}" for i, v in enumerate(values)) + "\n")
    ds = load_dataset(p)
    with pytest.raises(InputError, match=message):
        ds.with_roles(Roles(weight="w")).weights()


def test_all_missing_qi_is_encoded_as_missing(tmp_path):
    p = _write(tmp_path, "m.csv", "a,b\n1,\n2,\n")
    qm = load_dataset(p).qi_matrix(["a", "b"])
    assert (qm.codes[:, 1] == -1).all() and qm.values[1] == ()


def _labelled_dataset() -> Dataset:
    frame = pd.DataFrame({"sex": pd.array([1, 2, 1, None], dtype="Int64"), "age": [30.0, 41.0, 52.0, 60.0],
                          "w": [1.5, 2.0, 1.0, 3.0]})
    meta = {"sex": VariableMeta(label="Sex", value_labels={1: "Male", 2: "Female"})}
    return Dataset(frame=frame, meta=meta, roles=Roles(qis=("sex", "age"), weight="w"))


@pytest.mark.parametrize("ext", [".sav", ".dta"])
def test_spss_stata_round_trip_keeps_labels_and_declares_suppressed(tmp_path, ext):
    original = _labelled_dataset()
    frame = original.frame.copy()
    frame.loc[0, "sex"] = pd.NA  # a suppressed cell (record 4's was missing in the original)
    path = write_release(original.with_frame(frame), tmp_path / f"out{ext}", original,
                         ExportOptions(suppressed_code=-99))[0]
    back = load_dataset(path)
    assert back.meta_of("sex").value_labels[1] == "Male"
    assert back.meta_of("sex").label == "Sex"
    # SPSS: the code -99, declared user-missing; Stata: its extended missing value .a
    assert "Suppressed (disclosure control)" in back.meta_of("sex").value_labels.values()
    if ext == ".sav":  # SPSS keeps the user-missing declaration: the code reads back as missing
        assert back.missing_mask("sex").tolist() == [True, False, False, True]


@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_plain_formats_round_trip(tmp_path, ext):
    ds = _labelled_dataset()
    back = load_dataset(write_release(ds, tmp_path / f"out{ext}", ds)[0])
    assert back.n_records == 4
    np.testing.assert_array_equal(back.qi_matrix(["sex"]).codes[:, 0], ds.qi_matrix(["sex"]).codes[:, 0])


def test_sidecar_labels_are_read(tmp_path):
    _write(tmp_path, "d.csv", "x,y\n1,a\n2,b\n")
    _write(tmp_path, "d.labels.json", '{"x": {"label": "Ex", "value_labels": {"1": "one"}, "missing_codes": ["9"]}}')
    ds = load_dataset(tmp_path / "d.csv")
    assert ds.meta_of("x").label == "Ex" and ds.value_label("x", 1) == "one"
    assert ds.meta_of("x").missing_codes == (9,)


def test_declared_missing_codes_become_missing(tmp_path):
    p = _write(tmp_path, "d.csv", "x\n1\n-9\n2\n")
    ds = load_dataset(p, missing_codes={"x": (-9,)})
    assert ds.qi_matrix(["x"]).codes[:, 0].tolist() == [0, -1, 1]


def test_sample_data_shape():
    from kanon_app.samples import ELS_QIS, load_sample

    ds = load_sample("els")
    assert ds.n_records == 16197 and len(ELS_QIS) == 19
    qm = ds.qi_matrix()
    assert int((~qm.missing_mask.any(axis=1)).sum()) == 11204
    assert list(qm.cardinalities) == [2, 7, 6, 5, 7, 6, 5, 9, 8, 8, 8, 8, 17, 17, 13, 3, 3, 4, 6]
    assert (ds.weights() > 0).all()
    # school-level variables are constant within a school (PSU)
    assert (ds.frame.groupby("SCH_ID")[["BYSCTRL", "BYURBAN", "BYREGION"]].nunique() == 1).all().all()


def test_parquet_export_carries_its_labels(tmp_path):
    from kanon_app.samples import load_sample
    from kanon_core.export import export_bytes
    from kanon_core.io import load_dataset

    ds = load_sample("els")
    out = tmp_path / "release.parquet"
    out.write_bytes(export_bytes(ds, "parquet").data)
    back = load_dataset(out)  # no sidecar next to it: the labels come from the file itself
    assert back.meta_of("BYSEX").value_labels == ds.meta_of("BYSEX").value_labels
    assert back.meta_of("BYRACE").label == ds.meta_of("BYRACE").label
