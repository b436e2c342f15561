"""Checks of a CSV file's text made before an out-of-core engine reads it, for what the engines' readers read
otherwise than the in-memory reader (found comparing them on random files; ``tests/test_csv_quote_scan.py``):

* a quote never closed, which Spark reads to the end of the file as one cell, and DuckDB and Polars do on
  some files (:func:`check_quotes_closed`, when the file is opened: every engine);
* quoted cells with spaces before the opening quote or text after the closing one, and records ended both in
  CR LF and in LF, which DuckDB or Spark read otherwise (:class:`QuoteQuirks`, found by the same pass; the
  engine refuses the file, :func:`refuse_quote_quirks`, :func:`refuse_mixed_line_ends`);
* a line ended by a CR alone, anywhere, which the in-memory reader reads as a line end and no engine does
  (:attr:`QuoteQuirks.cr_alone`, found by the same pass; every engine refuses the file when it is opened);
* text in a field beyond the header after an empty one, which Polars drops
  (:func:`first_record_with_text_beyond`);
* a NUL byte anywhere, which the in-memory reader refuses as a binary file and the engines' readers would read
  as a character of a cell (:func:`check_quotes_closed`, in the same pass).

One pass over the bytes each, one chunk in memory; the quote scan is compiled
(:mod:`kanon_core.engines._quote_kernel`) and skipped for chunks that cannot change its answer.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError


def unclosed_quote(line: int) -> str:
    """The in-memory reader's words for a quoted cell that opens on ``line`` and is never closed (lines numbered
    as that reader and DuckDB number them: records plus the header, from 1)."""
    return (f"The file cannot be read as CSV near line {line}: a quoted cell is never closed; check the delimiter "
            "and the quotes.")


@dataclass(frozen=True)
class QuoteQuirks:
    """Where a CSV file's quoted cells have text around their quotes (0: nowhere), which the readers read
    differently: ``spaced_before``, the first line with a cell of spaces then a quote (`` "a"``: text to the
    in-memory reader and Spark, the quoted ``a`` to DuckDB); ``text_after``, the first line with text between
    a closing quote and the delimiter or line end (``"a" ``: ``a `` to the in-memory reader, ``a`` to DuckDB and
    Spark); ``mixed_line_ends`` below. Lines are numbered as the in-memory reader numbers them."""

    spaced_before: int = 0
    text_after: int = 0
    mixed_line_ends: int = 0
    """The first line whose record ends otherwise than the first record (CR LF after LF, or LF after CR LF),
    line ends inside quoted cells left aside: Spark takes the first record's end for every record's."""
    cr_alone: int = 0
    """The first line ended by a CR alone (not followed by LF), outside any quoted cell, the file's last line
    included: the in-memory reader ends a line there, the engines' readers split lines on LF and read it
    otherwise (Polars as text of a cell, DuckDB not at all), so the file is refused when it is opened."""


def check_quotes_closed(path: Path, delimiter: str = ",", chunk: int = 1 << 24) -> QuoteQuirks:
    """Refuse a CSV file that ends inside a quoted cell, in the in-memory reader's words and with its line; else
    the file's :class:`QuoteQuirks`, for the engines that would read those cells otherwise to refuse it.

    Why: the in-memory reader refuses such a file, but the engines' readers do not always: Spark reads the
    quote to the end of the file as one cell, and DuckDB and Polars do so on some files too (DuckDB when the
    quote opens the last record's last cell, without a line end after it; Polars in a file whose second line
    opens one: found by comparing them with the reader on random files), so the records after the quote would
    be lost without a word. The engines refuse the others in words of their own; this check says it in the
    reader's, with its line. One pass, one chunk in memory: a chunk without a quote by a byte count, one with
    quotes by the compiled scan (:mod:`kanon_core.engines._quote_kernel`); ``benchmarks/bench_csv_checks.py``.

    The same pass refuses a file with a NUL byte anywhere (:data:`kanon_core.io.BINARY_FILE`), as the in-memory
    reader does: looking only at the file's start, a binary tail was read as cells of text. It is a search of
    each chunk for one byte (``memchr``, at the speed of the byte count), so the file is not read again.
    """
    import numpy as np

    from ..io import BINARY_FILE
    from ._quote_kernel import AT_CELL_START, QUOTED, UNQUOTED, new_carry, scan_quotes

    sep = delimiter.encode("utf-8")
    if len(sep) != 1:
        raise InputError("The out-of-core engines read CSV files whose delimiter is one byte.")
    carry = new_carry()
    for block in _blocks(path, chunk):
        if b"\x00" in block:
            raise InputError(f"{BINARY_FILE}.")
        lf = -1
        if b'"' in block or carry[0] not in (QUOTED, AT_CELL_START, UNQUOTED) or block.endswith(b" ") \
                or (carry[0] != QUOTED and (_ends_change(block, carry, lf := block.count(b"\n"))
                                            or _lone_cr(block, carry))):
            scan_quotes(np.frombuffer(block, dtype=np.uint8), sep[0], ord('"'), carry)
        elif carry[0] != QUOTED:
            # no quote (most survey files), from a state outside any quoted cell and not after spaces, to a
            # last byte that is no space, with every record ended as the first: the scan's state is its last
            # byte's, and every line feed ends a record, as in the compiled scan, at the speed of a count
            carry[0] = AT_CELL_START if block[-1:] in (sep, b"\n") else UNQUOTED
            carry[1] += lf
        carry[7] = block[-1]
    if carry[0] == QUOTED:
        raise InputError(unclosed_quote(int(carry[2])))
    if carry[7] == 13 and not carry[8]:  # the file's last byte, a CR: its last line ends with a CR alone
        carry[8] = carry[1] + 1
    return QuoteQuirks(int(carry[3]), int(carry[4]), int(carry[6]), int(carry[8]))


def _lone_cr(block: bytes, carry) -> bool:
    """Whether a block without a quote, read outside any quoted cell, holds a CR not followed by LF, or starts
    otherwise than with the LF a CR ending the block before asks for (then the compiled scan reads it, to note
    the line)."""
    if carry[7] == 13 and block[:1] != b"\n":
        return True
    if b"\r" not in block:
        return False
    return block.count(b"\r") - block.endswith(b"\r") > block.count(b"\r\n")


def _ends_change(block: bytes, carry, lf: int) -> bool:
    """Whether a block without a quote, read outside any quoted cell, with ``lf`` line feeds, holds the first
    record's end or one of another kind than the first (then the compiled scan reads it, to note either with
    its line)."""
    from ._quote_kernel import CRLF_END, LF_END

    if not lf:
        return False
    split = carry[7] == 13 and block[:1] == b"\n"  # a CR LF split between two blocks
    crlf = (block.count(b"\r\n") if b"\r" in block else 0) + split
    first = carry[5]
    return first == 0 or (first == LF_END and crlf > 0) or (first == CRLF_END and crlf < lf)


def first_record_with_text_beyond(path: Path, delimiter: str, n_fields: int, chunk: int = 1 << 24) -> int | None:
    """The first record (counted from 1 after the header, blank lines included, as the in-memory reader counts
    them) with text in a field beyond the first ``n_fields`` (the header's), or None.

    Why: Polars reads one field beyond the header, to refuse a record that has one, and drops the rest of the
    record; when that field is empty (``1,2,,x`` under a header of two), the text after it was dropped
    without a word. The file's quoted cells are closed (:func:`check_quotes_closed` ran when it was opened).
    One compiled pass (:func:`~kanon_core.engines._quote_kernel.scan_fields`) that stops at the first such
    record."""
    import numpy as np

    from ._quote_kernel import new_field_carry, scan_fields

    sep = delimiter.encode("utf-8")
    carry = new_field_carry()
    for block in _blocks(path, chunk):
        scan_fields(np.frombuffer(block, dtype=np.uint8), sep[0], ord('"'), n_fields, carry)
        if carry[3] >= 0:
            break
    return int(carry[3]) if carry[3] >= 0 else None


def _blocks(path: Path, chunk: int) -> Iterator[bytes]:
    """The file's bytes after its UTF-8 byte-order mark, if any (the mark is not part of the first cell), in
    blocks of ``chunk`` bytes: one block in memory at a time."""
    with open(path, "rb") as fh:
        if fh.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
            fh.seek(0)
        while block := fh.read(chunk):
            yield block


_QUOTES_CLOSED: dict[tuple, QuoteQuirks] = {}
"""CSV files (path, size, modification time, delimiter) :func:`check_quotes_closed` passed, and their quirks: an
unchanged file is not read again by later commands of the process or reruns of the dashboard's large-file
panel."""


def quotes_closed_once(p: Path, delimiter: str) -> QuoteQuirks:
    """:func:`check_quotes_closed` once per unchanged file (path, size, modification time) and delimiter."""
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, delimiter)
    if key not in _QUOTES_CLOSED:
        _QUOTES_CLOSED[key] = check_quotes_closed(p, delimiter)
    return _QUOTES_CLOSED[key]


def refuse_mixed_line_ends(source: Any, engine: str) -> None:
    """Refuse ``source`` for ``engine`` (one that takes the first record's line end for every record's) when its
    records end in both CR LF and LF (:class:`QuoteQuirks`), naming the first line that differs."""
    line = source.quote_quirks.mixed_line_ends
    if line:
        raise InputError(f"Line {line} ends otherwise than the first line (CR LF and LF are mixed), which {engine} "
                         "reads as text of a cell; use --engine polars or --engine pandas, or save the file with "
                         "one kind of line end.")


def refuse_quote_quirks(source: Any, engine: str, before: bool, after: bool, fails: bool = False) -> None:
    """Refuse ``source`` for ``engine`` when it has a quoted cell with spaces before its opening quote
    (``before``) or text after its closing one (``after``) that the engine reads otherwise than the in-memory
    reader (:class:`QuoteQuirks`), or (``fails``) cannot read at all, in one line naming the line and no cell:
    before the engine's own error, which names neither."""
    quirks = source.quote_quirks
    line = min((n for n, asked in ((quirks.spaced_before, before), (quirks.text_after, after)) if asked and n),
               default=0)
    if line:
        how = "cannot read" if fails else "reads otherwise than the in-memory reader does"
        raise InputError(f"Line {line} has a quoted cell with spaces or text outside its quotes, which {engine} "
                         f"{how} (the in-memory reader keeps them); use --engine pandas, or remove them from "
                         "the file.")
