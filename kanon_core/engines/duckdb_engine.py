"""DuckDB: the embedded out-of-core engine (the default for large files; see the README's benchmark).

DuckDB reads CSV and Parquet directly, in parallel, and its hash aggregate spills to disk beyond its
memory limit, so the class table of a file larger than memory is one SQL query. Settings applied to
every connection: ``memory_limit`` (kanon's ``--memory-limit``), ``temp_directory`` (a private folder
removed afterwards) and ``preserve_insertion_order`` (releases keep the input's record order).

Record-level outputs (releases, per-record results) join the records with small tables (mapping tables,
the classes to blank, the class table) and sort on the records' number at the end, because DuckDB keeps
no order through a join. Left to itself DuckDB's optimizer may swap a join's sides and build its hash
table on the records (a RIGHT join with every record, every column, in memory: the 10M-row CSV release ran
out of memory under 2 and 4 GiB). :func:`records_probe` turns that swap off for those queries, so the
records stream through the joins and only the final sort holds them, and that sort spills to disk.

CSV options that make DuckDB read exactly as :mod:`kanon_core.io`: every column as text (``all_varchar``),
the sniffed delimiter, ``"`` as quote and escape (a quoted cell may hold the delimiter, doubled quotes and
line breaks), the header's names, short records padded with missing cells (``null_padding``, as pandas
pads them), and ``strict_mode`` so a record with too many fields or an unclosed quote stops the read
instead of being skipped. Invalid UTF-8 stops the read too; kanon reports it in one line, with the record's
number but never its text.

DuckDB's parallel CSV reader does not combine ``null_padding`` with line breaks inside quoted cells: it
stops with an error where it meets one. Such a file is then read again by the serial reader (``parallel =
false``), which handles both, and remembered (:func:`~kanon_core.engines.source.file_key`) so its later
queries go to the serial reader at once. Files without such cells keep the parallel reader.

A blank line is not a record (:mod:`kanon_core.engines.source`). DuckDB skips it when the header names
several columns, but in a one-column file it reads it as a record of one missing cell, as it reads ``""``
(a record whose cell is empty, which the in-memory reader keeps). So a one-column file is read with
``allow_quoted_nulls = false``, which keeps ``""`` as empty text (made missing afterwards, as every empty
cell is), and the records whose cell is NULL, the blank lines, are left out in the same scan: no second
read, and nothing changes for files of several columns. For the same reason a one-column CSV release
writes a missing cell as ``""`` (as the in-memory writer does), never as a blank line, and quotes a cell of
only spaces and tabs, which the in-memory reader would skip as a blank line too.

Every query reads the file's columns by position (:func:`positional`: ``kanon_c0``, ``kanon_c1``, ...), never by
their names: DuckDB's names ignore case, so a file with the columns ``A`` and ``a``, which the in-memory reader
and Polars read as two variables, could not be read by name (its ``read_csv`` failed with a BinderException).
A release is written under the file's names; when two differ only by case, DuckDB's writer would rename one
(``a_1``), so the CSV header is written by kanon and a Parquet release through Arrow (:func:`_write_named`).

A record longer than DuckDB's ``max_line_size`` (2 MB by default) stops its reader; the file is read again with
the limit raised past the record DuckDB names (doubled at least, up to the file's size) and remembered
(:data:`_LINE_SIZE`), so such a file is read as the other engines read it, while other files keep the default
(DuckDB's buffers grow with the limit).

A line of spaces and tabs alone is not a record either (:mod:`kanon_core.engines.source`), but DuckDB reads it
as one, its first cell the spaces and the others missing, just as it reads a quoted cell of spaces
(``"   "``, a value). So every scan of a CSV file not yet searched for such lines stops, with an error of its
own (:data:`SPACES_FOUND`), at the first record that could be one: first cell of spaces alone, last cell
missing. A file without such records is read once, as before, the check riding on the same scan, and once a
query has read all its records the file is remembered and later queries skip the check. The other files are
searched (:func:`~kanon_core.engines.source.skipped_lines`), their candidate records listed by
DuckDB, and the query is run again leaving the lines of spaces out (:class:`SpaceLines`), remembered with
the file: when every candidate is a line of spaces, they are left out as candidates, with no numbering of
the records; otherwise by their positions.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import Cancelled, InputError
from . import sql
from .api import OutOfCore, blank_values, csv_cell_kinds, csv_field, whole_candidates
from .base import ColumnStats, EngineSettings, ReleasePlan, register
from .csv_checks import refuse_quote_quirks, unclosed_quote
from .source import Source, file_key, require_records, skipped_lines, space_line_pattern, too_many_fields

T = TypeVar("T")

_SERIAL: set[tuple[str, int, int]] = set()
"""CSV files (:func:`~kanon_core.engines.source.file_key`) with a line break in a quoted cell, which only
DuckDB's serial CSV reader reads with ``null_padding`` (see the module docstring)."""

