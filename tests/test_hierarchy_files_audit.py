"""Hierarchy files as careless or hostile users write them: read exactly, or refused in one line.

``kanon generalize --hierarchies DIR`` reads ARX hierarchy files (one row per original value, one column per
level, no header). A file is either read exactly as written (quotes, line breaks inside quotes, its text
encoding) or refused with exit status 2, one line on stderr that names rows, levels and file names but never
a cell, and nothing written. The folder gives each variable exactly one file, found by name, never by pattern.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kanon_core.cli import main
from kanon_core.errors import InputError
from kanon_core.treat.hierarchy import TOP, find_hierarchy_file, load_hierarchies, read_arx_hierarchy

GOOD = b"a;ab;*\nb;ab;*\nc;c;*\n"
SECRET = "Zyxwv"  # a cell that must never reach a message


def dataset(folder: Path, column: str = "g", values: tuple[str, ...] = ("a", "b", "c")) -> Path:
    """A small CSV with one QI ``column`` (its values cycled over 30 records) and ``sex``."""
    lines = [f"id;{column};sex"] + [f"{i};{values[i % len(values)]};{'mf'[i % 2]}" for i in range(30)]
    path = folder / "data.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def hierarchy_folder(folder: Path, files: dict[str, bytes]) -> Path:
    d = folder / "h"
    d.mkdir()
    (d / "sex.csv").write_bytes(b"m;*\nf;*\n")
    for name, content in files.items():
        (d / name).write_bytes(content)
    return d


def generalize(tmp_path: Path, hdir: Path, data: Path, qi: str = "g,sex", k: str = "2") -> tuple[int, Path, Path]:
    out, rel = tmp_path / "out.json", tmp_path / "rel.csv"
    rc = main(["generalize", str(data), "--qi", qi, "--hierarchies", str(hdir), "--k", k, "--json", str(out),
               "-o", str(rel)])
    return rc, out, rel


def refused(tmp_path: Path, capsys, files: dict[str, bytes], qi: str = "g,sex", column: str = "g",
            values: tuple[str, ...] = ("a", "b", "c")) -> str:
    """Run ``kanon generalize`` expecting a refusal: exit 2, one line, no data value, nothing written."""
    data = dataset(tmp_path, column, values)
    rc, out, rel = generalize(tmp_path, hierarchy_folder(tmp_path, files), data, qi)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("kanon generalize: error:"), err
    assert SECRET not in err[0]
    assert not out.exists() and not rel.exists()
    return err[0]


# -- text: encodings, quotes, line breaks ----------------------------------------------------------------------
def test_a_quoted_line_break_is_part_of_the_value():
    """A quoted cell may hold a line break (csv writers quote it); it is kept, not glued to the next line."""
    h = read_arx_hierarchy(b'"a\nb";ab;*\n"c\r\n\r\nd";ab;*\n')
    assert h.originals == ("a\nb", "c\r\n\r\nd")


def test_a_quoted_value_round_trips_with_its_line_break():
    h = read_arx_hierarchy(b'"x\ny";g;*\nz;g;*\n')
    assert read_arx_hierarchy(h.to_arx_csv().encode()).rows == h.rows == (("x\ny", "g", TOP), ("z", "g", TOP))


@pytest.mark.parametrize("content", [b'"' + SECRET.encode() + b';ab;*\nb;ab;*\n',
                                     b'"' + SECRET.encode() + b'"x;ab;*\nb;ab;*\n'])
def test_a_broken_quote_is_refused_with_its_line(tmp_path, capsys, content):
    """A quote never closed swallows the rest of the file; one closed mid-cell glues text: both refused."""
    msg = refused(tmp_path, capsys, {"g.csv": content})
    assert "quote" in msg and "line 1" in msg


def test_a_latin1_file_is_read_as_the_data_reader_reads_it(tmp_path, capsys):
    """A file saved in Latin-1 / Windows-1252 is decoded as such (as data files are), not with replacement
    characters: its labels are released as written and its values match the data's."""
    h = read_arx_hierarchy("é;Région;*\nè;Région;*\n".encode("latin-1"), "g")
    assert h.rows == (("é", "Région", TOP), ("è", "Région", TOP))
    data = dataset(tmp_path, values=("é", "è"))
    hdir = hierarchy_folder(tmp_path, {"g.csv": "é;Région;*\nè;Région;*\n".encode("cp1252")})
    rc, out, _ = generalize(tmp_path, hdir, data, k="30")
    assert rc == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["levels"]["g"] >= 1


def test_utf16_with_its_mark_is_read():
    assert read_arx_hierarchy(GOOD.decode().encode("utf-16")).rows == read_arx_hierarchy(GOOD).rows


def test_utf16_without_a_mark_is_refused(tmp_path, capsys):
    msg = refused(tmp_path, capsys, {"g.csv": GOOD.decode().encode("utf-16-le")})
    assert "byte-order mark" in msg and "'g'" in msg


