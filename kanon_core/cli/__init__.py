"""The ``kanon`` command line: one subcommand per workflow step, thin over kanon_core.

Subcommands live in modules named ``*_cmd.py`` in this package; each defines
``register(subparsers) -> None`` and sets ``func`` on its parser. They are discovered here, so adding a
command touches no shared file. Bad input gives a one-line message on stderr and exit status 2; so do a
failed read or write, a closed output pipe and unexpected errors (whose details could contain data values).
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
from pathlib import Path
from typing import NoReturn

from .. import __version__
from ..errors import KanonError
from .notices import take_notices


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="kanon", description="Statistical disclosure control for survey microdata.")
    parser.add_argument("--version", action="version", version=f"kanon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.endswith("_cmd"):
            importlib.import_module(f"{__name__}.{info.name}").register(sub)
    return parser


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line on stderr (exit 2), like every other failure of the command line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _quiet_stdout() -> None:
    """After a broken pipe (``kanon ... | head``): send the rest of stdout to devnull, so the interpreter's
    final flush does not print a traceback (the recipe of the Python documentation on SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (e.g. captured in tests)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. Every failure is exit status 2 and one line on stderr naming the command,
    the option or variable and the rule, never a data value (tracebacks can show cells of the
    microdata, so none is printed; ``KANON_DEBUG=1`` re-raises unexpected errors for developers)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    prefix = f"kanon {args.command}"
    take_notices()  # (a command run before in this process, e.g. in tests, leaves none behind)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        for line in take_notices():  # after the work: a failure above prints its error alone
            print(_one_line(line), file=sys.stderr)  # a name holding a line break stays on its notice's line
        return code
    except BrokenPipeError:
        _quiet_stdout()
        print(f"{prefix}: error: the output pipe was closed before everything was written.", file=sys.stderr)
        return 2
    except KanonError as exc:
        print(f"{prefix}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        name = f" ({Path(os.fsdecode(exc.filename)).name})" if exc.filename else ""
        print(f"{prefix}: error: {_one_line(exc.strerror or type(exc).__name__)}{name}.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("KANON_DEBUG"):
            raise
        print(f"{prefix}: error: unexpected {type(exc).__name__}; no details are shown because they could "
              "contain data values (KANON_DEBUG=1 shows them).", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
