"""A data file as the out-of-core engines see it: its format, its columns and how to read it exactly.

The engines must read a file the way :mod:`kanon_core.io` does, or refuse. Everything that can be
decided once per file is decided here, from the file's first bytes (CSV) or its schema (Parquet), with
the same rules as :func:`kanon_core.io._read_csv`:

* the delimiter is sniffed on the first 64 KiB among ``,`` ``;`` tab ``|``, as the in-memory reader does;
* the header (read in full, however long) names the columns; duplicated and empty names are refused
  (the in-memory reader refuses them too), in CSV and Parquet files alike (:func:`kanon_core.io.check_header`);
* every CSV cell is read as its exact text; an empty cell (quoted or not) is missing, nothing else is;
* a blank line is not a record (a line of delimiters, ",,", is one, of empty cells), nor is a line of spaces
  and tabs alone outside quotes (pandas skips it, as R's read.csv does; a quoted ``"   "`` is a value, and
  in a tab-separated file a line of tabs is a record of empty cells); an engine whose reader takes such a
  line for a record leaves out those :func:`skipped_lines` finds;
* the encoding must be UTF-8 (with or without its byte-order mark). The in-memory reader also accepts
  UTF-16/32 with a byte-order mark and single-byte Windows-1252 files; the engines read UTF-8 only, so
  any other encoding is refused with one line rather than read differently;
* files with CR-only line ends are refused (the engines' CSV readers split lines on LF).

Parquet columns carry their own types; the engines support integers, floats, text and booleans (the
in-memory path turns other types, such as dates and decimals, into Python objects whose order and
equality the engines would not reproduce, so such a column is refused when it is used).
"""

from __future__ import annotations

import bisect
import csv
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ..errors import InputError
from ..io import beyond_int64, check_header, header_record, refuse_wide_unsigned

SCALE_FORMATS = {".csv": "csv", ".txt": "csv", ".tsv": "csv", ".parquet": "parquet"}
"""File types the out-of-core engines read (the in-memory path reads more)."""

COLUMN_KINDS = ("text", "int", "float", "bool", "other")


@dataclass(frozen=True)
class Source:
    """A CSV or Parquet file prepared for an engine.

    ``kinds[c]`` is the physical kind of column c: always "text" for CSV (every cell is read as text and
    typed afterwards, exactly as :func:`kanon_core.io.type_column` types it), the Parquet type otherwise.
    ``has_bom`` says a CSV file starts with the UTF-8 byte-order mark.
    """

    path: Path
    format: str
    columns: tuple[str, ...]
    kinds: dict[str, str]
    delimiter: str = ","
    has_bom: bool = False
    size: int = 0
    quote_quirks: QuoteQuirks = field(default_factory=lambda: QuoteQuirks())
    """Where a CSV file's quoted cells have spaces or text outside their quotes (:func:`check_quotes_closed`)."""

    def kind(self, column: str) -> str:
        if column not in self.kinds:
            raise InputError(f"'{column}' is not a variable of the data.")
        return self.kinds[column]

    def require(self, columns: list[str] | tuple[str, ...]) -> None:
        """Refuse columns the file does not have, or whose type the engines cannot read exactly."""
        for c in columns:
            if self.kind(c) == "other":
                raise InputError(f"Column '{c}' has a type the out-of-core engines do not read exactly "
                                 "(only integers, floats, text and booleans); use --engine pandas.")


def is_scale_format(path: str | os.PathLike) -> bool:
    return Path(path).suffix.lower() in SCALE_FORMATS


def open_source(path: str | os.PathLike) -> Source:
    """Inspect ``path`` (a local CSV or Parquet file) and decide how engines read it, or refuse."""
    p = Path(path)
    ext = p.suffix.lower()
    if ext not in SCALE_FORMATS:
        raise InputError(f"The out-of-core engines read CSV and Parquet files, not '{ext or p.name}'; "
                         "use --engine pandas.")
    if not p.exists():
        raise InputError(f"File not found: {p.name}")
    if p.is_dir():
        raise InputError(f"{p.name} is a folder, not a data file.")
    size = p.stat().st_size
    if size == 0:
        raise InputError("The file is empty.")
    if SCALE_FORMATS[ext] == "parquet":
        return _parquet_source(p, size)
    return _csv_source(p, size)


