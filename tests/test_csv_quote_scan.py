"""The check that a CSV file's quoted cells are all closed (kanon_core.engines.csv_checks.check_quotes_closed), made
when an out-of-core engine opens a file: Spark reads a quote never closed to the end of the file as one cell,
without a word, and DuckDB and Polars do too when no line end follows (found comparing them with the reader on
random files).

References, independent of the scan: Python's csv module in strict mode (it fails with "unexpected end of data"
exactly when the file ends inside a quoted cell) and the in-memory reader (pandas), whose message, with its line,
the check must repeat."""

from __future__ import annotations

import codecs
import csv
import io

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.engines import get_engine
from kanon_core.engines.csv_checks import (
    QuoteQuirks,
    check_quotes_closed,
    first_record_with_text_beyond,
    unclosed_quote,
)
from kanon_core.engines.source import (
    check_utf8,
    open_source,
)
from kanon_core.errors import InputError
from kanon_core.io import load_dataset
from tests.test_engines import assert_same_table, reference

TOKENS = ["a", "b", "7", " ", '"', '""', "\n", "\r\n"]


def ends_inside_quotes(text: str, delimiter: str) -> bool | None:
    """Python's csv module's answer: True (unexpected end of data), False (read), None (refused otherwise,
    e.g. a character after a closing quote: not this check's question)."""
    try:
        list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True))
    except csv.Error as exc:
        return True if "unexpected end of data" in str(exc) else None
    return False


def refusal(path, delimiter: str, chunk: int = 1 << 24) -> str | None:
    try:
        check_quotes_closed(path, delimiter, chunk)
    except InputError as exc:
        return str(exc)
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.lists(st.sampled_from([*TOKENS, ",", ";"]), max_size=30), delimiter=st.sampled_from([",", ";"]),
       bom=st.booleans(), chunk=st.sampled_from([1, 2, 3, 7, 1 << 24]))
def test_a_file_is_refused_exactly_when_it_ends_inside_a_quoted_cell(tmp_path, body, delimiter, bom, chunk):
    text = "".join(body)
    expected = ends_inside_quotes(text, delimiter)
    assume(expected is not None)
    path = tmp_path / "f.csv"
    path.write_bytes((codecs.BOM_UTF8 if bom else b"") + text.encode("utf-8"))
    said = refusal(path, delimiter, chunk)
    assert (said is not None) == expected, (text, said)
    if said is None:  # the quirks found are the same whatever the blocks (and the fast path between them)
        assert check_quotes_closed(path, delimiter, chunk) == check_quotes_closed(path, delimiter)
    if said is not None:
        assert said == refusal(path, delimiter)  # the line is the same whatever the blocks
        if ({",", ";"} - {delimiter}).pop() not in text:  # the reader can only have found this delimiter
            try:
                load_dataset(path)
            except InputError as exc:  # it may refuse the file for another reason first (too many fields)
                if "never closed" in str(exc):
                    assert str(exc) == said


@pytest.mark.parametrize(("text", "line"), [
    ('sex,age\nm,30\nf,"40\nm,22\n', 3),  # opens on line 3 and swallows the rest
    ('sex,age\nm,30\nf,40\nm,"22', 4),  # the last cell, without a line end
    # a quoted line break closed, an escaped quote, then an open quote on the third record's line (the fourth
    # line of the file): lines are numbered by records, as the reader and DuckDB number them
    ('sex,age\n"m\nf",30\nf,"x""y\n', 3),
    ('sex;age\r\nm;30\r\nf;"40\r\n', 3),  # CR LF line ends, semicolons
])
def test_the_message_is_the_in_memory_readers(tmp_path, text, line):
    path = tmp_path / "f.csv"
    path.write_bytes(text.encode("utf-8"))
    delimiter = ";" if ";" in text.splitlines()[0] else ","
    said = refusal(path, delimiter)
    assert said == unclosed_quote(line)
    with pytest.raises(InputError) as reader:
        load_dataset(path)
    assert str(reader.value) == said


@pytest.mark.parametrize("text", [
    'sex,age\nm,"30"\n',  # a quoted cell closed
    'sex,age\nm,5"\nf,6"\n',  # quotes inside unquoted cells are characters
    'sex,age\nm,"3\n0"\nf,"""x"""\n',  # a line break and escaped quotes inside quoted cells
    'sex,age\nm, "30\n',  # a space before the quote: the quote is a character (no leading space is dropped)
])
def test_files_whose_quotes_close_pass(tmp_path, text):
    path = tmp_path / "f.csv"
    path.write_bytes(text.encode("utf-8"))
    assert refusal(path, ",") is None
    load_dataset(path)  # the in-memory reader reads them too


