"""Options and helpers shared by the subcommands, so every command reads files the same way."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import MISSING_SEMANTICS, Dataset, Roles, VariableMeta
from ..errors import InputError, fewer_records_than_k
from ..io import load_dataset, missing_like_counts, missing_like_notice, typed_codes
from ..outputs import OutputBatch, atomic_write_bytes
from .notices import notice


def add_input_options(p: argparse.ArgumentParser, qi_required: bool = True) -> None:
    """FILE, --qi, --weight, --missing, --missing-codes: the conventions of every subcommand."""
    p.add_argument("file", help="input file (csv, parquet, xlsx, sav, dta, sas7bdat); CSV delimiter is sniffed")
    p.add_argument("--qi", required=qi_required, type=qi_names,
                   help="comma-separated quasi-identifiers; every option naming variables takes a name as written, "
                        "else without surrounding spaces (a header's 'sex ' is --qi 'sex ,age' or --qi sex,age)")
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


def check_k(k: int | None, option: str = "--k", hint: str = "") -> None:
    """The one rule for k wherever a command protects to it or counts the records below it (``suppress``,
    ``minucs``, ``generalize`` and its k criteria, ``risk``, ``recode``'s risk preview, ``apply``'s report and
    summary): a whole number of at least 2. Every record is in a group of at least 1, so k = 1 protects
    nobody, and "0 records below k=1" would read as a safe file. ``hint`` ends the message (e.g. " (or give
    --max-risk)"). Checked before any work."""
    if k is not None and k >= 2:
        return
    if k is None:
        raise InputError(f"{option} must be at least 2{hint}.")
    if k == 1:
        raise InputError(f"{option} must be at least 2{hint}: k = 1 protects nobody (every record is in a group "
                         "of at least 1).")
    raise InputError(f"{option} must be at least 1, and at least 2 to protect anyone{hint}.")


def check_criteria_k(criteria: Iterable[Any]) -> None:
    """:func:`check_k` for the k of every k-anonymity criterion given as ``--criterion k=K``: the spec parser
    accepts k = 1 (a recipe may record it), a command that protects to the criteria does not."""
    from ..criteria import KAnonymity

    for c in criteria:
        if isinstance(c, KAnonymity):
            check_k(c.k, "--criterion k")