def _parquet_source(p: Path, size: int) -> Source:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(p)
    except Exception as exc:  # pyarrow raises several types; report the kind, never the content
        raise InputError(f"Could not read the file as Parquet: {type(exc).__name__}. Is it really a Parquet file?") from None
    kinds: dict[str, str] = {}
    for f in schema:
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_integer(t):
            kinds[f.name] = "int"
        elif pa.types.is_floating(t):
            kinds[f.name] = "float"
        elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            kinds[f.name] = "text"
        elif pa.types.is_boolean(t):
            kinds[f.name] = "bool"
        else:
            kinds[f.name] = "other"
    names = [f.name for f in schema]
    check_header(names)  # as the in-memory reader checks the names of a Parquet file (and a CSV header)
    unsigned = [f.name for f in schema if (f.type.value_type if pa.types.is_dictionary(f.type) else f.type) == pa.uint64()]
    if unsigned:
        refuse_wide_unsigned([c for c in unsigned if _beyond_int64(p, c)])
    return Source(p, "parquet", tuple(names), kinds, size=size)


def _beyond_int64(p: Path, column: str) -> bool:
    """True when the unsigned 64-bit ``column`` holds a value above 2**63 - 1, which the in-memory reader
    refuses (:func:`kanon_core.io.refuse_wide_unsigned`): the engines would otherwise count it as a Python
    integer no column of theirs holds, or write it to a release that reads back as text. The row groups'
    statistics answer when every one has them (pyarrow drops statistics it cannot trust, such as unsigned
    ones written in signed order); otherwise the column alone is read, a batch at a time."""
    import pyarrow.parquet as pq

    file = pq.ParquetFile(p)
    meta = file.metadata
    tops = []
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        stats = next((group.column(j).statistics for j in range(group.num_columns)
                      if group.column(j).path_in_schema == column), None)
        if stats is None or not stats.has_min_max:
            break
        tops.append(stats.max)
    else:
        return any(int(t) > 2**63 - 1 for t in tops)
    return any(beyond_int64(batch.column(0)) for batch in file.iter_batches(columns=[column]))


def _csv_source(p: Path, size: int) -> Source:
    with open(p, "rb") as fh:
        head = fh.read(65536 + 4)
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        raise InputError("The out-of-core engines read UTF-8 files only and this one is UTF-16 or UTF-32; "
                         "use --engine pandas or save it as UTF-8.")
    bom = head.startswith(b"\xef\xbb\xbf")
    sample_bytes = head[3:] if bom else head
    try:
        sample = sample_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample_bytes) - 4:  # not just a character cut at the end of the sample
            raise InputError("The out-of-core engines read UTF-8 files only and this one is not UTF-8; "
                             "use --engine pandas or save it as UTF-8.") from None
        sample = sample_bytes[:exc.start].decode("utf-8")
    if "\x00" in sample[:4096]:
        raise InputError("This looks like a binary file, not a CSV text file.")
    if "\r" in sample and "\n" not in sample:
        raise InputError("The file ends its lines with CR only, which the out-of-core engines do not read; "
                         "use --engine pandas.")
    lines = sample.splitlines()
    try:
        sep = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        first = lines[0] if lines else ""
        sep = max(",;\t|", key=first.count)
    header = _header(p, sep)
    if not header:
        raise InputError("The file is empty.")
    check_header(header)
    quirks = _quotes_closed_once(p, sep)  # before any engine reads it: some read an unclosed quote to the end
    return Source(p, "csv", tuple(header), {h: "text" for h in header}, delimiter=sep, has_bom=bom, size=size,
                  quote_quirks=quirks)


def _header(p: Path, sep: str) -> list[str]:
    """The header record read from the file itself, however long (the sample may end inside it), with
    quoted names holding the delimiter or a line break read as the in-memory reader reads them."""
    ends: list[str] = []

    def lines(fh: TextIO) -> Iterator[str]:
        for line in fh:
            ends.append(line[-2:])
            yield line

    try:
        with open(p, encoding="utf-8-sig", newline="") as fh:
            header = header_record(lines(fh), sep)
    except UnicodeDecodeError:
        raise InputError("The out-of-core engines read UTF-8 files only and this one is not UTF-8; "
                         "use --engine pandas or save it as UTF-8.") from None
    if ends and ends[-1].endswith("\r"):  # a header longer than the sample, ended by CR alone
        raise InputError("The file ends its lines with CR only, which the out-of-core engines do not read; "
                         "use --engine pandas.")
    return header


def unclosed_quote(line: int) -> str:
    """The in-memory reader's words for a quoted cell that opens on ``line`` and is never closed (lines numbered
    as that reader and DuckDB number them: records plus the header, from 1)."""
    return (f"The file cannot be read as CSV near line {line}: a quoted cell is never closed; check the delimiter "
            "and the quotes.")


