"""``kanon minucs --engine duckdb|polars|spark``: the MINUC counts of a file too large for memory, found on
its class table (:func:`~kanon_core.risk.minucs.summarize_minucs_of_table`), with per-record counts written
by the engine. The search keeps counts, not the MINUCs themselves, so ``--list`` and SUDA (k = 2), which
need every MINUC of every record, stay with the in-memory search."""

from __future__ import annotations

import argparse
import time

from ..errors import InputError
from ..progress import Progress
from .scale import counted_file, engine_settings, out_of_core_engine, write_per_record


def minucs_at_scale(args: argparse.Namespace) -> int | None:
    """Run ``kanon minucs`` through an out-of-core engine (None: the in-memory path runs)."""
    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    import numpy as np

    from ..outputs import OutputBatch, check_outputs, data_inputs
    from ..risk.minucs import summarize_minucs_of_table
    from ..risk.qid import minimal_qids_from_minucs
    from .common import write_json

    if args.list_out:
        raise InputError("--list writes every MINUC of every record, which the class table's search does not "
                         "keep: use --engine pandas for it.")
    check_outputs({"-o/--json": args.json_out, "--per-record": args.per_record}, data_inputs(args.file))
    t0 = time.perf_counter()
    settings = engine_settings(args, "minucs")
    try:
        source, qis, table, keys, class_of_row = counted_file(args, engine, "minucs", settings)
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
        # the class table carries the values' labels as the in-memory reader makes them
        payload["top_values"] = found.value_contributions(table, top=20).drop(columns="code").to_dict(orient="records")
        if found.complete and found.combinations is not None:
            qids = minimal_qids_from_minucs(found)
            payload["minimal_violating_qids"] = {"count": len(qids), "smallest": list(qids[0]) if qids else []}
        with OutputBatch() as batch:
            if args.per_record:
                settings.say("writing per-record counts (records joined with the class table)")
                by_size = found.row_sizes[class_of_row].astype(np.int64)
                write_per_record(engine, source, qis, keys, {f"size{s + 1}": by_size[:, s] for s in range(found.n_qis)},
                                 args.per_record, batch, settings)
            payload["seconds"] = round(time.perf_counter() - t0, 4)
            write_json(args.json_out, payload, batch)
    finally:
        settings.close()
    return 0
