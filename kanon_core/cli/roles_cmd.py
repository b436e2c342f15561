"""``kanon roles``: suggested variable roles of a file (quasi-identifiers, weight, identifiers to exclude).

The same suggestions as the Data page's role table (:mod:`kanon_core.guidance`), as a table on stdout or as
JSON; the table ends with the ``--qi``/``--weight`` options to paste into the other commands.
"""

from __future__ import annotations

import argparse
import shlex

from ..guidance import suggest_roles
from ..outputs import check_outputs, data_inputs
from .common import read_from_args, write_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roles", help="suggest variable roles: quasi-identifiers, weight, identifiers to exclude")
    p.add_argument("file", help="input file (csv, parquet, xlsx, sav, dta, sas7bdat); CSV delimiter is sniffed")
    p.add_argument("--missing-codes", default=None,
                   help="declared missing codes per variable, e.g. 'a=-9|-8,b=NA' (not counted as values)")
    p.add_argument("--sheet", default=None, help="the sheet to read from an Excel workbook with several sheets")
    p.add_argument("-o", "--output", "--json", dest="json_out", default=None,
                   help="write the suggestions as JSON here ('-' for stdout); default: a table on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.json_out not in (None, "-"):
        check_outputs({"-o/--json": args.json_out}, data_inputs(args.file))
    ds = read_from_args(args)  # --missing-codes names matched to the header as every command matches them
    guidance = suggest_roles(ds)
    if args.json_out is not None:
        write_json(args.json_out, guidance.to_json())
        return 0
    print(format_table(guidance))
    return 0


def format_table(guidance) -> str:
    """Aligned columns: variable, suggested role, distinct, missing, reason; then the options to use, quoted
    for a POSIX shell where a name needs it (a space, a quote, ``$``...): pasted, they select exactly these
    columns, ``sex `` with its space included."""
    rows = [("variable", "suggested role", "distinct", "missing", "reason")]
    rows += [(s.variable, s.role, f"{s.distinct:,}", f"{s.missing:,}", s.reason) for s in guidance.suggestions]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join([r[0].ljust(widths[0]), r[1].ljust(widths[1]), r[2].rjust(widths[2]),
                        r[3].rjust(widths[3]), r[4]]).rstrip() for r in rows]
    roles = guidance.roles()
    opts = []
    if roles.qis:
        opts.append("--qi " + shlex.quote(",".join(roles.qis)))
    if roles.weight:
        opts.append("--weight " + shlex.quote(roles.weight))
    lines.append("")
    lines.append(f"{guidance.n_records:,} records. Suggested: " + (" ".join(opts) if opts else "no quasi-identifier")
                 + (f"; exclude {', '.join(roles.direct_ids)}" if roles.direct_ids else ""))
    return "\n".join(lines)