def test_a_file_mixing_encodings_is_refused_with_its_line(tmp_path, capsys):
    content = "a;Région;*\n".encode() + "b;Région;*\n".encode("latin-1")
    msg = refused(tmp_path, capsys, {"g.csv": content})
    assert "Line 2" in msg and "'g'" in msg


# -- delimiters and shape --------------------------------------------------------------------------------------
def test_a_comma_file_with_a_quoted_semicolon_is_read_with_commas():
    """The delimiter is the one that gives every row the same levels, quotes respected: a semicolon inside a
    quoted cell of the first row does not make the file semicolon-separated."""
    h = read_arx_hierarchy(b'"a;1",ab,*\nb,ab,*\nc,c,*\n')
    assert h.rows == (("a;1", "ab", TOP), ("b", "ab", TOP), ("c", "c", TOP))


@pytest.mark.parametrize("content, row, levels, first", [
    (b"a;ab;*\nb;ab;*\n" + SECRET.encode() + b";*\n", 3, 2, 3),
    (b"a\n" + SECRET.encode() + b";*\nc\n", 2, 2, 1),  # not one value holding a semicolon
    (b"a, x;ab;*\n" + SECRET.encode() + b", y;*\nc;c;*\n", 2, 2, 3),  # not re-read with commas to fit
])
def test_a_ragged_row_is_named(tmp_path, capsys, content, row, levels, first):
    """A row out of line is refused by number; the file is never re-read with another delimiter to fit."""
    msg = refused(tmp_path, capsys, {"g.csv": content})
    assert f"row {row} has {levels} levels" in msg and f"row 1 has {first}" in msg


@pytest.mark.parametrize("content, level", [(b"a;;ab;*\nb;ab;ab;*\nc;c;c;*\n", 1),
                                            (b";;ab;*\nb;ab;ab;*\nc;c;c;*\n", 1)])
def test_an_empty_cell_inside_a_row_is_refused(tmp_path, capsys, content, level):
    """An empty label would release the value as missing."""
    msg = refused(tmp_path, capsys, {"g.csv": content})
    assert "Row 1" in msg and "empty" in msg and f"level {level}" in msg


def test_an_empty_original_is_the_row_of_a_value_of_spaces():
    """The first cell may be empty: the row of a text value made of spaces only, as the writer writes it."""
    assert read_arx_hierarchy(b";ab;*\nb;ab;*\nc;c;*\n").rows == (("", "ab", TOP), ("b", "ab", TOP), ("c", "c", TOP))


def test_rows_of_only_delimiters_are_blank_lines():
    """Spreadsheets pad a sheet with rows of delimiters (';;;'): no value, no level, skipped like blank lines."""
    assert read_arx_hierarchy(b"a;ab;*\n;;;\n\nb;ab;*;;\n").rows == (("a", "ab", TOP), ("b", "ab", TOP))


def test_a_header_line_is_refused_not_read_as_a_value_with_an_extra_level(tmp_path, capsys):
    """A header row ends with its own last name while the rows end with '*': read as data it would be a
    value and would add a level to every row (a root after '*'), changing the lattice silently."""
    msg = refused(tmp_path, capsys, {"g.csv": b"value;level1;" + SECRET.encode() + b"\n" + GOOD})
    assert "Row 1" in msg and "header" in msg


def test_a_row_not_ending_at_the_common_root_is_refused(tmp_path, capsys):
    msg = refused(tmp_path, capsys, {"g.csv": b"a;ab;*\nb;ab;*\nc;c;" + SECRET.encode() + b"\n"})
    assert "Row 3" in msg and "'*'" in msg


def test_without_any_star_the_root_is_still_added():
    """ARX files written without the root column (no row ends with '*') keep working: '*' is appended."""
    assert read_arx_hierarchy(b"a;x\nb;x\nc;y\n").rows == (("a", "x", TOP), ("b", "x", TOP), ("c", "y", TOP))
    assert read_arx_hierarchy(b"Black;Person\nWhite;Person\n").rows == (("Black", "Person"), ("White", "Person"))


def test_binary_content_is_refused(tmp_path, capsys):
    msg = refused(tmp_path, capsys, {"g.csv": b"PK\x03\x04\x00\x00" + SECRET.encode() + b"\x00;x\n"})
    assert "'g'" in msg and "text" in msg


def test_an_overlong_cell_is_an_input_error():
    with pytest.raises(InputError, match="line 2"):
        read_arx_hierarchy(b"a;x;*\n" + b"b" * 200_000 + b";x;*\n", "g")


# -- finding the file of each variable -------------------------------------------------------------------------
def test_two_files_for_one_variable_are_refused(tmp_path, capsys):
    """Which of two files was meant cannot be guessed (the first in alphabetical order used to win)."""
    msg = refused(tmp_path, capsys, {"x_hierarchy_g.csv": GOOD, "y_hierarchy_g.csv": b"a;*\nb;*\nc;*\n"})
    assert "x_hierarchy_g.csv" in msg and "y_hierarchy_g.csv" in msg


