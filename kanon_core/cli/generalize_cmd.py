"""``kanon generalize``: the optimal full-domain generalization (or Datafly) with ARX hierarchy files."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ..outputs import OutputBatch, check_outputs, data_inputs, folder_inputs
from .common import add_input_options, load_from_args, write_json
from .recode_cmd import check_table_format


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generalize",
        help="find the k-anonymous generalization of least information loss (exact lattice search)",
        description="Search the lattice of full-domain generalizations (one hierarchy level per QI) for the "
        "k-anonymous node of least loss, suppressing at most --max-suppression of the records.",
    )
    add_input_options(p)
    p.add_argument("--hierarchies", required=True,
                   help="folder of ARX hierarchy CSVs, named '*hierarchy_<var>.csv' or '<var>.csv'")
    p.add_argument("--k", type=int, required=True, help="k-anonymity threshold")
    p.add_argument("--max-suppression", type=float, default=0.0,
                   help="fraction of records that may be suppressed (default 0; 0.01 = 1%%)")
    p.add_argument("--metric", choices=["prec", "dm", "aecs", "entropy"], default="prec",
                   help="information loss to minimize (default prec)")
    p.add_argument("--algorithm", choices=["optimal", "datafly"], default="optimal",
                   help="exact search (default) or Sweeney's Datafly heuristic")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="weight (0..1) of a match with a record that has missing QIs and another key when testing "
                        "k-anonymity, as in sdcMicro's freqCalc (default 1); below 1 the search result is "
                        "reported but --output and --step are refused (the recipe step counts at alpha 1)")
    p.add_argument("--json", dest="json_out", default="-", help="write the result as JSON here (default stdout)")
    p.add_argument("-o", "--output", help="also write the generalized (and suppressed) data to this file")
    p.add_argument("--step", help="write the generalization as a recipe step (JSON) to this file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..io import write_table
    from ..risk.classes import check_alpha
    from ..treat.hierarchy import load_hierarchies
    from ..treat.lattice import build_problem, datafly, search_optimal, suppression_limit

    if args.k < 1:
        raise InputError("--k must be at least 1.")
    suppression_limit(0, args.max_suppression)  # a limit outside [0, 1] is refused before any work
    alpha = check_alpha(args.alpha)
    if alpha != 1.0 and (args.output or args.step):
        raise InputError("--output and --step need --alpha 1: the recipe step suppresses with every match counted "
                         "in full.")
    check_table_format(args.output)
    check_outputs({"--json": args.json_out, "--output": args.output, "--step": args.step},
                  [*data_inputs(args.file), *folder_inputs(args.hierarchies, "a hierarchy file")])
    t0 = time.perf_counter()
    ds = load_from_args(args)
    qis = ds.roles.qis
    hierarchies = load_hierarchies(args.hierarchies, qis)
    problem = build_problem(ds, hierarchies, qis, alpha=alpha)
    if args.algorithm == "datafly":
        result = datafly(problem, args.k, args.max_suppression, args.metric)
    else:
        result = search_optimal(problem, args.k, args.max_suppression, args.metric)
    payload = result.to_json()
    payload["metric_value"] = result.loss
    payload["file"] = Path(args.file).name
    payload["missing"] = ds.missing
    payload["alpha"] = alpha
    payload["seconds_search"] = round(result.seconds, 4)
    payload["seconds"] = round(time.perf_counter() - t0, 4)
    with OutputBatch() as batch:
        if args.step or args.output:
            step = result.step()
            if args.step:
                batch.write_text(args.step, json.dumps(step.to_dict(), indent=2, ensure_ascii=False) + "\n")
            if args.output:
                write_table(step.apply(ds), batch.temp_path(args.output))
        write_json(args.json_out, payload, batch)
    return 0
