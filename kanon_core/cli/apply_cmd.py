"""``kanon apply``: replay a recipe in batch and write the release (and optionally the HTML report).

The output is byte-identical to the dashboard's export of the same version and to earlier runs (see
:mod:`kanon_core.export`). FILE defaults to the input recorded in the recipe, which must lie inside the
recipe's folder (a file elsewhere must be named on the command line). On the recipe's own file every step's
output is checked against the fingerprint the recipe records for it, and the first that differs stops the
replay (exit 2, nothing written); on another file (the next wave) a notice says the checks are skipped.

With ``--engine duckdb|polars|spark`` (or ``auto`` on a large CSV/Parquet file) the recipe is replayed on
the class table and the engine writes the release (:mod:`kanon_core.cli.apply_scale`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..outputs import NamedPath, OutputBatch, check_outputs, data_inputs, release_outputs
from .common import check_k, notice_release, write_json
from .notices import notice
from .scale import add_engine_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("apply", help="replay a recipe on a file (same file or the next wave) and write the release")
    p.add_argument("recipe", help="recipe JSON (exported from the dashboard)")
    p.add_argument("file", nargs="?", help="input data (default: the file recorded in the recipe, relative to it)")
    p.add_argument("-o", "--output", required=True,
                   help="release file: .csv, .parquet, .dta (Stata) or .sav (SPSS); CSV/Parquet also get "
                        "<name>.labels.json with the labels")
    p.add_argument("--report", help="also write the self-contained HTML report to this file")
    p.add_argument("--k", type=report_k, default=None,
                   help="k for the report's risk figures, 2 to 1,000,000 (default: the recipe's, else 3)")
    p.add_argument("--suppressed-code", type=int, default=None,
                   help="code for suppressed cells: SPSS user-missing value, and CSV with --csv-code (default -99)")
    p.add_argument("--csv-code", action="store_true", help="write suppressed cells in CSV as the code, not empty")
    p.add_argument("--no-labels", action="store_true", help="do not write the .labels.json sidecar (then declared missing codes and "
                   "the code of suppressed cells read as values in a CSV or Parquet release)")
    p.add_argument("--strict", action="store_true",
                   help="fail on warnings too (e.g. a recoded category absent from the file)")
    p.add_argument("--json", dest="json_out", default=None, help="write a JSON summary to this file ('-' = stdout)")
    add_engine_options(p)
    p.set_defaults(func=run)


def report_k(text: str) -> int:
    """An argparse type: k as a recipe may record it (a whole number from 1 to 1,000,000). Below 1 no record is
    at risk, so "0 records below k=0" would read as a safe release; k = 1 is refused by :func:`check_k` in
    :func:`run`, as every command refuses it (every record is in a group of at least 1)."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expects a whole number") from None
    if not 1 <= k <= 10**6:
        raise argparse.ArgumentTypeError("expects a whole number from 1 to 1,000,000")
    return k


def run(args: argparse.Namespace) -> int:
    from ..export import (
        DEFAULT_SUPPRESSED_CODE,
        ExportOptions,
        format_of,
        refuse_stale_sidecar,
        release,
        release_files,
    )
    from ..io import load_dataset
    from ..recipe import Recipe
    from ..risk.restore import restorable_by_step
    from ..risk.timeline import version_risk
    from .apply_scale import apply_at_scale

    if args.k is not None:
        check_k(args.k)  # k = 1 protects nobody: "0 records below k=1" would read as a safe release
    if args.no_labels:
        refuse_stale_sidecar(args.output)  # in memory and at scale, before any work
    recipe = Recipe.load(args.recipe)
    data_path = Path(args.file) if args.file else recipe.resolve_input(args.recipe)
    at_scale = apply_at_scale(args, recipe, data_path)
    if at_scale is not None:
        return at_scale
    format_of(args.output)
    code = DEFAULT_SUPPRESSED_CODE if args.suppressed_code is None else args.suppressed_code
    options = ExportOptions(suppressed_code=code, csv_code=args.csv_code)
    check_outputs([*release_outputs(args.output, sidecar=not args.no_labels),  # --report '-' is refused: HTML
                   *([NamedPath("--report", Path(args.report))] if args.report is not None else []),
                   *([NamedPath("--json", Path(args.json_out))] if args.json_out is not None else [])],
                  [NamedPath("the recipe", Path(args.recipe)), *data_inputs(data_path)])
    ds = load_dataset(data_path)
    # the weight the recipe's roles name, validated as every command validates --weight, before any work (a bad
    # weight otherwise left the report's weighted sections empty and the release written)
    recipe.start(ds).weights()
    replay = recipe.replay_checked(ds, strict=args.strict)
    history = replay.history
    original, treated = history.original.dataset, history.current.dataset
    treated.weights()  # the release's weight, if a step named another one
    files = release_files(treated, args.output, original, options, sidecar=not args.no_labels)
    notice_release(treated, args.output)
    k = int(args.k if args.k is not None else recipe.extra.get("k", 3))
    for w in replay.warnings:
        notice(f"kanon apply: note: {w}")
    if args.report:
        from ..report import ReportOptions, report_html

        applied = Recipe.from_history(history, input_path=data_path.name, notes=recipe.notes,
                                      extra=recipe.extra).to_json()
        text = report_html(history, recipe_json=applied, options=ReportOptions(k=k, notes=recipe.notes))
        files.append((Path(args.report), text.encode("utf-8")))
    written = [p for p, _ in files]
    risk = version_risk(original, treated, k)
    rel = release(treated, original)
    restorable = restorable_by_step(history, k=k)  # suppressed cells the release's other variables give back
    summary = {
        "input": data_path.name, "same_input": recipe.input_fingerprint in (None, original.fingerprint),
        "steps": len(recipe.steps), "steps_verified": replay.verified_steps, "records": treated.n_records, "variables_released": len(rel.frame.columns),
        "suppressed_cells": rel.n_suppressed, "k": k,
        "records_below_k": None if risk is None else risk.n_violating,
        "k_achieved": None if risk is None else risk.k_achieved,
        "warnings": list(replay.warnings), "written": [p.name for p in written],
        "restorable": [{"step": i, **found.to_json()} for i, found in restorable],
    }
    with OutputBatch() as batch:  # the release, its labels, the report and the summary: all or nothing
        for path, data in files:
            batch.write_bytes(path, data)
        if args.json_out:
            write_json(args.json_out, summary, batch)
    below = "" if risk is None else f"; {risk.n_violating:,} records below k={k}"
    proved = f" ({replay.verified_steps} matching the recipe's recorded results)" if replay.verified_steps else ""
    print(f"kanon apply: {len(recipe.steps)} step(s) replayed{proved}; {treated.n_records:,} records, "
          f"{len(rel.frame.columns)} variables, {rel.n_suppressed:,} suppressed cells{below}; wrote "
          f"{', '.join(p.name for p in written)}", file=sys.stderr)
    for i, found in restorable:
        print(f"kanon apply: warning: step {i}: {found.sentence()}", file=sys.stderr)
    return 0
