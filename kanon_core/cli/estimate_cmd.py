"""``kanon estimate``: weighted percentages of a variable's categories with design-based CIs.

Only argparse and the light :mod:`kanon_core.utility.design` are imported at module level: every
subcommand is registered when ``kanon --help`` builds its parser, and the estimators (scipy) load
inside :func:`run`.
"""

from __future__ import annotations

import argparse

from ..outputs import check_outputs, data_inputs
from ..utility.design import DEFAULT_LONELY_PSU, LONELY_PSU_CHOICES
from .common import load_from_args, parse_missing_codes, write_json
from .scale import add_engine_options

CI_CHOICES = ("wald", "logit")
"""The CI methods of :mod:`kanon_core.utility.survey` (``CI_METHODS``), repeated to keep scipy out of start-up."""


def add_design_options(p: argparse.ArgumentParser, weight_required: bool = True) -> None:
    """--weight, --strata, --psu, --fpc, --lonely-psu: the survey design shared by estimate and regress."""
    p.add_argument("--weight", required=weight_required, help="sampling weight variable")
    p.add_argument("--strata", help="stratum variable (optional)")
    p.add_argument("--psu", help="primary sampling unit (cluster) variable, nested within strata (optional)")
    p.add_argument("--fpc", help="finite population correction variable, as R's svydesign(fpc = ~COL): population "
                   "sizes (values > 1) or sampling fractions (<= 1) of the first stage, constant within stratum")
    p.add_argument("--lonely-psu", choices=LONELY_PSU_CHOICES, default=DEFAULT_LONELY_PSU,
                   help=f"strata with a single PSU, as R's survey.lonely.psu (default {DEFAULT_LONELY_PSU})")
    p.add_argument("--missing-codes", default=None,
                   help="declared missing codes per variable, e.g. 'a=-9|-8,b=NA'; only empty cells and these "
                        "codes are missing (text such as NA is a value unless declared)")
    p.add_argument("--sheet", default=None, help="the sheet to read from an Excel workbook with several sheets")


def load_design(args: argparse.Namespace):
    """Load FILE and build its survey design from the command line options."""
    from ..utility.design import SurveyDesign

    args.missing = "wildcard"
    parse_missing_codes(args.missing_codes)  # fail early on a malformed option
    ds = load_from_args(args, strata=args.strata, psu=args.psu, fpc=args.fpc)
    design = SurveyDesign.from_dataset(ds, lonely_psu=args.lonely_psu)
    return ds, design


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="weighted %% of each category with design-based confidence intervals")
    p.add_argument("file", help="input file (csv, parquet, xlsx, sav, dta, sas7bdat)")
    p.add_argument("--var", required=True, help="the categorical variable")
    add_design_options(p)
    p.add_argument("--ci", choices=CI_CHOICES, default="wald",
                   help="wald (normal quantile, as confint(svymean)) or logit (as svyciprop method='logit')")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("-o", "--output", "--json", dest="json_out", default="-",
                   help="write the estimates as JSON here (default stdout); -o, --output and --json are the same")
    add_engine_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..utility.survey import estimate_proportions

    check_outputs({"-o/--json": args.json_out}, data_inputs(args.file))
    est = estimate_at_scale(args)
    if est is None:
        ds, design = load_design(args)
        est = estimate_proportions(ds, args.var, design=design, ci=args.ci, level=args.level)
    write_json(args.json_out, est.to_records())
    return 0


def estimate_at_scale(args: argparse.Namespace):
    """The estimates from the engine's aggregate (one GROUP BY on the design variables and the variable:
    counts, weight sums, sums of squared weights), the same numbers as in memory; None for the in-memory path.
    The weights' total is checked as in memory (the engine checks each weight, not their sum)."""
    from ..dataset import check_weight_total
    from ..engines.design import design_aggregate
    from ..engines.source import open_source
    from ..utility.survey_aggregate import proportions_of_aggregate
    from .common import match_names
    from .scale import _missing_codes, engine_settings, out_of_core_engine

    engine = out_of_core_engine(args, args.file)
    if engine is None:
        return None
    source = open_source(args.file)
    match_names(args, source.columns)  # --var, --weight, ... as the header writes them, as in memory
    settings = engine_settings(args, "estimate")
    try:
        agg = design_aggregate(engine, source, args.var, args.weight, args.strata, args.psu,
                               args.fpc, _missing_codes(args), settings)
    finally:
        settings.close()
    if args.weight is not None:
        check_weight_total(agg.frame["w"].to_numpy(dtype=float), args.weight)
    return proportions_of_aggregate(agg, args.var, agg.value_labels, ci=args.ci, level=args.level,
                                    lonely_psu=args.lonely_psu)
