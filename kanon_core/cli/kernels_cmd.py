"""``kanon kernels``: compile kanon's kernels ahead of the first click (:mod:`kanon_core.kernels`).

Run once after an install or an update (``scripts/setup.sh`` does): numba then reads every kernel from its
cache, and no officer's first suppression, search or MINUC count waits for the compiler. Reads no file.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from ..kernels import FAMILIES, warm
from ..outputs import check_outputs
from .common import split_list, write_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kernels", help="compile kanon's kernels into numba's cache ahead of first use (once "
                                       "after an install or an update)")
    p.add_argument("--family", default=None,
                   help=f"comma-separated families to compile (default: all): {', '.join(FAMILIES)}")
    p.add_argument("--list", action="store_true", help="list the families and what waits for each, then stop "
                                                       "(with -o, also as JSON)")
    p.add_argument("-o", "--output", "--json", dest="json_out", default=None,
                   help="also write each family's seconds and compiled signatures as JSON here ('-' for stdout); "
                        "with --list, each family's name, what waits for it and its modules")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_outputs({"-o/--json": args.json_out}, ())
    if args.list:
        return list_families(args.json_out)
    names = split_list(args.family) or tuple(FAMILIES)
    times = warm(names, progress=lambda name: print(f"kanon kernels: {name} ...", file=sys.stderr, flush=True))
    if args.json_out is not None:
        write_json(args.json_out, [asdict(t) for t in times])
        if args.json_out == "-":
            return 0
    width = max(len(t.family) for t in times)
    for t in times:
        how = f"{t.compiled} signature(s) compiled" if t.compiled else "nothing to compile (in numba's cache, or loaded already)"
        print(f"{t.family.ljust(width)}  {t.seconds:6.2f} s  {how}")
    return 0


def list_families(json_out: str | None) -> int:
    """``--list``: one line per family, and with ``-o`` the same as JSON (name, why, modules), as the warm-up
    honours ``-o``; with ``-o -`` stdout holds the JSON alone."""
    if json_out is not None:
        write_json(json_out, [{"name": f.name, "why": f.why, "modules": list(f.modules)} for f in FAMILIES.values()])
        if json_out == "-":
            return 0
    for fam in FAMILIES.values():
        print(f"{fam.name}: {fam.why} ({', '.join(fam.modules)})")
    return 0