def check_utf8(path: Path, chunk: int = 1 << 24) -> None:
    """Refuse a file that is not valid UTF-8 throughout (for engines that would replace bad bytes silently).

    Decoded incrementally, so memory stays at one chunk; the message names the first bad line's number.
    """
    import codecs

    dec = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk)
            try:
                dec.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                line += block[:max(exc.start, 0)].count(b"\n")
                raise InputError(f"Line {line} is not valid UTF-8; the out-of-core engines read UTF-8 files "
                                 "only (use --engine pandas or save it as UTF-8).") from None
            if not block:
                return
            line += block.count(b"\n")


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
    """
    import codecs

    import numpy as np

    from ._quote_kernel import AT_CELL_START, QUOTED, UNQUOTED, new_carry, scan_quotes

    sep = delimiter.encode("utf-8")
    if len(sep) != 1:
        raise InputError("The out-of-core engines read CSV files whose delimiter is one byte.")
    carry = new_carry()
    with open(path, "rb") as fh:
        if fh.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:  # the mark is not part of the first cell
            fh.seek(0)
        while block := fh.read(chunk):
            lf = -1
            if b'"' in block or carry[0] not in (QUOTED, AT_CELL_START, UNQUOTED) or block.endswith(b" ") \
                    or (carry[0] != QUOTED and _ends_change(block, carry, lf := block.count(b"\n"))):
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
    return QuoteQuirks(int(carry[3]), int(carry[4]), int(carry[6]))


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
    import codecs

    import numpy as np

    from ._quote_kernel import new_field_carry, scan_fields

    sep = delimiter.encode("utf-8")
    carry = new_field_carry()
    with open(path, "rb") as fh:
        if fh.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
            fh.seek(0)
        while carry[3] < 0 and (block := fh.read(chunk)):
            scan_fields(np.frombuffer(block, dtype=np.uint8), sep[0], ord('"'), n_fields, carry)
    return int(carry[3]) if carry[3] >= 0 else None


_QUOTES_CLOSED: dict[tuple, QuoteQuirks] = {}
"""CSV files (path, size, modification time, delimiter) :func:`check_quotes_closed` passed, and their quirks: an
unchanged file is not read again by later commands of the process or reruns of the dashboard's large-file
panel."""


def _quotes_closed_once(p: Path, delimiter: str) -> QuoteQuirks:
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, delimiter)
    if key not in _QUOTES_CLOSED:
        _QUOTES_CLOSED[key] = check_quotes_closed(p, delimiter)
    return _QUOTES_CLOSED[key]


def refuse_mixed_line_ends(source: Source, engine: str) -> None:
    """Refuse ``source`` for ``engine`` (one that takes the first record's line end for every record's) when its
    records end in both CR LF and LF (:class:`QuoteQuirks`), naming the first line that differs."""
    line = source.quote_quirks.mixed_line_ends
    if line:
        raise InputError(f"Line {line} ends otherwise than the first line (CR LF and LF are mixed), which {engine} "
                         "reads as text of a cell; use --engine polars or --engine pandas, or save the file with "
                         "one kind of line end.")


def refuse_quote_quirks(source: Source, engine: str, before: bool, after: bool) -> None:
    """Refuse ``source`` for ``engine`` when it has a quoted cell with spaces before its opening quote
    (``before``) or text after its closing one (``after``) that the engine reads otherwise than the in-memory
    reader (:class:`QuoteQuirks`), in one line naming the line and no cell."""
    quirks = source.quote_quirks
    line = min((n for n, asked in ((quirks.spaced_before, before), (quirks.text_after, after)) if asked and n),
               default=0)
    if line:
        raise InputError(f"Line {line} has a quoted cell with spaces or text outside its quotes, which {engine} "
                         "reads otherwise than the in-memory reader does (it keeps them); use --engine pandas, "
                         "or remove them from the file.")


SPACES = " \t"
"""The characters of a line of spaces (:func:`space_line_pattern`): the white space the in-memory reader's
parser (pandas) skips a line of, as R's read.csv does."""


def space_chars(source: Source) -> str:
    """The characters a line of spaces is made of in ``source``: spaces and tabs, but not the delimiter (in a
    tab-separated file a line of tabs is a record of empty cells, and the in-memory reader keeps it)."""
    return "".join(c for c in SPACES if c != source.delimiter)


def space_line_pattern(source: Source) -> str:
    """A regular expression (the same text for Python, DuckDB's RE2 and Polars' Rust engine) matching, in
    full, the text of a line of spaces of ``source``: the first cell an engine reads from such a line."""
    return "[" + space_chars(source).replace("\t", "\\t") + "]+"


