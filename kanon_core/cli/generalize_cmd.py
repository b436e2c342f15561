"""``kanon generalize``: the optimal full-domain generalization (or Datafly) with ARX hierarchy files."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ..outputs import OutputBatch, check_outputs, data_inputs, folder_inputs, release_outputs
from .common import add_input_options, check_criteria_k, check_k, load_from_args, split_list, write_json
from .recode_cmd import check_table_format, named_outputs, release_of
from .scale import add_engine_options, generalize_at_scale


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generalize",
        help="find the generalization of least information loss meeting privacy criteria (exact lattice search)",
        description="Search the lattice of full-domain generalizations (one hierarchy level per QI) for the "
        "node of least loss that meets every --criterion (k-anonymity, l-diversity, t-closeness, maximum "
        "individual risk), suppressing at most --max-suppression of the records (those failing a criterion).",
    )
    add_input_options(p)
    p.add_argument("--hierarchies", required=True,
                   help="folder of ARX hierarchy CSVs, named '*hierarchy_<var>.csv' or '<var>.csv'")
    p.add_argument("--k", type=int, help="k-anonymity threshold (shorthand for --criterion k=K)")
    p.add_argument("--criterion", action="append", default=[], metavar="SPEC",
                   help="a privacy criterion, repeatable, all must hold: " + _criteria_help())
    p.add_argument("--max-suppression", type=float, default=0.0,
                   help="fraction of records that may be suppressed (default 0; 0.01 = 1%%)")
    p.add_argument("--metric", choices=["prec", "dm", "aecs", "entropy"], default="prec",
                   help="information loss to minimize (default prec)")
    p.add_argument("--algorithm", choices=["optimal", "datafly"], default="optimal",
                   help="exact search (default) or Sweeney's Datafly heuristic")
    p.add_argument("--k-minimal", action="store_true",
                   help="also classify every node of the lattice and list every k-minimal node (minimal "
                        "nodes meeting the monotonic criteria) in the JSON, with the number of passing "
                        "nodes; slower: by default, with prec, entropy and aecs, only the nodes that could "
                        "still be the optimum are classified")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="weight (0..1) of a match with a record that has missing QIs and another key when testing "
                        "k-anonymity, as in sdcMicro's freqCalc (default 1); below 1 the search result is "
                        "reported but --output and --step are refused (the recipe step counts at alpha 1)")
    p.add_argument("--json", dest="json_out", default="-", help="write the result as JSON here (default stdout)")
    p.add_argument("-o", "--output", help="also write the generalized (and suppressed) data to this file")
    p.add_argument("--step", help="write the generalization as a recipe step (JSON) to this file")
    add_engine_options(p)
    p.set_defaults(func=run)


def _criteria_help() -> str:
    from ..criteria import criteria_syntax

    return criteria_syntax().replace("%", "%%")


def run(args: argparse.Namespace) -> int:
    from ..criteria import KAnonymity, parse_criteria
    from ..errors import InputError
    from ..risk.classes import check_alpha
    from ..treat.hierarchy import load_hierarchies
    from ..treat.lattice import build_problem, suppression_limit

    if args.k is not None:
        check_k(args.k)
    if args.weight is not None and args.weight in split_list(args.qi):  # the engines would read it as both
        raise InputError("The weight cannot also be a quasi-identifier.")
    criteria = parse_criteria(args.criterion)
    check_criteria_k(criteria)
    if args.k is None and not criteria:
        raise InputError("Give --k or at least one --criterion (for example --criterion k=5).")
    if args.k is not None and any(isinstance(c, KAnonymity) for c in criteria):
        raise InputError("Give k either with --k or as --criterion k=..., not both.")
    suppression_limit(0, args.max_suppression)  # a limit outside [0, 1] is refused before any work
    alpha = check_alpha(args.alpha)
    if alpha != 1.0 and args.k is None:
        raise InputError("--alpha applies to --k; with --criterion write it into the spec (k=5:alpha=0.5).")
    if alpha != 1.0 and (args.output or args.step):
        raise InputError("--output and --step need --alpha 1: the recipe step suppresses with every match counted "
                         "in full.")
    check_table_format(args.output)
    check_outputs([*release_outputs(args.output), *named_outputs({"--json": args.json_out, "--step": args.step})],
                  [*data_inputs(args.file), *folder_inputs(args.hierarchies, "a hierarchy file")])
    scaled = generalize_at_scale(args, criteria, alpha)  # an out-of-core engine: search on the class table
    if scaled is not None:
        return scaled
    t0 = time.perf_counter()
    ds = load_from_args(args)
    qis = ds.roles.qis
    hierarchies = load_hierarchies(args.hierarchies, qis)
    sensitive = sorted({v for c in criteria for v in c.sensitive})
    weighted = any(getattr(c, "weighted", False) for c in criteria)
    problem = build_problem(ds, hierarchies, qis, alpha=alpha, sensitive=sensitive, weighted=weighted)
    result, payload = search_and_summary(problem, args, criteria, alpha, ds.missing)
    payload["seconds"] = round(time.perf_counter() - t0, 4)
    step = result.step() if args.step or args.output else None
    files = release_of(step.apply(ds), args.output, ds) if step is not None and args.output else []
    with OutputBatch() as batch:
        if args.step:
            batch.write_text(args.step, json.dumps(step.to_dict(), indent=2, ensure_ascii=False) + "\n")
        for path, data in files:
            batch.write_bytes(path, data)
        write_json(args.json_out, payload, batch)
    return 0


def search_and_summary(problem, args: argparse.Namespace, criteria: list, alpha: float, missing: str):
    """The search the options ask for (``--algorithm``) and its JSON summary, in memory or at scale."""
    from ..treat.lattice import datafly, search_optimal

    if args.algorithm == "datafly":
        result = datafly(problem, args.k, args.max_suppression, args.metric, criteria=criteria)
    else:
        result = search_optimal(problem, args.k, args.max_suppression, args.metric, criteria=criteria,
                                k_minimal=args.k_minimal)
    payload = result.to_json()
    payload["metric_value"] = result.loss
    payload["file"] = Path(args.file).name
    payload["missing"] = missing
    payload["alpha"] = alpha
    payload["seconds_search"] = round(result.seconds, 4)
    return result, payload
