"""Apache Spark through PySpark: the same aggregation as a distributed job (``--engine spark``).

The query is the one DuckDB runs (:mod:`kanon_core.engines.sql`, Spark's dialect), over a temporary
view of the file. What moves where on a cluster:

* the executors read their splits of the file and pre-aggregate them (a partial ``GROUP BY`` per task);
* the shuffle carries only those partial aggregates, hashed on the QI values, never whole records;
* the driver receives the class table (one row per distinct QI combination: counts, weight sums),
  through Arrow, and kanon computes everything else on it;
* a release is written by the executors, each its part of the output folder (Spark's usual layout:
  ``part-*.parquet`` or ``part-*.csv`` files), with the labels sidecar written by the driver beside it.
  Records are not in input order there (Spark keeps no order across tasks).

CSV is read with every column as text, the sniffed delimiter, ``"`` as quote and escape, the header
row skipped and its names given, ``FAILFAST`` (a malformed record stops the job); Spark replaces bytes
that are not UTF-8 silently, so a local file is checked for UTF-8 on the driver first, once; a quote never
closed, which Spark would read to the end of the file as one cell, is refused when the file is opened
(:func:`~kanon_core.engines.csv_checks.check_quotes_closed`).

A CSV release holds the default writer's text in every cell (:func:`csv_cells`, :func:`csv_options`): Spark's
own CSV writer writes Java's text of numbers and booleans, trims the spaces around text and escapes quotes
with a backslash, and all of that reads back as other values.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from . import sql
from .api import OutOfCore, blank_values, csv_cell_kinds, whole_candidates
from .base import ColumnStats, EngineSettings, ReleasePlan, register
from .csv_checks import refuse_mixed_line_ends, refuse_quote_quirks
from .source import (
    Source,
    check_utf8,
    file_key,
    require_records,
    skipped_lines,
)

_LOCK = threading.Lock()
_SESSIONS: dict[str, object] = {}
_SPILL: list[str] = []
"""The sessions' spill folders (Spark's ``local.dir``), removed with the sessions."""


def session(settings: EngineSettings):
    """One SparkSession per master URL for the process (starting the JVM takes seconds).

    A session outlives the command that started it, so its spill folder is its own (private, mode 0700,
    removed by :func:`stop_sessions` or at exit), not the command's :attr:`EngineSettings.temp_dir`: that one
    is removed when the command ends, and the next job's shuffle then failed to create its files there.

    In local mode the Python workers (which write the floats of a CSV release, :func:`float_text_udf`) run
    this interpreter unless ``PYSPARK_PYTHON`` says otherwise: PySpark's default, the ``python3`` on the PATH,
    may lack pandas and pyarrow, or be another Python version, which PySpark refuses. On a cluster the
    executors' Python is the cluster's setting."""
    with _LOCK:
        if settings.spark_master in _SESSIONS:
            return _SESSIONS[settings.spark_master]
        from pyspark import SparkConf
        from pyspark.sql import SparkSession

        if settings.spark_master.startswith("local"):
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if not _SPILL and not _SESSIONS:
            atexit.register(stop_sessions)
        spill = tempfile.mkdtemp(prefix="kanon-spill-")
        os.chmod(spill, 0o700)
        _SPILL.append(spill)

        mem = max(512, settings.memory_limit >> 20)
        conf = SparkConf().setMaster(settings.spark_master).setAppName("kanon").setAll([
            ("spark.driver.memory", f"{mem}m"),
            ("spark.sql.shuffle.partitions", "8"),
            ("spark.sql.execution.arrow.pyspark.enabled", "true"),
            ("spark.ui.enabled", "false"),
            ("spark.ui.showConsoleProgress", "false"),
            ("spark.local.dir", spill),
            ("spark.sql.ansi.enabled", "false"),
            # names as written: a file's "Age" and "age" are two variables, and the per-record results'
            # fk and Fk two columns (Spark's default folds case and called them ambiguous)
            ("spark.sql.caseSensitive", "true")])
        _start_quiet_jvm(conf)
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
        _quiet(spark)
        _SESSIONS[settings.spark_master] = spark
        return spark


def _start_quiet_jvm(conf) -> None:
    """Start Spark's JVM with its console output discarded, unless this process has one already.

    Spark's driver JVM inherits the console and writes to it before any log level can be set: the JVM's
    module warning, log4j's profile, the machine's host name and address, Hadoop's native-library warning
    (9 to 12 lines before a command's own). A refusal must be one line, and a log must not quote data, so
    the JVM writes to nothing; every failure still reaches kanon as an exception
    (:meth:`SparkEngine._run`). PySpark's own warning that it does not fully support this pandas is
    silenced too (the engines' results are tested equal to the in-memory ones)."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    if SparkContext._gateway is None:  # type: ignore[attr-defined]
        gateway = launch_gateway(conf, popen_kwargs={"stdout": subprocess.DEVNULL,
                                                     "stderr": subprocess.DEVNULL})
        SparkContext(conf=conf, gateway=gateway)


QUERY_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
"""PySpark's loggers that print a failed query's message and context (JSON on standard error)."""


def _quiet(spark) -> None:
    """No log of Spark's on the console: a failed query's log quotes the query (a recode's values are
    literals in it) and a failed task's the rows it read, and confidential data must not reach a log. Every
    failure still reaches kanon as an exception, which it reports in one line without its text
    (:meth:`SparkEngine._run`). The JVM's log is turned off and PySpark's query loggers disabled."""
    from pyspark.logger import PySparkLogger

    spark.sparkContext.setLogLevel("OFF")
    for name in QUERY_LOGGERS:
        PySparkLogger.getLogger(name).disabled = True


def stop_sessions() -> None:
    """Stop every session this process started (tests call it once per module)."""
    with _LOCK:
        for spark in _SESSIONS.values():
            spark.stop()  # type: ignore[attr-defined]
        _SESSIONS.clear()
        for spill in _SPILL:
            shutil.rmtree(spill, ignore_errors=True)
        _SPILL.clear()


_CHECKED: set[tuple] = set()
"""CSV files (:func:`~kanon_core.engines.source.file_key`) found valid UTF-8 and without lines of spaces alone: a
command's later queries on the same unchanged file do not read it again."""


def _check_once(source: Source) -> None:
    """Once per unchanged file: :func:`~kanon_core.engines.source.check_utf8`, and no line of spaces or tabs
    alone (outside quoted cells), which the in-memory reader skips as it skips a blank line and Spark reads as
    a record of those spaces (DuckDB and Polars leave them out by position; Spark's records have no position
    to leave them out by). Its quoted cells were checked when it was opened
    (:func:`~kanon_core.engines.source.open_source`)."""
    key = file_key(source)
    if key in _CHECKED:
        return
    check_utf8(source.path)
    spaces = skipped_lines(source).spaces
    if spaces:
        first = min(spaces) + 2  # among the records and the skipped lines after the header: the line, from 1
        raise InputError(f"Line {first} holds only spaces or tabs, which the in-memory reader skips and Spark "
                         "reads as a record; use --engine duckdb or --engine polars, or remove such lines.")
    with _LOCK:
        _CHECKED.add(key)


class SparkEngine(OutOfCore):
    name = "spark"
    description = "Apache Spark (PySpark): local[N] or a cluster's master URL (--spark-master)"
    in_memory = False
    package = "pyspark"

    def _view(self, spark, source: Source) -> str:
        if source.format == "parquet":
            df = spark.read.parquet(str(source.path))
        else:
            if source.path.exists():
                _check_once(source)
            # Spark drops spaces after a closing quote that the in-memory reader keeps ("a" is a space to it),
            # and takes the first record's line end for every record's (a bare LF in a CR LF file joins two)
            refuse_quote_quirks(source, "Spark", before=False, after=True)
            refuse_mixed_line_ends(source, "Spark")
            df = (spark.read.option("header", "true").option("sep", source.delimiter).option("quote", '"')
                  .option("escape", '"').option("mode", "FAILFAST").option("inferSchema", "false")
                  .option("multiLine", "true").option("encoding", "UTF-8")
                  .option("ignoreLeadingWhiteSpace", "false").option("ignoreTrailingWhiteSpace", "false")
                  .csv(str(source.path)))
            df = df.toDF(*source.columns)
        name = "kanon_src"
        df.createOrReplaceTempView(name)
        return name

    def _run(self, settings: EngineSettings, source: Source, build, what: str) -> pa.Table:
        spark = session(settings)
        try:
            view = self._view(spark, source)
            return spark.sql(build(view)).toArrow()
        except InputError:
            raise
        except Exception as exc:  # py4j and Spark raise many types; their text can quote cells
            raise InputError(f"Spark failed while {what} ({type(exc).__name__}); a CSV record may have more "
                             "fields than the header or a quote that is never closed.") from None

    def aggregate(self, source: Source, keys: Sequence[str], weight: str | None,
                  settings: EngineSettings) -> pa.Table:
        source.require([*keys, *([weight] if weight else [])])
        table = self._run(settings, source, lambda v: sql.aggregate_sql(sql.SPARK, source, v, keys, weight),
                          "aggregating the file")
        require_records(int(pc.sum(table.column("n")).as_py() or 0))  # a header and blank lines: no records
        return table

    def column_stats(self, source: Source, settings: EngineSettings) -> tuple[int, list[ColumnStats]]:
        r = self._run(settings, source, lambda v: sql.stats_sql(sql.SPARK, source, v), "summarising the file")
        row = r.to_pylist()[0]
        require_records(int(row["n"]))
        return int(row["n"]), [ColumnStats(c, int(row[f"m{i}"]), int(row[f"d{i}"])) for i, c in enumerate(source.columns)]

    def distinct(self, source: Source, column: str, limit: int, settings: EngineSettings) -> pa.Array | None:
        expr = sql.value_expr(sql.SPARK, source, column, "v")
        t = self._run(settings, source, lambda v: f"SELECT DISTINCT * FROM (SELECT {expr} FROM {v}) t "
                                                  f"WHERE v IS NOT NULL LIMIT {int(limit) + 1}",
                      "reading distinct values")
        return None if t.num_rows > limit else t.column(0).combine_chunks()

    def preview(self, source: Source, n: int, settings: EngineSettings) -> pa.Table:
        cols = ", ".join(sql.value_expr(sql.SPARK, source, c) for c in source.columns)
        return self._run(settings, source, lambda v: f"SELECT {cols} FROM {v} LIMIT {int(n)}",
                         "reading the first rows")

    def write_release(self, source: Source, plan: ReleasePlan, out: Path, settings: EngineSettings) -> None:
        spark = session(settings)
        keep = [c for c in source.columns if c not in plan.drop]
        try:
            view = self._view(spark, source)
            names = {}
            for i, (c, table) in enumerate(plan.recodes.items()):
                names[c] = f"kanon_map{i}"
                spark.createDataFrame(table.to_pandas()).createOrReplaceTempView(names[c])
            sup = None
            if plan.suppress is not None and plan.suppress.num_rows:
                spark.createDataFrame(plan.suppress.to_pandas()).createOrReplaceTempView("kanon_suppress")
                sup = "kanon_suppress"
            ranked = None
            if plan.ranked is not None and plan.ranked.ranges.num_rows:
                # from arrow, so a key column that is null in every listed class keeps its type
                spark.createDataFrame(plan.ranked.classes).createOrReplaceTempView("kanon_classes")
                spark.createDataFrame(plan.ranked.ranges).createOrReplaceTempView("kanon_ranges")
                ranked = ("kanon_classes", "kanon_ranges")
            # ranks need the input order: a number taken while reading (increasing along the file's parts),
            # and the release is then written in that order
            csv_out = out.suffix.lower() != ".parquet"  # a CSV release writes the code for suppressed cells
            blank_as = sql.blank_literals(sql.SPARK, blank_values(source, plan, keep)) if csv_out else {}
            df = spark.sql(sql.release_sql(sql.SPARK, source, view, names, plan.qis, sup, keep,
                                           ordered=ranked is not None, ranked=ranked,
                                           row_id="monotonically_increasing_id()", blank_as=blank_as))
            writer = df.write.mode("errorifexists")
            if out.suffix.lower() == ".parquet":
                writer.parquet(str(out))
            else:
                kinds = with_whole_floats(spark, source, view, csv_cell_kinds(source, plan, keep), plan)
                df = csv_cells(spark, df, keep, kinds)
                writer = df.write.mode("errorifexists").options(**csv_options(len(keep)))
                writer.csv(str(out))
        except InputError:  # kanon's own refusal of the file (its text, its quotes): said as it is
            raise
        except Exception as exc:  # py4j and Spark raise many types; their text can quote cells
            raise InputError(f"Spark failed while writing the release ({type(exc).__name__}).") from None

    def per_record(self, source: Source, qis: Sequence[str], per_class: pa.Table, columns: Sequence[str],
                   out: Path, settings: EngineSettings) -> None:
        """Written by the executors as a folder of part files whose name order is the input order."""
        spark = session(settings)
        try:
            view = self._view(spark, source)
            spark.createDataFrame(per_class.to_pandas()).createOrReplaceTempView("kanon_per_class")
            query = sql.per_record_sql(sql.SPARK, source, view, qis, "kanon_per_class", columns,
                                       row_id="monotonically_increasing_id()")
            spark.sql(query).write.mode("errorifexists").option("header", "true").csv(str(out))
        except InputError:  # kanon's own refusal of the file (its text, its quotes): said as it is
            raise
        except Exception as exc:  # py4j and Spark raise many types; their text can quote cells
            raise InputError(f"Spark failed while writing the per-record results ({type(exc).__name__}).") from None


def csv_options(n_columns: int) -> dict[str, str]:
    """The options of Spark's CSV writer that give the default writer's cells (:func:`kanon_core.io.csv_bytes`).

    Spark's defaults would change the text: it trims the spaces around a cell (" south" is written
    "south", and a cell of spaces becomes empty, missing), and escapes a quote with a backslash
    (``"a\\"b"``, read back as ``a\\b"``); so nothing is trimmed and a quote is doubled, as pandas writes it.
    A missing cell and an empty text are written as nothing. A release of one column is written with every
    cell quoted: Spark writes no line at all for a record whose only cell is missing (the record would be
    lost) and a cell of spaces unquoted (the default reader skips its line as blank); the default writer
    quotes such cells only (:func:`~kanon_core.engines.api.csv_field`), and the quotes change no cell's text."""
    options = {"header": "true", "quote": '"', "escape": '"', "emptyValue": "", "nullValue": "",
               "ignoreLeadingWhiteSpace": "false", "ignoreTrailingWhiteSpace": "false", "lineSep": "\n"}
    if n_columns == 1:
        options["quoteAll"] = "true"
    return options


def with_whole_floats(spark, source: Source, view: str, kinds: dict[str, str], plan: ReleasePlan) -> dict[str, str]:
    """``kinds`` (:func:`~kanon_core.engines.api.csv_cell_kinds`) with the float columns of whole numbers
    made "whole", learnt in one job over those columns (:func:`~kanon_core.engines.sql.whole_floats_sql`)."""
    floats = whole_candidates(kinds, plan)
    if not floats:
        return kinds
    row = spark.sql(sql.whole_floats_sql(sql.SPARK, source, view, floats)).collect()[0]
    return kinds | {c: "whole" for i, c in enumerate(floats) if row[i] == 1}


FLOAT_TEXT_UDF = "kanon_float_text"
"""The name :func:`csv_cells` registers :func:`float_text_udf` under, in the session."""


def csv_cells(spark, df, keep: Sequence[str], kinds: dict[str, str]):
    """``df`` (the release's records) with the cells of the columns ``kinds`` names as the text the default
    writer writes (:data:`~kanon_core.engines.api.CELL_KINDS`); missing cells stay missing.

    * "bool": "True" and "False" (Spark writes "true" and "false").
    * "whole": the integer (Spark writes "1.0", "-0.0", "1.0E15").
    * "float": Python's shortest round-trip text (:func:`kanon_core.io.float_cell`), a FLOAT widened to the
      DOUBLE it is first ("0.10000000149011612", where Spark writes Java's "0.1"). Spark's text of a double is
      Java's ``Double.toString``, which differs from Python's in its layout ("1.0E-7" for "1e-07", "1.0E15"
      for "1000000000000000.0", "1.23E-4" for "0.000123": the exponent form below 1e-3 and from 1e7, where
      Python's is below 1e-4 and from 1e16) and in "-0.0"; a layout is only text, but the digits differ too.
      Java 17's digits are not always the shortest ("1.9999999999999998E23" for 2e+23, "8.409999999999999E21"
      for 8.41e+21), not always the nearest of the shortest ("2.9660096386720332E25" for
      2.9660096386720333e+25), and from Java 19 on, when one digit would do, two ("4.9E-324" for 5e-324).
      Re-laid out in SQL Java's digits would be wrong in about one double in a thousand, and repairing them
      needs the exact binary value, which Spark's SQL does not give (a cast to DECIMAL or text, and
      ``format_string``, all start from Java's digits; ``reflect`` into ``java.math`` may be forbidden on a
      cluster). So these cells are written by a vectorised (Arrow) pandas UDF running Python's own ``repr``
      (:func:`float_text_udf`): exact by construction, batch by batch on the executors, the rest of the job
      in SQL.
    """
    if not kinds:
        return df
    if "float" in kinds.values():
        spark.udf.register(FLOAT_TEXT_UDF, float_text_udf())
    df.createOrReplaceTempView("kanon_release")
    texts = sql.cell_texts(sql.SPARK, keep, kinds, lambda col: f"{FLOAT_TEXT_UDF}(CAST({col} AS DOUBLE))")
    return spark.sql(f"SELECT {texts} FROM kanon_release")


def float_text_udf():
    """A pandas UDF (Arrow batches, DOUBLE to STRING): each value as :func:`kanon_core.io.float_cell` writes
    it (``repr``, the infinities "Infinity" and "-Infinity", -0.0 as "0.0"), a missing value (null; NaN is
    missing already, :func:`~kanon_core.engines.sql.value_expr`) missing.

    The function is defined here, inside, so that it is sent to the executors by value (cloudpickle
    serialises a nested function whole): it needs only pandas there, not kanon."""
    from pyspark.sql.functions import pandas_udf

    def float_texts(values):
        import pandas as pd

        inf = float("inf")
        texts = [None if v != v else "Infinity" if v == inf else "-Infinity" if v == -inf else repr(v + 0.0)
                 for v in values.tolist()]
        return pd.Series(texts, index=values.index, dtype=object)

    return pandas_udf(float_texts, "string")


register(SparkEngine())
