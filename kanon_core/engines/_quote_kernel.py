"""Compiled scan of a CSV file's quoting: whether the file ends inside a quoted cell, and on which line that
cell opened.

Why: Spark's CSV reader (``multiLine``, the only mode that reads quoted line breaks) reads a quote that is
never closed to the end of the file as one cell, silently, where the in-memory reader, DuckDB and Polars
refuse the file: the records after it would be lost, and the risk measured on the rest. numba, because the
answer depends on every byte before it (a quote opens a cell only at a cell's start, and two quotes in a
quoted cell are one quote character), so it is one pass with a state, at the speed of the file's reading.
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
"""Just after a quote inside a quoted cell: another quote makes the two one character, anything else ends
the quoted part."""

CARRY_SLOTS = 3
"""The carry between blocks: the state, the records ended so far (the header included), and the line of the
last quote that opened a quoted cell, numbered as the in-memory reader and DuckDB number lines: records plus
the header, from 1 (the physical line when no cell holds a line break)."""


def new_carry() -> np.ndarray:
    """The carry at the file's start (after its byte-order mark, if any)."""
    return np.array([AT_CELL_START, 0, 0], dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def scan_quotes(block, delimiter, quote, carry):  # pragma: no cover - compiled
    """Advance ``carry`` (:data:`CARRY_SLOTS` int64: state, records ended, opening line) over the bytes ``block``
    of a file whose cells are separated by the byte ``delimiter`` and quoted with the byte ``quote``; a CR of a
    CR LF line end is a character of an unquoted cell's end, as it is to every reader. The file ends inside a
    quoted cell when the state after its last block is :data:`QUOTED`."""
    state = carry[0]
    lines = carry[1]
    opened = carry[2]
    for i in range(block.shape[0]):
        c = block[i]
        if c == 10 and state != QUOTED:  # a record's end (a line feed in a quoted cell is a character)
            lines += 1
        if state == QUOTED:
            if c == quote:
                state = QUOTE_IN_QUOTED
        elif state == QUOTE_IN_QUOTED:
            if c == quote:
                state = QUOTED
            elif c == delimiter or c == 10:
                state = AT_CELL_START
            else:
                state = UNQUOTED
        elif state == AT_CELL_START:
            if c == quote:
                state = QUOTED
                opened = lines + 1
            elif c != delimiter and c != 10:
                state = UNQUOTED
        elif c == delimiter or c == 10:
            state = AT_CELL_START
    carry[0] = state
    carry[1] = lines
    carry[2] = opened
