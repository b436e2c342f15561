"""The SQL both SQL engines run (DuckDB embedded, Spark distributed): one builder, two dialects.

The dialects differ only in how identifiers are quoted and how a null-safe equality is written; the
relation that reads the file is given by each engine. Missing values are normalised in the innermost
select, once: an empty text is missing (CSV cells are all text; empty Parquet strings too, as the
in-memory reader makes them), a float NaN is missing (pandas treats NaN as missing), nothing else is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..dataset import WEIGHT_TEXT_NUMBER
from .base import key_names
from .source import Source


@dataclass(frozen=True)
class Dialect:
    quote_char: str
    null_safe_eq: str  # "{a} IS NOT DISTINCT FROM {b}" or "{a} <=> {b}"
    text_type: str = "VARCHAR"  # the type a cast to text names ("STRING" in Spark)

    def q(self, name: str) -> str:
        c = self.quote_char
        return c + name.replace(c, c + c) + c

    def lit(self, text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'" if self.quote_char == "`" \
            else "'" + text.replace("'", "''") + "'"

    def full_match(self, expr: str, pattern: str) -> str:
        """True when the text ``expr`` matches the regular expression ``pattern`` in full (NULL stays NULL).
        Spark's RLIKE finds a match anywhere, so the pattern is anchored; ``\\z`` and not ``$``, which in Java
        also matches before a final line break."""
        if self.quote_char == "`":
            anchored = self.lit("^(?:" + pattern + r")\z")
            return f"({expr} RLIKE {anchored})"
        return f"regexp_full_match({expr}, {self.lit(pattern)})"


DUCKDB = Dialect('"', "{a} IS NOT DISTINCT FROM {b}")
SPARK = Dialect("`", "{a} <=> {b}", "STRING")


def cell_texts(d: Dialect, keep: Sequence[str], kinds: Mapping[str, str], float_text: Callable[[str], str]) -> str:
    """The select list of a CSV release's columns ``keep``, those ``kinds`` names as the text the default
    writer writes (:data:`~kanon_core.engines.api.CELL_KINDS`), missing cells missing: a whole float as its
    integer, a boolean "True" or "False" (both engines would write "true"), a float as ``float_text`` makes
    it from the quoted column (each engine has its own way to Python's text), the others as they are."""
    cols = []
    for c in keep:
        col = d.q(c)
        kind = kinds.get(c)
        if kind == "float":
            expr = float_text(col)
        elif kind == "whole":
            expr = f"CAST(CAST({col} AS BIGINT) AS {d.text_type})"
        elif kind == "bool":
            expr = f"CASE WHEN {col} THEN 'True' WHEN NOT {col} THEN 'False' END"
        else:
            expr = col
        cols.append(f"{expr} AS {col}")
    return ", ".join(cols)


def value_expr(d: Dialect, source: Source, column: str, alias: str | None = None) -> str:
    """The column with missing values normalised to NULL (see the module docstring)."""
    col = d.q(column)
    kind = source.kind(column)
    if kind == "text":
        expr = f"NULLIF({col}, '')"
    elif kind == "float":
        expr = f"CASE WHEN {col} = CAST('NaN' AS DOUBLE) THEN NULL ELSE {col} END"
    else:
        expr = col
    return f"{expr} AS {d.q(alias or column)}"


def weight_exprs(d: Dialect, source: Source, weight: str) -> list[str]:
    """``wr`` (the raw cell, NULL when missing) and ``wv`` (its number, NULL when not a number)."""
    col = d.q(weight)
    if source.kind(weight) == "text":
        # a cell is a number only when the in-memory check reads it as one (WEIGHT_TEXT_NUMBER): TRY_CAST alone
        # reads "1_000" and "+-1" (DuckDB) and takes "nan" for a number, which in memory is not one. Both casts
        # ignore the spaces the pattern allows around a number.
        raw = f"NULLIF({col}, '')"
        num = f"CASE WHEN {d.full_match(col, WEIGHT_TEXT_NUMBER)} THEN TRY_CAST({col} AS DOUBLE) END"
    elif source.kind(weight) == "float":
        raw = f"CASE WHEN {col} = CAST('NaN' AS DOUBLE) THEN NULL ELSE {col} END"
        num = f"CAST({raw} AS DOUBLE)"
    else:
        raw = col
        num = f"CAST({col} AS DOUBLE)"
    return [f"{raw} AS wr", f"{num} AS wv"]


SQUARED_WEIGHTS = (("w2_small", None, -256, 600), ("w2", -256, 256, 0), ("w2_large", 256, None, -600))
"""The sums of squared weights an aggregate with a weight returns, by the weight's size: per column, the powers
of two ``[2**low, 2**high)`` bounding its weights (None: unbounded) and the power ``2**e`` they are scaled by
before squaring. A double squared overflows from 2**512 up and loses digits below 2**-511, but so scaled every
square is a normal number (from 2**-948 to below 2**848: weights span 2**-1074 to 2**1024), and a power of two
changes no digit; the column of large weights sums to less than their scaled total squared, finite when the
total is. :func:`kanon_core.utility.survey_aggregate.scaled_square_sums` puts the three together."""


def _power_of_two(e: int) -> str:
    """2**e as a DOUBLE (the shortest decimal that reads back as exactly 2**e)."""
    return f"CAST('{2.0 ** e!r}' AS DOUBLE)"


def squared_weight_sums() -> list[str]:
    """The SQL of :data:`SQUARED_WEIGHTS` over the weight ``wv`` (NULL, NaN and the invalid weights that
    :func:`~kanon_core.engines.table.check_weights` refuses fall in one column or none, never an error)."""
    out = []
    for column, low, high, e in SQUARED_WEIGHTS:
        bounds = ([f"wv >= {_power_of_two(low)}"] if low is not None else []) + \
                 ([f"wv < {_power_of_two(high)}"] if high is not None else [])
        scaled = f"wv * {_power_of_two(e)}" if e else "wv"
        out.append(f"SUM(CASE WHEN {' AND '.join(bounds)} THEN ({scaled}) * ({scaled}) ELSE 0 END) AS {column}")
    return out


def aggregate_sql(d: Dialect, source: Source, relation: str, keys: Sequence[str], weight: str | None) -> str:
    """One GROUP BY over ``keys``: per distinct combination the count ``n`` and, with a weight, the weight
    sum ``w``, the sums of squared weights (:data:`SQUARED_WEIGHTS`) and the counts of invalid weights
    (non-numeric, missing, infinite or NaN, not positive)."""
    names = key_names(len(keys))
    inner = [value_expr(d, source, c, a) for c, a in zip(keys, names, strict=True)]
    outer = [d.q(a) for a in names] + ["COUNT(*) AS n"]
    if weight is not None:
        inner += weight_exprs(d, source, weight)
        inf = "CAST('Infinity' AS DOUBLE)"
        outer += [
            "SUM(wv) AS w",
            *squared_weight_sums(),  # variances without PSUs (survey_aggregate)
            "SUM(CASE WHEN wr IS NOT NULL AND wv IS NULL THEN 1 ELSE 0 END) AS w_bad",
            "SUM(CASE WHEN wr IS NULL THEN 1 ELSE 0 END) AS w_missing",
            f"SUM(CASE WHEN wv = CAST('NaN' AS DOUBLE) OR wv = {inf} OR wv = -{inf} THEN 1 ELSE 0 END) AS w_nonfinite",
            "SUM(CASE WHEN wv <= 0 THEN 1 ELSE 0 END) AS w_nonpositive",
        ]
    group = f" GROUP BY {', '.join(d.q(a) for a in names)}" if names else ""
    inner = inner or ["1 AS kanon_one"]  # no keys and no weight: the record count alone
    return f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)} FROM {relation}) t{group}"


