"""``kanon suppress`` out of core: the strict model solved on the engine's class table, the release
written by the engine.

The records are never read into pandas. The engine aggregates the file into its class table (one
``GROUP BY``); :func:`kanon_core.treat.strict.classes.suppress_classes` decides how many records of each
class take which suppression pattern and checks the result independently; the engine then numbers the
records of each class in input order and blanks the cells of the ranks each pattern covers (a
:class:`~kanon_core.engines.base.RankedSuppression` keyed by the raw values the aggregate returned),
streaming the release to CSV or Parquet with the input's labels sidecar. Suppressed cells are written
empty (missing). Options that need the records in memory are refused with one line each.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError

REFUSED = {
    "max_risk": "--max-risk (risk-targeted suppression works record by record)",
    "by": "--by (groups)",
    "link": "--link (linked variables)",
}


def check_scale_options(args: argparse.Namespace) -> None:
    """One line per option the out-of-core path does not take, pointing to ``--engine pandas``."""
    from ..treat.protection import DEFAULT_MODEL

    for name, what in REFUSED.items():
        if getattr(args, name, None):
            raise InputError(f"{what} is not available at scale; use --engine pandas.")
    if args.model != DEFAULT_MODEL:
        raise InputError(f"At scale only the {DEFAULT_MODEL} model is solved (not --model {args.model}); use "
                         "--engine pandas.")
    if args.method not in (None, "exact"):
        raise InputError("At scale the strict model is solved by the exact method only; use --engine pandas for "
                         "--method greedy.")
    if args.alpha != 1.0:
        raise InputError("--alpha is not available at scale; use --engine pandas.")
    if args.suppressed_code is not None:
        raise InputError("At scale suppressed cells are written empty (missing); use --engine pandas for "
                         "--suppressed-code.")
    if args.k is None or args.k < 2:
        raise InputError("--k must be at least 2.")
    if args.node_limit is not None and args.node_limit < 1:
        raise InputError("--node-limit must be at least 1.")
    if Path(args.output).suffix.lower() not in (".csv", ".parquet"):
        raise InputError("At scale the release is written as .csv or .parquet.")


def suppress_at_scale(args: argparse.Namespace) -> int | None:
    """``kanon suppress`` when an out-of-core engine is chosen (None: run in memory)."""
    from .scale import out_of_core_engine

    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    check_scale_options(args)
    from ..engines.source import open_source
    from ..engines.table import aggregate_table
    from ..outputs import NamedPath, OutputBatch, check_outputs, data_inputs, release_outputs, sidecar_of
    from ..treat.strict.classes import suppress_classes
    from ..treat.suppress import NODE_LIMIT, resolve_costs
    from .common import split_list, write_json
    from .scale import _missing_codes, _notice_missing_like, engine_settings
    from .suppress_cmd import parse_importance

    check_outputs([*release_outputs(args.output), NamedPath("--json", Path(args.json_out))], data_inputs(args.file))
    t0 = time.perf_counter()
    settings = engine_settings(args, "suppress")
    timings: dict[str, float] = {}
    try:
        source = open_source(args.file)
        qis = list(split_list(args.qi))
        costs, protected = resolve_costs(qis, parse_importance(args.importance), split_list(args.protect))
        table, keys, class_of_row, _ = aggregate_table(engine, source, qis, None, _missing_codes(args), settings)
        timings["aggregate"] = time.perf_counter() - t0
        _notice_missing_like("suppress", table)
        settings.say(f"strict suppression on {table.n_classes:,} classes ({table.n_records:,} records, "
                     f"{args.missing})")
        t1 = time.perf_counter()
        res = suppress_classes(table.codes, table.count, args.k, costs, protected, args.missing,
                               NODE_LIMIT if args.node_limit is None else args.node_limit,
                               _progress(settings))
        timings["solve"] = time.perf_counter() - t1
        ranked = ranked_plan(keys, class_of_row, table.n_classes, res.assignment, len(qis))
        with OutputBatch() as batch:
            t2 = time.perf_counter()
            target = batch.temp_path(args.output) if engine.name != "spark" else Path(args.output)
            engine.release(args.file, target, qis=qis, missing_codes=_missing_codes(args), settings=settings,
                           sidecar=False, ranked=ranked)
            labels = engine.release_labels(source, (), _missing_codes(args), settings=settings)
            written = [Path(args.output).name]
            if labels is not None:
                batch.write_bytes(sidecar_of(args.output), labels)
                written.append(sidecar_of(args.output).name)
            timings["write"] = time.perf_counter() - t2
            payload = summary(res, table, qis, costs, protected, args, engine.name, time.perf_counter() - t0,
                              timings)
            payload["written"] = written
            write_json(args.json_out, payload, batch)
    finally:
        settings.close()
    gap = "" if res.optimal else f" (gap {100 * payload['gap']:.2f} %)"
    print(f"kanon suppress: strict model ({engine.name}), {res.n_suppressed:,} cells suppressed in "
          f"{res.records_touched:,} records, cost {res.cost:g}, "
          f"{'proven optimal' if res.optimal else 'not proven optimal'}{gap}; {res.check.violations} records "
          f"below k={args.k} (recounted); {res.check.findable_below_k:,} people findable among fewer than "
          f"{args.k} released records", file=sys.stderr)
    return 0


def _progress(settings) -> Any:
    """The solver's steps as the engine's progress lines on stderr (each message once)."""
    from ..progress import Progress

    last = [""]

    def show(fraction: float, message: str) -> None:
        if message and message != last[0]:
            last[0] = message
            settings.say(message)

    return Progress(show)


def ranked_plan(keys, class_of_row: np.ndarray, n_classes: int, assignment, q: int):
    """The engine's :class:`~kanon_core.engines.base.RankedSuppression` for an assignment: the raw key rows
    of the classes that lose cells (a class merged from several raw rows lists each of them) and, per
    class, the rank ranges with their flags (empty patterns use up ranks but are not listed)."""
    import pyarrow as pa

    from ..engines.base import RankedSuppression
    from ..treat.strict.classes import rank_ranges

    row, lo, hi, pattern = rank_ranges(assignment, n_classes)
    listed = pattern != 0
    row, lo, hi, pattern = row[listed], lo[listed], hi[listed], pattern[listed]
    touched = np.zeros(n_classes, dtype=bool)
    touched[row] = True
    key_rows = np.flatnonzero(touched[class_of_row])
    classes = keys.take(pa.array(key_rows, pa.int64())).append_column(
        "kanon_cls", pa.array(class_of_row[key_rows].astype(np.int64), pa.int64()))
    cols: dict[str, Any] = {"kanon_cls": pa.array(row, pa.int64()), "lo": pa.array(lo, pa.int64()),
                            "hi": pa.array(hi, pa.int64())}
    for j in range(q):
        cols[f"s{j}"] = pa.array(((pattern >> j) & 1).astype(bool), pa.bool_())
    return RankedSuppression(classes, pa.table(cols))


def summary(res, table, qis: list[str], costs: np.ndarray, protected: np.ndarray, args: argparse.Namespace,
            engine: str, seconds: float, timings: dict[str, float]) -> dict[str, Any]:
    """The in-memory command's JSON keys that apply at scale (no data values), with ``engine``."""
    n = table.n_records
    per_var = res.per_variable(len(qis))
    cost = float(res.cost)
    return {
        "n_records": n,
        "n_classes": table.n_classes,
        "qis": qis,
        "k": args.k,
        "missing": args.missing,
        "model": "strict",
        "alpha": 1.0,
        "method": "exact",
        "engine": engine,
        "protected": [q for q, p in zip(qis, protected.tolist(), strict=True) if p],
        "n_suppressed": res.n_suppressed,
        "cost": cost,
        "records_touched": res.records_touched,
        "lower_bound": res.lower_bound,
        "optimal": res.optimal,
        "gap": 0.0 if cost <= 0 else max(0.0, (cost - res.lower_bound) / cost),
        "findable_below_k": res.check.findable_below_k,
        "per_variable": {q: {"suppressed": int(c), "percent": round(100.0 * int(c) / n, 2) if n else 0.0}
                         for q, c in zip(qis, per_var.tolist(), strict=True)},
        "seconds": round(seconds, 4),
        "timings": {k: round(v, 4) for k, v in timings.items()},
        "stats": {**res.stats, "unsafe_records": res.unsafe_records},
        "violations_after": res.check.violations,
        "min_class_after": res.check.min_class,
        "by": [],
        "linked": {},
    }
