"""Compiled scans of a CSV file's text (:mod:`kanon_core.engines.csv_checks` runs them): whether the file ends
inside a quoted cell (and on which line that cell opened), the first lines where a quoted cell has text around
its quotes, where a record ends otherwise than the first and where a line ends with a CR alone
(:func:`scan_quotes`); the first record with text in
a field beyond the header's (:func:`scan_fields`).

Why: Spark's CSV reader (``multiLine``, the only mode that reads quoted line breaks) reads a quote that is
never closed to the end of the file as one cell, silently, and DuckDB and Polars do on some files, where the
in-memory reader refuses the file: the records after it would be lost, and the risk measured on the rest.
And a quoted cell with spaces before its opening quote (`` "a"``) or text after its closing one (``"a" ``) is
read three ways: the in-memory reader keeps the spaces (`` "a"`` as text, ``a `` without the quotes), DuckDB
drops them, Spark drops those after. numba, because the answer depends on every byte before it (a quote opens
a cell only at a cell's start, and two quotes in a quoted cell are one quote character), so it is one pass
with a state, at the speed of the file's reading.
"""

from __future__ import annotations

import numba
import numpy as np

AT_CELL_START = 0
"""The next byte starts a cell: the file's first, or one after a delimiter or a line feed."""
UNQUOTED = 1
"""Inside a cell that did not start with a quote: a quote there is a character like any other."""
QUOTED = 2
"""Inside a quoted cell."""
QUOTE_IN_QUOTED = 3
"""Just after a quote inside a quoted cell: another quote makes the two one character, a delimiter or a line
end ends the cell, anything else is text after the closing quote."""
LEADING_SPACES = 4
"""Spaces at a cell's start: a quote after them is a character to the in-memory reader, an opening quote to
DuckDB."""

CARRY_SLOTS = 9
"""The carry between blocks: the state; the records ended so far (the header included); the line of the last
quote that opened a quoted cell; the first line with spaces before an opening quote; the first line with text
after a closing quote; the kind of the first record's end (:data:`LF_END` or :data:`CRLF_END`, 0 before it);
the first line that ends otherwise (0: none); the block's last byte (for a CR LF split between blocks); the
first line ended by a CR alone outside any quoted cell (0: none), which the in-memory reader reads as a line
end and the engines' readers, which split lines on LF, do not (a CR ending the file's last block is
:func:`~kanon_core.engines.csv_checks.check_quotes_closed`'s to judge, after the last block). Lines
are numbered as the in-memory reader and DuckDB number them: records plus the header, from 1 (the physical
line when no cell holds a line break)."""
LF_END = 1
"""A record ended by a line feed alone."""
CRLF_END = 2
"""A record ended by a carriage return and a line feed."""


def new_carry() -> np.ndarray:
    """The carry at the file's start (after its byte-order mark, if any)."""
    return np.zeros(CARRY_SLOTS, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def scan_quotes(block, delimiter, quote, carry):  # pragma: no cover - compiled
    """Advance ``carry`` (:data:`CARRY_SLOTS` int64) over the bytes ``block`` of a file whose cells are separated
    by the byte ``delimiter`` and quoted with the byte ``quote``. A CR of a CR LF line end after a closing
    quote is a line end, not text. The file ends inside a quoted cell when the state after its last block is
    :data:`QUOTED`."""
    state = carry[0]
    lines = carry[1]
    opened = carry[2]
    spaced = carry[3]
    after = carry[4]
    first_end = carry[5]
    mixed = carry[6]
    prev = carry[7]
    lone_cr = carry[8]
    for i in range(block.shape[0]):
        c = block[i]
        if prev == 13 and c != 10 and state != QUOTED and lone_cr == 0:  # the CR before was read outside quotes
            lone_cr = lines + 1
        if c == 10 and state != QUOTED:  # a record's end (a line feed in a quoted cell is a character)
            lines += 1
            end = CRLF_END if prev == 13 else LF_END
            if first_end == 0:
                first_end = end
            elif end != first_end and mixed == 0:
                mixed = lines
        prev = c
        if state == QUOTED:
            if c == quote:
                state = QUOTE_IN_QUOTED
        elif state == QUOTE_IN_QUOTED:
            if c == quote:
                state = QUOTED
            elif c == delimiter or c == 10:
                state = AT_CELL_START
            elif c != 13:
                if after == 0:
                    after = lines + 1
                state = UNQUOTED
        elif state == AT_CELL_START or state == LEADING_SPACES:  # noqa: SIM109 - two compares in compiled code
            if c == quote:
                if state == AT_CELL_START:
                    state = QUOTED
                    opened = lines + 1
                else:
                    if spaced == 0:
                        spaced = lines + 1
                    state = UNQUOTED
            elif c == 32:
                state = LEADING_SPACES
            elif c != delimiter and c != 10:
                state = UNQUOTED
            else:
                state = AT_CELL_START
        elif c == delimiter or c == 10:
            state = AT_CELL_START
    carry[0] = state
    carry[1] = lines
    carry[2] = opened
    carry[3] = spaced
    carry[4] = after
    carry[5] = first_end
    carry[6] = mixed
    carry[7] = prev
    carry[8] = lone_cr


FIELD_CARRY_SLOTS = 4
"""The carry of :func:`scan_fields` between blocks: the state (as :func:`scan_quotes`'s), the record (0 for the
header, every line feed outside quotes ending one, blank lines included, as the in-memory reader counts
records), the field of that record (from 0), and the first record holding text beyond the header's fields
(-1: none yet)."""


def new_field_carry() -> np.ndarray:
    """The carry of :func:`scan_fields` at the file's start (after its byte-order mark, if any)."""
    carry = np.zeros(FIELD_CARRY_SLOTS, dtype=np.int64)
    carry[3] = -1
    return carry


@numba.njit(cache=True, nogil=True)
def scan_fields(block, delimiter, quote, n_fields, carry):  # pragma: no cover - compiled
    """Advance ``carry`` (:data:`FIELD_CARRY_SLOTS` int64) over ``block``, stopping at the first record with a
    byte other than a delimiter or a CR in a field beyond the first ``n_fields`` (a quote there counts: a quoted
    empty field is a field that was written). Fields beyond the header that are all empty (a delimiter at a
    record's end) are what every reader may drop; text there is what one must not."""
    state = carry[0]
    record = carry[1]
    field = carry[2]
    found = carry[3]
    for i in range(block.shape[0]):
        if found >= 0:
            break
        c = block[i]
        if state == QUOTED:
            if c == quote:
                state = QUOTE_IN_QUOTED
            elif field >= n_fields:
                found = record
            continue
        if c == 10:
            record += 1
            field = 0
            state = AT_CELL_START
        elif c == delimiter:
            field += 1
            state = AT_CELL_START
        elif c != 13:
            # a quote opens a quoted cell at its start, or (doubled) stays one quote inside it
            state = QUOTED if c == quote and state in (AT_CELL_START, QUOTE_IN_QUOTED) else UNQUOTED
            if field >= n_fields:
                found = record
    carry[0] = state
    carry[1] = record
    carry[2] = field
    carry[3] = found