_PARALLEL_REFUSES = "parallel scanner does not support null_padding"
"""The start of DuckDB's error when its parallel reader meets a line break in a quoted cell."""


_LINE_SIZE: dict[tuple[str, int, int], int] = {}
"""CSV files (:func:`~kanon_core.engines.source.file_key`) with a record longer than DuckDB's default
``max_line_size``, and the limit they are read with (see the module docstring)."""

DEFAULT_LINE_SIZE = 2_000_000
"""DuckDB's default ``max_line_size`` (bytes): a file is read with it until a record exceeds it."""

_LINE_TOO_LONG = re.compile(r"Maximum line size of (\d+) bytes exceeded\. Actual Size: ?(\d+) bytes")
"""DuckDB's error for a record longer than ``max_line_size``, with the limit and the record's size."""

POSITIONAL = "kanon_c{}"
"""The name every query of this engine gives the file's column at a position (see the module docstring)."""


def positional(source: Source) -> Source:
    """``source`` with its columns named by position (:data:`POSITIONAL`), as this engine's queries read them:
    DuckDB's identifiers ignore case, so two columns whose names differ only by case (``A``, ``a``) could not
    both be read by name. Everything else (the path, the kinds of the columns, the checks) is the file's."""
    names = tuple(POSITIONAL.format(i) for i in range(len(source.columns)))
    return replace(source, columns=names,
                   kinds={n: source.kinds[c] for n, c in zip(names, source.columns, strict=True)})


