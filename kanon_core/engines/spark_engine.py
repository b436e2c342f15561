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
that are not UTF-8 silently, so a local file is checked for UTF-8 on the driver first.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from ..errors import InputError
from . import sql
from .api import OutOfCore
from .base import ColumnStats, EngineSettings, ReleasePlan, register
from .source import Source, check_utf8

_LOCK = threading.Lock()
_SESSIONS: dict[str, object] = {}
_SPILL: list[str] = []
"""The sessions' spill folders (Spark's ``local.dir``), removed with the sessions."""


def session(settings: EngineSettings):
    """One SparkSession per master URL for the process (starting the JVM takes seconds).

    A session outlives the command that started it, so its spill folder is its own (private, mode 0700,
    removed by :func:`stop_sessions` or at exit), not the command's :attr:`EngineSettings.temp_dir`: that one
    is removed when the command ends, and the next job's shuffle then failed to create its files there."""
    with _LOCK:
        if settings.spark_master in _SESSIONS:
            return _SESSIONS[settings.spark_master]
        from pyspark.sql import SparkSession

        if not _SPILL and not _SESSIONS:
            atexit.register(stop_sessions)
        spill = tempfile.mkdtemp(prefix="kanon-spill-")
        os.chmod(spill, 0o700)
        _SPILL.append(spill)

        mem = max(512, settings.memory_limit >> 20)
        builder = (SparkSession.builder.master(settings.spark_master).appName("kanon")
                   .config("spark.driver.memory", f"{mem}m")
                   .config("spark.sql.shuffle.partitions", "8")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.local.dir", spill)
                   .config("spark.sql.ansi.enabled", "false"))
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        _SESSIONS[settings.spark_master] = spark
        return spark


def stop_sessions() -> None:
    """Stop every session this process started (tests call it once per module)."""
    with _LOCK:
        for spark in _SESSIONS.values():
            spark.stop()  # type: ignore[attr-defined]
        _SESSIONS.clear()
        for spill in _SPILL:
            shutil.rmtree(spill, ignore_errors=True)
        _SPILL.clear()


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
                check_utf8(source.path)
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
        return self._run(settings, source, lambda v: sql.aggregate_sql(sql.SPARK, source, v, keys, weight),
                         "aggregating the file")

    def column_stats(self, source: Source, settings: EngineSettings) -> tuple[int, list[ColumnStats]]:
        r = self._run(settings, source, lambda v: sql.stats_sql(sql.SPARK, source, v), "summarising the file")
        row = r.to_pylist()[0]
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
            df = spark.sql(sql.release_sql(sql.SPARK, source, view, names, plan.qis, sup, keep,
                                           ordered=ranked is not None, ranked=ranked,
                                           row_id="monotonically_increasing_id()"))
            writer = df.write.mode("errorifexists")
            if out.suffix.lower() == ".parquet":
                writer.parquet(str(out))
            else:
                writer.option("header", "true").option("emptyValue", "").csv(str(out))
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
        except Exception as exc:  # py4j and Spark raise many types; their text can quote cells
            raise InputError(f"Spark failed while writing the per-record results ({type(exc).__name__}).") from None


register(SparkEngine())
