"""``kanon suppress``: local suppression to a named protection model (exact or greedy), written as a release."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import InputError
from ..outputs import NamedPath, OutputBatch, check_outputs, data_inputs, release_outputs
from ..treat.protection import DEFAULT_MODEL, MODEL_NAMES
from .common import (
    add_input_options,
    check_k,
    load_from_args,
    named_parts,
    notice_release,
    split_list,
    stderr_progress,
    write_json,
)
from .scale import add_engine_options, match_names_at_scale


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suppress", help="local suppression to k-anonymity under a named protection model")
    add_input_options(p)
    p.add_argument("--k", type=int, default=None, help="every record must share its values with k - 1 others "
                                                      "(required unless --max-risk is given)")
    p.add_argument("--max-risk", type=float, default=None, metavar="R",
                   help="instead of k: suppress values of the records whose individual risk (Benedetti & "
                        "Franconi, as sdcMicro) exceeds R until none remain (sdcMicro's localSupp, cells chosen "
                        "by importance and effect on risk, whole classes alike, recounted after); with --importance, "
                        "--protect, --alpha")
    p.add_argument("--model", choices=MODEL_NAMES, default=DEFAULT_MODEL,
                   help="strict (default): suppressed cells are values, every released class has k records, "
                        "nobody is findable among fewer than k; release: sdcMicro's criterion (wildcard "
                        "matching, greedy only); record: Wilson et al.'s record-wise model (exact)")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="sdcMicro's weight (0..1) of a matching record with missing values (default 1)")
    p.add_argument("--importance", default=None,
                   help="cost of suppressing one value of a variable, e.g. 'BYSEX=3,BYRACE=2' (default 1 each; "
                        "each between 0.001 and 1,000,000, given once)")
    p.add_argument("--protect", default=None, help="comma-separated variables never to suppress")
    p.add_argument("--by", default=None,
                   help="comma-separated group variables: k-anonymity within each group (sdcMicro's strataVars); "
                        "a group variable is never suppressed")
    p.add_argument("--link", action="append", default=[], metavar="KEY=VAR,VAR",
                   help="variables blanked wherever the quasi-identifier KEY is suppressed (sdcMicro's ghostVars), "
                        "e.g. --link region=district; repeat for several keys")
    p.add_argument("--method", choices=("exact", "greedy"), default=None,
                   help="exact: optimal, or with a reported gap (default; strict and record); greedy: fast "
                        "heuristic (strict and release; the default for release)")
    p.add_argument("--solver", choices=("highs", "cbc"), default=None,
                   help="record model's exact method: solver for the rare instances the compiled searches cannot "
                        "close (default highs); refused where it would not be used (the strict model's programme is "
                        "HiGHS's, the greedy methods solve none)")
    p.add_argument("--node-limit", type=int, default=None,
                   help="search nodes per integer programme (a work limit, not a time limit, so a replay "
                        "gives the same cells); the best solution and its gap are reported")
    p.add_argument("-o", "--output", required=True,
                   help="treated file: .csv, .parquet, .dta or .sav (suppressed cells as a declared missing code; "
                        "CSV writes the code and declares it in <name>.labels.json)")
    p.add_argument("--suppressed-code", type=int, default=None,
                   help="code written for suppressed cells in CSV and SPSS (default -99; Stata uses .a)")
    p.add_argument("--json", dest="json_out", default="-", help="write the summary as JSON here (default stdout)")
    add_engine_options(p)
    p.set_defaults(func=run)


def parse_importance(text: str | tuple[tuple[str, str], ...] | None) -> dict[str, float]:
    """``'a=3,b=2'`` -> ``{"a": 3.0, "b": 2.0}``, each variable once and each value in the solvers' range
    (:func:`kanon_core.treat.suppress.check_importance`), for the in-memory, out-of-core and --max-risk paths.
    A tuple of (variable, value text) pairs is the option already matched to the file's names
    (:func:`kanon_core.cli.common.match_names`)."""
    from ..treat.suppress import check_importance

    if isinstance(text, tuple):
        items = list(text)
    else:
        items = []
        for name, eq, value in named_parts(text):
            if not eq or not name.strip():
                raise InputError("--importance expects var=number for each variable, e.g. 'BYSEX=3,BYRACE=2'.")
            items.append((name.strip(), value))
    pairs: list[tuple[str, float]] = []
    for var, value in items:
        try:
            pairs.append((var, float(value)))
        except ValueError:
            raise InputError(f"The importance of '{var}' must be a number.") from None
    check_importance(pairs)
    return dict(pairs)


def parse_links(items: list) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``--link KEY=VAR,VAR`` items as (key, variables); an item that is a pair already is one matched to the
    file's names (:func:`kanon_core.cli.common.match_names`) and is kept."""
    out = []
    for item in items:
        if isinstance(item, tuple):
            out.append(item)
            continue
        if "=" not in item:
            raise InputError("--link expects KEY=VAR,VAR (the quasi-identifier, then the variables it blanks).")
        key, others = item.split("=", 1)
        names = split_list(others)
        if not key.strip() or not names:
            raise InputError("--link expects KEY=VAR,VAR (the quasi-identifier, then the variables it blanks).")
        out.append((key.strip(), names))
    return tuple(out)


