"""ARX hierarchy files round-trip every label exactly, and the constructor's checks match the original ones.

Part 1. :meth:`Hierarchy.to_arx_csv` then :func:`read_arx_hierarchy` gives back the rows as written, labels
with leading or trailing spaces, quotes, delimiters and line breaks included. The reader strips unquoted cells
on purpose (hand-written and spreadsheet files pad them: ``a ; ab ; *``), so the writer quotes a cell the
reader would otherwise alter, and the reader keeps a quoted cell as it is between its quotes.

Part 2. The constructor's validation was rewritten for speed (whole columns at once, the row-by-row loops kept
only to name the offending rows). :func:`reference_hierarchy` below is the original code, copied verbatim;
hypothesis compares the two on random rows, valid and invalid: the same rows kept, or the same error message.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.errors import InputError
from kanon_core.treat.hierarchy import TOP, Hierarchy, read_arx_hierarchy, write_arx_hierarchy


# -- part 1: the ARX round trip ----------------------------------------------------------------------------------
def round_trip(h: Hierarchy) -> tuple[tuple[str, ...], ...]:
    return read_arx_hierarchy(h.to_arx_csv().encode("utf-8"), h.name).rows


def test_labels_with_surrounding_spaces_round_trip():
    h = Hierarchy(((" a", "g ", TOP), ("b ", " g h ", TOP), ("c", "\tx\u00a0", TOP)), "v")
    assert round_trip(h) == h.rows


def test_a_quoted_cell_keeps_its_spaces():
    """What the writer relies on: between quotes, a cell is read as written (the docstring's "quoted cells
    keep what they hold")."""
    assert read_arx_hierarchy(b'" a ";" g";*\n"b";" g";*\n').rows == ((" a ", " g", TOP), ("b", " g", TOP))


def test_a_carriage_return_inside_a_label_round_trips():
    """Python 3.11's csv writer leaves a lone CR unquoted (its line terminator is LF), and the reader ends the
    row there."""
    h = Hierarchy((("a\rb", "g", TOP), ("c", "g\r", TOP), ("d", "x\r\ny", TOP)))
    assert round_trip(h) == h.rows


def test_a_label_starting_with_a_byte_order_mark_round_trips():
    """The first cell of the file: unquoted, its U+FEFF would be taken for the file's byte-order mark."""
    h = Hierarchy((("\ufeffa", "g", TOP), ("b", "g", TOP)))
    assert round_trip(h) == h.rows


def test_hand_written_files_read_as_documented():
    """Unquoted cells are stripped (padding), quoted ones kept; a cell blank after that is empty: refused
    inside a row, dropped at its end, as before."""
    assert read_arx_hierarchy(b" a ; ab ;*\nb\t;ab; * \n").rows == (("a", "ab", TOP), ("b", "ab", TOP))
    assert read_arx_hierarchy(b'a;ab;*;" "\nb;ab;*;\n').rows == (("a", "ab", TOP), ("b", "ab", TOP))
    for content in (b'a;"  ";*\nb;x;*\n', b'a;"";*\nb;x;*\n', b"a; ;*\nb;x;*\n"):
        with pytest.raises(InputError, match=r"Row 1 .* empty cell \(level 1\)"):
            read_arx_hierarchy(content)
    # quotes not at the start of a cell are characters of it, as the csv module reads them
    assert read_arx_hierarchy(b'a; "x" ;*\nb; "x" ;*\n').rows == (("a", '"x"', TOP), ("b", '"x"', TOP))


def test_ordinary_labels_are_written_as_the_csv_module_writes_them():
    """Only cells the reader would alter get quotes they did not have before: ARX's own files stay unquoted
    (``test_adult_arx_files_round_trip`` compares them byte for byte)."""
    rows = (("a", "x;y", TOP), ('q"r', "x;y", TOP), ("s\nt", "u,v", TOP), ("w\tz", "u,v", TOP))
    buf = io.StringIO()
    csv.writer(buf, delimiter=";", lineterminator="\n").writerows(rows)
    assert Hierarchy(rows).to_arx_csv() == buf.getvalue()
    assert Hierarchy(((" a", "x;y", TOP), ("b", "c", TOP))).to_arx_csv() == '" a";"x;y";*\nb;c;*\n'


# labels a person or a data file may hold: spaces of every kind, quotes, the three delimiters, line breaks;
# no NUL (the reader refuses binary files) and no surrogate (not UTF-8), never blank (an empty label is refused)
TRICKY = " \t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u2028\u3000\ufeff;,\"'*ab"
label = st.text(st.sampled_from(TRICKY) | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                min_size=1, max_size=8).filter(lambda s: s.strip() != "")


@settings(max_examples=300, deadline=None)
@given(st.lists(label, min_size=1, max_size=8, unique_by=str.strip), st.lists(st.integers(0, 2), max_size=8),
       st.lists(label, min_size=3, max_size=3, unique=True), label)
def test_any_hierarchy_round_trips_through_an_arx_file(originals, grouping, names, root):
    grouping = (grouping + [0] * len(originals))[: len(originals)]
    h = Hierarchy(tuple((o, names[g], root) for o, g in zip(originals, grouping, strict=True)), "v")
    assert round_trip(h) == h.rows


def test_the_round_trip_through_a_file_on_disk(tmp_path):
    h = Hierarchy(((" 02138", " 021** ", TOP), ("02139 ", " 021** ", TOP)), "zip")
    assert read_arx_hierarchy(write_arx_hierarchy(h, tmp_path / "zip.csv"), "zip") == h


def reference_records(text: str, delim: str) -> list[list[tuple[str, bool]]]:
    """An independent strict CSV reader that says which cells were quoted: ``(value, quoted)`` per cell, a
    blank line an empty record, lines ending at CR, LF or CRLF; ValueError where the csv module's strict reader
    raises (a quote left open, a character after a closing quote)."""
    records, pos, n = [], 0, len(text)
    while pos < n:
        if text[pos] in "\r\n":
            records.append([])
            pos += 2 if text.startswith("\r\n", pos) else 1
            continue
        record = []
        while True:
            if pos < n and text[pos] == '"':
                value, pos = [], pos + 1
                while True:
                    if pos >= n:
                        raise ValueError("open quote")
                    if text[pos] == '"':
                        if text.startswith('""', pos):
                            value.append('"')
                            pos += 2
                            continue
                        pos += 1
                        break
                    value.append(text[pos])
                    pos += 1
                if pos < n and text[pos] not in (delim, "\r", "\n"):
                    raise ValueError("character after a closing quote")
                record.append(("".join(value), True))
            else:
                end = pos
                while end < n and text[end] not in (delim, "\r", "\n"):
                    end += 1
                record.append((text[pos:end], False))
                pos = end
            if pos < n and text[pos] == delim:
                pos += 1
                continue
            if pos < n:  # a line end
                pos += 2 if text.startswith("\r\n", pos) else 1
            break
        records.append(record)
    return records


def reference_rows(text: str, delim: str) -> list[tuple[str, ...]]:
    """The documented rule on :func:`reference_records`: quoted cells as read, unquoted ones stripped, blank
    cells empty, trailing empty cells and empty records dropped."""
    rows = []
    for record in reference_records(text, delim):
        cells = [(v if v.strip() else "") if quoted else v.strip() for v, quoted in record]
        while cells and cells[-1] == "":
            cells.pop()
        if cells:
            rows.append(tuple(cells))
    return rows


@settings(max_examples=1000, deadline=None)
@given(st.text(st.sampled_from(' \t;,"\r\nab\u00a0'), max_size=40))
def test_the_reader_tells_quoted_cells_as_an_independent_reader_does(text):
    from kanon_core.treat.hierarchy import ARX_DELIMITERS, _csv_rows

    for delim in ARX_DELIMITERS:
        try:
            expected = reference_rows(text, delim)
        except ValueError:
            with pytest.raises(csv.Error):
                _csv_rows(text, delim)
        else:
            assert _csv_rows(text, delim) == expected


# -- part 2: the constructor's checks against the original code ---------------------------------------------------
def reference_hierarchy(rows, name: str = "") -> tuple[tuple[str, ...], ...]:
    """``Hierarchy.__post_init__`` and ``_validate_rows`` before they were made faster, verbatim (with the check
    of empty labels added since, row by row): the rows the hierarchy keeps, or the InputError it raises."""
    from kanon_core.treat.hierarchy import _of

    rows = tuple(tuple(str(c) for c in r) for r in rows)
    if not rows:
        raise InputError(f"Hierarchy{_of(name)} has no rows.")
    height = len(rows[0])
    if height < 2:
        raise InputError(f"Hierarchy{_of(name)} needs at least two levels (the value and '{TOP}').")
    for i, r in enumerate(rows):
        if len(r) != height:
            raise InputError(f"Row {i + 1} of hierarchy{_of(name)} has {len(r)} levels; row 1 has {height}.")
    seen: dict[str, int] = {}
    for i, r in enumerate(rows):
        key = r[0].strip()  # as text: "012" and "12" are two codes of a text column
        if key in seen:
            raise InputError(f"Rows {seen[key] + 1} and {i + 1} of hierarchy{_of(name)} have the same original value.")
        seen[key] = i
    for level in range(1, height):
        parent: dict[str, str] = {}
        for i, r in enumerate(rows):
            prev, cur = r[level - 1], r[level]
            if parent.setdefault(prev, cur) != cur:
                raise InputError(
                    f"Level {level} of hierarchy{_of(name)} is not a coarsening of level {level - 1}: "
                    f"row {i + 1} shares its level-{level - 1} label with another row but not its level-{level} label."
                )
    if len({r[-1] for r in rows}) != 1:
        raise InputError(f"The last level of hierarchy{_of(name)} must have a single label (e.g. '{TOP}').")
    # added since: an empty (or blank) generalized label is refused (a release would write a missing cell)
    for level in range(1, height):
        for i, r in enumerate(rows):
            if not r[level].strip():
                raise InputError(f"Level {level} of hierarchy{_of(name)} has an empty label (row {i + 1}): a "
                                 "release writes it as an empty cell, which reads as missing; give every group a "
                                 "name.")
    return rows


class Code(str):
    """A str subclass whose text is not its value: ``str()`` of it must be what the hierarchy keeps."""

    def __str__(self) -> str:
        return "code-" + self


CELLS = ["a", "b", "c", " a", "a ", "*", "", "x y"]


@st.composite
def hierarchy_rows(draw):
    """Rows of a valid hierarchy (random nested groups over distinct originals), then, often, broken: an original
    repeated (perhaps with spaces), a cell changed (a split group, two roots), a row cut or lengthened, cells that
    are not plain texts, rows as lists."""
    n = draw(st.integers(0, 9))
    height = draw(st.integers(1, 5))
    originals = draw(st.lists(st.sampled_from(CELLS + ["d", "e", "f", "g", "01", "1"]), min_size=n, max_size=n,
                              unique_by=str.strip))
    columns = [originals]
    for _ in range(1, height):
        mapping = draw(st.dictionaries(st.sampled_from(CELLS), st.sampled_from(CELLS)))
        columns.append([mapping.get(c, c) for c in columns[-1]])
    if height >= 2 and draw(st.booleans()):
        columns[-1] = [TOP] * n
    rows = [list(r) for r in zip(*columns)] if n else []
    for _ in range(draw(st.integers(0, 3))):
        if not rows:
            break
        i = draw(st.integers(0, len(rows) - 1))
        kind = draw(st.sampled_from(["repeat", "cell", "cut", "extend", "int", "np.str_", "Code"]))
        if kind == "repeat" and rows[i]:
            other = rows[draw(st.integers(0, len(rows) - 1))]
            rows[i][0] = draw(st.sampled_from(["", " ", "  "])) + str(other[0] if other else "a")
        elif kind == "cell" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(st.sampled_from(CELLS))
        elif kind == "cut" and rows[i]:
            rows[i].pop()
        elif kind == "extend":
            rows[i].append(TOP)
        elif kind in ("int", "np.str_", "Code") and rows[i]:
            j = draw(st.integers(0, len(rows[i]) - 1))
            rows[i][j] = {"int": 7, "np.str_": np.str_(rows[i][j]), "Code": Code(rows[i][j])}[kind]
    as_lists = draw(st.sampled_from(["tuples", "lists", "outer list"]))
    if as_lists == "tuples":
        return tuple(tuple(r) for r in rows)
    return [tuple(r) for r in rows] if as_lists == "outer list" else tuple(rows)


def outcome(make, rows):
    try:
        kept = make(rows)
    except InputError as exc:
        return "error", str(exc)
    return "ok", kept, [[type(c) for c in r] for r in kept], type(kept), {type(r) for r in kept}


@settings(max_examples=2000, deadline=None)
@given(hierarchy_rows(), st.sampled_from(["", "v"]))
def test_the_constructor_keeps_and_refuses_what_the_original_code_did(rows, name):
    assert outcome(lambda r: Hierarchy(r, name).rows, rows) == outcome(lambda r: reference_hierarchy(r, name), rows)


def test_the_random_rows_reach_every_check():
    """The strategy above is not vacuous: over a fixed sample it yields valid hierarchies and each message."""
    from hypothesis import find

    for part in ("no rows", "at least two levels", "levels; row 1 has", "same original value", "not a coarsening",
                 "single label"):
        find(hierarchy_rows(), lambda r, part=part: part in str(outcome(lambda x: reference_hierarchy(x), r)),
             settings=settings(max_examples=5000, database=None))
    find(hierarchy_rows(), lambda r: outcome(reference_hierarchy, r)[0] == "ok" and len(r) > 3,
         settings=settings(max_examples=5000, database=None))


def test_cells_are_made_plain_texts():
    h = Hierarchy(((np.str_("a"), Code("g"), 1), ["b", "code-g", 1]))
    assert h.rows == (("a", "code-g", "1"), ("b", "code-g", "1"))
    assert all(type(c) is str for r in h.rows for c in r) and all(type(r) is tuple for r in h.rows)
    rows = (("a", "g", TOP), ("b", "g", TOP))
    assert Hierarchy(rows).rows is rows  # already plain: kept, not made again


def test_labels_holding_every_delimiter_the_reader_tries_read_back_as_written():
    """The writer always separates cells with ARX's ';' and quotes a ';' inside a label; a comma or a tab
    inside a label then never splits a row, as the reader tries ';' first."""
    rows = (("1,000-2,000", "a\tb;c", TOP), ("x", "y, z", TOP))
    text = Hierarchy(rows).to_arx_csv()
    assert text == '1,000-2,000;"a\tb;c";*\nx;y, z;*\n'
    assert read_arx_hierarchy(text.encode("utf-8")).rows == rows
