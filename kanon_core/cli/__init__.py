"""The ``kanon`` command line: one subcommand per workflow step, thin over kanon_core.

Subcommands live in modules named ``*_cmd.py`` in this package; each defines
``register(subparsers) -> None`` and sets ``func`` on its parser. They are discovered here, so adding a
command touches no shared file. Bad input gives a one-line message on stderr and exit status 2.
"""

from __future__ import annotations

import os

# One BLAS thread: faster for kanon's small dense algebra (regressions) on few cores, and it keeps BLAS
# from competing with kanon's own worker threads. Set before numpy loads; an explicit setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import KanonError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kanon", description="Statistical disclosure control for survey microdata.")
    parser.add_argument("--version", action="version", version=f"kanon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.endswith("_cmd"):
            importlib.import_module(f"{__name__}.{info.name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KanonError as exc:
        print(f"kanon {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kanon {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
