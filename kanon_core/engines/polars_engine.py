"""Polars: an embedded engine with lazy scans and a streaming executor.

Kept beside DuckDB because it is the other serious embedded candidate and the benchmark measures both
on kanon's workload (the README gives the figures and the choice). Polars has no memory limit of its
own: its streaming executor processes the file in batches, but the hash table of a ``group_by`` is held
in memory, so ``--memory-limit`` is not enforced by this engine (DuckDB's aggregate spills to disk).

CSV is scanned with every column as text, the sniffed delimiter, ``"`` as quote (a quoted cell may hold
the delimiter, doubled quotes and line breaks), the header's names; an empty cell, quoted or not, is made
missing; a record with fewer fields than the header is padded with missing cells, as pandas pads it.

A record with more fields than the header is refused. Polars checks the field count only when it parses
every column (a scan that reads some columns stops each record at the last one it needs and drops the
rest silently), so the scan declares one column more than the header (:func:`extra_column`) and keeps
what a longer record holds beyond the header there: every query that reads the whole file counts that
column's values and refuses a file where one is present. That column holds the first field beyond the
header only, empty in ``1,2,,x`` under a header of two, whose ``x`` Polars would drop unseen: before its first
query on a file, a compiled pass finds any text beyond the header
(:func:`~kanon_core.engines.csv_checks.first_record_with_text_beyond`). A file that passed this check, and has records,
is remembered (:func:`~kanon_core.engines.source.file_key`), so queries after the first do not read it
twice; the others check it first.

Polars reads a blank line as a record of missing cells, and a line of spaces and tabs alone as a record whose
first cell is those spaces; the in-memory reader skips both. A blank line and a line of delimiters (",,", a
record of empty cells) look alike once read, as do a line of spaces and a quoted cell of spaces (``"   "``, a
value), so the first query on a file also counts the records that could be either; only when there are some
is the file searched for the lines to skip (:func:`~kanon_core.engines.source.skipped_lines`), which every
scan then leaves out by position (the query is run again without them). The positions are remembered with
the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from ..dataset import WEIGHT_SPACES, WEIGHT_TEXT_NUMBER
from ..errors import InputError
from .api import OutOfCore, blank_values, csv_cell_kinds, csv_field, whole_candidates
from .base import ColumnStats, EngineSettings, ReleasePlan, key_names, register
from .csv_checks import first_record_with_text_beyond, refuse_quote_quirks
from .source import Source, file_key, require_records, skipped_lines, space_line_pattern, too_many_fields
from .sql import SQUARED_WEIGHTS, WHOLE_LIMIT

_CHECKED: set[tuple[str, int, int]] = set()
"""Files (:func:`~kanon_core.engines.source.file_key`) found to have records, none longer than the header."""

_BLANK: dict[tuple[str, int, int], list[int]] = {}
"""CSV files (:func:`~kanon_core.engines.source.file_key`) searched for blank lines and lines of spaces, and
their positions among the lines Polars reads as records (see the module docstring)."""


def extra_column(source: Source, base: str = "kanon_extra_field") -> str:
    """A column name that is not one of the file's: the scan's column for fields beyond the header's."""
    name = base
    while name in source.columns:
        name += "_"
    return name


def _norm(pl, source: Source, column: str):
    c = pl.col(column)
    kind = source.kind(column)
    if kind == "text":
        return pl.when(c == "").then(None).otherwise(c)
    if kind == "float":
        return c.fill_nan(None)
    return c


def _weight_number(pl, source: Source, column: str, raw):
    """A weight cell's number, null when it is not one. A text cell is a number only when the in-memory check
    reads it as one (:data:`~kanon_core.dataset.WEIGHT_TEXT_NUMBER`): Polars' own cast refuses the spaces
    pandas allows around a number (" 2") and takes "nan" for a number, which in memory is not one."""
    if source.kind(column) != "text":
        return raw.cast(pl.Float64, strict=False)
    number = raw.str.contains(f"^(?:{WEIGHT_TEXT_NUMBER})$")  # ($: the end of the text, as Rust reads it)
    return pl.when(number).then(raw.str.strip_chars(WEIGHT_SPACES).cast(pl.Float64, strict=False))


def _squared_weight_sums(pl, wv) -> list:
    """The sums of squared weights of :data:`~kanon_core.engines.sql.SQUARED_WEIGHTS`, as the SQL engines sum them."""
    out = []
    for column, low, high, e in SQUARED_WEIGHTS:
        inside = pl.lit(True)
        if low is not None:
            inside = inside & (wv >= 2.0**low)
        if high is not None:
            inside = inside & (wv < 2.0**high)
        scaled = wv * 2.0**e
        out.append(pl.when(inside).then(scaled * scaled).otherwise(0.0).sum().alias(column))
    return out


