"""``kanon suppress`` out of core: the strict model, or a limit on individual risk (``--max-risk``), solved on
the engine's class table, the release written by the engine.

The records are never read into pandas (:mod:`kanon_core.engines.local_suppression`: the class table, the
strict model solved on it and checked independently, the release streamed by the engine with the input's
labels sidecar). The release is the one the in-memory path writes: in CSV, suppressed cells hold the code
(``--suppressed-code``, default -99) that the sidecar declares as missing; in Parquet they are null. Options
that need the records in memory are refused with one line each.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .common import check_k

REFUSED = {
    "by": "--by (groups)",
    "link": "--link (linked variables)",
}


def check_release_options(args: argparse.Namespace) -> None:
    """The release at scale: written by the engine as CSV or Parquet, with the in-memory path's code for
    suppressed cells (:func:`suppressed_code`)."""
    if Path(args.output).suffix.lower() not in (".csv", ".parquet"):
        raise InputError("At scale the release is written as .csv or .parquet.")
    suppressed_code(args)


def suppressed_code(args: argparse.Namespace) -> int:
    """The code for suppressed cells (``--suppressed-code``, default -99), checked as the in-memory path checks
    it (:class:`kanon_core.export.ExportOptions`): a CSV release writes it and declares it in its sidecar, as
    ``kanon suppress --help`` says of ``-o``, whichever engine writes the release."""
    from ..export import DEFAULT_SUPPRESSED_CODE, ExportOptions

    code = DEFAULT_SUPPRESSED_CODE if args.suppressed_code is None else args.suppressed_code
    return int(ExportOptions(csv_code=True, suppressed_code=code).suppressed_code)


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
    check_release_options(args)
    check_k(args.k)
    if args.node_limit is not None and args.node_limit < 1:
        raise InputError("--node-limit must be at least 1.")


def suppress_at_scale(args: argparse.Namespace) -> int | None:
    """``kanon suppress`` when an out-of-core engine is chosen (None: run in memory): the strict model, or
    with ``--max-risk R`` whole classes blanked until no class's individual risk exceeds R."""
    from ..engines.local_suppression import solve_at_scale, solve_risk_at_scale
    from ..risk.restore import NOT_COUNTED_AT_SCALE
    from .notices import notice
    from .scale import _missing_codes, out_of_core_engine
    from .suppress_cmd import check_max_risk_options, say_risk_result

    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    if args.max_risk is not None:
        threshold, alpha = check_max_risk_options(args)
        check_release_options(args)
        found, _ = _solve_and_write(args, engine, lambda qis, costs, protected, settings: solve_risk_at_scale(
            engine, args.file, qis, threshold, args.weight, args.missing, costs, protected, alpha=alpha,
            missing_codes=_missing_codes(args), settings=settings, progress=_progress(settings)), _risk_payload)
        say_risk_result(found.result, threshold)
        return 0
    check_scale_options(args)
    found, payload = _solve_and_write(args, engine, lambda qis, costs, protected, settings: solve_at_scale(
        engine, args.file, qis, args.k, args.missing, costs, protected, args.node_limit, _missing_codes(args),
        settings, _progress(settings), weight=args.weight), summary)  # (the weight checked as in memory)
    res = found.result
    gap = "" if res.optimal else f" (gap {100 * payload['gap']:.2f} %)"
    print(f"kanon suppress: strict model ({engine.name}), {res.n_suppressed:,} cells suppressed in "
          f"{res.records_touched:,} records, cost {res.cost:g}, "
          f"{'proven optimal' if res.optimal else 'not proven optimal'}{gap}; {res.check.violations} records "
          f"below k={args.k} (recounted); {res.check.findable_below_k:,} people findable among fewer than "
          f"{args.k} released records", file=sys.stderr)
    if not res.optimal:  # as in memory: how the bound was proven and why the optimum is not
        print(f"kanon suppress: note: {res.optimality().sentence()}", file=sys.stderr)
    if res.n_suppressed:
        notice(f"kanon suppress: notice: {NOT_COUNTED_AT_SCALE}")
    return 0


def _solve_and_write(args: argparse.Namespace, engine: Any, solve: Callable[..., Any],
                     payload_of: Callable[..., dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
    """The steps both targets share: outputs checked against the inputs, the problem's QIs, importances and
    protected QIs, ``solve(qis, costs, protected, settings)``, the release written by the engine and the JSON
    (``payload_of(found, qis, costs, protected, args, engine_name, seconds, timings)``), all in one batch."""
    from ..engines.local_suppression import write_suppressed_release
    from ..outputs import NamedPath, OutputBatch, check_outputs, data_inputs, release_outputs
    from ..treat.suppress import resolve_costs
    from .common import notice_engine_release, split_list, write_json
    from .scale import _missing_codes, engine_settings, notice_table
    from .suppress_cmd import parse_importance

    check_outputs([*release_outputs(args.output), NamedPath("--json", Path(args.json_out))], data_inputs(args.file))
    t0 = time.perf_counter()
    settings = engine_settings(args, "suppress")
    try:
        qis = list(split_list(args.qi))
        costs, protected = resolve_costs(qis, parse_importance(args.importance), split_list(args.protect))
        found = solve(qis, costs, protected, settings)
        notice_table(found.table)
        timings = {"aggregate": found.seconds_aggregate, "solve": found.seconds_solve}
        with OutputBatch() as batch:
            t2 = time.perf_counter()
            written = write_suppressed_release(engine, args.file, found, args.output, _missing_codes(args),
                                               settings, batch, code=suppressed_code(args))
            timings["write"] = time.perf_counter() - t2
            payload = payload_of(found, qis, costs, protected, args, engine.name, time.perf_counter() - t0,
                                 timings)
            payload["written"] = written
            write_json(args.json_out, payload, batch)
        notice_engine_release(args.output)
    finally:
        settings.close()
    return found, payload


def _risk_payload(found: Any, qis: list[str], costs: np.ndarray, protected: np.ndarray, args: argparse.Namespace,
                  engine: str, seconds: float, timings: dict[str, float]) -> dict[str, Any]:
    """The in-memory ``--max-risk`` JSON (weighed by the classes' counts) with the table's sizes and ``engine``."""
    payload = found.result.summary()
    payload.update(n_records=found.table.n_records, n_classes=found.table.n_classes, qis=qis, engine=engine,
                   seconds=round(seconds, 4), timings={k: round(v, 4) for k, v in timings.items()})
    return payload


def _progress(settings) -> Any:
    """The solver's steps as the engine's progress lines on stderr (each message once)."""
    from ..progress import Progress

    last = [""]

    def show(fraction: float, message: str) -> None:
        if message and message != last[0]:
            last[0] = message
            settings.say(message)

    return Progress(show)


def summary(found: Any, qis: list[str], costs: np.ndarray, protected: np.ndarray, args: argparse.Namespace,
            engine: str, seconds: float, timings: dict[str, float]) -> dict[str, Any]:
    """The in-memory command's JSON keys that apply at scale (no data values), with ``engine``."""
    from ..treat.suppress_result import proof_keys

    res, table = found.result, found.table
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
        "gap": res.optimality().gap,
        **proof_keys(res.optimality()),
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
        "restorable": None,  # cells other released variables give back are counted on records, in memory only
    }