def run(args: argparse.Namespace) -> int:
    from ..export import DEFAULT_SUPPRESSED_CODE, ExportOptions, format_of, release_files
    from ..risk.restore import restorable_cells
    from ..treat.protection import get_model
    from ..treat.suppress import MAX_NODE_LIMIT, SuppressStep
    from .suppress_scale import suppress_at_scale

    if args.weight is not None and args.weight in split_list(args.qi):  # out of core it would be blanked
        raise InputError("The weight cannot also be a quasi-identifier.")
    if args.node_limit is not None and not 1 <= args.node_limit <= MAX_NODE_LIMIT:  # what the solvers honour
        raise InputError(f"--node-limit must be a whole number from 1 to {MAX_NODE_LIMIT:,}.")
    _check_solver(args)
    match_names_at_scale(args)  # out of core, the options' names are matched to the header here
    done = suppress_at_scale(args)  # None: the file is read in memory
    if done is not None:
        return done
    if args.max_risk is not None:
        return _run_max_risk(args)
    check_k(args.k, hint=" (or give --max-risk)")
    model = get_model(args.model)
    method = args.method or model.methods[0]
    model.check_method(method)
    if not 0.0 <= args.alpha <= 1.0:
        raise InputError("--alpha must be between 0 and 1.")
    format_of(args.output)
    options = ExportOptions(csv_code=True, suppressed_code=DEFAULT_SUPPRESSED_CODE if args.suppressed_code is None
                            else args.suppressed_code)
    importance = tuple(parse_importance(args.importance).items())
    linked = parse_links(args.link)
    check_outputs([*release_outputs(args.output), NamedPath("--json", Path(args.json_out))], data_inputs(args.file))
    ds = load_from_args(args)
    # parsed again: reading the file matched the names they give to its header (checked above, before any work)
    importance, linked = tuple(parse_importance(args.importance).items()), parse_links(args.link)
    step = SuppressStep(qis=ds.roles.qis, k=args.k, importance=importance, protected=split_list(args.protect),
                        by=split_list(args.by), linked=linked,
                        model=model.name, method=method, alpha=args.alpha, solver=args.solver or "highs",
                        **({} if args.node_limit is None else {"node_limit": args.node_limit}))
    res = step.run(ds, stderr_progress("kanon suppress"))
    treated = step.release_of(ds, res)
    files = release_files(treated, args.output, ds, options)
    notice_release(treated, args.output)
    restoration = restorable_cells(ds, treated, step.qis, step.k, res.findable_below_k)
    payload = res.summary()
    payload["by"] = list(step.by)
    payload["linked"] = {key: list(others) for key, others in step.linked}
    payload["restorable"] = restoration.to_json()
    payload["written"] = [p.name for p, _ in files]
    with OutputBatch() as batch:
        for path, data in files:
            batch.write_bytes(path, data)
        write_json(args.json_out, payload, batch)
    gap = "" if res.optimal else f" (gap {100 * res.gap:.2f} %)"
    print(f"kanon suppress: {res.model} model, {res.n_suppressed:,} cells suppressed in {res.records_touched:,} "
          f"records, cost {res.cost:g}, {'proven optimal' if res.optimal else 'not proven optimal'}{gap}; "
          f"{res.violations_after} records below k={res.k} (recounted); {res.findable_below_k:,} people "
          f"findable among fewer than {res.k} released records", file=sys.stderr)
    if not res.optimal:  # how the bound was proven and why the optimum is not: the gap alone does not say
        print(f"kanon suppress: note: {res.optimality().sentence()}", file=sys.stderr)
    if restoration.n_restorable:
        print(f"kanon suppress: warning: {restoration.sentence()}", file=sys.stderr)
    return 0



