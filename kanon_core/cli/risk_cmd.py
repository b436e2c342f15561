"""``kanon risk``: class sizes and k-anonymity violations of a file."""

from __future__ import annotations

import argparse
import time

import pandas as pd

from ..outputs import OutputBatch, check_outputs, data_inputs
from .common import add_input_options, check_k, load_from_args, positive_finite, split_list, write_json
from .scale import add_engine_options, risk_at_scale


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("risk", help="equivalence-class sizes (fk, Fk) and k-anonymity violations")
    add_input_options(p)
    p.add_argument("--k", type=int, default=3, help="k-anonymity threshold, at least 2 (default 3)")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="weight (0..1) of a match with a record that has missing QIs and another key, as in "
                        "sdcMicro's freqCalc (default 1)")
    p.add_argument("-o", "--output", "--json", dest="json_out", default="-",
                   help="write the summary as JSON here (default stdout); -o, --output and --json are the same")
    p.add_argument("--per-record", help="write per-record fk (and Fk with --weight) and the wildcard_dependent "
                                        "flag (0/1) as CSV, in input row order")
    _add_measure_options(p)
    add_engine_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..risk.classes import check_alpha
    from ..risk.summary import risk_summary

    # k = 1 counts nobody as at risk; a k beyond the file's records is accepted: the measurement is well
    # defined there (every record is below it) and the engines agree on it (tests/test_engines_edges.py)
    check_k(args.k)
    if args.weight is not None and args.weight in split_list(args.qi):  # the engines read it as both
        raise InputError("The weight cannot also be a quasi-identifier.")
    alpha = check_alpha(args.alpha)
    scaled = risk_at_scale(args)  # an out-of-core engine: the summary from the class table
    if scaled is not None:
        return scaled
    check_outputs({"-o/--json": args.json_out, "--per-record": args.per_record}, data_inputs(args.file))
    t0 = time.perf_counter()
    ds = load_from_args(args)
    qm = ds.qi_matrix()
    summary = risk_summary(qm, args.k, ds.missing, ds.weights(), alpha=alpha)
    payload = summary.to_json()
    measures = _measures(args, ds, summary)
    payload.update(measures.to_json())
    payload["qis"] = list(qm.names)
    payload["seconds"] = round(time.perf_counter() - t0, 4)
    with OutputBatch() as batch:
        if args.per_record:
            out = pd.DataFrame({"fk": summary.sizes.fk})
            if summary.sizes.Fk is not None:
                out["Fk"] = summary.sizes.Fk
            out["wildcard_dependent"] = summary.wildcard_dependent.astype(int)
            for name, col in measures.per_record_columns().items():
                out[name] = col
            out.to_csv(batch.temp_path(args.per_record), index=False, lineterminator="\n")
        write_json(args.json_out, payload, batch)
    return 0


def _add_measure_options(p: argparse.ArgumentParser) -> None:
    """Risk beyond k: individual and household risk, l-diversity and t-closeness (issue 13)."""
    p.add_argument("--max-risk", type=float, default=0.01,
                   help="individual risk above which a record is counted as too risky (default 0.01)")
    p.add_argument("--risk-method", choices=("approx", "exact"), default="approx",
                   help="Benedetti-Franconi individual risk as sdcMicro's indivRisk: approx (default) or exact")
    p.add_argument("--household", metavar="VAR",
                   help="household identifier: adds the household risk 1 - prod(1 - r) (column household_risk)")
    p.add_argument("--sensitive", action="append", default=[], metavar="S",
                   help="sensitive variable for l-diversity and t-closeness (repeatable); per record l_distinct "
                        "(l_distinct_S with several)")
    p.add_argument("--recursive-c", type=positive_finite, default=2.0,
                   help="the constant c of recursive (c,l)-diversity (default 2, as sdcMicro)")
    p.add_argument("--t-distance", choices=("auto", "equal", "ordered"), default="auto",
                   help="t-closeness ground distance: equal for categories (texts, labelled codes), ordered for amounts (auto)")


def _measures(args: argparse.Namespace, ds, summary):
    from ..risk.summary import risk_measures

    return risk_measures(ds, summary.sizes, max_risk=args.max_risk, method=args.risk_method,
                         household=args.household, sensitive=args.sensitive, c=args.recursive_c,
                         distance=args.t_distance)
