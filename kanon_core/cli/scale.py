"""The command line's engine options (``--engine``, ``--memory-limit``, ``--spark-master``) and the
out-of-core variants of the commands that can run on the class table.

Each command adds the options with :func:`add_engine_options` and asks :func:`out_of_core_engine` first:
None means the in-memory path (pandas), which runs unchanged; otherwise the command's ``*_at_scale``
function here does the work through the engine and the class table. Progress goes to stderr when it is a
terminal (:func:`engine_settings`).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..engines import ENGINE_CHOICES, EngineSettings, choose_engine, get_engine, parse_memory
from ..engines.base import AUTO_THRESHOLD_BYTES, DEFAULT_EMBEDDED
from ..errors import InputError
from ..io import is_missing_like, missing_like_notice
from .notices import notice


def add_engine_options(p: argparse.ArgumentParser) -> None:
    """--engine, --memory-limit, --spark-master (shared by risk, generalize, suppress and apply)."""
    g = p.add_argument_group("engine (large files)")
    g.add_argument("--engine", choices=ENGINE_CHOICES, default="auto",
                   help=f"where to compute: pandas (in memory), duckdb or polars (embedded, out of core), spark "
                        f"(--spark-master); auto (default): pandas below {AUTO_THRESHOLD_BYTES >> 20} MiB, "
                        f"{DEFAULT_EMBEDDED} above (CSV and Parquet)")
    g.add_argument("--memory-limit", default=None,
                   help="memory ceiling of the engine, e.g. 4GB, 512MiB or 0.25 (a fraction of RAM; default "
                        "half of RAM); DuckDB spills to a private temporary folder beyond it")
    g.add_argument("--spark-master", default="local[2]",
                   help="Spark master URL for --engine spark (default local[2]; e.g. spark://host:7077)")


def engine_settings(args: argparse.Namespace, command: str) -> EngineSettings:
    """The engine's settings from the command's options, its progress lines going to stderr only when stderr
    is a terminal, as the in-memory path's (:func:`~kanon_core.cli.common.stderr_progress`): a run whose stderr
    is a log or a pipe gets the same lines whichever engine ran it, so a refusal is still one line there."""
    def say(message: str) -> None:
        print(f"kanon {command}: {message}", file=sys.stderr, flush=True)

    return EngineSettings(memory_limit=parse_memory(getattr(args, "memory_limit", None)),
                          spark_master=getattr(args, "spark_master", "local[2]") or "local[2]",
                          progress=say if sys.stderr.isatty() else None)


def out_of_core_engine(args: argparse.Namespace, path: Any) -> Any | None:
    """The engine object for the command, or None for the in-memory path."""
    name = choose_engine(getattr(args, "engine", "auto") or "auto", path)
    if name == "pandas":
        return None
    if getattr(args, "sheet", None):
        raise InputError("--sheet reads Excel workbooks, which only the pandas engine reads.")
    return get_engine(name)


def match_names_at_scale(args: argparse.Namespace) -> None:
    """For a command whose out-of-core path opens the file itself (``kanon suppress``): match the options'
    variable names to the file's header (:func:`kanon_core.cli.common.match_names`) when an out-of-core
    engine will run, so both paths select the same columns. Nothing happens for the in-memory path, which
    matches them once the file is read."""
    if out_of_core_engine(args, args.file) is None:
        return
    from ..engines.source import open_source
    from .common import match_names

    match_names(args, open_source(args.file).columns)


def _missing_codes(args: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    """``--missing-codes`` for the engines, marked as given for this file: a text code for a column of numbers
    is refused where an engine types the column, as in memory (:class:`~kanon_core.declare_missing.
    GivenMissingCodes`)."""
    from ..declare_missing import GivenMissingCodes
    from .common import parse_missing_codes

    return GivenMissingCodes(parse_missing_codes(getattr(args, "missing_codes", None)))


def notice_table(table) -> None:
    """The in-memory path's notices about its QIs (:func:`kanon_core.cli.common.load_from_args`), from the
    class table: text that often means missing, then QIs with very many distinct values (each QI's distinct
    values are the table's, missing ones left out, its records the table's count:
    :func:`kanon_core.describe.many_distinct_limit`)."""
    from ..describe import many_distinct_limit
    from .common import say_many_levels

    _notice_missing_like(table)
    limit = many_distinct_limit(table.n_records)
    say_many_levels({q: len(v) for q, v in zip(table.qis, table.values, strict=True) if len(v) > limit})


def _notice_missing_like(table) -> None:
    """The in-memory path's notice about text that often means missing, for the QIs (from the table)."""
    import numpy as np

    counts = {}
    for j, q in enumerate(table.qis):
        hits = [i for i, v in enumerate(table.values[j]) if is_missing_like(v)]
        if hits:
            counts[q] = int(table.count[np.isin(table.codes[:, j], hits)].sum())
    if counts:
        notice(f"kanon: notice: {missing_like_notice(counts)}")


