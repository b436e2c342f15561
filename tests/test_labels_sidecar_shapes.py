"""Labels sidecars (``<name>.labels.json``): their shape is checked, and they add to what a file declares itself.

* A sidecar of the wrong shape is refused in one line naming the file's role and the variable, never a code or
  a label: ``"missing_codes": "-9"`` was read character by character ("-" and "9" declared missing, so real
  values became wildcards), a list of value labels or a top-level list gave "unexpected AttributeError". The
  verdict is the same for the in-memory reader and the out-of-core engines, and for the labels a Parquet file
  embeds.
* Next to an SPSS (or Parquet) file, the sidecar's missing codes and value labels are added to the file's own
  (a release written both as ``rel.csv`` and ``rel.sav`` read back ``rel.sav`` without its code for suppressed
  cells, which became a category).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest

from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.engines import get_engine
from kanon_core.errors import InputError
from kanon_core.io import PARQUET_LABELS_KEY, load_dataset, with_sidecar
from tests.stderr_lines import without_progress
from tests.test_engines import assert_same_table, reference

EMBEDDED = ["duckdb", "polars"]


def _files(tmp_path: Path, data: str, sidecar: object | str) -> Path:
    path = tmp_path / "n.csv"
    path.write_text(data, encoding="utf-8")
    text = sidecar if isinstance(sidecar, str) else json.dumps(sidecar)
    (tmp_path / "n.labels.json").write_text(text, encoding="utf-8")
    return path


DATA = "a,b\n-9,1\n9,1\n9,2\n5,1\n5,1\n"

MALFORMED = {
    "missing codes as one text": ({"a": {"missing_codes": "-9"}}, "a list"),
    "missing codes as text NA": ({"a": {"missing_codes": "NA"}}, "a list"),
    "missing codes as a number": ({"a": {"missing_codes": -9}}, "a list"),
    "missing codes as an object": ({"a": {"missing_codes": {"-9": "dk"}}}, "a list"),
    "a missing code as an object": ({"a": {"missing_codes": [{"-9": 1}]}}, "a text or a number"),
    "a missing code as a list": ({"a": {"missing_codes": [["-9"]]}}, "a text or a number"),
    "a missing code as true": ({"a": {"missing_codes": [True]}}, "a text or a number"),
    "value labels as a list": ({"a": {"value_labels": ["x"]}}, "value_labels"),
    "value labels as a text": ({"a": {"value_labels": "9=nine"}}, "value_labels"),
    "a value label as an object": ({"a": {"value_labels": {"9": {"en": "nine"}}}}, "value label must be a text"),
    "a label as a number": ({"a": {"label": 9}}, '"label" must be a text'),
    "an entry as a list": ({"a": ["-9"]}, "must be given an object"),
    "an entry as a text": ({"a": "-9"}, "must be given an object"),
    "a variable the file does not have": ({"zzz": {"missing_codes": "-9"}}, "a list"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_sidecar_is_refused_naming_the_file_and_the_variable(tmp_path, case):
    spec, words = MALFORMED[case]
    path = _files(tmp_path, DATA, spec)
    with pytest.raises(InputError) as exc:
        load_dataset(path)
    message = str(exc.value)
    var = next(iter(spec))
    assert "\n" not in message and words in message
    assert "The labels file n.labels.json" in message and f"variable '{var}'" in message
    for value in ("-9", "NA", "nine", "9=", "dk"):  # codes and labels can be values of the data
        assert value not in message


@pytest.mark.parametrize("top", ["[1, 2]", '"a"', "3", "null"])
def test_a_sidecar_that_is_not_an_object_is_refused(tmp_path, top):
    path = _files(tmp_path, DATA, top)
    with pytest.raises(InputError, match=r"^The labels file n\.labels\.json must be a JSON object"):
        load_dataset(path)


@pytest.mark.parametrize("engine", ["pandas", *EMBEDDED])
def test_every_reader_refuses_a_missing_code_text_with_exit_2_and_one_line(tmp_path, capsys, engine):
    path = _files(tmp_path, "a,b\nNA,1\nN,1\nA,1\nx,2\nx,2\n", {"a": {"missing_codes": "NA"}})
    code = main(["risk", str(path), "--qi", "a,b", "--k", "2", "--engine", engine])
    err = without_progress(capsys.readouterr().err)
    assert code == 2 and len(err) == 1
    assert "must be a list of codes" in err[0] and "variable 'a'" in err[0] and "NA" not in err[0]


@pytest.mark.parametrize("engine", EMBEDDED)
def test_engines_check_entries_of_columns_they_do_not_read(tmp_path, engine):
    path = _files(tmp_path, DATA, {"b": {"value_labels": ["x"]}})
    with pytest.raises(InputError, match="variable 'b'"):
        get_engine(engine).class_table(path, ["a"])
    with pytest.raises(InputError, match="variable 'b'"):
        load_dataset(path)


def test_well_formed_sidecar_declares_each_listed_code_once(tmp_path):
    """The list form declares "-9" alone; JSON numbers and null are read too."""
    ds = load_dataset(_files(tmp_path, DATA, {"a": {"missing_codes": ["-9"], "label": None, "value_labels": None},
                                              "b": {"missing_codes": [2]}}))
    assert ds.meta_of("a").missing_codes == (-9,)
    assert ds.missing_mask("a").tolist() == [True, False, False, False, False]
    assert ds.missing_mask("b").tolist() == [False, False, True, False, False]
    assert load_dataset(_files(tmp_path, DATA, {"a": {"missing_codes": None}})).meta_of("a").missing_codes == ()


def test_embedded_parquet_labels_of_a_wrong_shape_are_refused_by_every_reader(tmp_path):
    table = pa.table({"a": [1, 2, 2], "b": ["x", "y", "y"]})
    spec = {"a": {"missing_codes": "12"}}
    table = table.replace_schema_metadata({PARQUET_LABELS_KEY: json.dumps(spec).encode()})
    path = tmp_path / "e.parquet"
    pq.write_table(table, path)
    with pytest.raises(InputError, match=r"^The labels embedded in the Parquet file: variable 'a'.*a list"):
        load_dataset(path)
    for engine in EMBEDDED:
        with pytest.raises(InputError, match=r"^The labels embedded in the Parquet file: variable 'a'"):
            get_engine(engine).class_table(path, ["a", "b"])


# -- a sidecar adds to what the file declares ------------------------------------------------------------------
def _sav_with_user_missing(path: Path) -> Path:
    frame = pd.DataFrame({"a": [1.0, 2.0, -99.0, -8.0, 1.0, 2.0], "b": [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]})
    pyreadstat.write_sav(frame, str(path), column_labels=["Aa", "Bb"],
                         variable_value_labels={"a": {1.0: "one", -99.0: "Suppressed"}},
                         missing_ranges={"a": [-99.0]})
    return path


def test_a_sidecar_next_to_a_sav_adds_codes_and_labels_to_the_files_own(tmp_path):
    path = _sav_with_user_missing(tmp_path / "s.sav")
    (tmp_path / "s.labels.json").write_text(json.dumps(
        {"a": {"value_labels": {"1": "uno", "2": "two"}, "missing_codes": ["-8"]}, "b": {"label": "Side"}}))
    ds = load_dataset(path)
    a = ds.meta_of("a")
    assert a.missing_codes == (-99, -8)  # the file's code first, the sidecar's added
    assert dict(a.value_labels) == {1: "uno", -99: "Suppressed", 2: "two"}  # the sidecar's text on a conflict
    assert a.label == "Aa"  # the sidecar gives none: the file's is kept
    assert ds.meta_of("b").label == "Side"
    assert ds.missing_mask("a").tolist() == [False, False, True, True, False, False]


def test_with_sidecar_keeps_the_files_float_style_and_leaves_other_columns():
    own = {"a": VariableMeta(label="A", missing_codes=(-9,), float_style="plain"), "c": VariableMeta(label="C")}
    side = {"a": VariableMeta(missing_codes=(-9, -8), value_labels={1: "x"})}
    merged = with_sidecar(own, side)
    assert merged["a"] == VariableMeta(label="A", value_labels={1: "x"}, missing_codes=(-9, -8), float_style="plain")
    assert merged["c"] is own["c"]


def test_a_release_written_as_csv_and_sav_reads_back_the_same(tmp_path):
    """The review's case: ``rel.csv`` writes ``rel.labels.json``, which then sits next to ``rel.sav``."""
    from kanon_core.export import write_release

    rng = np.random.default_rng(3)
    n = 60
    frame = pd.DataFrame({"a": pd.array(rng.integers(1, 4, n), dtype="Int64"), "b": rng.integers(1, 3, n)})
    meta = {"a": VariableMeta(label="A", value_labels={1: "one", 2: "two", 3: "three"})}
    original = Dataset(frame=frame, meta=meta, roles=Roles(qis=("a", "b")), name="rel")
    treated_frame = frame.copy()
    treated_frame.loc[[0, 5, 9], "a"] = pd.NA
    treated = Dataset(frame=treated_frame, meta=meta, roles=Roles(qis=("a", "b")), name="rel")
    write_release(treated, tmp_path / "rel.sav", original)
    write_release(treated, tmp_path / "rel.csv", original)
    assert json.loads((tmp_path / "rel.labels.json").read_text())["a"]["value_labels"]
    for name in ("rel.sav", "rel.csv"):
        back = load_dataset(tmp_path / name)
        assert back.missing_mask("a").tolist() == treated.missing_mask("a").tolist(), name
        assert back.qi_matrix(["a", "b"]).codes.tolist() == treated.qi_matrix(["a", "b"]).codes.tolist(), name


@pytest.mark.parametrize("engine", EMBEDDED)
def test_a_sidecar_adds_to_the_labels_a_parquet_file_embeds_for_every_reader(tmp_path, engine):
    table = pa.table({"a": [1, 2, -9, -8, 2, 1, 1], "b": ["x", "y", "y", "x", "x", "y", "x"]})
    embedded = {"a": {"missing_codes": ["-9"], "value_labels": {"1": "one"}}}
    table = table.replace_schema_metadata({PARQUET_LABELS_KEY: json.dumps(embedded).encode()})
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    (tmp_path / "p.labels.json").write_text(json.dumps({"a": {"missing_codes": ["-8"], "value_labels": {"2": "two"}}}))
    ds = load_dataset(path)
    assert ds.meta_of("a").missing_codes == (-9, -8)
    assert dict(ds.meta_of("a").value_labels) == {1: "one", 2: "two"}
    got = get_engine(engine).class_table(path, ["a", "b"])
    assert -9 not in got.values[0] and -8 not in got.values[0]
    assert_same_table(reference(path, ["a", "b"]), got)