def test_a_plain_and_an_arx_named_file_for_one_variable_are_refused(tmp_path):
    hdir = hierarchy_folder(tmp_path, {"g.csv": GOOD, "adult_hierarchy_g.csv": b"a;*\nb;*\nc;*\n"})
    with pytest.raises(InputError, match="adult_hierarchy_g.csv"):
        load_hierarchies(hdir, ["g"])


@pytest.mark.parametrize("variable, other", [("g*", "x_hierarchy_gz.csv"), ("g[1]", "x_hierarchy_g1.csv"),
                                             ("g?", "x_hierarchy_g1.csv")])
def test_variable_names_are_not_patterns(tmp_path, variable, other):
    """A variable named 'g*' or 'g[1]' has its own file and never takes another variable's."""
    hdir = hierarchy_folder(tmp_path, {other: b"a;*\nb;*\nc;*\n"})
    assert find_hierarchy_file(hdir, variable) is None
    (hdir / f"x_hierarchy_{variable}.csv").write_bytes(GOOD)
    assert find_hierarchy_file(hdir, variable) == hdir / f"x_hierarchy_{variable}.csv"
    assert load_hierarchies(hdir, [variable])[variable].height == 3


def test_a_variable_name_never_leads_out_of_the_folder(tmp_path, capsys):
    """A column named '../g' must not read (nor let --output overwrite) a file beside the folder."""
    outside = tmp_path / "g.csv"
    outside.write_bytes(GOOD)
    data = dataset(tmp_path, column="../g")
    hdir = hierarchy_folder(tmp_path, {})
    rc = main(["generalize", str(data), "--qi", "../g,sex", "--hierarchies", str(hdir), "--k", "2",
               "--json", str(tmp_path / "out.json"), "-o", str(outside)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "No hierarchy file for ../g" in err[0]
    assert outside.read_bytes() == GOOD


@pytest.mark.parametrize("make", ["directory", "loop", "broken"])
def test_a_hierarchy_entry_that_is_not_a_file_is_named(tmp_path, capsys, make):
    def setup(d: Path) -> None:
        if make == "directory":
            (d / "g.csv").mkdir()
        elif make == "loop":
            os.symlink("g.csv", d / "g.csv")
        else:
            os.symlink("nowhere.csv", d / "g.csv")

    data = dataset(tmp_path)
    hdir = hierarchy_folder(tmp_path, {})
    setup(hdir)
    rc, out, rel = generalize(tmp_path, hdir, data)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "g.csv" in err[0] and "not a readable file" in err[0]
    assert not out.exists() and not rel.exists()


def test_a_folder_given_as_a_file_is_an_input_error(tmp_path):
    (tmp_path / "g.csv").mkdir()
    with pytest.raises(InputError, match="g.csv"):
        read_arx_hierarchy(tmp_path / "g.csv", "g")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="permissions do not bind root")
def test_an_unreadable_file_is_an_input_error(tmp_path):
    path = tmp_path / "g.csv"
    path.write_bytes(GOOD)
    path.chmod(0)
    try:
        with pytest.raises(InputError, match="g.csv"):
            read_arx_hierarchy(path, "g")
    finally:
        path.chmod(0o600)


# -- cases that already behaved: kept so they stay so ----------------------------------------------------------
def test_a_file_for_a_variable_that_is_not_a_qi_is_not_read(tmp_path, capsys):
    data = dataset(tmp_path)
    hdir = hierarchy_folder(tmp_path, {"g.csv": GOOD, "id.csv": b"\x00garbage;;\n;x\n"})
    rc, out, _ = generalize(tmp_path, hdir, data)
    assert rc == 0, capsys.readouterr().err
    assert set(json.loads(out.read_text())["levels"]) == {"g", "sex"}


def test_the_same_value_twice_is_refused_by_rows(tmp_path, capsys):
    msg = refused(tmp_path, capsys, {"g.csv": SECRET.encode() + b";x;*\n" + SECRET.encode() + b";y;*\n" + GOOD})
    assert "Rows 1 and 2" in msg


def test_codes_with_leading_zeros_stay_text(tmp_path, capsys):
    """The text codes '007' and '7' are two values: a hierarchy with a row for '7' only does not cover '007'
    (counted, not shown); with a row for each, each keeps its own generalization."""
    msg = refused(tmp_path, capsys, {"g.csv": b"7;low;*\n9;high;*\n"}, values=("007", "7", "009"))
    assert "1 value(s)" in msg and "007" not in msg


@pytest.mark.parametrize("text, rows", [
    # a comma file whose labels hold a quoted ";": read by commas (";" was tried first and split the labels)
    (b'1,"Married; spouse present",*\n2,"Married; spouse present",*\n3,Single,*\n',
     (("1", "Married; spouse present", "*"), ("2", "Married; spouse present", "*"), ("3", "Single", "*"))),
    # ARX's ";" file whose labels hold an unquoted comma: still read by ";"
    (b"1;Married, spouse present;*\n2;Single;*\n", (("1", "Married, spouse present", "*"), ("2", "Single", "*"))),
])
def test_the_delimiter_is_the_one_outside_quotes(text, rows):
    assert read_arx_hierarchy(text, "marital").rows == rows