def risk_at_scale(args: argparse.Namespace) -> int | None:
    """``kanon risk`` on the class table when an out-of-core engine is chosen (None: run in memory)."""
    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    import numpy as np

    from ..engines.risk import risk_of_table
    from ..outputs import OutputBatch, check_outputs, data_inputs
    from ..risk.classes import check_alpha
    from .common import write_json

    alpha = check_alpha(args.alpha)
    if args.household:
        from ..errors import InputError

        raise InputError("--household needs the records in memory: use --engine pandas for household risk.")
    check_outputs({"-o/--json": args.json_out, "--per-record": args.per_record}, data_inputs(args.file))
    t0 = time.perf_counter()
    settings = engine_settings(args, "risk")
    try:
        source, qis, table, keys, class_of_row = counted_file(args, engine, "risk", settings)
        settings.say(f"class sizes on {table.n_classes:,} classes ({args.missing})")
        risk = risk_of_table(table, args.k, args.missing, alpha)
        payload = dict(risk.payload)
        measures, l_class = _measures_at_scale(args, engine, source, table, risk.sizes, qis, settings)
        payload.update(measures.to_json())
        payload["qis"] = qis
        payload["engine"] = engine.name
        with OutputBatch() as batch:
            if args.per_record:
                settings.say("writing per-record results (records joined with the class table)")
                cols = {"fk": risk.sizes.fk[class_of_row]}
                if risk.sizes.Fk is not None:
                    cols["Fk"] = risk.sizes.Fk[class_of_row]
                cols["wildcard_dependent"] = risk.dependent[class_of_row].astype(np.int8)
                cols["individual_risk"] = measures.individual[class_of_row]
                for name, per_class_l in l_class.items():
                    cols[name] = per_class_l[class_of_row]
                write_per_record(engine, source, qis, keys, cols, args.per_record, batch, settings)
            payload["seconds"] = round(time.perf_counter() - t0, 4)
            write_json(args.json_out, payload, batch)
    finally:
        settings.close()
    return 0


def counted_file(args: argparse.Namespace, engine, command: str, settings):
    """The file of ``args`` opened and counted on its QIs by ``engine``: the source, the QIs, the class table,
    the engine's raw aggregate keys and each aggregate row's class (for ``--per-record``); the in-memory
    path's notices about its QIs are printed (:func:`notice_table`)."""
    from ..engines.source import open_source
    from ..engines.table import aggregate_table
    from .common import match_names, split_list

    source = open_source(args.file)
    match_names(args, source.columns)  # the options' names as the header writes them, as in memory
    qis = list(split_list(args.qi))
    table, keys, class_of_row, _ = aggregate_table(engine, source, qis, args.weight, _missing_codes(args), settings)
    notice_table(table)
    return source, qis, table, keys, class_of_row


def write_per_record(engine, source, qis: list[str], keys, columns: dict[str, Any], target: str, batch,
                     settings) -> None:
    """Per-class ``columns`` (one value per aggregate row) joined back to the records by the engine and written
    to ``target`` in input order (through the batch's temporary file; Spark writes its folder itself)."""
    import pyarrow as pa

    per_class = keys
    for name, arr in columns.items():
        per_class = per_class.append_column(name, pa.array(arr))
    out = batch.temp_path(target) if engine.name != "spark" else target
    engine.per_record(source, qis, per_class, list(columns), out, settings)


