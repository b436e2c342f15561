"""The out-of-core engines read a CSV file as the default reader does, or refuse it as it does.

Each test runs the engine path (``--engine duckdb|polars`` on the command line, or an engine's class table,
summary and release) on a small file and compares it with the default in-memory reader: a record with
text beyond the header's fields and a file without records are refused in one line that quotes no cell
(empty fields beyond the header are dropped by all);
quoted cells holding line breaks, delimiters and quotes are read, with any of the sniffed delimiters.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.engines import get_engine
from kanon_core.errors import InputError
from kanon_core.io import load_dataset
from tests.stderr_lines import without_progress
from tests.test_engines import assert_same_table, reference

EMBEDDED = ["duckdb", "polars"]


def run(capsys, *args: str) -> tuple[int, str]:
    """The exit status of ``kanon ARGS`` and its standard error without the engines' progress lines."""
    code = main(list(args))
    return code, "\n".join(without_progress(capsys.readouterr().err))


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def record_number(message: str) -> int:
    found = re.search(r"Record (\d+) \(line (\d+) ", message)
    assert found is not None, message
    assert int(found.group(2)) == int(found.group(1)) + 1
    return int(found.group(1))


# -- a record with more fields than the header --------------------------------------------------------------
LONG_RECORDS = {
    # the extra field in the middle of the file, on a record that is not the last
    "middle": "sex,age,region\nm,30,north\nf,40,south,Atlantis\nm,30,north\nf,22,east\n",
    # several extra fields on the first record
    "first": "sex,age,region\nm,30,north,Atlantis,Lemuria,Mu\nf,40,south\n",
    # after a quoted cell with a line break: the record number, not the physical line, is given
    "after a line break": 'sex,age,region\nm,30,"north\nwest"\nf,22,east\nf,40,south,Atlantis\nm,30,north\n',
}


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("case", list(LONG_RECORDS))
def test_a_record_with_an_extra_field_is_refused_like_the_reader_does(tmp_path, capsys, engine, case):
    path = write(tmp_path, "ragged.csv", LONG_RECORDS[case])
    ref_code, ref_err = run(capsys, "risk", str(path), "--qi", "sex", "--engine", "pandas")
    code, err = run(capsys, "risk", str(path), "--qi", "sex", "--engine", engine)
    assert ref_code == code == 2
    assert len(err.splitlines()) == 1 and "more fields than the header" in err
    assert record_number(err) == record_number(ref_err)
    for cell in ("Atlantis", "south", "north", "40"):  # the record's cells are never quoted
        assert cell not in err


@pytest.mark.parametrize("engine", EMBEDDED)
def test_every_read_of_the_engine_refuses_the_extra_field(tmp_path, engine):
    path = write(tmp_path, "ragged.csv", LONG_RECORDS["middle"])
    e = get_engine(engine)
    reads = {
        "class table": lambda: e.class_table(path, ["sex"]),
        "summary": lambda: e.summary(path),
        "release": lambda: e.release(path, tmp_path / "release.csv"),
    }
    for what, read in reads.items():
        with pytest.raises(InputError, match=r"Record 2 \(line 3 .*more fields") as err:
            read()
        assert "\n" not in str(err.value) and "Atlantis" not in str(err.value), what


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["m", "f", ""]), st.sampled_from(["30", "40", ""]),
                          st.integers(0, 2), st.booleans()), min_size=1, max_size=8))
def test_fields_beyond_the_header_are_read_alike_by_every_reader(tmp_path, records):
    """Records ending in zero to two delimiters, some with text after them: each engine reads the file as the
    reader does (empty fields beyond the header dropped), or refuses the same record."""
    text = "sex,age\n" + "".join(f"{s},{a}" + "," * extra + ("x" if extra and text_after else "") + "\n"
                                   for s, a, extra, text_after in records)
    path = write(tmp_path, "extra.csv", text)
    try:
        ref = reference(path, ["sex", "age"])
    except InputError as exc:
        for engine in EMBEDDED:
            with pytest.raises(InputError) as err:
                get_engine(engine).class_table(path, ["sex", "age"])
            assert record_number(str(err.value)) == record_number(str(exc)), engine
        return
    for engine in EMBEDDED:
        assert_same_table(ref, get_engine(engine).class_table(path, ["sex", "age"]))


# -- a file without records ---------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("content", ["sex,age\n", "sex,age", "sex,age\r\n", "sex;age\n"])
def test_a_header_without_records_is_refused_in_the_readers_words(tmp_path, capsys, engine, content):
    path = write(tmp_path, "empty.csv", content)
    ref_code, ref_err = run(capsys, "risk", str(path), "--qi", "sex", "--engine", "pandas")
    code, err = run(capsys, "risk", str(path), "--qi", "sex", "--engine", engine)
    assert ref_code == code == 2
    assert err == ref_err and len(err.splitlines()) == 1 and "no records" in err