@dataclass(frozen=True)
class SkippedLines:
    """The lines of a CSV file's body that the in-memory reader skips and an engine may read as records.

    ``blank`` are the blank lines, ``spaces`` the lines made only of spaces and tabs (:func:`space_chars`),
    both outside any quoted cell; each is given by its position (from 0, after the header) among the
    file's records and these lines in file order, which is how Polars numbers what it reads.
    """

    blank: tuple[int, ...] = ()
    spaces: tuple[int, ...] = ()

    def positions(self) -> list[int]:
        """Every skipped line's position, in file order."""
        return sorted(self.blank + self.spaces)

    def spaces_among_lines(self) -> list[int]:
        """The lines of spaces' positions among the records and the lines of spaces alone (blank lines left
        out): how an engine that skips blank lines itself (DuckDB) numbers what it reads."""
        return [p - bisect.bisect_left(self.blank, p) for p in self.spaces]


def skipped_lines(source: Source, chunk: int = 1 << 24) -> SkippedLines:
    """The blank lines and the lines of spaces of a CSV file (:class:`SkippedLines`), for an engine that reads
    them as records to leave them out as the in-memory reader does.

    A blank line is a line end right after another one, outside any quoted cell (a line of delimiters,
    ",,", is a record of empty cells, not a blank line); a line of spaces is a line of one or more
    :func:`space_chars` alone, outside any quoted cell (a quoted cell of spaces, ``"   "``, is a value).
    Files without either are told apart from their bytes; the others are read record by record, as the
    in-memory reader splits them. Only called for a file with records an engine could not tell from
    such lines, so a file without them is never read twice.
    """
    if not _may_skip_lines(source.path, space_chars(source), chunk):
        return SkippedLines()
    spaces_line = re.compile(space_line_pattern(source))
    last, read = "", 0

    def lines(fh: TextIO) -> Iterator[str]:
        nonlocal last, read
        for line in fh:
            last, read = line, read + 1
            yield line

    blank: list[int] = []
    spaces: list[int] = []
    try:
        with open(source.path, encoding="utf-8-sig", newline="") as fh:
            records = csv.reader(lines(fh), delimiter=source.delimiter)
            next(records, None)  # the header
            before = read
            for position, record in enumerate(records):
                if last.endswith("\r"):  # a record ended by CR alone: the engines split lines on LF only
                    raise InputError("Some lines of the file end with CR alone, which the out-of-core engines "
                                     "do not read as line ends; use --engine pandas.")
                if not record:
                    blank.append(position)
                elif read == before + 1 and spaces_line.fullmatch(_without_line_end(last)):
                    spaces.append(position)  # one line, of spaces alone: no quote, no delimiter
                before = read
    except UnicodeDecodeError:
        raise InputError("The out-of-core engines read UTF-8 files only and this one is not UTF-8; "
                         "use --engine pandas or save it as UTF-8.") from None
    except csv.Error:  # a cell longer than the csv module's field limit
        raise InputError("The file has blank lines or lines of spaces and a cell too long to find them by; "
                         "use --engine pandas.") from None
    return SkippedLines(tuple(blank), tuple(spaces))


def _without_line_end(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line


def _may_skip_lines(path: Path, spaces: str, chunk: int) -> bool:
    """Whether the file may hold a blank line or a line of ``spaces`` alone: a line end followed by nothing
    but those characters up to another line end (LF or CR LF) or the end of the file, anywhere (inside a
    quoted cell too, which :func:`skipped_lines` then tells apart)."""
    run = b"[" + re.escape(spaces.encode()) + b"]*"
    inside, unfinished = re.compile(b"\n" + run + b"\r?\n"), re.compile(b"\n" + run + b"\r?\\Z")
    tail = b""
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            text = tail + block
            if inside.search(text):
                return True
            end = unfinished.search(text)  # a line of spaces the next block may end
            tail = end.group() if end else b""
    return len(tail.rstrip(b"\r")) > 1  # the last line, of spaces alone, without a line end


NO_RECORDS = "The file has no records (0 rows)."
"""The in-memory reader's words for a file with a header and no record (:func:`kanon_core.dataset.validate_frame`)."""


def require_records(n_records: int) -> None:
    """Refuse a file without records, as the in-memory reader does (an empty class table would pass every
    check and report no risk at all)."""
    if n_records == 0:
        raise InputError(NO_RECORDS)


def too_many_fields(record: int, n_header: int) -> str:
    """The message for record ``record`` (counted from 1 after the header) having more fields than the header,
    close to the in-memory reader's words (without the count: an engine's is not always the record's). No text
    is ever dropped; fields beyond the header that are all empty (a delimiter at a record's end) may be."""
    return (f"Record {record} (line {record + 1} when no cell holds a line break) has more fields than the header, "
            f"which names {n_header}; check the delimiter and the quotes.")


def file_key(source: Source) -> tuple[str, int, int]:
    """The file as it is now (path, size, modification time): what an engine remembers about a file it
    has checked holds only while this key is unchanged."""
    st = source.path.stat()
    return str(source.path.resolve()), st.st_size, st.st_mtime_ns