def stats_sql(d: Dialect, source: Source, relation: str) -> str:
    """Per column: missing count and exact distinct count, in one pass."""
    parts = ["COUNT(*) AS n"]
    for i, c in enumerate(source.columns):
        v = value_expr(d, source, c, "x").rsplit(" AS ", 1)[0]
        parts.append(f"COUNT(*) - COUNT({v}) AS m{i}")
        parts.append(f"COUNT(DISTINCT {v}) AS d{i}")
    return f"SELECT {', '.join(parts)} FROM {relation}"


def release_sql(d: Dialect, source: Source, relation: str, recoded: dict[str, str],
                qis: Sequence[str], suppress_table: str | None, keep: Sequence[str], ordered: bool = True,
                ranked: tuple[str, str] | None = None, row_id: str = "row_number() OVER ()",
                lookups: dict[str, str] | None = None, blank_as: Mapping[str, str] | None = None) -> str:
    """The records with recodes and suppressions applied.

    ``recoded[c]`` names a registered mapping table (``key``, ``value``) for column c, joined on the
    normalised value (a missing value stays missing). ``suppress_table`` has the QIs (named k0, k1, ...,
    after recodes) and flags s0, s1, ...; it is joined null-safely on every QI. ``ranked`` names the two
    tables of a :class:`~kanon_core.engines.base.RankedSuppression` (classes, ranges): each record gets
    its class (a null-safe join on the QIs) and its rank in the class in input order (``row_number()``
    over the class, ordered by the record's number), and the range holding that rank says which QIs to
    blank. With ``ordered`` the records keep the input's order (a row number ``row_id`` taken while
    reading, sorted on at the end: joins do not keep order by themselves); ranks need that number too.

    ``lookups[c]``, when given for a recoded column, is an expression of a map from the column's values to
    their recodes (DuckDB's ``getvariable(...)`` of a small mapping table): the column is recoded by
    ``lookups[c][value]`` instead of a join (a value the map lacks, or a missing one, gives a missing
    value, as the LEFT JOIN does). A select over one relation keeps the input's order, so a release with
    lookups only and nothing to blank needs neither the record number nor the sort.

    ``blank_as[c]``, when given for a QI, is the SQL literal written in its blanked cells instead of NULL: the
    code for suppressed cells of a CSV release (:func:`blank_literals`), which the in-memory writer writes too.
    """
    blank_as = dict(blank_as or {})
    lookups = {c: m for c, m in (lookups or {}).items() if c in recoded}
    norm = ", ".join(value_expr(d, source, c, c) for c in keep)
    joined = [c for c in keep if c in recoded and c not in lookups]
    ordered = ordered and bool(joined or suppress_table or ranked)
    numbered = ordered or ranked is not None
    if numbered:
        norm += f", {row_id} AS kanon_row"
    joins, cols = [], []
    for i, c in enumerate(keep):
        if c in lookups:
            cols.append(f"{lookups[c]}[src.{d.q(c)}] AS {d.q(c)}")
        elif c in recoded:
            m = f"m{i}"
            joins.append(f"LEFT JOIN {recoded[c]} {m} ON src.{d.q(c)} = {m}.{d.q('key')}")
            cols.append(f"{m}.{d.q('value')} AS {d.q(c)}")
        else:
            cols.append(f"src.{d.q(c)} AS {d.q(c)}")
    if numbered:
        cols.append("src.kanon_row AS kanon_row")
    rel = f"SELECT {', '.join(cols)} FROM (SELECT {norm} FROM {relation}) src {' '.join(joins)}"
    names = ", ".join(d.q(c) for c in keep)
    if not suppress_table and not ranked:
        return f"SELECT {names} FROM ({rel}) r ORDER BY kanon_row" if ordered else rel
    row_col = ["r.kanon_row AS kanon_row"] if numbered else []
    if suppress_table:
        on = " AND ".join(d.null_safe_eq.format(a=f"r.{d.q(q)}", b=f"s.{d.q(f'k{j}')}") for j, q in enumerate(qis))
        out = [_blank(d, c, qis, "s", "r", blank_as.get(c)) for c in keep] + row_col
        rel = f"SELECT {', '.join(out)} FROM ({rel}) r LEFT JOIN {suppress_table} s ON {on}"
    if ranked:
        classes, ranges = ranked
        on = " AND ".join(d.null_safe_eq.format(a=f"r.{d.q(q)}", b=f"c.{d.q(f'k{j}')}") for j, q in enumerate(qis))
        tagged = f"SELECT r.*, c.kanon_cls AS kanon_cls FROM ({rel}) r LEFT JOIN {classes} c ON {on}"
        # records of no listed class are each a partition of their own: no single huge partition to sort
        part = "t.kanon_cls, CASE WHEN t.kanon_cls IS NULL THEN t.kanon_row END"
        rank = f"SELECT t.*, row_number() OVER (PARTITION BY {part} ORDER BY t.kanon_row) - 1 AS kanon_rank FROM ({tagged}) t"
        out = [_blank(d, c, qis, "g", "r", blank_as.get(c)) for c in keep] + row_col
        rel = (f"SELECT {', '.join(out)} FROM ({rank}) r LEFT JOIN {ranges} g ON r.kanon_cls = g.kanon_cls "
               "AND r.kanon_rank >= g.lo AND r.kanon_rank < g.hi")
    return f"SELECT {names} FROM ({rel}) x ORDER BY kanon_row" if ordered else f"SELECT {names} FROM ({rel}) x"


