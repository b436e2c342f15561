"""``kanon minucs --engine duckdb|polars|spark``: the MINUC counts of a file too large for memory, found on
its class table (:func:`~kanon_core.risk.minucs.summarize_minucs_of_table`), with per-record counts written
by the engine. The search keeps counts, not the MINUCs themselves, so ``--list`` and SUDA (k = 2), which
need every MINUC of every record, stay with the in-memory search."""

from __future__ import annotations

import argparse
import time

from ..errors import InputError
from ..progress import Progress
from .scale import _missing_codes, _notice_missing_like, engine_settings, out_of_core_engine


def minucs_at_scale(args: argparse.Namespace) -> int | None:
    """Run ``kanon minucs`` through an out-of-core engine (None: the in-memory path runs)."""
    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    import numpy as np
    import pyarrow as pa

    from ..engines.source import open_source
    from ..engines.table import aggregate_table
    from ..outputs import OutputBatch, check_outputs, data_inputs
    from ..risk.minucs import summarize_minucs_of_table
    from ..risk.qid import minimal_qids_from_minucs
    from .common import split_list, write_json

    if args.list_out:
        raise InputError("--list writes every MINUC of every record, which the class table's search does not "
                         "keep: use --engine pandas for it.")
    check_outputs({"-o/--json": args.json_out, "--per-record": args.per_record}, data_inputs(args.file))
    t0 = time.perf_counter()
    settings = engine_settings(args, "minucs")
    try:
        source = open_source(args.file)
        qis = list(split_list(args.qi))
        table, keys, class_of_row, _ = aggregate_table(engine, source, qis, args.weight, _missing_codes(args),
                                                       settings)
        _notice_missing_like("minucs", table)
        settings.say(f"MINUC search on {table.n_classes:,} classes ({table.n_records:,} records)")
        last = [-1]

        def tell(fraction: float, message: str) -> None:
            if int(fraction * 10) > last[0]:  # every tenth
                last[0] = int(fraction * 10)
                settings.say(f"{fraction:.0%} {message}")

        found = summarize_minucs_of_table(table, args.k, args.missing, args.max_size, Progress(tell),
                                          method=args.method)
        payload = found.to_json()
        payload["engine"] = engine.name
        if found.complete and found.combinations is not None:
            qids = minimal_qids_from_minucs(found)
            payload["minimal_violating_qids"] = {"count": len(qids), "smallest": list(qids[0]) if qids else []}
        with OutputBatch() as batch:
            if args.per_record:
                settings.say("writing per-record counts (records joined with the class table)")
                names = [f"size{s + 1}" for s in range(found.n_qis)]
                per_class = keys
                for s, name in enumerate(names):
                    per_class = per_class.append_column(name, pa.array(found.row_sizes[class_of_row, s]
                                                                       .astype(np.int64)))
                target = batch.temp_path(args.per_record) if engine.name != "spark" else args.per_record
                engine.per_record(source, qis, per_class, names, target, settings)
            payload["seconds"] = round(time.perf_counter() - t0, 4)
            write_json(args.json_out, payload, batch)
    finally:
        settings.close()
    return 0