def test_spaces_and_text_outside_quotes_are_found_by_line(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b'a,b\n"x",1\n" ""y",2\nz, "w"\n"v" ,3\n"u"t,4\n')
    assert check_quotes_closed(path) == QuoteQuirks(spaced_before=4, text_after=5)
    path.write_bytes(b'a,b\r\n"x","y"\r\n"p\n ""q",\t"r"\r\n')  # CR LF ends; a space inside quotes; a tab
    assert check_quotes_closed(path) == QuoteQuirks()


@pytest.mark.parametrize(("text", "line"), [
    (b"a\r\nb\nc\r\n", 2),  # the second line ends in LF alone
    (b"a\nb\r\n", 2),  # and the other way round
    (b'a\r\n"x\ny"\r\nz\r\n', 0),  # a line feed inside a quoted cell is a character, not a record's end
    (b"\xef\xbb\xbfa\r\n\r\nb\n", 3),  # a blank line is a record (ended in CR LF), the mark no cell
    (b"a\nb\nc", 0),  # the last record without an end
])
def test_records_ended_otherwise_than_the_first_are_found_by_line(tmp_path, text, line):
    path = tmp_path / "f.csv"
    path.write_bytes(text)
    for chunk in (1, 2, 1 << 24):
        assert check_quotes_closed(path, ",", chunk).mixed_line_ends == line


