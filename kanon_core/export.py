"""Releases: the treated data as CSV, Parquet, Stata or SPSS, labels kept, suppressed cells marked.

What is written is :meth:`Dataset.release_frame` (direct identifiers dropped) in the data's column
order. A cell is *suppressed* when it is missing in the treated version but was observed in the original
(local suppression, or records blanked by a generalization with a suppression limit); values missing
already in the original stay ordinary missing values, so an analyst can tell the two apart:

========  =================================================  ======================================
format    suppressed cell                                     missing in the original
========  =================================================  ======================================
SPSS      ``code`` (default -99; its text for strings),        system-missing (for string variables
          declared user-missing, labelled                      the empty string, declared missing)
Stata     extended missing ``.a``, labelled; for string        ``.`` (for string variables the empty
          variables the empty string (Stata has no missing     string, which reads back as missing)
          codes for strings)
CSV       empty (default) or ``code`` when asked; the labels   empty
          sidecar then declares it as a missing code
Parquet   null                                                 null
========  =================================================  ======================================

Variable and value labels go into SPSS/Stata files, into the ``<name>.labels.json`` sidecar for CSV and
Parquet (which :func:`kanon_core.io.load_dataset` reads back) and into the Parquet schema metadata.
Declared missing codes (e.g. -9 "don't know") stay missing: SPSS declares them user-missing, Stata writes
them as extended missing values ``.b``, ``.c``, ... with their labels (Stata's own convention for such
codes), CSV and Parquet keep the code and declare it in the sidecar.

Every writer is deterministic (see :data:`kanon_core.io.BYTE_STABLE_FORMATS`): the same version gives the
same bytes whether it comes from the dashboard or from ``kanon apply``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .dataset import Dataset, VariableMeta
from .errors import InputError
from .exact_numbers import count_beyond_double
from .io import csv_bytes, labels_json, labels_spec, parquet_bytes, sidecar_path, stat_bytes
from .release_check import check_release

DEFAULT_SUPPRESSED_CODE = -99
SUPPRESSED_LABEL = "Suppressed (disclosure control)"
STATA_SUPPRESSED = "a"
LABELS_METADATA_KEY = "kanon.labels"


@dataclass(frozen=True)
class Format:
    key: str
    title: str
    ext: str
    mime: str


FORMATS: dict[str, Format] = {
    "csv": Format("csv", "CSV", ".csv", "text/csv"),
    "parquet": Format("parquet", "Parquet", ".parquet", "application/vnd.apache.parquet"),
    "dta": Format("dta", "Stata", ".dta", "application/x-stata-dta"),
    "sav": Format("sav", "SPSS", ".sav", "application/x-spss-sav"),
}
_BY_EXT = {f.ext: f for f in FORMATS.values()}


def format_of(name: str) -> Format:
    """The format of a file name (by extension) or of a key such as ``"sav"``."""
    key = name.lower().lstrip(".")
    if key in FORMATS:
        return FORMATS[key]
    ext = Path(name).suffix.lower()
    if ext in _BY_EXT:
        return _BY_EXT[ext]
    raise InputError(f"Cannot export '{ext or name}'. Use one of: {', '.join(f.ext for f in FORMATS.values())}.")


@dataclass(frozen=True)
class ExportOptions:
    """How suppressed cells are written (see the module docstring)."""

    suppressed_code: int = DEFAULT_SUPPRESSED_CODE
    csv_code: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.suppressed_code, bool) or not isinstance(self.suppressed_code, (int, np.integer)):
            raise InputError("The code for suppressed cells must be a whole number (e.g. -99).")
        if len(str(int(self.suppressed_code))) > 8:
            raise InputError("The code for suppressed cells must have at most 8 characters (SPSS).")


@dataclass(frozen=True)
class ExportFile:
    """One file of a release, built in memory."""

    name: str
    data: bytes = field(repr=False)
    mime: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Release:
    """The release frame with its labels and, per variable, the suppressed cells (bool arrays)."""

    frame: pd.DataFrame
    meta: Mapping[str, VariableMeta]
    suppressed: Mapping[str, np.ndarray]
    name: str = "data"

    @property
    def n_suppressed(self) -> int:
        return int(sum(int(m.sum()) for m in self.suppressed.values()))

    def suppressed_counts(self) -> dict[str, int]:
        return {c: int(m.sum()) for c, m in self.suppressed.items() if m.any()}


def suppressed_mask(original: Dataset, treated: Dataset, column: str) -> np.ndarray:
    """Cells missing in ``treated`` that were observed in ``original`` (same records, same order).

    A value that is a declared missing code in either version is not an observed value.
    """
    from .utility.suppressed import suppressed_mask as cells  # the one definition of a suppressed cell

    return cells(original, treated, [column]).mask[:, 0]


def release(treated: Dataset, original: Dataset | None = None) -> Release:
    """What would be released from ``treated``; with ``original`` (version 0), suppressed cells are known."""
    frame = treated.release_frame()
    suppressed = released_suppressed(treated, original) if original is not None else {}
    meta = {c: treated.meta_of(c) for c in frame.columns}
    return Release(frame=frame, meta=meta, suppressed=suppressed, name=treated.name)


def released_suppressed(treated: Dataset, original: Dataset) -> dict[str, np.ndarray]:
    """Per released variable (direct identifiers left out), its suppressed cells, where it has any: the count
    ``kanon apply`` and the report give (:attr:`Release.n_suppressed`), without copying the frame."""
    if original.n_records != treated.n_records:
        raise InputError("The original and treated data must have the same records to mark suppressed cells.")
    out: dict[str, np.ndarray] = {}
    for c in treated.frame.columns:
        if c not in treated.roles.direct_ids and c in original.frame.columns:
            m = suppressed_mask(original, treated, c)
            if m.any():
                out[c] = m
    return out


# -- per-format preparation ----------------------------------------------------------------------------------
def _is_numeric(s: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(s.dtype):
        return False
    if pd.api.types.is_numeric_dtype(s.dtype):
        return True
    if s.dtype == object:
        vals = s.dropna().tolist()
        return bool(vals) and all(isinstance(v, (int, float, np.integer, np.floating))
                                  and not isinstance(v, (bool, np.bool_)) for v in vals)
    return False


def _text(v: Any) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _as_float(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").astype("float64").to_numpy(copy=True)


def _as_text(s: pd.Series) -> np.ndarray:
    out = np.array(["" if pd.isna(v) else _text(v) for v in s.tolist()], dtype=object)
    return out


def _stata_letters(col: str, s: pd.Series, m: VariableMeta, declared: list[float]) -> dict[float, tuple[str, str]]:
    """Declared missing codes of a numeric variable as Stata extended missing values ``.b``, ``.c``, ...
    (``.a`` is for suppressed cells), each keeping its value label (or the code as label)."""
    if not declared:
        return {}
    if len(declared) > 25:
        raise InputError(f"Stata has 25 extended missing values for declared codes; {col} declares {len(declared)}.")
    out: dict[float, tuple[str, str]] = {}
    for i, value in enumerate(sorted(set(declared))):
        label = m.value_labels.get(value)
        if label is None and float(value).is_integer():
            label = m.value_labels.get(int(value))
        out[value] = (chr(ord("b") + i), str(label) if label is not None else _text(value))
    return out


def _check_code(col: str, observed: np.ndarray, code: Any) -> None:
    if np.any(observed == code):
        raise InputError(f"The code for suppressed cells ({_text(code)}) is also a value of {col}; choose another code.")


def check_options(rel: Release, options: ExportOptions, fmt: str) -> None:
    """Refuse, before any writing, a code for suppressed cells that is also a value of the variable."""
    key = format_of(fmt).key
    if key == "sav" or (key == "csv" and options.csv_code):
        code = int(options.suppressed_code)
        for c, sup in rel.suppressed.items():
            s = rel.frame[c]
            if _is_numeric(s):
                _check_code(c, _as_float(s)[~sup], float(code))
            else:
                _check_code(c, _as_text(s)[~sup], str(code))


def _numeric_labels(vl: Mapping[Any, str], integer_only: bool) -> dict[Any, str]:
    out: dict[Any, str] = {}
    for k, v in vl.items():
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, float, np.integer, np.floating)):
            try:
                k = float(str(k))
            except ValueError:
                continue
        f = float(k)
        if integer_only:
            if f.is_integer():
                out[int(f)] = str(v)
        else:
            out[f] = str(v)
    return out


_RESERVED = {"sav": {"ALL", "AND", "BY", "EQ", "GE", "GT", "LE", "LT", "NE", "NOT", "OR", "TO", "WITH"},
             "dta": {"_all", "_b", "byte", "_coef", "_cons", "double", "float", "if", "in", "int", "long", "_n",
                     "_N", "_pi", "_pred", "_rc", "_skip", "strL", "using", "with"}}


def stat_names(columns: list[str], fmt: str) -> dict[str, str]:
    """Valid SPSS/Stata variable names: other characters become ``_``, a leading non-letter gets ``v``,
    at most 64 (SPSS) / 32 (Stata) characters, reserved words and duplicates get a suffix."""
    limit = 64 if fmt == "sav" else 32
    out: dict[str, str] = {}
    used: set[str] = set()
    for c in columns:
        n = re.sub(r"[^A-Za-z0-9_]", "_", c)
        if not re.match(r"[A-Za-z]", n):
            n = "v" + n
        n = n[:limit]
        if n in _RESERVED[fmt] or n.upper() in _RESERVED["sav"] and fmt == "sav":
            n = (n + "_v")[:limit]
        base, i = n, 2
        while n.lower() in used:
            suffix = f"_{i}"
            n = base[: limit - len(suffix)] + suffix
            i += 1
        used.add(n.lower())
        out[c] = n
    return out


def _check_exact_as_double(column: str, s: pd.Series, fmt: str) -> None:
    """Refuse a whole-number variable a double would round (beyond 2^53): the release must hold the values
    the checks counted. Names the variable, never a value."""
    big = count_beyond_double(s)
    if big:
        raise InputError(f"Variable {column} has {big:,} whole number(s) too long for {FORMATS[fmt].title}, "
                         "which stores numbers as decimals and would round them; release it as CSV or Parquet.")


def _check_spss_text(column: str, text: np.ndarray, observed: np.ndarray) -> None:
    """Refuse a text variable with cells ending in a space for SPSS, whose strings are padded with spaces and
    read back without them: "a " would read as "a" (joining another group) and " " as empty (missing), so the
    release would not be the version whose risk was measured. A format limit, not a fault: the message names
    the variable and counts the cells, never a value, and says which formats keep them."""
    ends = np.fromiter((v.endswith(" ") for v in text[observed]), dtype=bool, count=int(observed.sum()))
    n = int(ends.sum())
    if n:
        raise InputError(f"Variable {column} has {n:,} text cell(s) ending in a space or holding only spaces, which "
                         "SPSS cannot keep (it pads text with spaces and drops them when read back); release it "
                         "as CSV, Parquet or Stata, which keep them exactly, or trim the spaces first.")


def renamed_notes(columns: list[str], fmt: str) -> tuple[str, ...]:
    """One sentence per variable whose name SPSS or Stata does not allow and the release changes
    (:func:`stat_names`); none for CSV and Parquet, which keep every name."""
    key = format_of(fmt).key
    if key not in ("dta", "sav"):
        return ()
    names = stat_names(list(columns), key)
    return tuple(f"Variable {c} is named {n} in the {FORMATS[key].title} file." for c, n in names.items() if c != n)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters with which a spreadsheet may read a cell of a CSV file as a formula (OWASP, "CSV
injection")."""