class Positions:
    """The positional name (:func:`positional`) of each column of ``source``, by its name in the file; a name
    the file does not have is refused in the file's words (:meth:`Source.kind`)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.inner = positional(source)
        self._of = {c: n for c, n in zip(source.columns, self.inner.columns, strict=True)}

    def __call__(self, column: str) -> str:
        if column not in self._of:
            self.source.kind(column)  # raises: not a variable of the data
        return self._of[column]

    def all(self, columns: Sequence[str]) -> list[str]:
        return [self(c) for c in columns]


def _case_clash(names: Sequence[str]) -> bool:
    """Whether two of ``names`` are one to DuckDB, whose names ignore case (compared lower-cased and
    case-folded: a clash it would not see only costs a slower write)."""
    return len({n.lower() for n in names}) < len(names) or len({n.casefold() for n in names}) < len(names)


SPACES_FOUND = "kanon: a record may be a line of spaces"
"""The error a CSV scan raises at a record that could be a line of spaces, in a file not yet searched for
them (see the module docstring)."""


@dataclass(frozen=True)
class SpaceLines:
    """How the lines of spaces of a CSV file are left out (a file without them has None instead): every
    candidate record (:func:`_candidate`) when ``drop`` and ``keep`` are both None (every candidate is such
    a line), otherwise the candidates at the positions ``drop``, or all but those at the positions ``keep``,
    whichever list is shorter. Positions count from 0 among the records DuckDB reads, blank lines left out."""

    drop: tuple[int, ...] | None = None
    keep: tuple[int, ...] | None = None


_SPACES: dict[tuple[str, int, int], SpaceLines | None] = {}
"""CSV files (:func:`~kanon_core.engines.source.file_key`) searched for lines of spaces, and how to leave them out."""


def _csv_relation(source: Source) -> str:
    key = file_key(source)
    if key not in _SPACES:
        check = f"CASE WHEN {_candidate(source)} THEN error({sql.DUCKDB.lit(SPACES_FOUND)}) ELSE true END"
        return f"(SELECT * FROM {_csv_records(source)} WHERE {check})"
    return _without_space_lines(source, _csv_records(source), _SPACES[key])


def _csv_records(source: Source) -> str:
    """The records of a CSV file as DuckDB reads them, blank lines left out, lines of spaces not. A file with
    spaces or text outside a quoted cell's quotes is refused: DuckDB drops spaces there that the in-memory
    reader keeps (`` "a"`` is that text to the reader, ``a`` to DuckDB; ``"a" `` is ``a `` and ``a``)."""
    refuse_quote_quirks(source, "DuckDB", before=True, after=True)
    columns = ", ".join(f"{sql.DUCKDB.lit(c)}: 'VARCHAR'" for c in source.columns)
    delim = sql.DUCKDB.lit(source.delimiter)
    key = file_key(source)
    serial = "parallel = false, " if key in _SERIAL else ""
    one = len(source.columns) == 1
    quoted = "allow_quoted_nulls = false, " if one else ""
    skip = f"skip = {int(source.skip_lines)}, " if source.skip_lines else ""  # blank lines before the header
    long = f"max_line_size = {_LINE_SIZE[key]}, " if key in _LINE_SIZE else ""
    scan = (f"read_csv({sql.DUCKDB.lit(str(source.path))}, columns = {{{columns}}}, header = true, {skip}"
            f"delim = {delim}, quote = '\"', escape = '\"', null_padding = true, strict_mode = true, "
            f"{quoted}{serial}{long}auto_detect = false, encoding = 'utf-8')")
    return _without_blank_lines(scan, source.columns[0]) if one else scan


def _candidate(source: Source) -> str:
    """True for a record DuckDB reads from a line of spaces (its first cell the spaces, the others missing),
    and for the records it cannot tell from one without the file's text: first cell of spaces alone (quoted
    or not), last cell missing. Never NULL."""
    first, last = sql.DUCKDB.q(source.columns[0]), sql.DUCKDB.q(source.columns[-1])
    spaces = f"COALESCE(regexp_full_match({first}, {sql.DUCKDB.lit(space_line_pattern(source))}), false)"
    return f"({spaces} AND {last} IS NULL)" if len(source.columns) > 1 else spaces


def _position_column(source: Source) -> str:
    """A name for the records' position that is none of the file's columns (DuckDB's names ignore case)."""
    name, taken = "kanon_position", {c.lower() for c in source.columns}
    while name in taken:
        name += "_"
    return name


def _numbered(source: Source, records: str) -> str:
    """``records`` with their position (from 0, in file order) in :func:`_position_column`."""
    return f"(SELECT *, row_number() OVER () - 1 AS {_position_column(source)} FROM {records})"


def _without_space_lines(source: Source, records: str, spaces: SpaceLines | None) -> str:
    """``records`` (:func:`_csv_records`) without the lines of spaces that ``spaces`` describes."""
    if spaces is None:
        return records
    candidate = _candidate(source)
    if spaces.drop is None and spaces.keep is None:
        return f"(SELECT * FROM {records} WHERE NOT {candidate})"
    position = _position_column(source)
    listed = f"{position} IN ({', '.join(map(str, spaces.drop or spaces.keep or ()))})"
    keep = f"NOT ({candidate} AND {listed})" if spaces.drop is not None else f"(NOT {candidate} OR {listed})"
    return f"(SELECT * EXCLUDE ({position}) FROM {_numbered(source, records)} WHERE {keep})"


def search_space_lines(con, source: Source) -> None:
    """Search a CSV file for its lines of spaces (after a scan met :data:`SPACES_FOUND`) and remember how
    to leave them out (:class:`SpaceLines`). The candidates DuckDB reads are listed, in one more scan, only
    when the file has such lines; each line found must be one of them, or the file is refused."""
    spaces = set(skipped_lines(source).spaces_among_lines())
    if not spaces:
        _SPACES[file_key(source)] = None
        return
    position = _position_column(source)
    rows = con.sql(f"SELECT {position} FROM {_numbered(source, _csv_records(source))} "
                   f"WHERE {_candidate(source)}").fetchall()
    candidates = {int(r[0]) for r in rows}
    if not spaces <= candidates:
        raise InputError("The out-of-core engines cannot tell this file's lines of spaces from its records; "
                         "use --engine pandas.")
    others = candidates - spaces
    _SPACES[file_key(source)] = (SpaceLines() if not others else SpaceLines(drop=tuple(sorted(spaces)))
                                 if len(spaces) <= len(others) else SpaceLines(keep=tuple(sorted(others))))


def _without_blank_lines(scan: str, column: str) -> str:
    """The records of a one-column file's ``scan`` (read with ``allow_quoted_nulls = false``) without its
    blank lines: there a NULL cell can only be a blank line, since ``""`` is read as empty text. A filter in
    the same scan, so the file is still read once (see the module docstring)."""
    return f"(SELECT * FROM {scan} WHERE {sql.DUCKDB.q(column)} IS NOT NULL)"


ONE_COLUMN_CSV = "CSV, HEADER true, DELIMITER ',', QUOTE ''"
"""The COPY options of a one-column CSV release: :func:`one_column_csv` gives each line's text, quotes
included, which DuckDB then writes as it is."""


def one_column_csv(query: str, keep: Sequence[str], name: str | None = None) -> str:
    """``query`` (the release's records) as the lines of a CSV file of the one column ``keep``, each cell
    quoted as :func:`~kanon_core.engines.api.csv_field` quotes it and the column named by the header's
    line (``name``, the column's name in the file, default ``keep[0]``), to be written with
    :data:`ONE_COLUMN_CSV`. DuckDB's own quoting would write a missing cell as an empty line and a cell of
    spaces unquoted: both lines would be read back as blank lines, records lost."""
    col, v = sql.DUCKDB.q(keep[0]), "kanon_text"
    needs_quotes = rf"""{v} = '' OR regexp_full_match({v}, '[ \t]+') OR regexp_matches({v}, '[",\r\n]')"""
    quoted = f"""'"' || replace({v}, '"', '""') || '"'"""
    header = csv_field(keep[0] if name is None else name)
    return (f"SELECT CASE WHEN {needs_quotes} THEN {quoted} ELSE {v} END AS {sql.DUCKDB.q(header)} "
            f"FROM (SELECT COALESCE(CAST({col} AS VARCHAR), '') AS {v} FROM ({query}) kanon_release) kanon_lines")


def with_whole_floats(con, source: Source, kinds: dict[str, str], plan: ReleasePlan) -> dict[str, str]:
    """``kinds`` (:func:`~kanon_core.engines.api.csv_cell_kinds`) with the float columns of whole numbers
    made "whole", learnt in one query over those columns (:func:`~kanon_core.engines.sql.whole_floats_sql`)."""
    floats = whole_candidates(kinds, plan)
    if not floats:
        return kinds
    row = con.sql(sql.whole_floats_sql(sql.DUCKDB, source, relation(source), floats)).fetchall()[0]
    return kinds | {c: "whole" for i, c in enumerate(floats) if row[i] == 1}


def csv_cells(query: str, keep: Sequence[str], kinds: dict[str, str]) -> str:
    """``query`` (the release's records) with the cells of the columns ``kinds`` names as the text the
    default writer writes (:data:`~kanon_core.engines.api.CELL_KINDS`); missing cells stay missing. DuckDB's
    text of a DOUBLE is Python's shortest round-trip text already ("1e-07", "1e+16", "2.0"), but for the
    infinities and -0.0, which the default writer writes "Infinity", "-Infinity" and "0.0"
    (:func:`kanon_core.io.float_cell`); a FLOAT is widened first, as the default writer widens it, and a
    boolean would otherwise be "true"."""
    return f"SELECT {sql.cell_texts(sql.DUCKDB, keep, kinds, _float_text)} FROM ({query}) kanon_cells"


def _float_text(col: str) -> str:
    """DuckDB's text of the DOUBLE (Python's shortest round-trip text), the infinities and -0.0 as the default
    writer writes them."""
    text = f"CAST(CAST({col} AS DOUBLE) AS VARCHAR)"
    return f"CASE {text} WHEN 'inf' THEN 'Infinity' WHEN '-inf' THEN '-Infinity' WHEN '-0.0' THEN '0.0' ELSE {text} END"


def read_serially_after(source: Source, exc: Exception) -> bool:
    """True when ``exc`` is the parallel reader's refusal of a line break in a quoted cell of ``source``
    (read with the parallel reader): the file is then marked for the serial reader, to be read again."""
    if source.format != "csv" or _PARALLEL_REFUSES not in str(exc):
        return False
    key = file_key(source)
    if key in _SERIAL:
        return False
    _SERIAL.add(key)
    return True


def longer_lines_after(source: Source, exc: Exception) -> bool:
    """True when ``exc`` is DuckDB's refusal of a CSV record longer than its ``max_line_size``, which can be
    raised: the file is then marked to be read with a larger limit (past the record's size, at least twice the
    limit it failed with, at most the file's size: a later record may be longer still), to be read again."""
    found = _LINE_TOO_LONG.search(str(exc))
    if source.format != "csv" or found is None:
        return False
    limit, actual = int(found.group(1)), int(found.group(2))
    ceiling = source.path.stat().st_size + 2
    if limit >= ceiling:
        return False
    _LINE_SIZE[file_key(source)] = min(ceiling, max(2 * limit, actual + 2))
    return True


def space_lines_after(source: Source, exc: Exception) -> bool:
    """True when ``exc`` is a scan's stop at a record that could be a line of spaces (:data:`SPACES_FOUND`),
    in a CSV file not yet searched for them: it is to be searched, and read again."""
    return source.format == "csv" and SPACES_FOUND in str(exc) and file_key(source) not in _SPACES


def serially_if_needed(con, source: Source, what: str, attempt: Callable[[], T], whole: bool = True) -> T:
    """``attempt()`` (a query on ``con`` reading ``relation(source)``), run again with the serial CSV reader
    when the parallel one refuses the file, and after searching the file for lines of spaces when a scan
    met a record that could be one (see the module docstring); other DuckDB errors become one line.

    ``whole`` says the query reads every record: once it has, a CSV file not yet searched is known to have
    no record that could be a line of spaces, and later queries read it without the check."""
    import duckdb

    key = file_key(source) if source.format == "csv" else None
    while True:
        try:
            result = attempt()
            if whole and key is not None:
                _SPACES.setdefault(key, None)
            return result
        except duckdb.Error as exc:
            if space_lines_after(source, exc):
                serially_if_needed(con, source, what, lambda: search_space_lines(con, source), whole=False)
            elif not read_serially_after(source, exc) and not longer_lines_after(source, exc):
                raise InputError(_message(exc, what, source)) from None


def records_probe(con) -> None:
    """Keep the records on the probe side of every join of a record-level query on ``con``.

    The release and per-record queries write the records on the left of LEFT JOINs whose right sides are
    small (one row per distinct value, per class to blank, per class). DuckDB's ``build_side_probe_side``
    optimizer may still swap the sides when its size estimates say so; it did for the join with the
    classes to blank, building a hash table of every record's every column, which cannot spill far
    enough under a memory limit. Turned off, the hash tables hold the small sides, the records stream
    through, and the only operator that holds them all is the final ``ORDER BY`` on the record number,
    which spills. The order itself comes from that sort, never from the joins."""
    con.execute("SET disabled_optimizers = 'build_side_probe_side'")


LOOKUP_MAX_VALUES = 64
"""Mapping tables up to this many values are applied as map lookups (a scan of the map's keys per record,
cheap for a few dozen values) instead of joins, so a release of recodes alone keeps the input's order
without numbering and sorting the records; larger ones are joined."""


def map_variable(con, table: str, variable: str) -> str:
    """Store the mapping table ``table`` (``key``, ``value``) as a DuckDB map in the session variable
    ``variable`` and return the expression that reads it. A missing key cannot be a map key and matches
    nothing in the join either, so it is left out."""
    con.execute(f"SET VARIABLE {variable} = (SELECT map_from_entries(list(struct_pack(k := \"key\", "
                f"v := \"value\")) FILTER (WHERE \"key\" IS NOT NULL)) FROM {table})")
    return f"getvariable({sql.DUCKDB.lit(variable)})"


def relation(source: Source) -> str:
    """The SQL that reads the file. A Parquet file is read with ``can_have_nan``: its float statistics leave
    NaN out (as the Parquet format asks), and without it DuckDB would take them to mean "no NaN" and drop
    the test that makes NaN missing, so NaN would be counted and released as a value ("nan")."""
    if source.format == "parquet":  # the columns by their names in ``source`` (positional ones, see above)
        names = ", ".join(sql.DUCKDB.q(c) for c in source.columns)
        return (f"(SELECT * FROM read_parquet({sql.DUCKDB.lit(str(source.path))}, can_have_nan = true) "
                f"AS kanon_file({names}))")
    return _csv_relation(source)


POLL_SECONDS = 0.05
"""How often a running query's cancel flag and progress are polled."""


@contextmanager
def interruptible(con, settings: EngineSettings) -> Iterator[None]:
    """While the block runs a query on ``con``, a watcher thread interrupts it once ``settings.cancelled()``
    turns True (``connection.interrupt()``: the query stops within moments, not at its end) and reports
    ``con.query_progress()`` to ``settings.query_progress``. A flag already set stops before the query."""
    cancelled, report = settings.cancelled, settings.query_progress
    if cancelled is None and report is None:
        yield
        return
    if cancelled is not None and cancelled():
        raise Cancelled("The computation was cancelled.")
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(POLL_SECONDS):
            if cancelled is not None and cancelled():
                con.interrupt()
                return
            if report is not None:
                try:
                    share = float(con.query_progress())
                except Exception:  # noqa: BLE001 - no query running yet, or it just ended
                    continue
                if share >= 0:
                    report(min(share, 100.0) / 100.0)

    watcher = threading.Thread(target=watch, name="kanon-duckdb-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()


class DuckDBEngine(OutOfCore):
    name = "duckdb"
    description = "DuckDB, embedded, out of core (spills to disk under --memory-limit)"
    in_memory = False
    package = "duckdb"
    stops_mid_query = True
    """A running query stops on Cancel (see :func:`interruptible`)."""

    def connect(self, settings: EngineSettings):
        import duckdb

        con = duckdb.connect(":memory:")
        con.execute(f"SET memory_limit = '{max(64, settings.memory_limit >> 20)}MiB'")
        con.execute(f"SET temp_directory = {sql.DUCKDB.lit(settings.temp_dir)}")
        con.execute("SET preserve_insertion_order = true")
        # the progress bar's counter feeds query_progress(); it is never printed
        con.execute(f"SET enable_progress_bar = {'true' if settings.query_progress else 'false'}")
        con.execute("SET enable_progress_bar_print = false")
        if settings.threads:
            con.execute(f"SET threads = {int(settings.threads)}")
        return con

    def _run(self, settings: EngineSettings, source: Source, query: Callable[[str], str], what: str,
             whole: bool = True) -> pa.Table:
        """The result of ``query(relation)`` on the file (read again serially if it must be, see the module
        docstring); DuckDB's errors become one line without the file's content. ``whole``: the query reads
        every record (:func:`serially_if_needed`)."""
        import duckdb

        con = self.connect(settings)

        def attempt() -> pa.Table:
            try:
                with interruptible(con, settings):
                    return con.sql(query(relation(source))).to_arrow_table()
            except duckdb.Error:
                if settings.cancelled is not None and settings.cancelled():
                    raise Cancelled("The computation was cancelled.") from None
                raise

        try:
            return serially_if_needed(con, source, what, attempt, whole)
        finally:
            con.close()

    def _require_records(self, con, source: Source) -> None:
        """Refuse a file without records before writing anything from it (one record is enough to read)."""
        require_records(len(con.sql(f"SELECT 1 FROM {relation(source)} LIMIT 1").fetchall()))

    # Each method below takes the file's names and queries its columns by position (see the module docstring).

    def aggregate(self, source: Source, keys: Sequence[str], weight: str | None,
                  settings: EngineSettings) -> pa.Table:
        source.require([*keys, *([weight] if weight else [])])
        at = Positions(source)
        inner, inner_keys, inner_weight = at.inner, at.all(keys), at(weight) if weight else None
        table = self._run(settings, inner,
                          lambda rel: sql.aggregate_sql(sql.DUCKDB, inner, rel, inner_keys, inner_weight),
                          "aggregating the file")
        require_records(int(pc.sum(table.column("n")).as_py() or 0))
        return table

    def column_stats(self, source: Source, settings: EngineSettings) -> tuple[int, list[ColumnStats]]:
        inner = positional(source)
        row = self._run(settings, inner, lambda rel: sql.stats_sql(sql.DUCKDB, inner, rel), "summarising the file")
        r = row.to_pylist()[0]
        require_records(int(r["n"]))
        return int(r["n"]), [ColumnStats(c, int(r[f"m{i}"]), int(r[f"d{i}"])) for i, c in enumerate(source.columns)]

    def distinct(self, source: Source, column: str, limit: int, settings: EngineSettings) -> pa.Array | None:
        at = Positions(source)
        expr = sql.value_expr(sql.DUCKDB, at.inner, at(column), "v")
        t = self._run(settings, at.inner, lambda rel: f"SELECT DISTINCT * FROM (SELECT {expr} FROM {rel}) t "
                                                      f"WHERE v IS NOT NULL LIMIT {int(limit) + 1}",
                      "reading distinct values", whole=False)
        return None if t.num_rows > limit else t.column(0).combine_chunks()

    def preview(self, source: Source, n: int, settings: EngineSettings) -> pa.Table:
        inner = positional(source)
        cols = ", ".join(sql.value_expr(sql.DUCKDB, inner, c) for c in inner.columns)
        t = self._run(settings, inner, lambda rel: f"SELECT {cols} FROM {rel} LIMIT {int(n)}",
                      "reading the first rows", whole=False)
        return t.rename_columns(list(source.columns))

    def write_release(self, source: Source, plan: ReleasePlan, out: Path, settings: EngineSettings) -> None:
        import duckdb

        at = Positions(source)
        inner = at.inner
        named = [c for c in source.columns if c not in plan.drop]  # the release's columns, by their names
        keep = at.all(named)
        plan = ReleasePlan({at(c): t for c, t in plan.recodes.items()}, tuple(at.all(plan.qis)), plan.suppress,
                           tuple(at(c) for c in plan.drop if c in source.columns), plan.ranked, plan.blank_code,
                           {at(c): t for c, t in plan.blank_texts.items()})
        csv_out = out.suffix.lower() != ".parquet"
        blank_as = sql.blank_literals(sql.DUCKDB, blank_values(inner, plan, keep)) if csv_out else {}
        con = self.connect(settings)
        try:
            records_probe(con)
            names, lookups = {}, {}
            for i, (c, table) in enumerate(plan.recodes.items()):
                names[c] = f"kanon_map{i}"
                con.register(names[c], table)
                if table.num_rows <= LOOKUP_MAX_VALUES:
                    lookups[c] = map_variable(con, names[c], f"kanon_lookup{i}")
            sup = None
            if plan.suppress is not None and plan.suppress.num_rows:
                con.register("kanon_suppress", plan.suppress)
                sup = "kanon_suppress"
            ranked = None
            if plan.ranked is not None and plan.ranked.ranges.num_rows:
                con.register("kanon_classes", plan.ranked.classes)
                con.register("kanon_ranges", plan.ranked.ranges)
                ranked = ("kanon_classes", "kanon_ranges")
            kinds = csv_cell_kinds(inner, plan, keep) if csv_out else {}

            def copy() -> None:
                self._require_records(con, inner)
                query = sql.release_sql(sql.DUCKDB, inner, relation(inner), names, plan.qis, sup, keep,
                                        ranked=ranked, lookups=lookups, blank_as=blank_as)
                if kinds:
                    query = csv_cells(query, keep, with_whole_floats(con, inner, kinds, plan))
                if csv_out and len(keep) == 1:
                    query = one_column_csv(query, keep, named[0])
                    con.execute(f"COPY ({query}) TO {sql.DUCKDB.lit(str(out))} (FORMAT {ONE_COLUMN_CSV})")
                    return
                _write_named(con, query, keep, named, out, csv_out)

            serially_if_needed(con, inner, "writing the release", copy)
        except duckdb.Error as exc:
            raise InputError(_message(exc, "writing the release", source)) from None
        finally:
            con.close()

    def per_record(self, source: Source, qis: Sequence[str], per_class: pa.Table, columns: Sequence[str],
                   out: Path, settings: EngineSettings) -> None:
        import duckdb

        at = Positions(source)
        inner, inner_qis = at.inner, at.all(qis)
        con = self.connect(settings)
        try:
            records_probe(con)
            # columns renamed c0, c1, ...: DuckDB's names are case-insensitive, and "fk" and "Fk" must both exist
            renamed = per_class.rename_columns([*per_class.column_names[: len(qis)],
                                                *(f"c{i}" for i in range(len(columns)))])
            con.register("kanon_per_class", renamed)

            def write() -> None:
                self._require_records(con, inner)
                query = sql.per_record_sql(sql.DUCKDB, inner, relation(inner), inner_qis, "kanon_per_class",
                                           [f"c{i}" for i in range(len(columns))])
                _write_csv_batches(con.sql(query).to_arrow_reader(1 << 20), list(columns), out)

            serially_if_needed(con, inner, "writing the per-record results", write)
        except duckdb.Error as exc:
            raise InputError(_message(exc, "writing the per-record results", source)) from None
        finally:
            con.close()


def _write_named(con, query: str, keep: Sequence[str], named: Sequence[str], out: Path, csv_out: bool) -> None:
    """Write ``query``'s columns ``keep`` (positional names) to ``out`` (CSV or Parquet) under the file's names
    ``named``. DuckDB's writer renames a name that another differs from only by case (``a`` beside ``A`` is
    written ``a_1``), so then the CSV header is written here (each name quoted as the in-memory writer quotes
    it: when it holds a comma, a quote or a line break) before DuckDB's lines, and a Parquet file through
    Arrow, a batch at a time; otherwise DuckDB writes the file, names and all."""
    selected = f"SELECT {', '.join(f'{sql.DUCKDB.q(k)} AS {sql.DUCKDB.q(n)}' for k, n in zip(keep, named, strict=True))} " \
               f"FROM ({query}) kanon_named"
    target = sql.DUCKDB.lit(str(out))
    if not _case_clash(named):
        options = "CSV, HEADER true, DELIMITER ','" if csv_out else "PARQUET"
        con.execute(f"COPY ({selected}) TO {target} (FORMAT {options})")
        return
    if not csv_out:
        import pyarrow.parquet as pq

        reader = con.sql(f"SELECT * FROM ({query}) kanon_named").to_arrow_reader(1 << 20)
        schema = pa.schema([f.with_name(n) for f, n in zip(reader.schema, named, strict=True)])
        with pq.ParquetWriter(out, schema) as writer:
            for batch in reader:
                writer.write_batch(pa.RecordBatch.from_arrays(batch.columns, schema=schema))
        return
    lines = out.with_name(out.name + ".lines")
    try:
        con.execute(f"COPY (SELECT * FROM ({query}) kanon_named) TO {sql.DUCKDB.lit(str(lines))} "
                    "(FORMAT CSV, HEADER false, DELIMITER ',')")
        header = ",".join('"' + n.replace('"', '""') + '"' if any(ch in n for ch in ',"\r\n') else n for n in named)
        with open(out, "wb") as fh, open(lines, "rb") as body:
            fh.write((header + "\n").encode("utf-8"))
            shutil.copyfileobj(body, fh, 1 << 24)
    finally:
        lines.unlink(missing_ok=True)


def _write_csv_batches(reader: pa.RecordBatchReader, names: list[str], out: Path) -> None:
    """Stream record batches to a CSV file with the given header (one batch in memory at a time)."""
    import pyarrow.csv as pacsv

    with open(out, "wb") as fh:
        fh.write((",".join(names) + "\n").encode("utf-8"))
        writer = None
        try:
            for batch in reader:
                batch = pa.RecordBatch.from_arrays(batch.columns, names=names)
                writer = writer or pacsv.CSVWriter(fh, batch.schema, write_options=pacsv.WriteOptions(
                    include_header=False, quoting_style="needed"))
                writer.write_batch(batch)
        finally:
            if writer is not None:
                writer.close()


_CSV_LINE = re.compile(r"CSV Error on Line: (\d+)")
_FIELD_COUNTS = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")


def _csv_problem(text: str, skip: int = 0) -> str | None:
    """DuckDB's CSV error in the in-memory reader's words, with its record and line numbers and counts only
    (DuckDB numbers lines as records plus the header: the line when no cell holds a line break, counting the
    ``skip`` blank lines before the header, which are no records), or None."""
    line = _CSV_LINE.search(text)
    if line is None:
        return None
    number = int(line.group(1))
    counts = _FIELD_COUNTS.search(text)
    if counts and int(counts.group(2)) > int(counts.group(1)):
        # DuckDB's count stops at the first field too many (Found: 3 for 1,2,x,y under a header of two)
        return too_many_fields(number - 1 - skip, int(counts.group(1)))
    if "unterminated quote" in text:
        return unclosed_quote(number)
    return None


_INVALID_STATE = "state machine reached an invalid state"
"""DuckDB's CSV error when a file's lines mix LF and CRLF ends (its strict reader takes one kind per file)."""

MIXED_LINE_ENDS = ("The file mixes line ends (some lines end in CRLF, others in LF), which DuckDB does not read; "
                   "use --engine polars or --engine pandas, or save the file with one kind of line end.")


def mixes_line_ends(path: Path, block: int = 1 << 20) -> bool:
    """True when the file has lines ending in CRLF and lines ending in a bare LF. Read in blocks, stopping
    once both are seen; only called after DuckDB refused the file, to name the cause."""
    crlf = lf = False
    last = b""
    with open(path, "rb") as fh:
        while data := fh.read(block):
            data, last = last + data, data[-1:]  # a CRLF split between two blocks
            crlf = crlf or b"\r\n" in data
            lf = lf or re.search(rb"(?<!\r)\n", data) is not None
            if crlf and lf:
                return True
    return False


def _message(exc: Exception, what: str, source: Source | None = None) -> str:
    """DuckDB's error reduced to its kind and numbers (its text can quote cells of the file).

    DuckDB's strict CSV reader refuses a file whose lines mix LF and CRLF ends with an error that names no
    cause; when ``source`` is such a file, the message says so (the other readers read it). Strict mode
    stays on: without it DuckDB would read the mix, but also drop the fields beyond the header's and read
    an unclosed quote to the end of the file, where kanon must refuse."""
    text = str(exc)
    too_long = _LINE_TOO_LONG.search(text)
    if too_long is not None:  # only when the limit could not be raised (see longer_lines_after)
        line = _CSV_LINE.search(text)
        where = f"Line {line.group(1)}" if line else "A line"
        return (f"{where} of the file is too long for DuckDB's CSV reader ({int(too_long.group(2)):,} bytes); use "
                "--engine polars or --engine pandas.")
    problem = _csv_problem(text, source.skip_lines if source is not None else 0)
    if problem is not None:
        return problem
    if source is not None and source.format == "csv" and _INVALID_STATE in text and mixes_line_ends(source.path):
        return MIXED_LINE_ENDS
    if "unicode" in text.lower() or "utf" in text.lower():
        return ("The file is not valid UTF-8; the out-of-core engines read UTF-8 files only "
                "(use --engine pandas or save it as UTF-8).")
    if "Out of Memory" in text or "memory" in text.lower() and "limit" in text.lower():
        return f"DuckDB ran out of memory while {what}; raise --memory-limit."
    if "CSV" in text or "csv" in text:
        return (f"The file cannot be read as CSV while {what} ({type(exc).__name__}): a record may have more "
                "fields than the header or a quote that is never closed; check the delimiter and the quotes.")
    return f"DuckDB failed while {what} ({type(exc).__name__})."


register(DuckDBEngine())
