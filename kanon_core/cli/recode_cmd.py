"""``kanon recode``: merge categories or top/bottom-code one variable, with the effect on risk."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..outputs import NamedPath, OutputBatch, check_outputs, data_inputs, release_outputs
from .common import (
    _number_or_text,
    add_input_options,
    check_k,
    check_k_within,
    load_from_args,
    notice_release,
    split_list,
    write_json,
)
from .notices import notice

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
    p.add_argument("--k", type=int, default=3, help="k for the risk effect, at least 2 (default 3)")
    p.add_argument("--json", dest="json_out", default="-", help="write counts and risk effect as JSON (default stdout)")
    p.add_argument("-o", "--output", help="write the recoded data to this file (.csv, .parquet, .dta, .sav), as every "
                        "release is written: labels and declared missing codes kept, read back before it is written")
    p.add_argument("--step", help="write the recode as a recipe step (JSON) to this file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..recipe import check_step
    from ..treat.recode import RecodeStep, preview_step

    def opt(text: str | None):
        return None if text is None else _number_or_text(text)

    check_k(args.k)
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
    check_outputs([*release_outputs(args.output), *named_outputs({"--json": args.json_out, "--step": args.step})],
                  data_inputs(args.file))
    ds = load_from_args(args)
    check_k_within(args.k, ds.n_records)  # else the preview says every record is below k, before and after
    # --column as the file writes it (matched when the file was read; see common.match_names)
    step = typed_step(dataclasses.replace(step, column=args.column), ds)
    qis = ds.roles.qis or (args.column,)
    preview = preview_step(ds, step, args.k, qis)
    _, cautions = check_step(step, ds)  # the note kanon apply prints: categories to merge that do not occur
    for caution in cautions:
        notice(f"kanon recode: note: {caution}")
    files = release_of(preview.dataset, args.output, ds)
    with OutputBatch() as batch:
        if args.step:
            batch.write_text(args.step, json.dumps(step.to_dict(), indent=2, ensure_ascii=False) + "\n")
        for path, data in files:
            batch.write_bytes(path, data)
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
    """Refuse, before any work, an output extension no release is written in (:func:`kanon_core.export.format_of`)."""
    from ..export import format_of

    if path is not None:
        format_of(path)


def named_outputs(options: dict[str, str | None]) -> list[NamedPath]:
    """The outputs given among ``options`` (option name -> path or None), for :func:`check_outputs`."""
    return [NamedPath(role, Path(path)) for role, path in options.items() if path is not None]


def release_of(treated: Dataset, output: str | None, original: Dataset) -> list[tuple[Path, bytes]]:
    """The files of ``treated``'s release at ``output`` (none without one), written as every release is
    (:func:`kanon_core.export.release_files`): the data with its labels and declared missing codes (the
    labels sidecar of a CSV or Parquet file), read back and checked before anything is written. A declared
    missing code the risk count relied on then reads as missing in the release too; a plain table writer
    left it an ordinary value there, and the written file was not k-anonymous."""
    from ..export import ExportOptions, release_files

    if output is None:
        return []
    files = release_files(treated, output, original, ExportOptions())
    notice_release(treated, output)
    return files