def formula_like_cells(frame: pd.DataFrame) -> dict[str, int]:
    """Per text column, the cells that begin as a spreadsheet formula (:data:`FORMULA_STARTS`) and do not read as
    a number ("-5" is a number to a spreadsheet too, and harmless). The release writes them as they are (text
    stays text); whoever opens the CSV in a spreadsheet should import it as text, and is told so."""
    out: dict[str, int] = {}
    for c in frame.columns:
        col = frame[c]
        if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_datetime64_any_dtype(col.dtype):
            continue
        texts = col.dropna()
        try:
            texts = texts[texts.str.startswith(FORMULA_STARTS, na=False).to_numpy(dtype=bool)]
        except AttributeError:  # no text in it (dates, mixed objects)
            continue
        if not len(texts):
            continue
        n = int(pd.to_numeric(texts, errors="coerce").isna().sum())
        if n:
            out[str(c)] = n
    return out


FORMULA_PATTERN = r"^[=+\-@\t\r]"
"""A cell beginning with one of :data:`FORMULA_STARTS`, as a regular expression."""
ASCII_SPACE = " \t\n\r\x0b\x0c"
"""The spaces a number's text may have around it and still read as a number (``pd.to_numeric``'s)."""


def formula_like_in_csv(path: str | Path) -> dict[str, int]:
    """:func:`formula_like_cells` of a CSV release an engine wrote, read back as text: the engines write the file
    while streaming it, so its cells are counted in it, streamed again (polars, every cell as text; a cell that
    reads as a number, as ``pd.to_numeric`` reads it, is not counted, nor an empty one). Only a file a release
    writer wrote is read here (comma-separated, UTF-8, quoted where needed).

    Two passes: the cells beginning as a formula, counted per column (most columns have none, and the first
    character is cheap to test), then, only in the columns that have some, those of them that are not numbers
    (reading a number from every cell of every column took about three times as long as the first pass)."""
    import polars as pl

    from .errors import InputError

    lf = pl.scan_csv(Path(path), infer_schema=False)
    try:
        names = lf.collect_schema().names()
        if not names:
            return {}
        starts = lf.select([pl.col(n).str.contains(FORMULA_PATTERN).sum().alias(f"c{i}")
                            for i, n in enumerate(names)]).collect(engine="streaming").row(0)
        some = [n for n, k in zip(names, starts, strict=True) if k]
        if not some:
            return {}
        exprs = []
        for i, name in enumerate(some):
            candidate = pl.when(pl.col(name).str.contains(FORMULA_PATTERN)).then(pl.col(name))
            number = candidate.str.strip_chars(ASCII_SPACE).cast(pl.Float64, strict=False)
            exprs.append((candidate.is_not_null() & (number.is_null() | number.is_nan())).sum().alias(f"c{i}"))
        counts = lf.select(exprs).collect(engine="streaming").row(0)
    except pl.exceptions.PolarsError:
        raise InputError("The written CSV release could not be read back to look for formula-like cells.") from None
    return {name: int(n) for name, n in zip(some, counts, strict=True) if n}