def test_duckdb_refuses_what_it_would_read_without_the_spaces(tmp_path, capsys):
    path = tmp_path / "f.csv"
    path.write_bytes(b'c0,c1\nm,30\nf, "40"\n')
    assert load_dataset(path).frame["c1"].tolist() == ["30", ' "40"']  # the reader keeps the spaces and quotes
    assert main(["risk", str(path), "--qi", "c0", "--engine", "duckdb"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert err == ["kanon risk: error: Line 3 has a quoted cell with spaces or text outside its quotes, which DuckDB "
                   "reads otherwise than the in-memory reader does (the in-memory reader keeps them); use --engine "
                   "pandas, or remove them from the file."]
    assert main(["risk", str(path), "--qi", "c0", "--engine", "polars"]) == 0  # Polars reads it as the reader


@pytest.mark.parametrize("text", ['c0,c1\nm,30\nf,"40" \n', 'c0,c1\nm,30\r\nf,"4""0"x\r\n', 'c0,c1\nm,30\nf,"4\n0"z\n'])
def test_polars_names_the_line_with_text_after_a_closing_quote(tmp_path, capsys, text):
    """Polars fails on such a file in words that name no line (a ComputeError of its own): it is refused
    before Polars reads it, naming the line, as DuckDB and Spark refuse it. The reader keeps the text."""
    path = tmp_path / "f.csv"
    path.write_bytes(text.encode("utf-8"))
    assert len(load_dataset(path).frame) == 2
    assert main(["risk", str(path), "--qi", "c0", "--engine", "polars"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert err == ["kanon risk: error: Line 3 has a quoted cell with spaces or text outside its quotes, which Polars "
                   "cannot read (the in-memory reader keeps them); use --engine pandas, or remove them from the "
                   "file."]


def test_bad_utf8_is_refused_by_line(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"sex,age\nm,30\nf,\xff\n")
    with pytest.raises(InputError) as err:
        check_utf8(path)
    assert str(err.value) == ("Line 3 is not valid UTF-8; the out-of-core engines read UTF-8 files only "
                              "(use --engine pandas or save it as UTF-8).")


# files with a quote never closed (found comparing the engines with the reader on random files): without the
# check, DuckDB read the first as 3 records and Polars the third as 1, without a word; both refused the second,
# Polars in words of its own
SWALLOWED = {
    "last record, no line end": 'c0\tc1\r\nx\t"p\nq"\r\n1\t\r\n-02.5\t"b',
    "blank lines after": 'c0,c1\n"",y\n1,-0\n -0,"\n\n',
    "from the second line": 'c0,c1,c2\r\nab,",NA\r\n;a,,\r\n,2.5b,\r\n,a,',
}


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("case", list(SWALLOWED))
def test_the_engines_refuse_a_quote_never_closed_as_the_reader_does(tmp_path, capsys, engine, case):
    path = tmp_path / "f.csv"
    path.write_bytes(SWALLOWED[case].encode("utf-8"))
    assert main(["risk", str(path), "--qi", "c0", "--engine", "pandas"]) == 2
    reader = capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["risk", str(path), "--qi", "c0", "--engine", engine]) == 2
    got = [line for line in capsys.readouterr().err.strip().splitlines() if "error" in line]
    assert got == [reader] and "a quoted cell is never closed" in reader


def test_a_file_is_read_once_for_its_quotes_while_unchanged(tmp_path, monkeypatch):
    from kanon_core.engines import csv_checks

    path = tmp_path / "f.csv"
    path.write_bytes(b'a,b\n1,"x"\n')
    calls = []
    real = csv_checks.check_quotes_closed
    monkeypatch.setattr(csv_checks, "check_quotes_closed", lambda *a, **k: calls.append(a) or real(*a, **k))
    open_source(path)
    open_source(path)
    assert len(calls) == 1
    path.write_bytes(b'a,b\n1,"x\n')  # changed (size): read again, and refused
    with pytest.raises(InputError, match="near line 2: a quoted cell is never closed"):
        open_source(path)
    assert len(calls) == 2


# -- the engines never read a file otherwise than the reader ------------------------------------------------
CELLS = st.builds(
    lambda lead, inner, tail: lead + inner + tail,
    st.sampled_from(["", " ", "  ", "\t"]),
    st.sampled_from(["", "a", "7", "NA", '"a"', '"b c"', '"x""y"', '"p\nq"', '""', 'a"b']),
    st.sampled_from(["", " ", "z", "\t"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(CELLS, CELLS), min_size=1, max_size=5), engine=st.sampled_from(["duckdb", "polars"]),
       end=st.sampled_from(["\n", "\r\n", ""]))
def test_an_engine_refuses_a_file_or_reads_the_readers_classes(tmp_path, rows, engine, end):
    """Random two-column files whose cells have spaces, tabs and text around quoted parts: whenever the
    in-memory reader and the engine both read a file, their class tables are equal (values, codes, counts).
    Without the quote check DuckDB read `` "a"`` as ``a`` and ``"a" `` as ``a``, where the reader keeps the
    spaces (`` "a"`` and ``a ``)."""
    path = tmp_path / "f.csv"
    path.write_bytes(("c0,c1" + end + end.join(",".join(r) for r in rows) + end).encode("utf-8"))
    try:
        ref = reference(path, ["c0", "c1"])
    except InputError:
        return  # refused by the reader: the engines may refuse it in other words, or (empty extra fields) read it
    try:
        got = get_engine(engine).class_table(path, ["c0", "c1"])
    except InputError:
        return
    assert_same_table(ref, got)


# -- text beyond the header's fields (Polars keeps one field beyond it, and dropped the rest) ---------------
FIELD_CELLS = st.sampled_from(["", "a", " ", "7", '"x,y"', '"p\nq"', '"q""r"'])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(FIELD_CELLS, min_size=0, max_size=5), min_size=1, max_size=6),
       n_fields=st.integers(1, 3), chunk=st.sampled_from([1, 3, 1 << 24]), end=st.sampled_from(["\n", "\r\n"]))
def test_the_first_record_with_text_beyond_the_header_is_pythons(tmp_path, rows, n_fields, chunk, end):
    """Python's csv module splits the records; the first with a non-empty field past ``n_fields`` is the one."""
    text = "h" + "," * (n_fields - 1) + end + "".join(",".join(r) + end for r in rows)
    expected = next((number for number, row in enumerate(csv.reader(io.StringIO(text, newline="")))
                     if len(row) > n_fields and any(row[n_fields:])), None)
    path = tmp_path / "f.csv"
    path.write_bytes(text.encode("utf-8"))
    assert first_record_with_text_beyond(path, ",", n_fields, chunk) == expected


@pytest.mark.parametrize(("text", "record"), [
    ("c0,c1\n1,2,,x\n", 1),  # the first field beyond the header empty, text after it
    ("c0,c1\n3,4\n\n1,2,,,\"x\"\n", 3),  # a blank line counted, as the reader counts it
])
def test_polars_refuses_text_after_an_empty_field_beyond_the_header(tmp_path, capsys, text, record):
    path = tmp_path / "f.csv"
    path.write_bytes(text.encode("utf-8"))
    assert main(["risk", str(path), "--qi", "c0", "--engine", "polars"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert err == [f"kanon risk: error: Record {record} (line {record + 1} when no cell holds a line break) has more "
                   "fields than the header, which names 2; check the delimiter and the quotes."]
    assert main(["risk", str(path), "--qi", "c0", "--engine", "pandas"]) == 2  # the reader refuses it too


def test_an_empty_field_at_a_records_end_is_read_by_every_reader(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"c0,c1\n1,2,\n3,4,\n")
    ref = reference(path, ["c0", "c1"])
    for engine in ("duckdb", "polars"):
        assert_same_table(ref, get_engine(engine).class_table(path, ["c0", "c1"]))
