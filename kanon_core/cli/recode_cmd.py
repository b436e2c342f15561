"""``kanon recode``: merge categories or top/bottom-code one variable, with the effect on risk."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..outputs import OutputBatch, check_outputs, data_inputs
from .common import _number_or_text, add_input_options, load_from_args, split_list, write_json

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..treat.recode import RecodeStep


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recode", help="merge categories or top/bottom-code one variable; shows the risk effect")
    add_input_options(p, qi_required=False)
    p.add_argument("--column", required=True, help="the variable to recode")
    p.add_argument("--merge", help="comma-separated values to merge into one category")
    p.add_argument("--into", help="the merged category's value (default: smallest number, or the texts joined)")
    p.add_argument("--top", type=float, help="values >= TOP become TOP (or --top-value)")
    p.add_argument("--top-value", help="replacement for top-coded values")
    p.add_argument("--bottom", type=float, help="values <= BOTTOM become BOTTOM (or --bottom-value)")
    p.add_argument("--bottom-value", help="replacement for bottom-coded values")
    p.add_argument("--k", type=int, default=3, help="k for the risk effect, at least 1 (default 3)")
    p.add_argument("--json", dest="json_out", default="-", help="write counts and risk effect as JSON (default stdout)")
    p.add_argument("-o", "--output", help="write the recoded data to this file (.csv, .parquet, .xlsx, .dta, .sav)")
    p.add_argument("--step", help="write the recode as a recipe step (JSON) to this file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..io import write_table
    from ..treat.recode import RecodeStep, preview_step

    def opt(text: str | None):
        return None if text is None else _number_or_text(text)

    from ..errors import InputError

    if args.k < 1:
        raise InputError("--k must be at least 1.")
    step = RecodeStep(  # checks the options before any work; --merge and --into are typed once the data is read
        column=args.column,
        merge=split_list(args.merge),
        into=args.into,
        top=args.top,
        bottom=args.bottom,
        top_value=opt(args.top_value),
        bottom_value=opt(args.bottom_value),
    )
    check_table_format(args.output)
    check_outputs({"--json": args.json_out, "--output": args.output, "--step": args.step}, data_inputs(args.file))
    ds = load_from_args(args)
    # --column as the file writes it (matched when the file was read; see common.match_names)
    step = typed_step(dataclasses.replace(step, column=args.column), ds)
    qis = ds.roles.qis or (args.column,)
    preview = preview_step(ds, step, args.k, qis)
    with OutputBatch() as batch:
        if args.step:
            batch.write_text(args.step, json.dumps(step.to_dict(), indent=2, ensure_ascii=False) + "\n")
        if args.output:
            write_table(preview.dataset, batch.temp_path(args.output))
        write_json(args.json_out, {"step": step.to_dict(), "description": step.describe(), "qis": list(qis),
                                   "counts": preview.counts, "risk": preview.risk}, batch)
    return 0


def typed_step(step: RecodeStep, ds: Dataset) -> RecodeStep:
    """The step with the texts of --merge and --into as values of the column: numbers in a numeric column,
    the texts exactly as written in a text column, where "012" and "12" are two codes. The saved step then
    holds the column's own values, and replays as it previewed."""
    from ..io import typed_codes

    if step.column not in ds.frame.columns:
        return step  # applying it names the unknown variable
    series = ds.frame[step.column]
    into = None if step.into is None else typed_codes(series, [step.into])[0]
    return dataclasses.replace(step, merge=typed_codes(series, step.merge), into=into)


def check_table_format(path: str | None) -> None:
    """Refuse, before any work, an output extension :func:`kanon_core.io.write_table` cannot write."""
    from ..errors import InputError
    from ..io import WRITE_FORMATS

    if path is not None and Path(path).suffix.lower() not in WRITE_FORMATS:
        raise InputError(f"Cannot write '{Path(path).suffix or path}'. Use one of: {', '.join(sorted(WRITE_FORMATS))}.")
