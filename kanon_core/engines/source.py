"""A data file as the out-of-core engines see it: its format, its columns and how to read it exactly.

The engines must read a file the way :mod:`kanon_core.io` does, or refuse. Everything that can be
decided once per file is decided here, from the file's first bytes (CSV) or its schema (Parquet), with
the same rules as :func:`kanon_core.io._read_csv`:

* the delimiter is sniffed on the first 64 KiB among ``,`` ``;`` tab ``|``, as the in-memory reader does;
* the header (read in full, however long) names the columns; duplicated and empty names are refused
  (the in-memory reader refuses them too), in CSV and Parquet files alike (:func:`kanon_core.io.check_header`);
* every CSV cell is read as its exact text; an empty cell (quoted or not) is missing, nothing else is;
* a file holding a NUL byte anywhere is refused as binary (in the 64 KiB sample, then in the pass over the
  whole file that :func:`~kanon_core.engines.csv_checks.check_quotes_closed` makes anyway);
* a blank line is not a record (a line of delimiters, ",,", is one, of empty cells), nor is a line of spaces
  and tabs alone outside quotes (pandas skips it, as R's read.csv does; a quoted ``"   "`` is a value, and
  in a tab-separated file a line of tabs is a record of empty cells); an engine whose reader takes such a
  line for a record leaves out those :func:`skipped_lines` finds;
* the encoding must be UTF-8 (with or without its byte-order mark). The in-memory reader also accepts
  UTF-16/32 with a byte-order mark and single-byte Windows-1252 files; the engines read UTF-8 only, so
  any other encoding is refused with one line rather than read differently;
* files with CR-only line ends are refused (the engines' CSV readers split lines on LF), as is a file with a
  line ended by a CR alone anywhere (:data:`CR_ALONE`);
* blank lines before the header are skipped, as the in-memory reader's parser (pandas) skips them: the header
  is the first record after them (:attr:`Source.skip_lines`).

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
from ..io import BINARY_FILE, beyond_int64, check_header, header_record, refuse_wide_unsigned
from .csv_checks import QuoteQuirks, quotes_closed_once

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
    quote_quirks: QuoteQuirks = field(default_factory=QuoteQuirks)
    """What a CSV file holds that some engines read otherwise than the in-memory reader: quoted cells with
    spaces or text outside their quotes, records ended both ways (:mod:`~kanon_core.engines.csv_checks`)."""
    skip_lines: int = 0
    """The lines before a CSV file's header: blank lines, and after a first blank one lines of spaces
    (:func:`_header`), which the in-memory reader's parser skips; the engines' readers are told to skip them,
    since they would take the first for the header (and find no column)."""

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
    if "\x00" in sample:  # early, in the bytes read already; the quote check looks at the rest of the file
        raise InputError(f"{BINARY_FILE}.")
    if "\r" in sample and "\n" not in sample:
        raise InputError("The file ends its lines with CR only, which the out-of-core engines do not read; "
                         "use --engine pandas.")
    lines = sample.splitlines()
    try:
        sep = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        first = lines[0] if lines else ""
        sep = max(",;\t|", key=first.count)
    header, skip = _header(p, sep)
    if not header:
        raise InputError("The file is empty.")
    check_header(header)
    quirks = quotes_closed_once(p, sep)  # before any engine reads it: some read an unclosed quote to the end
    # (the same pass refuses a NUL anywhere in the file, as the in-memory reader does)
    if quirks.cr_alone:
        raise InputError(CR_ALONE)
    return Source(p, "csv", tuple(header), {h: "text" for h in header}, delimiter=sep, has_bom=bom, size=size,
                  quote_quirks=quirks, skip_lines=skip)


CR_ALONE = ("Some lines of the file end with CR alone, which the out-of-core engines do not read as line ends; "
            "use --engine pandas.")
"""The refusal of a CSV file with a line ended by a CR alone (:attr:`QuoteQuirks.cr_alone`), anywhere in it: the
in-memory reader ends a line there, the engines' readers split lines on LF only (Polars read such a line with
the next as one record, and said it had more fields than the header; DuckDB's error named no cause)."""


def _header(p: Path, sep: str) -> tuple[list[str], int]:
    """The header record read from the file itself, however long (the sample may end inside it), with
    quoted names holding the delimiter or a line break read as the in-memory reader reads them, and the
    number of lines before it.

    A file may start with blank lines: the in-memory reader's parser (pandas) skips them, and lines of
    spaces after them, and takes the next record for the header (a first line of spaces is a header of one
    unnamed column there, refused). They are skipped here alike and counted, for the engines' readers to
    skip (:attr:`Source.skip_lines`): without it the header was read as empty and the file called empty."""
    ends: list[str] = []
    skipped = 0
    spaces = "".join(c for c in SPACES if c != sep)

    def lines(fh: TextIO) -> Iterator[str]:
        nonlocal skipped
        leading = True
        for line in fh:
            ends.append(line[-2:])
            text = _without_line_end(line)
            if leading and (skipped or not text) and not text.strip(spaces):
                skipped += 1
                continue
            leading = False
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
    return header, skipped


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
        for number, line in enumerate(fh):
            if number < source.skip_lines:  # the blank lines before the header
                continue
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
                    raise InputError(CR_ALONE)
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