@pytest.mark.parametrize("engine", EMBEDDED)
def test_no_read_of_the_engine_accepts_a_file_without_records(tmp_path, engine):
    csv_path = write(tmp_path, "empty.csv", "sex,age\n")
    parquet_path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"sex": pa.array([], pa.string()), "age": pa.array([], pa.int64())}), parquet_path)
    e = get_engine(engine)
    reads = [lambda p: e.class_table(p, ["sex"]), e.summary, lambda p: e.release(p, tmp_path / "release.csv")]
    for path in (csv_path, parquet_path):
        with pytest.raises(InputError) as ref:
            load_dataset(path)
        for read in reads:
            with pytest.raises(InputError) as err:
                read(path)
            assert str(err.value) == str(ref.value)


# -- quoted cells with line breaks, delimiters and quotes ---------------------------------------------------
def quoted_file(sep: str, newline: str = "\n") -> str:
    """Records whose quoted cells hold line breaks, every delimiter and doubled quotes."""
    rows = [["sex", "age", "note"]]
    notes = ["two\nlines", "plain", "a,b;c\td", 'say ""hi""', "", "three\n\nlines", "x|y"]  # as written
    for i in range(300):
        rows.append(["mf"[i % 2], str(20 + i % 7), notes[i % len(notes)]])
    rows.append(["f", "99", "last\nrecord"])  # a line break far from the start, in the last record

    def cell(v: str) -> str:
        return f'"{v}"' if any(ch in v for ch in ',;\t|"\n') else v
    return newline.join(sep.join(cell(v) for v in row) for row in rows) + newline


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("sep, ext", [(",", ".csv"), (";", ".csv"), ("\t", ".tsv")])
def test_quoted_line_breaks_are_read_as_the_reader_reads_them(tmp_path, engine, sep, ext):
    path = write(tmp_path, "quoted" + ext, quoted_file(sep))
    ref = reference(path, ["sex", "age", "note"])
    assert "two\nlines" in ref.values[2] and ref.n_records == 301
    assert_same_table(ref, get_engine(engine).class_table(path, ["sex", "age", "note"]))
    summary = get_engine(engine).summary(path)
    assert summary.n_records == 301
    out = get_engine(engine).release(path, tmp_path / "release.csv")
    assert load_dataset(out).frame.equals(load_dataset(path).frame)


@pytest.mark.parametrize("engine", EMBEDDED)
def test_quoted_line_breaks_in_a_crlf_file(tmp_path, engine):
    path = write(tmp_path, "crlf.csv", quoted_file(",", "\r\n"))
    ref = reference(path, ["sex", "note"])
    assert_same_table(ref, get_engine(engine).class_table(path, ["sex", "note"]))


@pytest.mark.parametrize("engine", EMBEDDED)
def test_risk_on_a_file_with_quoted_line_breaks_equals_the_reader(tmp_path, capsys, engine):
    import json

    path = write(tmp_path, "quoted.csv", quoted_file(","))
    results = {}
    for name in ("pandas", engine):
        out, per = tmp_path / f"{name}.json", tmp_path / f"{name}.per.csv"
        code, err = run(capsys, "risk", str(path), "--qi", "sex,note", "--k", "3", "--engine", name,
                        "-o", str(out), "--per-record", str(per))
        assert code == 0, err
        results[name] = json.loads(out.read_text()), per.read_text()
    (ref, ref_per), (got, got_per) = results["pandas"], results[engine]
    for key in ("n_records", "n_classes", "n_violating", "size_distribution"):
        assert got[key] == ref[key], key
    assert got_per == ref_per


@pytest.mark.parametrize("engine", EMBEDDED)
@pytest.mark.parametrize("header, names", [
    ('"sex","a""ge"', ["sex", 'a"ge']),
    ('sex,a"ge', ["sex", 'a"ge']),
    ('\ufeffsex,a"ge', ["sex", 'a"ge']),
    ('"se\nx","a""ge"', ["se\nx", 'a"ge']),  # a header over two lines
])
def test_columns_are_named_as_the_header_reads(tmp_path, engine, header, names):
    """Doubled quotes in a quoted name, a quote inside a name, a byte-order mark, a line break in a quoted
    name: the names are the reader's, by position, and every record is read."""
    path = write(tmp_path, "names.csv", header + '\nm,1\nf,"2\n3"\nm,3\n')
    ref = reference(path, names)
    assert ref.n_records == 3
    assert_same_table(ref, get_engine(engine).class_table(path, names))