def check_max_risk_options(args: argparse.Namespace) -> tuple[float, float]:
    """The options ``--max-risk`` takes, in memory and at scale: the limit and alpha, checked."""
    from ..risk.classes import check_alpha
    from ..risk.individual import check_max_risk

    if args.k is not None:
        raise InputError("Give either --k or --max-risk, not both.")
    if args.by or args.link or args.model != DEFAULT_MODEL or args.method or args.node_limit is not None:
        raise InputError("--max-risk takes --importance, --protect and --alpha only (no --by, --link, --model, "
                         "--method or --node-limit).")
    return check_max_risk(args.max_risk), check_alpha(args.alpha)


def say_risk_result(res, threshold: float) -> None:
    """The closing line on stderr (counts only)."""
    left = res.records_remaining
    print(f"kanon suppress: {res.n_suppressed:,} cells suppressed in {res.records_touched:,} records, cost "
          f"{res.cost:g}; {left:,} records above individual risk {threshold:g} after an independent recount"
          + (" (every cell they could lose is protected or already missing)" if left else ""), file=sys.stderr)


def _check_solver(args: argparse.Namespace) -> None:
    """A --solver given where no programme would use it is refused, on every path (in memory, out of core,
    --max-risk), before any file is read."""
    from ..treat.protection import get_model

    if args.solver is None:
        return
    if args.max_risk is not None:
        raise InputError(f"--max-risk solves no integer programme: a solver of '{args.solver}' would not be used.")
    model = get_model(args.model)
    method = args.method or model.methods[0]
    model.check_method(method)
    model.check_solver(method, args.solver)


def _run_max_risk(args: argparse.Namespace) -> int:
    """``--max-risk R``: risk-targeted local suppression (:mod:`kanon_core.treat.suppress_risk`)."""
    from ..export import DEFAULT_SUPPRESSED_CODE, ExportOptions, format_of, release_files
    from ..treat.suppress import apply_mask
    from ..treat.suppress_risk import RiskSuppressStep

    threshold, alpha = check_max_risk_options(args)
    format_of(args.output)
    options = ExportOptions(csv_code=True, suppressed_code=DEFAULT_SUPPRESSED_CODE if args.suppressed_code is None
                            else args.suppressed_code)
    check_outputs([*release_outputs(args.output), NamedPath("--json", Path(args.json_out))], data_inputs(args.file))
    ds = load_from_args(args)
    step = RiskSuppressStep(qis=ds.roles.qis, max_risk=threshold, importance=tuple(parse_importance(args.importance).items()),
                            protected=split_list(args.protect), alpha=alpha)
    res = step.run(ds, stderr_progress("kanon suppress"))
    treated = ds.with_frame(apply_mask(ds.frame, list(res.names), res.mask))
    files = release_files(treated, args.output, ds, options)
    notice_release(treated, args.output)
    payload = res.summary()
    payload["written"] = [p.name for p, _ in files]
    with OutputBatch() as batch:
        for path, data in files:
            batch.write_bytes(path, data)
        write_json(args.json_out, payload, batch)
    say_risk_result(res, threshold)
    return 0