class PolarsEngine(OutOfCore):
    name = "polars"
    description = "Polars, embedded, streaming (no memory limit of its own)"
    in_memory = False
    package = "polars"

    def scan(self, source: Source):
        """The file's records: as :meth:`_scan_file` reads them, without the blank lines and the lines of
        spaces once they are known."""
        import polars as pl

        lf = self._scan_file(source)
        blank = _BLANK.get(file_key(source)) if source.format == "csv" else None
        if not blank:
            return lf
        line = extra_column(source, "kanon_line")
        positions = pl.lit(pl.Series(blank, dtype=pl.Int64)).implode()
        return lf.with_row_index(line).filter(~pl.col(line).cast(pl.Int64).is_in(positions)).drop(line)

    def _scan_file(self, source: Source):
        """Every record as Polars reads it, the blank lines and lines of spaces of a CSV file included."""
        import polars as pl

        if source.format == "parquet":
            return pl.scan_parquet(source.path)
        # the header's columns and one more (see the module docstring): a longer record's first field beyond
        # the header lands there, the rest of it is cut, so the record is found and refused, never misread.
        # The names are given by position and the header's lines are skipped as lines: Polars would match a
        # schema to the header by its own reading of the names, which keeps doubled quotes ("a""b"), and its
        # row skipping takes a quote inside a name (a"b) for the start of a quoted cell and skips the records
        # after it. The header spans one line more than its names hold line breaks (quoted ones).
        schema = {c: pl.String for c in source.columns} | {extra_column(source): pl.String}
        header_lines = source.skip_lines + 1 + sum(c.count("\n") for c in source.columns)  # blank lines before it too
        return pl.scan_csv(source.path, separator=source.delimiter, quote_char='"', has_header=False,
                           skip_lines=header_lines, schema=schema, encoding="utf8", truncate_ragged_lines=True,
                           missing_columns="insert", extra_columns="ignore")

    def _check_flags(self, source: Source, find_blank: bool) -> list:
        """Per record, what :meth:`_checked` counts (CSV only): "kanon_extra", a field beyond the header's
        (see the module docstring); with ``find_blank``, "kanon_blank", a record that could be a blank line
        or a line of spaces: its first cell absent or of spaces alone, its last cell (when it is another) and
        the field beyond the header absent. Such lines always are; a line of delimiters (",,") and a quoted
        cell of spaces may be too, until :func:`~kanon_core.engines.source.skipped_lines` tells them apart."""
        import polars as pl

        if source.format != "csv":
            return []
        x = pl.col(extra_column(source))
        flags = [x.is_not_null().alias("kanon_extra")]
        if find_blank:
            first = pl.col(source.columns[0])
            spaces = first.is_null() | first.str.contains(f"^{space_line_pattern(source)}$")
            rest = [pl.col(c) for c in source.columns[1:][-1:]] + [x]
            flags.append((spaces & pl.all_horizontal([c.is_null() for c in rest])).alias("kanon_blank"))
        return flags

    def _checked(self, source: Source, query, what: str):
        """Collect ``query(scan, find_blank)``: a query over every record that gives the record count in a
        column "n" and the counts of :meth:`_check_flags`, in one row or one row per class.

        A file with a record longer than the header or without records is refused. A CSV file not yet
        searched for blank lines and lines of spaces is searched when some record could be one, and the
        query is run again without them. Returns the result without the checks' columns; the file is
        remembered as checked.
        """
        key = file_key(source)
        csv = source.format == "csv"
        if csv and key not in _CHECKED:
            # Polars fails on text after a quoted cell's closing quote, in words that name no line (spaces
            # before an opening quote it reads as the reader does)
            refuse_quote_quirks(source, "Polars", before=False, after=True, fails=True)
            # the scan keeps one field beyond the header: text after an empty one would be dropped unseen
            record = first_record_with_text_beyond(source.path, source.delimiter, len(source.columns))
            if record is not None:  # counted from the file's first line: the blank lines before the header left out
                raise InputError(too_many_fields(record - source.skip_lines, len(source.columns)))
        find_blank = csv and key not in _BLANK
        out = self._collect(query(self.scan(source), find_blank), what)
        if csv and _total(out, "kanon_extra"):
            raise InputError(self._first_long_record(source))
        if find_blank:
            maybe = _total(out, "kanon_blank")
            blank = _BLANK[key] = skipped_lines(source).positions() if maybe else []
            if blank:
                out = self._collect(query(self.scan(source), True), what)
                if maybe - _total(out, "kanon_blank") != len(blank):  # the positions are not Polars' records
                    del _BLANK[key]
                    raise InputError("The out-of-core engines cannot tell this file's blank lines or lines of "
                                     "spaces from its records; use --engine pandas.")
        require_records(_total(out, "n"))
        _CHECKED.add(key)
        return out.drop([c for c in ("kanon_extra", "kanon_blank") if c in out.columns])

    def _first_long_record(self, source: Source) -> str:
        """The message naming the first record with more fields than the header (its number only, blank lines
        counted as the in-memory reader counts them)."""
        import polars as pl

        x = extra_column(source)
        row = extra_column(source, "kanon_record")
        lf = self._scan_file(source).with_row_index(row).filter(pl.col(x).is_not_null()).select(row).head(1)
        out = self._collect(lf, "looking for the record with too many fields")
        return too_many_fields(int(out.item()) + 1 if out.height else 0, len(source.columns))

    def _ensure_checked(self, source: Source) -> None:
        """Check the whole file once before a query that reads only part of it or writes records."""
        import polars as pl

        if file_key(source) in _CHECKED:
            return

        def query(lf, find_blank: bool):
            counts = [f.sum().cast(pl.Int64) for f in self._check_flags(source, find_blank)]
            return lf.select([pl.len().cast(pl.Int64).alias("n"), *counts])

        self._checked(source, query, "checking the file")

    def _collect(self, lf, what: str):
        try:
            return lf.collect(engine="streaming")
        except Exception as exc:  # polars raises many types; their text can quote cells
            raise InputError(_message(exc, what)) from None

    def aggregate(self, source: Source, keys: Sequence[str], weight: str | None,
                  settings: EngineSettings) -> pa.Table:
        import polars as pl

        source.require([*keys, *([weight] if weight else [])])
        names = key_names(len(keys))
        cols = [_norm(pl, source, c).alias(a) for c, a in zip(keys, names, strict=True)]
        aggs = [pl.len().cast(pl.Int64).alias("n")]
        if weight is not None:
            raw = _norm(pl, source, weight)
            cols += [raw.alias("wr"), _weight_number(pl, source, weight, raw).alias("wv")]
            wv, wr = pl.col("wv"), pl.col("wr")
            aggs += [
                wv.sum().alias("w"),
                *_squared_weight_sums(pl, wv),
                (wr.is_not_null() & wv.is_null()).sum().cast(pl.Int64).alias("w_bad"),
                wr.is_null().sum().cast(pl.Int64).alias("w_missing"),
                (wv.is_nan() | wv.is_infinite()).fill_null(False).sum().cast(pl.Int64).alias("w_nonfinite"),
                (wv <= 0).fill_null(False).sum().cast(pl.Int64).alias("w_nonpositive"),
            ]

        def query(lf, find_blank: bool):
            flags = self._check_flags(source, find_blank)
            counts = [pl.col(f.meta.output_name()).sum().cast(pl.Int64) for f in flags]
            lf = lf.select(cols + flags) if cols + flags else lf  # no keys: the record count alone
            return lf.group_by(names).agg(aggs + counts) if names else lf.select(aggs + counts)

        return self._checked(source, query, "aggregating the file").to_arrow()

    def column_stats(self, source: Source, settings: EngineSettings) -> tuple[int, list[ColumnStats]]:
        import polars as pl

        exprs = [pl.len().alias("n")]
        for i, c in enumerate(source.columns):
            v = _norm(pl, source, c)
            exprs += [v.null_count().alias(f"m{i}"), v.drop_nulls().n_unique().alias(f"d{i}")]

        def query(lf, find_blank: bool):
            return lf.select(exprs + [f.sum().cast(pl.Int64) for f in self._check_flags(source, find_blank)])

        row = self._checked(source, query, "summarising the file").row(0, named=True)
        return int(row["n"]), [ColumnStats(c, int(row[f"m{i}"]), int(row[f"d{i}"])) for i, c in enumerate(source.columns)]

    def distinct(self, source: Source, column: str, limit: int, settings: EngineSettings) -> pa.Array | None:
        import polars as pl

        self._ensure_checked(source)
        lf = self.scan(source).select(_norm(pl, source, column).alias("v")).drop_nulls().unique().head(limit + 1)
        out = self._collect(lf, "reading distinct values")
        return None if out.height > limit else out.to_arrow().column(0).combine_chunks()

    def preview(self, source: Source, n: int, settings: EngineSettings) -> pa.Table:
        import polars as pl

        self._ensure_checked(source)
        lf = self.scan(source).head(n).select([_norm(pl, source, c).alias(c) for c in source.columns])
        return self._collect(lf, "reading the first rows").to_arrow()

    def write_release(self, source: Source, plan: ReleasePlan, out: Path, settings: EngineSettings) -> None:
        import polars as pl

        self._ensure_checked(source)
        keep = [c for c in source.columns if c not in plan.drop]
        csv_out = out.suffix.lower() != ".parquet"
        # the code for suppressed cells of a CSV release, in each column's type (else null)
        blank = {c: pl.lit(v) for c, v in (blank_values(source, plan, keep) if csv_out else {}).items()}
        lf = self.scan(source).select([_norm(pl, source, c).alias(c) for c in keep])
        for c, table in plan.recodes.items():
            m = pl.from_arrow(table).lazy().rename({"key": c, "value": "kanon_value"})
            lf = (lf.join(m, on=c, how="left", maintain_order="left")
                  .with_columns(pl.col("kanon_value").alias(c)).drop("kanon_value"))
        if plan.suppress is not None and plan.suppress.num_rows:
            sup = pl.from_arrow(plan.suppress).lazy().rename({f"k{j}": q for j, q in enumerate(plan.qis)})
            lf = lf.join(sup, on=list(plan.qis), how="left", nulls_equal=True, maintain_order="left")
            lf = lf.with_columns([pl.when(pl.col(f"s{j}").fill_null(False)).then(blank.get(q)).otherwise(pl.col(q))
                                  .alias(q) for j, q in enumerate(plan.qis)]).select(keep)
        if plan.ranked is not None and plan.ranked.ranges.num_rows:
            lf = _apply_ranked(pl, lf, plan, keep, blank)
        kinds = csv_cell_kinds(source, plan, keep) if out.suffix.lower() != ".parquet" else {}
        if kinds:
            kinds = self._with_whole_floats(source, kinds, plan)
            lf = lf.with_columns([cell_text(pl, pl.col(c), kind).alias(c) for c, kind in kinds.items()])
        try:
            if out.suffix.lower() == ".parquet":
                lf.sink_parquet(out)
            elif len(keep) == 1:
                one_column_lines(pl, lf, keep[0]).sink_csv(out, include_header=True, quote_style="never")
            else:
                lf.sink_csv(out, separator=",", include_header=True)
        except Exception as exc:  # polars raises many types; their text can quote cells
            raise InputError(_message(exc, "writing the release")) from None

    def _with_whole_floats(self, source: Source, kinds: dict[str, str], plan: ReleasePlan) -> dict[str, str]:
        """``kinds`` (:func:`~kanon_core.engines.api.csv_cell_kinds`) with the float columns of whole numbers
        made "whole" (every value whole and below 2**53 in absolute value, NaN and missing left out, one value
        at least), learnt in one pass over those columns only."""
        import polars as pl

        floats = whole_candidates(kinds, plan)
        if not floats:
            return kinds
        exprs = []
        for i, c in enumerate(floats):
            v = _norm(pl, source, c)
            whole = ((v == v.floor()) & (v.abs() < WHOLE_LIMIT)).all() & v.is_not_null().any()
            exprs.append(whole.alias(f"w{i}"))
        row = self._collect(self.scan(source).select(exprs), "checking the float columns").row(0)
        return kinds | {c: "whole" for i, c in enumerate(floats) if row[i]}

    def per_record(self, source: Source, qis: Sequence[str], per_class: pa.Table, columns: Sequence[str],
                   out: Path, settings: EngineSettings) -> None:
        import polars as pl

        self._ensure_checked(source)
        keys = [f"k{j}" for j in range(len(qis))]
        lf = self.scan(source).select([_norm(pl, source, q).alias(k) for q, k in zip(qis, keys, strict=True)])
        m = pl.from_arrow(per_class).lazy()
        lf = lf.join(m, on=keys, how="left", nulls_equal=True, maintain_order="left").select(list(columns))
        try:
            lf.sink_csv(out, separator=",", include_header=True)
        except Exception as exc:  # polars raises many types; their text can quote cells
            raise InputError(_message(exc, "writing the per-record results")) from None


