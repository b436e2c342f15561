"""The command line's engine options (``--engine``, ``--memory-limit``, ``--spark-master``) and the
out-of-core variants of the commands that can run on the class table.

Each command adds the options with :func:`add_engine_options` and asks :func:`out_of_core_engine` first:
None means the in-memory path (pandas), which runs unchanged; otherwise the command's ``*_at_scale``
function here does the work through the engine and the class table. Progress goes to stderr.
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
    def say(message: str) -> None:
        print(f"kanon {command}: {message}", file=sys.stderr, flush=True)

    return EngineSettings(memory_limit=parse_memory(getattr(args, "memory_limit", None)),
                          spark_master=getattr(args, "spark_master", "local[2]") or "local[2]", progress=say)


def out_of_core_engine(args: argparse.Namespace, path: Any) -> Any | None:
    """The engine object for the command, or None for the in-memory path."""
    name = choose_engine(getattr(args, "engine", "auto") or "auto", path)
    if name == "pandas":
        return None
    if getattr(args, "sheet", None):
        raise InputError("--sheet reads Excel workbooks, which only the pandas engine reads.")
    return get_engine(name)


def _missing_codes(args: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    from .common import parse_missing_codes

    return parse_missing_codes(getattr(args, "missing_codes", None))


def _notice_missing_like(command: str, table) -> None:
    """The in-memory path's notice about text that often means missing, for the QIs (from the table)."""
    import numpy as np

    counts = {}
    for j, q in enumerate(table.qis):
        hits = [i for i, v in enumerate(table.values[j]) if is_missing_like(v)]
        if hits:
            counts[q] = int(table.count[np.isin(table.codes[:, j], hits)].sum())
    if counts:
        print(f"kanon: notice: {missing_like_notice(counts)}", file=sys.stderr)


def risk_at_scale(args: argparse.Namespace) -> int | None:
    """``kanon risk`` on the class table when an out-of-core engine is chosen (None: run in memory)."""
    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    import numpy as np
    import pyarrow as pa

    from ..engines.risk import risk_of_table
    from ..engines.source import open_source
    from ..engines.table import aggregate_table
    from ..outputs import OutputBatch, check_outputs, data_inputs
    from ..risk.classes import check_alpha
    from .common import split_list, write_json

    alpha = check_alpha(args.alpha)
    check_outputs({"-o/--json": args.json_out, "--per-record": args.per_record}, data_inputs(args.file))
    t0 = time.perf_counter()
    settings = engine_settings(args, "risk")
    try:
        source = open_source(args.file)
        qis = list(split_list(args.qi))
        table, keys, class_of_row, _ = aggregate_table(engine, source, qis, args.weight, _missing_codes(args),
                                                       settings)
        _notice_missing_like("risk", table)
        settings.say(f"class sizes on {table.n_classes:,} classes ({args.missing})")
        risk = risk_of_table(table, args.k, args.missing, alpha)
        payload = dict(risk.payload)
        payload["qis"] = qis
        payload["engine"] = engine.name
        with OutputBatch() as batch:
            if args.per_record:
                settings.say("writing per-record results (records joined with the class table)")
                cols = {"fk": risk.sizes.fk[class_of_row]}
                if risk.sizes.Fk is not None:
                    cols["Fk"] = risk.sizes.Fk[class_of_row]
                cols["wildcard_dependent"] = risk.dependent[class_of_row].astype(np.int8)
                per_class = keys
                for name, arr in cols.items():
                    per_class = per_class.append_column(name, pa.array(arr))
                target = batch.temp_path(args.per_record) if engine.name != "spark" else args.per_record
                engine.per_record(source, qis, per_class, list(cols), target, settings)
            payload["seconds"] = round(time.perf_counter() - t0, 4)
            write_json(args.json_out, payload, batch)
    finally:
        settings.close()
    return 0