def _measures_at_scale(args: argparse.Namespace, engine, source, table, sizes, qis: list[str], settings):
    """Risk beyond k on the class table: individual risk per class, l-diversity and t-closeness per
    sensitive variable (one GROUP BY per variable counting its values per class), and per-class distinct l in the
    class order of ``table`` for the per-record file. Household risk needs each record's household."""
    from ..engines.table import with_sensitive
    from ..errors import InputError
    from ..risk.summary import risk_measures_of_table

    names = list(dict.fromkeys(args.sensitive))
    for s in names:
        if s in qis:
            raise InputError(f"Sensitive variable '{s}' is also a quasi-identifier; a variable is one or the other.")
    sens_table = table
    if names:
        settings.say(f"{engine.name}: counting the values of {len(names)} sensitive variable(s) per class")
        sens_table = with_sensitive(engine, source, table, names, _missing_codes(args), settings)
    measures = risk_measures_of_table(sens_table, sizes, max_risk=args.max_risk, method=args.risk_method,
                                      sensitive=names, c=args.recursive_c, distance=args.t_distance)
    per_class_l = {}
    if len(measures.sensitive) == 1:
        per_class_l["l_distinct"] = measures.sensitive[0].l_distinct
    else:
        per_class_l = {f"l_distinct_{m.name}": m.l_distinct for m in measures.sensitive}
    return measures, per_class_l


def generalize_at_scale(args: argparse.Namespace, criteria: list, alpha: float) -> int | None:
    """``kanon generalize`` on the class table when an out-of-core engine is chosen (None: in memory).

    The search runs on the engine's class table (distinct QI rows with counts: the records are never
    expanded in memory); the release (``-o``) is written by the engine: each QI recoded through its hierarchy at the chosen
    level (a mapping table), the records of classes still smaller than k blanked on every QI (a list of
    classes), as the in-memory step does.
    """
    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    import json
    from pathlib import Path

    from ..engines.generalize import level_tables, table_problem, write_generalized_release
    from ..engines.source import open_source
    from ..engines.table import aggregate_table, with_sensitive
    from ..outputs import OutputBatch
    from ..treat.hierarchy import load_hierarchies
    from .common import match_names, notice_engine_release, split_list, write_json
    from .generalize_cmd import search_and_summary

    source = open_source(args.file)
    match_names(args, source.columns)  # the options' names as the header writes them, as in memory
    qis = list(split_list(args.qi))
    if args.output and [c for c in criteria if getattr(c, "spec", "").split("=")[0] != "k"]:
        raise InputError("At scale, --output writes k-anonymity releases only; use --engine pandas for other "
                         "criteria, or --step to record the result.")
    if args.output and Path(args.output).suffix.lower() not in (".csv", ".parquet"):
        raise InputError("At scale, --output is written as .csv or .parquet.")
    t0 = time.perf_counter()
    settings = engine_settings(args, "generalize")
    try:
        sensitive = sorted({v for c in criteria for v in c.sensitive})
        table, keys, class_of_row, meta = aggregate_table(engine, source, qis, args.weight, _missing_codes(args),
                                                          settings)
        table = with_sensitive(engine, source, table, sensitive, _missing_codes(args), settings)
        notice_table(table)
        hs, tabs = level_tables(table, qis, load_hierarchies(args.hierarchies, qis))
        settings.say(f"lattice search on {table.n_classes:,} classes ({table.n_records:,} records)")
        problem = table_problem(table, hs, tabs, args.missing, alpha)
        result, payload = search_and_summary(problem, args, criteria, alpha, args.missing)
        payload["engine"] = engine.name
        with OutputBatch() as batch:
            if args.step:
                batch.write_text(args.step, json.dumps(result.step().to_dict(), indent=2, ensure_ascii=False) + "\n")
            if args.output:
                write_generalized_release(engine, args.file, table, qis, hs, tabs, result.levels, args.k,
                                          args.missing, _missing_codes(args), args.output, settings, batch,
                                          (keys, class_of_row, meta))
            payload["seconds"] = round(time.perf_counter() - t0, 4)
            write_json(args.json_out, payload, batch)
        if args.output:
            notice_engine_release(args.output)
    finally:
        settings.close()
    return 0


IN_MEMORY_ONLY: dict[str, str] = {}
"""Commands that accept the engine options but run in memory, and why (``auto`` picks pandas for them).
None at present: ``kanon suppress`` solves its strict model on the class table and refuses, one by one,
the options that need the records in memory (:mod:`kanon_core.cli.suppress_scale`)."""


def require_in_memory(args: argparse.Namespace, command: str) -> None:
    """Refuse an explicit out-of-core engine for a command that needs the records in memory (one line)."""
    name = getattr(args, "engine", "auto") or "auto"
    if name not in ("auto", "pandas"):
        raise InputError(f"kanon {command} runs in memory ({IN_MEMORY_ONLY[command]}); use --engine pandas or "
                         "auto. Risk, generalize and apply run out of core.")
