"""``kanon regress``: survey-weighted linear/logistic regression with design-based standard errors."""

from __future__ import annotations

import argparse

from ..utility.regression import FAMILIES, regress
from .common import write_json
from .estimate_cmd import add_design_options, load_design


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("regress", help="weighted regression with design-based (sandwich) standard errors")
    p.add_argument("file", help="input file (csv, parquet, xlsx, sav, dta, sas7bdat)")
    p.add_argument("--formula", required=True, help="e.g. 'y ~ C(a) + b' (C() marks categorical covariates)")
    add_design_options(p)
    p.add_argument("--family", choices=FAMILIES, default="auto",
                   help="auto (logistic for a two-valued outcome, else linear), gaussian or binomial")
    p.add_argument("--json", dest="json_out", default="-", help="write the coefficients as JSON here (default stdout)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ds, design = load_design(args)
    result = regress(ds, args.formula, design=design, family=args.family)
    write_json(args.json_out, result.to_records())
    return 0