def formula_note(cells: Mapping[str, int]) -> str | None:
    """The note on text cells a spreadsheet may run as formulas (per variable, their counts), or None."""
    if not cells:
        return None
    listed = ", ".join(f"{c} ({n:,})" for c, n in cells.items())
    return (f"{sum(cells.values()):,} text cell(s) begin with =, +, -, @, a tab or a carriage return ({listed}): a "
            "spreadsheet opening the CSV may run them as formulas. They are written as they are; import the file "
            "as text (or read it with a statistical package).")


def release_notes(frame: pd.DataFrame, fmt: str) -> tuple[str, ...]:
    """What a user of a release of ``frame`` (a version's data) in ``fmt`` must be told, one sentence each,
    without data values:
    variables renamed for SPSS or Stata (:func:`renamed_notes`), and for CSV the text cells a spreadsheet may
    run as formulas (:func:`formula_like_cells`). The command line prints them as notices, the Export page
    under its downloads."""
    key = format_of(fmt).key
    notes = list(renamed_notes(list(frame.columns), key))
    if key == "csv" and (note := formula_note(formula_like_cells(frame))):
        notes.append(note)
    return tuple(notes)


def _stat_frame(rel: Release, fmt: str, options: ExportOptions) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Columns, labels and missing declarations pyreadstat needs, with suppressed cells marked."""
    code = int(options.suppressed_code)
    names = stat_names(list(rel.frame.columns), fmt)
    cols: dict[str, Any] = {}
    column_labels: list[str] = []
    value_labels: dict[str, dict[Any, str]] = {}
    missing_ranges: dict[str, list] = {}
    missing_user: dict[str, list[str]] = {}
    for c in rel.frame.columns:
        n = names[c]
        s = rel.frame[c]
        m = rel.meta.get(c, VariableMeta())
        sup = rel.suppressed.get(c)
        column_labels.append(m.label or "")
        if pd.api.types.is_datetime64_any_dtype(s.dtype):
            cols[n] = s
            continue
        if _is_numeric(s):
            _check_exact_as_double(c, s, fmt)
            values = _as_float(s)
            labels = _numeric_labels(m.value_labels, integer_only=fmt == "dta")
            declared = [float(x) for x in m.missing_codes if isinstance(x, (int, float, np.integer, np.floating))]
            if fmt == "sav":
                if sup is not None:
                    _check_code(c, values[~sup], float(code))
                    values[sup] = float(code)
                    labels[float(code)] = SUPPRESSED_LABEL
                    declared.append(float(code))
                cols[n] = values
                if declared:
                    if len(declared) > 3:
                        raise InputError(f"SPSS allows at most 3 missing codes per variable; {c} would need "
                                         f"{len(declared)}.")
                    missing_ranges[n] = declared
            else:
                letters = _stata_letters(c, s, m, declared)
                if sup is not None or letters:
                    col = values.astype(object)
                    if sup is not None:
                        col[sup] = STATA_SUPPRESSED
                        labels[STATA_SUPPRESSED] = SUPPRESSED_LABEL
                    for value, (letter, label) in letters.items():
                        hit = values == value
                        if sup is not None:
                            hit &= ~sup
                        col[hit] = letter
                        labels = {key: text for key, text in labels.items() if key != value}
                        labels[letter] = label
                    cols[n] = col
                    missing_user[n] = ([STATA_SUPPRESSED] if sup is not None else []) + [
                        letter for letter, _ in letters.values()]
                else:
                    cols[n] = values
            if labels:
                value_labels[n] = labels
        else:
            text = _as_text(s)
            labels = {_text(k): str(v) for k, v in m.value_labels.items()}
            if fmt == "dta" and {_text(x) for x in m.missing_codes} & set(text.tolist()):
                # Stata's missing values are numeric: the code would be released as an ordinary text value
                raise InputError(f"Variable {c} is text with a declared missing code in its cells, which Stata cannot "
                                 "declare (its missing values are numbers); release it as SPSS, CSV or Parquet.")
            if fmt == "sav":
                observed = s.notna().to_numpy() if sup is None else s.notna().to_numpy() & ~sup
                _check_spss_text(c, text, observed)
                # SPSS strings have no system-missing value: declare the empty string user-missing too
                declared_t = [_text(x) for x in m.missing_codes]
                if s.isna().any() and "" not in declared_t:
                    declared_t.append("")
                if sup is not None:
                    _check_code(c, text[~sup], str(code))
                    text[sup] = str(code)
                    labels[str(code)] = SUPPRESSED_LABEL
                    declared_t.append(str(code))
                if len(declared_t) > 3:
                    raise InputError(f"SPSS allows at most 3 missing codes per variable; {c} would need "
                                     f"{len(declared_t)}.")
                if declared_t:
                    missing_ranges[n] = declared_t
            cols[n] = text
            if labels and fmt == "sav":
                value_labels[n] = labels
    frame = pd.DataFrame(cols, index=pd.RangeIndex(len(rel.frame)))
    kwargs: dict[str, Any] = {"column_labels": column_labels, "value_labels": value_labels,
                              "file_label": rel.name[:80]}
    if fmt == "sav":
        kwargs["missing_ranges"] = missing_ranges
    else:
        kwargs["missing_user_values"] = missing_user
    return frame, kwargs


def _csv_frame(rel: Release, options: ExportOptions) -> tuple[pd.DataFrame, dict[str, tuple[str, str]]]:
    """The frame for CSV: suppressed cells empty, or the code (declared in the sidecar) when asked."""
    if not options.csv_code or not rel.suppressed:
        return rel.frame, {}
    code = int(options.suppressed_code)
    frame = rel.frame.copy()
    declared: dict[str, tuple[str, str]] = {}
    for c, sup in rel.suppressed.items():
        s = frame[c]
        if _is_numeric(s):
            _check_code(c, _as_float(s)[~sup], float(code))
            if pd.api.types.is_integer_dtype(s.dtype) or pd.api.types.is_float_dtype(s.dtype):
                frame[c] = s.mask(pd.Series(sup, index=s.index), code)
                continue
        else:
            _check_code(c, _as_text(s)[~sup], str(code))
        out = s.astype(object).copy()
        out[sup] = code
        frame[c] = out
        declared[c] = (str(code), SUPPRESSED_LABEL)
    for c in rel.suppressed:
        declared.setdefault(c, (str(code), SUPPRESSED_LABEL))
    return frame, declared


def sidecar_spec(rel: Release, options: ExportOptions = ExportOptions(), fmt: str = "csv") -> dict[str, Any]:
    """The labels sidecar of a CSV/Parquet release (declares the CSV code for suppressed cells)."""
    extra = _csv_frame(rel, options)[1] if fmt == "csv" else {}
    return labels_spec(rel.meta, list(rel.frame.columns), extra)


def release_stem(name: str, vid: int | None = None) -> str:
    """File name (without extension) of a release: ``<data>_release`` or ``<data>_v<version>``."""
    return f"{name}_release" if vid is None else f"{name}_v{vid}"


def release_bytes(rel: Release, fmt: str, options: ExportOptions = ExportOptions(),
                  stem: str | None = None) -> ExportFile:
    """The release in one format, in memory (file name ``stem`` + extension)."""
    f = format_of(fmt)
    name = f"{stem or release_stem(rel.name)}{f.ext}"
    check_options(rel, options, f.key)
    notes = release_notes(rel.frame, f.key)
    if f.key == "csv":
        frame, _ = _csv_frame(rel, options)
        styles = {c: m.float_style for c, m in rel.meta.items()}  # numbers keep the text they were read with
        return ExportFile(name, csv_bytes(frame, styles), f.mime, notes)
    if f.key == "parquet":
        spec = labels_spec(rel.meta, list(rel.frame.columns))
        meta = {LABELS_METADATA_KEY: json.dumps(spec, ensure_ascii=False, sort_keys=True)} if spec else None
        return ExportFile(name, parquet_bytes(rel.frame, meta), f.mime, notes)
    frame, kwargs = _stat_frame(rel, f.key, options)
    return ExportFile(name, stat_bytes(frame, f.ext, **kwargs), f.mime, notes)


def export_bytes(treated: Dataset, fmt: str, original: Dataset | None = None,
                 options: ExportOptions = ExportOptions(), stem: str | None = None) -> ExportFile:
    """``treated`` released in ``fmt`` ("csv", "parquet", "dta", "sav" or a file name), read back first
    (:func:`_check_reads_back`)."""
    rel = release(treated, original)
    file = release_bytes(rel, fmt, options, stem)
    _check_reads_back(treated, rel, Path(file.name), file.data, _sidecar_of(rel, options, Path(file.name)))
    return file


def _sidecar_of(rel: Release, options: ExportOptions, path: Path) -> dict | None:
    """The labels sidecar's contents of a CSV or Parquet release at ``path`` (None for the other formats)."""
    key = format_of(path.name).key
    return sidecar_spec(rel, options, key) if key in ("csv", "parquet") else None