def check_k_within(k: int, n_records: int) -> None:
    """Refuse a k larger than the file's records where the command's result would be meaningless (every
    record below k before and after a treatment): no record can be in a group of k. Not applied to ``kanon
    risk``, whose measurement at such a k is well defined (every record is below it) and pinned as the
    engines' common result."""
    if k > n_records:
        raise InputError(fewer_records_than_k(n_records, k))


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
    every optimum, and the out-of-core engines do not check it), the text itself kept for :func:`split_names`.
    Names are compared as written: ``sex`` and ``sex `` can be two columns of a file; once they are matched
    to the file's names, :func:`match_names` refuses two that name the same column."""
    names = split_names(text)
    twice = sorted({n.strip() for n in names if names.count(n) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"lists {', '.join(twice)} twice; name each quasi-identifier once")
    return text


def missing_codes_text(text: str) -> str:
    """An argparse type for ``--missing-codes``: ``var=code|code`` with each variable once and at least one
    code (``a=1,a=2`` would keep only ``a=2``; ``a=`` declares nothing), the text itself kept for
    :func:`parse_missing_codes`. Codes are never repeated in a message: they can be values of the data.
    Variables are compared as written (see :func:`qi_names`)."""
    seen: set[str] = set()
    for name, eq, codes in named_parts(text):
        var = name.strip()
        if not eq or not var:
            raise argparse.ArgumentTypeError("expects var=code|code for each variable, e.g. 'a=-9|-8,b=NA'")
        if name in seen:
            raise argparse.ArgumentTypeError(f"gives '{var}' twice; list all its codes at once, e.g. "
                                             f"'{var}=-9|-8'")
        if not any(c != "" for c in codes.split("|")):
            raise argparse.ArgumentTypeError(f"gives no code for '{var}'")
        seen.add(name)
    return text


def split_list(text: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The items of a comma-separated option, each without surrounding spaces, empty ones left out (values
    such as ``--merge``, kernel families). A tuple is a list of variables already matched to the file's own
    names by :func:`match_names` and is returned unchanged: stripping it again would lose the trailing space
    of a name such as ``sex ``."""
    if not text:
        return ()
    if isinstance(text, tuple):
        return text
    return tuple(s.strip() for s in text.split(",") if s.strip())


def split_names(text: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The variable names of a comma-separated option exactly as written (blank items left out): a header
    can hold ``sex `` with its space, and only the file can tell whether ``--qi "sex ,age"`` means that
    column or ``sex`` (:func:`match_names` decides). A tuple (already matched) is returned unchanged."""
    if not text:
        return ()
    if isinstance(text, tuple):
        return text
    return tuple(s for s in text.split(",") if s.strip())


def named_parts(text: str | None) -> list[tuple[str, str, str]]:
    """``'a=-9|-8, b=NA'`` -> ``[("a", "=", "-9|-8"), (" b", "=", "NA")]``: each comma-separated ``name=value``
    item as (the name exactly as written, ``"="`` or ``""`` when the item has none, the value without
    surrounding spaces). The name keeps its spaces for :func:`match_names`; the value is read as before."""
    out = []
    for raw in (text or "").split(","):
        if not raw.strip():
            continue
        name, eq, _ = raw.partition("=")
        out.append((name, eq, raw.strip().partition("=")[2] if eq else ""))
    return out


def parse_missing_codes(text: str | Mapping[str, tuple[str, ...]] | None) -> dict[str, tuple[str, ...]]:
    """``'a=-9|-8,b=NA'`` -> ``{"a": ("-9", "-8"), "b": ("NA",)}``: codes as text, exactly as written.

    :func:`kanon_core.io.load_dataset` matches them to each column's type, so "02138" stays a text code
    and "-9" is a number in a numeric column. A mapping is the option already matched to the file's names
    (:func:`match_names`) and is returned as a dict.
    """
    if isinstance(text, Mapping):
        return {var: tuple(codes) for var, codes in text.items()}
    return {name.strip(): codes for name, codes in _missing_codes_as_written(text)}


NAME_OPTIONS = ("weight", "household", "var", "strata", "psu", "fpc", "column")
"""Options (argparse destinations) naming one variable."""

LIST_OPTIONS = ("qi", "protect", "by")
"""Options naming comma-separated variables."""


class _Names:
    """A file's column names, to match the names an option gives: the exact name first, then the name
    without its surrounding spaces (``--qi "a, b"`` has always meant ``b``), then the one column equal to it
    once surrounding spaces are ignored on both sides (``--qi sex`` for a header's ``sex ``: a shell user
    cannot see the space). Two columns that match only that way (``" a"`` and ``"a "``) are ambiguous and
    refused rather than guessed; kanon's CSV and Parquet readers refuse such headers already."""

    def __init__(self, columns) -> None:
        self.exact = {str(c) for c in columns}
        self.loose: dict[str, list[str]] = {}
        for c in map(str, columns):
            self.loose.setdefault(c.strip(), []).append(c)

    def __call__(self, name: str, option: str) -> str:
        if name in self.exact:
            return name
        if name.strip() in self.exact:
            return name.strip()
        found = self.loose.get(name.strip(), [])
        if len(found) == 1:
            return found[0]
        if found:
            listed = ", ".join(f"'{c}'" for c in found)
            raise InputError(f"{option} names '{name.strip()}', which matches the variables {listed} once "
                             "surrounding spaces are ignored; give the name exactly as the file writes it.")
        return name.strip()  # unknown: the command refuses it by this name, as before


def match_names(args: argparse.Namespace, columns) -> None:
    """Rewrite, in place, every option of ``args`` that names variables to the file's own names (``columns``),
    by the rule of :class:`_Names`, for every option alike: ``--qi``, ``--weight``, ``--missing-codes``,
    ``--protect``, ``--by``, ``--importance``, ``--link``, ``--sensitive``, ``--household``, ``--var``,
    ``--strata``, ``--psu``, ``--fpc``, ``--column``. Called once the header is known (in memory by
    :func:`read_from_args`, out of core by the engine paths), so the in-memory path and the engines read
    the same columns. Matched lists become tuples (and name=value options pairs), which the parsers
    (:func:`split_list`, :func:`parse_missing_codes`, ``parse_importance``, ``parse_links``) return unchanged.
    Two names that match one column are refused; so is the weight among the quasi-identifiers. Calling it
    again changes nothing. Once the header is known, variables of FILE's labels file that it lacks are noted
    (:func:`notice_labels_beyond`), on every path alike."""
    names = _Names(columns)
    for attr in NAME_OPTIONS:
        value = getattr(args, attr, None)
        if isinstance(value, str):
            setattr(args, attr, names(value, f"--{attr}"))
    for attr in LIST_OPTIONS:
        value = getattr(args, attr, None)
        if value:
            setattr(args, attr, tuple(names(n, f"--{attr}") for n in split_names(value)))
    qis = split_list(getattr(args, "qi", None))
    twice = sorted({q for q in qis if qis.count(q) > 1})
    if twice:
        raise InputError(f"--qi lists {', '.join(twice)} twice; name each quasi-identifier once.")
    weight = getattr(args, "weight", None)
    if weight is not None and weight in qis:
        raise InputError("The weight cannot also be a quasi-identifier.")
    if getattr(args, "sensitive", None):
        args.sensitive = [names(s, "--sensitive") for s in args.sensitive]
    codes = getattr(args, "missing_codes", None)
    if codes:
        items = codes.items() if isinstance(codes, Mapping) else _missing_codes_as_written(codes)
        args.missing_codes = _unique_pairs([(names(v, "--missing-codes"), c) for v, c in items], "--missing-codes",
                                           "list all its codes at once")
    importance = getattr(args, "importance", None)
    if isinstance(importance, str):
        parts = named_parts(importance)
        if all(eq and name.strip() for name, eq, _ in parts):  # else parse_importance says what is wrong
            args.importance = tuple((names(name, "--importance"), value) for name, _, value in parts)
    if getattr(args, "link", None):
        args.link = [_matched_link(item, names) for item in args.link]
    if getattr(args, "file", None):
        notice_labels_beyond(args.file, columns)


def notice_labels_beyond(path: str, columns) -> None:
    """One notice naming the variables the labels file of ``path`` describes that the file does not have
    (:func:`kanon_core.value_labels.labels_file_beyond`: allowed, since a labels file may cover other files'
    variables, but said, since a misspelt name loses its labels silently otherwise)."""
    from ..value_labels import labels_file_beyond

    side, beyond = labels_file_beyond(path, columns)
    if beyond:
        more = f" and {len(beyond) - 10:,} more" if len(beyond) > 10 else ""
        notice(f"kanon: notice: the labels file {side} describes {len(beyond):,} variable(s) that the data does "
               f"not have, whose labels are ignored: {', '.join(beyond[:10])}{more}.")


def _missing_codes_as_written(text: str | None) -> list[tuple[str, tuple[str, ...]]]:
    """The ``var=code|code`` items of ``--missing-codes``, each variable as written (spaces kept, for
    :func:`match_names`; :func:`parse_missing_codes` strips them)."""
    out = []
    for name, eq, codes in named_parts(text):
        if not eq:
            raise InputError(f"--missing-codes expects var=code|code, got '{name.strip()}'.")
        out.append((name, tuple(c for c in codes.split("|") if c != "")))
    return out


def _unique_pairs(pairs: list[tuple[str, Any]], option: str, hint: str) -> dict[str, Any]:
    """The pairs as a dict, refusing two (written differently) that name one variable: the later would
    silently replace the earlier."""
    out: dict[str, Any] = {}
    for var, value in pairs:
        if var in out:
            raise InputError(f"{option} gives '{var}' twice; {hint}.")
        out[var] = value
    return out


def _matched_link(item: Any, names: _Names) -> Any:
    """A ``--link KEY=VAR,VAR`` item as (key, variables) matched to the file's names; an item that is not of
    that form is kept as written, for ``parse_links`` to refuse."""
    if not isinstance(item, str) or "=" not in item:
        return item
    key, others = item.split("=", 1)
    listed = split_names(others)
    if not key.strip() or not listed:
        return item
    return (names(key, "--link"), tuple(names(n, "--link") for n in listed))


def _number_or_text(text: str) -> Any:
    try:
        f = float(text)
    except ValueError:
        return text
    return int(f) if f.is_integer() else f


def read_from_args(args: argparse.Namespace) -> Dataset:
    """Read FILE, match the options' variable names to its header (:func:`match_names`), then declare the
    ``--missing-codes``: the names are known only once the file is read, so the codes are added here, as
    :func:`kanon_core.io.load_dataset` adds them (after the labels sidecar's, typed to each column)."""
    ds = load_dataset(args.file, missing=getattr(args, "missing", "wildcard"), sheet=getattr(args, "sheet", None))
    match_names(args, ds.columns)
    return with_missing_codes(ds, parse_missing_codes(getattr(args, "missing_codes", None)))


def with_missing_codes(ds: Dataset, codes: Mapping[str, tuple[str, ...]]) -> Dataset:
    """``ds`` with ``codes`` (text, as given) added to its variables' declared missing codes, typed to each
    column (:func:`kanon_core.io.typed_codes`); codes declared already are kept once. A text code for a column
    of numbers is refused (:func:`kanon_core.declare_missing.refuse_text_codes_on_numbers`, the rule the
    engines apply where they type a column)."""
    if not codes:
        return ds
    from ..declare_missing import holds_numbers, refuse_text_codes_on_numbers

    meta = dict(ds.meta)
    for col, given in codes.items():
        if col not in ds.frame.columns:
            raise InputError(f"Missing codes given for unknown variable '{col}'.")
        refuse_text_codes_on_numbers(col, holds_numbers(ds.frame[col]), given)
        m = meta.get(col, VariableMeta())
        typed = typed_codes(ds.frame[col], given)
        meta[col] = replace(m, missing_codes=tuple(m.missing_codes) + tuple(c for c in typed if c not in m.missing_codes))
    return replace(ds, meta=meta, _cache={})


def load_from_args(args: argparse.Namespace, **extra_roles: Any) -> Dataset:
    """Load FILE with the roles given on the command line (``extra_roles``: more roles named by options, such
    as ``strata=args.strata``, matched to the file's names like the rest)."""
    ds = read_from_args(args)
    names = _Names(ds.columns)
    extra = {role: names(v, f"--{role}") if isinstance(v, str) else v for role, v in extra_roles.items()}
    ds = ds.with_roles(Roles(qis=split_list(getattr(args, "qi", None)), weight=getattr(args, "weight", None), **extra))
    ds.weights()  # validate early: a bad weight is a clear error before any work
    counts = missing_like_counts(ds)
    if counts:  # never treated as missing on a guess, but worth one line (columns and counts, no values)
        notice(f"kanon: notice: {missing_like_notice(counts)}")
    notice_many_levels(ds)
    return ds


def notice_release(treated: Dataset, output: str | os.PathLike) -> None:
    """The release's notes (:func:`kanon_core.export.release_notes`: variables renamed for SPSS or Stata, CSV
    cells a spreadsheet may run as formulas) as notices, once its files are written to ``output``."""
    from ..export import release_notes

    for note in release_notes(treated.frame, Path(output).name):
        notice(f"kanon: notice: {note}")


def notice_engine_release(output: str | os.PathLike) -> None:
    """The note on formula-like cells of a CSV release an engine wrote (:func:`kanon_core.export.
    formula_like_in_csv`, read back from the file, which no frame holds), as :func:`notice_release` says it for a
    release written in memory. Variables are not renamed in a CSV or Parquet release, so that is the only note."""
    from ..export import formula_like_in_csv, formula_note

    path = Path(output)
    if path.suffix.lower() == ".csv" and path.is_file() and (note := formula_note(formula_like_in_csv(path))):
        notice(f"kanon: notice: {note}")


def notice_many_levels(ds: Dataset) -> None:
    """One notice naming the quasi-identifiers with very many distinct values, with their counts (the
    dashboard's rule, :func:`kanon_core.describe.too_many_distinct`, where it asks for a confirmation): such a
    variable makes almost every record unique, and is often an identifier picked as a QI by mistake."""
    from ..describe import too_many_distinct

    say_many_levels(too_many_distinct(ds, list(ds.roles.qis)))


def say_many_levels(many: Mapping[str, int]) -> None:
    """The notice of :func:`notice_many_levels` for ``many`` (QI -> distinct values), on every path alike (the
    engines count the distinct values on the class table, :func:`kanon_core.cli.scale.notice_table`)."""
    if many:
        listed = ", ".join(f"{c} ({n:,})" for c, n in many.items())
        notice(f"kanon: notice: quasi-identifier(s) with very many distinct values, which make almost every "
               f"record unique: {listed}; recode them first, or check that none is a record identifier.")


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