def _blank(d: Dialect, column: str, qis: Sequence[str], flags: str, rows: str, code: str | None = None) -> str:
    """The column of ``rows``, null (or the literal ``code``) where the joined table ``flags`` says to blank it
    (a QI's flag)."""
    if column not in qis:
        return f"{rows}.{d.q(column)} AS {d.q(column)}"
    j = list(qis).index(column)
    return (f"CASE WHEN {flags}.{d.q(f's{j}')} THEN {code or 'NULL'} ELSE {rows}.{d.q(column)} END "
            f"AS {d.q(column)}")


def blank_literals(d: Dialect, values: Mapping[str, str | int]) -> dict[str, str]:
    """Per QI of ``values`` (:func:`~kanon_core.engines.api.blank_values`), the SQL literal of the code for
    suppressed cells in its column's type: text in a text column, a number in a numeric one, as the in-memory
    writer puts the code in each."""
    return {c: d.lit(v) if isinstance(v, str) else str(int(v)) for c, v in values.items()}


def per_record_sql(d: Dialect, source: Source, relation: str, qis: Sequence[str], per_class: str,
                   columns: Sequence[str], row_id: str = "row_number() OVER ()") -> str:
    """Each record's per-class results (``columns`` of the table ``per_class``, keyed k0, k1, ... by the
    raw QI values), in input order: the join of the records with the class table, never the reverse."""
    keys = ", ".join(value_expr(d, source, q, f"k{j}") for j, q in enumerate(qis))
    on = " AND ".join(d.null_safe_eq.format(a=f"r.{d.q(f'k{j}')}", b=f"m.{d.q(f'k{j}')}") for j in range(len(qis)))
    cols = ", ".join(f"m.{d.q(c)} AS {d.q(c)}" for c in columns)
    return (f"SELECT {cols} FROM (SELECT {keys}, {row_id} AS kanon_row FROM {relation}) r "
            f"LEFT JOIN {per_class} m ON {on} ORDER BY r.kanon_row")


WHOLE_LIMIT = 2**53
"""A float column is held as integers by the default reader when every value is whole and below this in
absolute value (beyond it a float64 no longer holds every integer)."""


def whole_floats_sql(d: Dialect, source: Source, relation: str, columns: Sequence[str]) -> str:
    """One row: per float column ``columns[i]``, ``w{i}`` = 1 when every value (NaN and missing left out) is
    whole and below :data:`WHOLE_LIMIT` in absolute value, 0 when one is not (an infinite value is not), NULL
    when there is none. The default reader holds a column of 1 as integers and its writer writes them so
    (:func:`kanon_core.io.read_table`); a release at scale learns it from this pass, which reads those
    columns only."""
    parts = []
    for i, c in enumerate(columns):
        v = value_expr(d, source, c, "x").rsplit(" AS ", 1)[0]
        parts.append(f"MIN(CASE WHEN {v} IS NULL THEN NULL WHEN {v} = FLOOR({v}) AND ABS({v}) < {WHOLE_LIMIT} "
                     f"THEN 1 ELSE 0 END) AS w{i}")
    return f"SELECT {', '.join(parts)} FROM {relation}"