def _check_reads_back(treated: Dataset, rel: Release, path: Path, data: bytes, spec: dict | None) -> None:
    """Read the release's data ``data`` (named ``path``) back with its labels sidecar, if it has one, as its
    users will (:mod:`kanon_core.release_check`): every released variable must have the missing cells and
    the grouping of records of ``treated``, else :class:`~kanon_core.release_check.ReleaseCheckError`. The
    sidecar is read with the data whether or not it is shipped: the check is of what kanon writes."""
    files = [(path, data)] + ([(sidecar_path(path), labels_json(spec))] if spec else [])
    check_release(treated, files, list(rel.frame.columns))


def labels_file(treated: Dataset, fmt: str = "csv", original: Dataset | None = None,
                options: ExportOptions = ExportOptions(), stem: str | None = None) -> ExportFile | None:
    """The ``<stem>.labels.json`` sidecar for a CSV/Parquet release; None when there is nothing to say."""
    spec = sidecar_spec(release(treated, original), options, format_of(fmt).key)
    if not spec:
        return None
    return ExportFile(f"{stem or release_stem(treated.name)}.labels.json", labels_json(spec), "application/json")


def release_files(treated: Dataset, path: str | Path, original: Dataset | None = None,
                  options: ExportOptions = ExportOptions(), sidecar: bool = True) -> list[tuple[Path, bytes]]:
    """The files of a release at ``path`` (format from its extension), in memory: the data and, for
    CSV/Parquet, the labels sidecar ``<stem>.labels.json`` when there is something to declare or when a
    sidecar of an earlier release is there (it would otherwise be read back with the new data).
    The data is read back before the files are returned (:func:`_check_reads_back`)."""
    path = Path(path)
    f = format_of(path.name)
    rel = release(treated, original)
    files = [(path, release_bytes(rel, f.key, options).data)]
    spec = _sidecar_of(rel, options, path)
    _check_reads_back(treated, rel, path, files[0][1], spec)
    side = sidecar_path(path)
    if sidecar and spec is not None:
        if spec or side.exists():
            files.append((side, labels_json(spec)))
    elif spec is not None:
        refuse_stale_sidecar(path)
    return files


def refuse_stale_sidecar(path: str | Path) -> None:
    """Refuse a CSV or Parquet release written without its labels file next to an earlier release's labels
    file: kanon's readers, and anyone's, would read that file's codes and labels with the new data."""
    path = Path(path)
    side = sidecar_path(path)
    if path.suffix.lower() in (".csv", ".parquet") and side.exists():
        raise InputError(f"A labels file {side.name} of an earlier release is next to the output and would be "
                         "read with this release; remove it, or write the labels with the release.")


def write_release(treated: Dataset, path: str | Path, original: Dataset | None = None,
                  options: ExportOptions = ExportOptions(), sidecar: bool = True) -> list[Path]:
    """Write the release to ``path`` (format from its extension); for CSV/Parquet also the labels sidecar
    ``<stem>.labels.json`` next to it. Returns the paths written.

    Both files are built in memory first and then written together through temporary files
    (:func:`kanon_core.outputs.write_files`): a failure leaves no half-written release and no release
    without its labels.
    """
    from .outputs import write_files

    return write_files(release_files(treated, path, original, options, sidecar))
