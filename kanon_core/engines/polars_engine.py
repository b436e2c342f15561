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
column's values and refuses a file where one is present. A file that passed this check, and has records,
is remembered (:func:`~kanon_core.engines.source.file_key`), so queries after the first do not read it
twice; the others check it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from .api import OutOfCore
from .base import ColumnStats, EngineSettings, ReleasePlan, key_names, register
from .source import Source, file_key, require_records, too_many_fields

_CHECKED: set[tuple[str, int, int]] = set()
"""Files (:func:`~kanon_core.engines.source.file_key`) found to have records, none longer than the header."""


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


class PolarsEngine(OutOfCore):
    name = "polars"
    description = "Polars, embedded, streaming (no memory limit of its own)"
    in_memory = False
    package = "polars"

    def scan(self, source: Source):
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
        header_lines = 1 + sum(c.count("\n") for c in source.columns)
        return pl.scan_csv(source.path, separator=source.delimiter, quote_char='"', has_header=False,
                           skip_lines=header_lines, schema=schema, encoding="utf8", truncate_ragged_lines=True,
                           missing_columns="insert", extra_columns="ignore")

    def _extra_count(self, source: Source):
        """The number of records with a field beyond the header's (an aggregate expression; CSV only)."""
        import polars as pl

        return pl.col(extra_column(source)).is_not_null().sum().cast(pl.Int64).alias("kanon_extra")

    def _verify(self, source: Source, n_records: int, n_extra: int) -> None:
        """Refuse a file with a record longer than the header or without records; remember one that passed."""
        if n_extra:
            raise InputError(self._first_long_record(source))
        require_records(n_records)
        _CHECKED.add(file_key(source))

    def _first_long_record(self, source: Source) -> str:
        """The message naming the first record with more fields than the header (its number only)."""
        import polars as pl

        x = extra_column(source)
        row = extra_column(source, "kanon_record")
        lf = self.scan(source).with_row_index(row).filter(pl.col(x).is_not_null()).select(row).head(1)
        out = self._collect(lf, "looking for the record with too many fields")
        return too_many_fields(int(out.item()) + 1 if out.height else 0, len(source.columns))

    def _ensure_checked(self, source: Source) -> None:
        """Check the whole file once before a query that reads only part of it or writes records."""
        import polars as pl

        if file_key(source) in _CHECKED:
            return
        exprs = [pl.len().cast(pl.Int64).alias("n")]
        if source.format == "csv":
            exprs.append(self._extra_count(source))
        row = self._collect(self.scan(source).select(exprs), "checking the file").row(0, named=True)
        self._verify(source, int(row["n"]), int(row.get("kanon_extra") or 0))

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
            cols += [raw.alias("wr"), raw.cast(pl.Float64, strict=False).alias("wv")]
            wv, wr = pl.col("wv"), pl.col("wr")
            aggs += [
                wv.sum().alias("w"),
                (wv * wv).sum().alias("w2"),
                (wr.is_not_null() & wv.is_null()).sum().cast(pl.Int64).alias("w_bad"),
                wr.is_null().sum().cast(pl.Int64).alias("w_missing"),
                (wv.is_nan() | wv.is_infinite()).fill_null(False).sum().cast(pl.Int64).alias("w_nonfinite"),
                (wv <= 0).fill_null(False).sum().cast(pl.Int64).alias("w_nonpositive"),
            ]
        if source.format == "csv":  # records with a field beyond the header's (see the module docstring)
            cols.append(pl.col(extra_column(source)))
            aggs.append(self._extra_count(source))
        lf = self.scan(source).select(cols) if cols else self.scan(source)  # no keys: the record count alone
        lf = lf.group_by(names).agg(aggs) if names else lf.select(aggs)
        table = self._collect(lf, "aggregating the file").to_arrow()
        extra = int(pc.sum(table.column("kanon_extra")).as_py() or 0) if source.format == "csv" else 0
        self._verify(source, int(pc.sum(table.column("n")).as_py() or 0), extra)
        return table.drop_columns(["kanon_extra"]) if source.format == "csv" else table

    def column_stats(self, source: Source, settings: EngineSettings) -> tuple[int, list[ColumnStats]]:
        import polars as pl

        exprs = [pl.len().alias("n")]
        for i, c in enumerate(source.columns):
            v = _norm(pl, source, c)
            exprs += [v.null_count().alias(f"m{i}"), v.drop_nulls().n_unique().alias(f"d{i}")]
        if source.format == "csv":
            exprs.append(self._extra_count(source))
        row = self._collect(self.scan(source).select(exprs), "summarising the file").row(0, named=True)
        self._verify(source, int(row["n"]), int(row.get("kanon_extra") or 0))
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
        lf = self.scan(source).select([_norm(pl, source, c).alias(c) for c in keep])
        for c, table in plan.recodes.items():
            m = pl.from_arrow(table).lazy().rename({"key": c, "value": "kanon_value"})
            lf = (lf.join(m, on=c, how="left", maintain_order="left")
                  .with_columns(pl.col("kanon_value").alias(c)).drop("kanon_value"))
        if plan.suppress is not None and plan.suppress.num_rows:
            sup = pl.from_arrow(plan.suppress).lazy().rename({f"k{j}": q for j, q in enumerate(plan.qis)})
            lf = lf.join(sup, on=list(plan.qis), how="left", nulls_equal=True, maintain_order="left")
            lf = lf.with_columns([pl.when(pl.col(f"s{j}").fill_null(False)).then(None).otherwise(pl.col(q)).alias(q)
                                  for j, q in enumerate(plan.qis)]).select(keep)
        if plan.ranked is not None and plan.ranked.ranges.num_rows:
            lf = _apply_ranked(pl, lf, plan, keep)
        try:
            if out.suffix.lower() == ".parquet":
                lf.sink_parquet(out)
            else:
                lf.sink_csv(out, separator=",", include_header=True)
        except Exception as exc:  # polars raises many types; their text can quote cells
            raise InputError(_message(exc, "writing the release")) from None

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


def _apply_ranked(pl, lf, plan: ReleasePlan, keep: list[str]):
    """Blank cells by class and rank (:class:`~kanon_core.engines.base.RankedSuppression`): each record's
    class by a null-safe join on the QIs, its rank in the class in input order, and the flags of the
    range holding that rank (the ranges listed one row per rank: only suppressed records are listed)."""
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
    return lf.with_columns([pl.when(pl.col(f"s{j}").fill_null(False)).then(None).otherwise(pl.col(q)).alias(q)
                            for j, q in enumerate(plan.qis)]).select(keep)


def _message(exc: Exception, what: str) -> str:
    text = str(exc).lower()
    if "utf" in text or "unicode" in text:
        return ("The file is not valid UTF-8; the out-of-core engines read UTF-8 files only "
                "(use --engine pandas or save it as UTF-8).")
    return (f"Polars failed while {what} ({type(exc).__name__}): a record may have more fields than the "
            "header or a quote that is never closed; check the delimiter and the quotes.")


register(PolarsEngine())
