"""``kanon regress``: survey-weighted linear/logistic regression with design-based standard errors.

The regression module (scipy) is imported inside :func:`run`, so ``kanon --help`` stays fast.
"""

from __future__ import annotations

import argparse

from ..outputs import check_outputs, data_inputs
from .common import write_json
from .estimate_cmd import add_design_options, load_design

FAMILY_CHOICES = ("auto", "gaussian", "binomial")
"""The families of :mod:`kanon_core.utility.regression` (``FAMILIES``), repeated to keep scipy out of start-up."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("regress", help="weighted regression with design-based (sandwich) standard errors")
    p.add_argument("file", help="input file (csv, parquet, xlsx, sav, dta, sas7bdat)")
    p.add_argument("--formula", required=True, help="e.g. 'y ~ C(a) + b' (C() marks categorical covariates)")
    add_design_options(p)
    p.add_argument("--family", choices=FAMILY_CHOICES, default="auto",
                   help="auto (logistic for a two-valued outcome, else linear), gaussian or binomial")
    p.add_argument("-o", "--output", "--json", dest="json_out", default="-",
                   help="write the coefficients as JSON here (default stdout); -o, --output and --json are the same")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..utility.regression import regress

    check_outputs({"-o/--json": args.json_out}, data_inputs(args.file))
    ds, design = load_design(args)
    result = regress(ds, args.formula, design=design, family=args.family)
    write_json(args.json_out, result.to_records())
    return 0