def cell_text(pl, col, kind: str):
    """The cells of ``col`` as the text the default writer writes (:data:`~kanon_core.engines.api.CELL_KINDS`);
    missing cells stay missing. Polars' text of a float has the digits of Python's shortest round-trip text
    but not always its layout: it writes an exponent of one digit without Python's leading zero ("1e-7" for
    "1e-07"), and a value between 1e-05 and 1e-04 positionally ("0.000015" for "1.5e-05"); both are put in
    Python's layout by text replacements, in Polars' own expressions (no Python code per cell), as are the
    infinities and -0.0, which the default writer writes "Infinity", "-Infinity" and "0.0"
    (:func:`kanon_core.io.float_cell`)."""
    if kind == "bool":
        return pl.when(col).then(pl.lit("True")).when(col.not_()).then(pl.lit("False")).otherwise(None)
    if kind == "whole":
        return col.cast(pl.Int64).cast(pl.String)
    text = col.cast(pl.Float64).cast(pl.String)
    return (text.str.replace(r"e([+-])([0-9])$", "e${1}0${2}")
            .str.replace(r"^(-?)0\.0000([1-9])$", "${1}${2}e-05")
            .str.replace(r"^(-?)0\.0000([1-9])([0-9]+)$", "${1}${2}.${3}e-05")
            .str.replace(r"^(-?)inf$", "${1}Infinity").str.replace(r"^-0\.0$", "0.0"))


