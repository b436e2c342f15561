"""``kanon suppress``: optimal (or greedy) local suppression to k-anonymity, written as a release file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import InputError
from ..outputs import NamedPath, OutputBatch, check_outputs, data_inputs, release_outputs
from .common import add_input_options, load_from_args, split_list, write_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suppress", help="local suppression to k-anonymity (exact, or greedy for comparison)")
    add_input_options(p)
    p.add_argument("--k", type=int, required=True, help="every record must share its values with k - 1 others")
    p.add_argument("--importance", default=None,
                   help="cost of suppressing one value of a variable, e.g. 'BYSEX=3,BYRACE=2' (default 1 each)")
    p.add_argument("--protect", default=None, help="comma-separated variables never to suppress")
    p.add_argument("--method", choices=("exact", "greedy"), default="exact",
                   help="exact: proven optimal record-wise model (default); greedy: fast heuristic")
    p.add_argument("--solver", choices=("highs", "cbc"), default="highs",
                   help="integer-programming solver for the rare instances the compiled searches cannot close")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds for those integer programmes; the best solution and its gap are reported")
    p.add_argument("--no-joint", action="store_true", help="skip the pass that gives back unneeded suppressions")
    p.add_argument("-o", "--output", required=True,
                   help="treated file: .csv, .parquet, .dta or .sav (suppressed cells as a declared missing code; "
                        "CSV writes the code and declares it in <name>.labels.json)")
    p.add_argument("--suppressed-code", type=int, default=None,
                   help="code written for suppressed cells in CSV and SPSS (default -99; Stata uses .a)")
    p.add_argument("--json", dest="json_out", default="-", help="write the summary as JSON here (default stdout)")
    p.set_defaults(func=run)


def parse_importance(text: str | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in split_list(text):
        if "=" not in part:
            raise InputError(f"--importance expects var=number, got '{part}'.")
        var, value = part.split("=", 1)
        try:
            out[var.strip()] = float(value)
        except ValueError:
            raise InputError(f"The importance of '{var.strip()}' must be a number.") from None
    return out


def run(args: argparse.Namespace) -> int:
    from ..export import DEFAULT_SUPPRESSED_CODE, ExportOptions, format_of, release_files
    from ..treat.suppress import SuppressStep, apply_mask

    if args.k < 2:
        raise InputError("--k must be at least 2.")
    format_of(args.output)
    options = ExportOptions(csv_code=True, suppressed_code=DEFAULT_SUPPRESSED_CODE if args.suppressed_code is None
                            else args.suppressed_code)
    importance = tuple(parse_importance(args.importance).items())
    check_outputs([*release_outputs(args.output), NamedPath("--json", Path(args.json_out))], data_inputs(args.file))
    ds = load_from_args(args)
    step = SuppressStep(qis=ds.roles.qis, k=args.k, importance=importance,
                        protected=split_list(args.protect), method=args.method, solver=args.solver,
                        time_limit=args.time_limit, joint=not args.no_joint)
    res = step.run(ds)
    treated = ds.with_frame(apply_mask(ds.frame, res.names, res.mask))
    files = release_files(treated, args.output, ds, options)
    payload = res.summary()
    payload["written"] = [p.name for p, _ in files]
    with OutputBatch() as batch:
        for path, data in files:
            batch.write_bytes(path, data)
        write_json(args.json_out, payload, batch)
    gap = "" if res.optimal else f" (gap {100 * res.gap:.2f} %)"
    print(f"kanon suppress: {res.n_suppressed:,} cells suppressed in {res.records_touched:,} records, cost "
          f"{res.cost:g}, {'proven optimal' if res.optimal else 'not proven optimal'}{gap}; "
          f"{res.violations_after} records below k={res.k}", file=sys.stderr)
    return 0
