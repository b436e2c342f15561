"""Options and helpers shared by the subcommands, so every command reads files the same way."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import MISSING_SEMANTICS, Dataset, Roles
from ..errors import InputError
from ..io import load_dataset, missing_like_counts, missing_like_notice
from ..outputs import OutputBatch, atomic_write_bytes
from .notices import notice


def add_input_options(p: argparse.ArgumentParser, qi_required: bool = True) -> None:
    """FILE, --qi, --weight, --missing, --missing-codes: the conventions of every subcommand."""
    p.add_argument("file", help="input file (csv, parquet, xlsx, sav, dta, sas7bdat); CSV delimiter is sniffed")
    p.add_argument("--qi", required=qi_required, type=qi_names, help="comma-separated quasi-identifiers")
    p.add_argument("--weight", help="sampling weight variable")
    p.add_argument("--missing", choices=MISSING_SEMANTICS, default="wildcard",
                   help="missing values match anything (wildcard, default) or are a category of their own")
    p.add_argument("--missing-codes", default=None, type=missing_codes_text,
                   help="declared missing codes per variable, e.g. 'a=-9|-8,b=NA'; only empty cells and these "
                        "codes are missing (text such as NA is a value unless declared)")
    p.add_argument("--sheet", default=None, help="the sheet to read from an Excel workbook with several sheets")


def positive_finite(text: str) -> float:
    """An argparse type: a number above 0 that is finite ("nan" and "inf" parse as floats, and NaN passes every
    range check written as a negation)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expects a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError("expects a finite number above 0")
    return value


def open_fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a sampling fraction), refused even where the
    option is not used, so a mistyped value is never silently ignored."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expects a number between 0 and 1") from None
    if not 0.0 < value < 1.0:  # also refuses NaN
        raise argparse.ArgumentTypeError("expects a number between 0 and 1 (exclusive)")
    return value


def qi_names(text: str) -> str:
    """An argparse type for ``--qi``: each name at most once (a QI counted twice changes every count and
    every optimum, and the out-of-core engines do not check it), the text itself kept for :func:`split_list`."""
    names = split_list(text)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"lists {', '.join(twice)} twice; name each quasi-identifier once")
    return text


def missing_codes_text(text: str) -> str:
    """An argparse type for ``--missing-codes``: ``var=code|code`` with each variable once and at least one
    code (``a=1,a=2`` would keep only ``a=2``; ``a=`` declares nothing), the text itself kept for
    :func:`parse_missing_codes`. Codes are never repeated in a message: they can be values of the data."""
    seen: set[str] = set()
    for part in split_list(text):
        var, eq, codes = part.partition("=")
        var = var.strip()
        if not eq or not var:
            raise argparse.ArgumentTypeError("expects var=code|code for each variable, e.g. 'a=-9|-8,b=NA'")
        if var in seen:
            raise argparse.ArgumentTypeError(f"gives '{var}' twice; list all its codes at once, e.g. "
                                             f"'{var}=-9|-8'")
        if not any(c != "" for c in codes.split("|")):
            raise argparse.ArgumentTypeError(f"gives no code for '{var}'")
        seen.add(var)
    return text


def split_list(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(s.strip() for s in text.split(",") if s.strip())


def parse_missing_codes(text: str | None) -> dict[str, tuple[str, ...]]:
    """``'a=-9|-8,b=NA'`` -> ``{"a": ("-9", "-8"), "b": ("NA",)}``: codes as text, exactly as written.

    :func:`kanon_core.io.load_dataset` matches them to each column's type, so "02138" stays a text code
    and "-9" is a number in a numeric column.
    """
    out: dict[str, tuple[str, ...]] = {}
    for part in split_list(text):
        if "=" not in part:
            raise InputError(f"--missing-codes expects var=code|code, got '{part}'.")
        var, codes = part.split("=", 1)
        out[var.strip()] = tuple(c for c in codes.split("|") if c != "")
    return out


def _number_or_text(text: str) -> Any:
    try:
        f = float(text)
    except ValueError:
        return text
    return int(f) if f.is_integer() else f


def load_from_args(args: argparse.Namespace, **extra_roles: Any) -> Dataset:
    """Load FILE with the roles given on the command line."""
    roles = Roles(qis=split_list(getattr(args, "qi", None)), weight=getattr(args, "weight", None), **extra_roles)
    ds = load_dataset(args.file, roles=roles, missing=args.missing,
                      missing_codes=parse_missing_codes(getattr(args, "missing_codes", None)),
                      sheet=getattr(args, "sheet", None))
    ds.weights()  # validate early: a bad weight is a clear error before any work
    counts = missing_like_counts(ds)
    if counts:  # never treated as missing on a guess, but worth one line (columns and counts, no values)
        notice(f"kanon: notice: {missing_like_notice(counts)}")
    return ds


def to_jsonable(obj: Any) -> Any:
    """Plain JSON types from numpy/pandas values (NaN -> null)."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, pd.DataFrame):
        return to_jsonable(obj.to_dict(orient="records"))
    if obj is pd.NA:
        return None
    return obj


def write_json(path: str | None, payload: Any, batch: OutputBatch | None = None) -> None:
    """``payload`` as indented JSON to stdout (``-`` or None) or to a file, atomically: inside ``batch``
    (written with a command's other outputs when all succeeded) or on its own."""
    text = json.dumps(to_jsonable(payload), indent=2, ensure_ascii=False)
    if path is None or path == "-":
        print(text)
    elif batch is not None:
        batch.write_text(path, text + "\n")
    else:
        atomic_write_bytes(path, (text + "\n").encode("utf-8"))


def stderr_progress(command: str):
    """A Progress printing a line per step to stderr when it is a terminal (long runs), else None."""
    if not sys.stderr.isatty():
        return None
    from ..progress import Progress

    last: list[str] = [""]

    def show(fraction: float, message: str) -> None:
        if message != last[0]:
            last[0] = message
            print(f"{command}: {100 * fraction:3.0f} % {message}", file=sys.stderr, flush=True)

    return Progress(show)