def one_column_lines(pl, lf, column: str):
    """The records of a one-column release as the lines of its CSV file, to be written unquoted: each cell
    quoted as :func:`~kanon_core.engines.api.csv_field` quotes it, and the column named by the
    header's line. Polars' own quoting writes a missing cell as an empty line and a cell of spaces unquoted:
    both would be read back as blank lines and their records lost. Numbers are written as Polars writes
    them in any release (its text of a number is the same)."""
    text = pl.col(column).cast(pl.String).fill_null("")
    needs_quotes = (text == "") | text.str.contains(r"^[ \t]+$") | text.str.contains(r'[",\r\n]')
    quoted = pl.lit('"') + text.str.replace_all('"', '""', literal=True) + pl.lit('"')
    return lf.select(pl.when(needs_quotes).then(quoted).otherwise(text).alias(csv_field(column)))


def _total(out, column: str) -> int:
    """The sum of a count column of a query's result (one row, or one row per class)."""
    return int(out.get_column(column).sum() or 0) if column in out.columns else 0


def _apply_ranked(pl, lf, plan: ReleasePlan, keep: list[str], blank: dict | None = None):
    """Blank cells by class and rank (:class:`~kanon_core.engines.base.RankedSuppression`): each record's
    class by a null-safe join on the QIs, its rank in the class in input order, and the flags of the
    range holding that rank (the ranges listed one row per rank: only suppressed records are listed).
    ``blank[q]``: what a blanked cell of QI q becomes (the code for suppressed cells; null without one)."""
    blank = blank or {}
    ranked = plan.ranked
    assert ranked is not None
    classes = pl.from_arrow(ranked.classes).lazy().rename({f"k{j}": q for j, q in enumerate(plan.qis)})
    flags = [f"s{j}" for j in range(len(plan.qis))]
    ranks = (pl.from_arrow(ranked.ranges).lazy()
             .with_columns(pl.int_ranges("lo", "hi", dtype=pl.Int64).alias("kanon_rank"))
             .explode("kanon_rank").select(["kanon_cls", "kanon_rank", *flags]))
    lf = (lf.join(classes, on=list(plan.qis), how="left", nulls_equal=True, maintain_order="left")
          .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("kanon_cls").alias("kanon_rank"))
          .join(ranks, on=["kanon_cls", "kanon_rank"], how="left", maintain_order="left"))
    return lf.with_columns([pl.when(pl.col(f"s{j}").fill_null(False)).then(blank.get(q)).otherwise(pl.col(q))
                            .alias(q) for j, q in enumerate(plan.qis)]).select(keep)


def _message(exc: Exception, what: str) -> str:
    text = str(exc).lower()
    if "utf" in text or "unicode" in text:
        return ("The file is not valid UTF-8; the out-of-core engines read UTF-8 files only "
                "(use --engine pandas or save it as UTF-8).")
    return (f"Polars failed while {what} ({type(exc).__name__}): a record may have more fields than the "
            "header or a quote that is never closed; check the delimiter and the quotes.")


register(PolarsEngine())
