"""Reading and writing microdata files, keeping variable and value labels.

Formats are chosen by file extension. CSV delimiters are sniffed (``,`` ``;`` tab ``|``), so the
semicolon files common in Europe load as they are. SPSS, Stata and SAS files go through pyreadstat,
which returns variable labels, value labels and (SPSS) user-missing codes.

Text files are read exactly (see :func:`type_column`): a cell is missing only when it is empty (or, later,
matches a declared missing code). Text such as "NA" (Namibia's country code), "None" or "null" stays text,
because treating it as missing would make it a wildcard and hide unique records; :func:`missing_like_counts`
reports such columns so a user can declare them missing on purpose. A column is numeric only when every
cell's text is what the writer gives back (:func:`cell_text`), so "02138", " 7" and "1e3" stay text and a
release reproduces the text of every untreated cell.

Encodings are decided per file, never per cell (see :func:`decode_text`).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .dataset import Dataset, Roles, VariableMeta, no_name_message, validate_frame
from .errors import InputError

READ_FORMATS = {
    ".csv": "CSV",
    ".txt": "CSV",
    ".tsv": "CSV",
    ".parquet": "Parquet",
    ".xlsx": "Excel",
    ".xls": "Excel",
    ".sav": "SPSS",
    ".zsav": "SPSS",
    ".dta": "Stata",
    ".sas7bdat": "SAS",
}


@dataclass(frozen=True)
class LoadedTable:
    frame: pd.DataFrame
    meta: dict[str, VariableMeta]
    format: str


def supported_extensions() -> list[str]:
    return sorted(READ_FORMATS)


def read_table(source: str | os.PathLike | bytes, filename: str | None = None,
               sheet: str | None = None) -> LoadedTable:
    """Read a table from a path or from bytes (an upload; ``filename`` gives the extension).

    ``sheet`` names the sheet of an Excel workbook; a workbook with several sheets needs one, so no
    sheet is ever ignored silently. Raises :class:`InputError` with a message that names the problem
    but never the data.
    """
    if isinstance(source, (bytes, bytearray)):
        if not filename:
            raise InputError("An uploaded file needs a name to tell its format.")
        data: bytes | None = bytes(source)
        path = None
    else:
        path = Path(source)
        filename = filename or path.name
        if not path.exists():
            raise InputError(f"File not found: {path.name}")
        if path.is_dir():
            raise InputError(f"{path.name} is a folder, not a data file.")
        data = None
    ext = _extension(filename)
    if ext not in READ_FORMATS:
        raise InputError(
            f"Unsupported file type '{ext or filename}'. Use one of: {', '.join(supported_extensions())}."
        )
    size = len(data) if data is not None else path.stat().st_size  # type: ignore[union-attr]
    if size == 0:
        raise InputError("The file is empty.")
    fmt = READ_FORMATS[ext]
    if sheet is not None and fmt != "Excel":
        raise InputError("A sheet can only be chosen in an Excel workbook (.xlsx, .xls).")
    try:
        if fmt == "CSV":
            frame, meta = _read_csv(data if data is not None else path.read_bytes())  # type: ignore[union-attr]
        elif fmt == "Parquet":
            frame, meta = _read_parquet(data, path)
        elif fmt == "Excel":
            frame, meta = _read_excel(data, path, sheet), {}
        else:
            frame, meta = _read_stat(fmt, ext, data, path)
    except InputError:
        raise
    except Exception as exc:  # readers raise many types; report the kind, never the content
        raise InputError(f"Could not read the file as {fmt}: {type(exc).__name__}. Is it really a {fmt} file?") from None
    if fmt != "CSV":  # CSV columns are typed exactly by _read_csv; the others carry their own types
        frame = _normalize(frame)
    validate_frame(frame)
    return LoadedTable(frame=frame, meta=meta, format=fmt)


def excel_sheets(source: str | os.PathLike | bytes) -> list[str]:
    """The sheet names of an Excel workbook (a path or its bytes), in the workbook's order."""
    try:
        with pd.ExcelFile(io.BytesIO(bytes(source)) if isinstance(source, (bytes, bytearray)) else source) as xl:
            return [str(n) for n in xl.sheet_names]
    except Exception as exc:  # readers raise many types; report the kind, never the content
        raise InputError(f"Could not read the file as Excel: {type(exc).__name__}. Is it really an Excel file?") from None


def _read_excel(data: bytes | None, path: Path | None, sheet: str | None) -> pd.DataFrame:
    """One sheet of a workbook: cells keep the type they have in the workbook (a text cell "007" stays text,
    a number stays a number), "NA" is not missing, empty cells are missing.

    The sheet is read without pandas' header handling, which renames duplicated and empty names
    ("sex.1", "Unnamed: 1"); the first row is checked like a CSV header instead (:func:`check_header`).
    """
    with pd.ExcelFile(io.BytesIO(data) if data is not None else path) as xl:
        names = [str(n) for n in xl.sheet_names]
        if sheet is None:
            if len(names) > 1:
                raise InputError(f"The workbook has {len(names)} sheets ({', '.join(names)}); choose one "
                                 "(--sheet NAME on the command line).")
            sheet = names[0]
        elif sheet not in names:
            raise InputError(f"The workbook has no sheet '{sheet}'; its sheets are: {', '.join(names)}.")
        # dtype=object: pandas would otherwise convert text cells that look like numbers ("007" -> 7)
        grid = pd.read_excel(xl, sheet_name=sheet, header=None, dtype=object, keep_default_na=False,
                             na_values=[])
    if grid.empty:
        return pd.DataFrame()
    header = [_excel_name(v) for v in grid.iloc[0].tolist()]
    check_header(header)
    if path is None or path.suffix.lower() == ".xlsx":  # uploads are held as bytes; .xls has no formula text here
        _refuse_uncomputed_formulas(io.BytesIO(data) if data is not None else path, sheet, grid, header)
    body = grid.iloc[1:].reset_index(drop=True)
    return pd.DataFrame({name: _excel_column(body[pos]) for pos, name in zip(grid.columns, header, strict=True)},
                        index=body.index)


def _refuse_uncomputed_formulas(source: Any, sheet: str, grid: pd.DataFrame, header: list[str]) -> None:
    """Refuse a sheet whose formula cells hold no computed value: a workbook written by a program that does not
    compute formulas (a script's library) stores the formula alone, and its cells read as empty, which is
    missing -- a value the file does not hold, and a wildcard that makes others look safe. Only the empty
    cells are looked at again, in the workbook's formulas; names the columns and counts, never a formula."""
    empty = grid.iloc[1:].map(lambda v: isinstance(v, str) and v == "").to_numpy(dtype=bool)
    if not empty.any():
        return
    import openpyxl

    try:
        book = openpyxl.load_workbook(source, read_only=True, data_only=False)
    except Exception:  # not an OOXML workbook openpyxl reads (pandas read it): nothing to look at
        return
    counts: dict[int, int] = {}
    try:
        rows = book[sheet].iter_rows(min_row=2, max_row=len(grid), max_col=grid.shape[1], values_only=True)
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if isinstance(value, str) and value.startswith("=") and empty[r, c]:
                    counts[c] = counts.get(c, 0) + 1
    finally:
        book.close()
    if counts:
        named = ", ".join(f"{header[c]} ({n:,})" for c, n in sorted(counts.items()))
        raise InputError(f"Cells with a formula but no computed value in column(s) {named}: the workbook was saved "
                         "by a program that does not compute formulas. Open and save it in a spreadsheet program, "
                         "or save the sheet as CSV.")


def _excel_name(cell: Any) -> str:
    """A header cell as a column name (a number heading a column becomes its text; an empty cell "")."""
    if isinstance(cell, str):
        return cell
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return ""
    return str(cell)


def _excel_column(cells: pd.Series) -> pd.Series:
    """One column of workbook cells, typed by what the cells hold: numbers (or dates, or true/false) when
    every cell is one, text and mixed columns as they are; an empty cell is missing.

    In a mixed column a true/false cell becomes the text the workbook shows (TRUE, FALSE): Python counts
    True equal to 1 and False to 0, so the two would have been one category to every count, while every
    writer and reader, an intruder's included, sees two values."""
    empty = cells.map(lambda v: isinstance(v, str) and v == "").to_numpy(dtype=bool)
    if empty.all():
        return pd.Series(np.nan, index=cells.index, dtype="float64")
    out = cells.astype(object)
    out[empty] = np.nan
    out = out.infer_objects()
    if out.dtype == object:
        flags = out.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
        if flags.any():
            out[flags] = ["TRUE" if v else "FALSE" for v in out[flags]]
    return out


PARQUET_LABELS_KEY = b"kanon.labels"
"""Schema metadata key under which kanon's exports embed the labels sidecar in a Parquet file."""
PARQUET_LABELS_ROLE = "The labels embedded in the Parquet file"
"""How messages about those labels name them (:func:`labels_from_spec`)."""


def _read_parquet(data: bytes | None, path: Path | None) -> tuple[pd.DataFrame, dict[str, VariableMeta]]:
    """A Parquet file and the labels kanon embedded in its schema metadata (a sidecar adds to them:
    :func:`with_sidecar`).

    The column names are checked like a CSV header (:func:`check_header`) before any data is read: pyarrow
    cannot make a table of duplicated names and would fail with its own words.
    """
    import json

    import pyarrow.parquet as pq

    check_header([str(n) for n in pq.read_schema(io.BytesIO(data) if data is not None else path).names])
    table = _dictionaries_decoded(pq.read_table(io.BytesIO(data) if data is not None else path))
    _refuse_nested(table.schema)
    refuse_wide_unsigned([n for n, c in zip(table.column_names, table.columns, strict=True) if beyond_int64(c)])
    frame = _exact_integers(table, table.to_pandas())
    raw = (table.schema.metadata or {}).get(PARQUET_LABELS_KEY)
    if not raw:
        return frame, {}
    try:
        spec = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InputError("The labels embedded in the Parquet file are not valid JSON.") from None
    return frame, labels_from_spec(spec, frame, PARQUET_LABELS_ROLE) if isinstance(spec, Mapping) else {}


def _dictionaries_decoded(table: Any) -> Any:
    """``table`` with its dictionary-encoded columns as plain columns of their values.

    Why: pandas makes a dictionary column a categorical one, which :func:`_normalize` does not treat as text,
    so an empty text cell stayed a category ("") where the same column stored plainly reads it as missing, as
    the CSV reader and the out-of-core engines do (they read a dictionary column's values). A dictionary is
    only how the file stores a column; the values are the same."""
    import pyarrow as pa

    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
    return table


def _exact_integers(table: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """The integer columns with missing values of a Parquet ``table`` as pandas' nullable integers: pyarrow
    gives them as float64, which holds no integer beyond 2**53 exactly (2**53 + 1 would be read as 2**53).
    Smaller values became the same nullable integers through :func:`_normalize` before. Unsigned 64-bit
    columns (their values within the signed range, :func:`refuse_wide_unsigned`) become int64 too, kanon's
    one type of whole numbers: numpy turns uint64 and int64 together into float64, which would round them."""
    import pyarrow as pa

    for name, col in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_integer(col.type) and (col.null_count or pa.types.is_uint64(col.type)):
            col = col.cast(pa.int64())  # (checked: every value fits)
            mapper = {pa.int64(): pd.Int64Dtype()}.get if col.null_count else None
            frame[name] = col.to_pandas(types_mapper=mapper).set_axis(frame.index)
    return frame


def beyond_int64(column: Any) -> bool:
    """True when an arrow ``column`` of unsigned 64-bit integers holds a value above 2**63 - 1."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if not pa.types.is_uint64(t):
        return False
    top = pc.max(column.cast(t) if t != column.type else column).as_py()
    return top is not None and top > _INT64_MAX


def refuse_wide_unsigned(names: list[str]) -> None:
    """Refuse the unsigned 64-bit columns ``names`` whose values go beyond 2**63 - 1 (:func:`beyond_int64`),
    in one line that quotes no value. kanon's whole numbers are signed 64-bit (as its CSV reader reads them,
    and as pandas' nullable integers and the engines' BIGINT hold them): such a value would wrap around or,
    as a float, be rounded, so two codes could become one. Read as text they would keep every digit."""
    if names:
        listed = ", ".join(f"'{n}'" for n in names)
        subject = f"Column {listed} holds" if len(names) == 1 else f"Columns {listed} hold"
        raise InputError(f"{subject} unsigned whole numbers above 2**63 - 1, beyond the 64-bit signed integers "
                         "kanon reads exactly; store them as text (codes) before reading the file.")


def _refuse_nested(schema: Any) -> None:
    """Refuse Parquet columns of lists, records or maps: their cells are not single values that could be
    counted, compared, suppressed or written to SPSS, Stata or CSV as they are."""
    import pyarrow as pa

    def nested(t: Any) -> bool:
        return pa.types.is_nested(t.value_type if pa.types.is_dictionary(t) else t)

    found = [f.name for f in schema if nested(f.type)]
    if found:
        listed = ", ".join(f"'{n}'" for n in found)
        subject, it = (f"Column {listed} holds", "it") if len(found) == 1 else (f"Columns {listed} hold", "them")
        raise InputError(f"{subject} lists or records (nested values); kanon reads only columns of single values "
                         f"(numbers, text, dates, true/false). Flatten or drop {it} before reading the file.")


def load_dataset(
    source: str | os.PathLike | bytes,
    filename: str | None = None,
    roles: Roles | None = None,
    missing: str = "wildcard",
    missing_codes: Mapping[str, tuple[Any, ...]] | None = None,
    sheet: str | None = None,
) -> Dataset:
    """Read a file into a :class:`Dataset` (version 0 of a session).

    ``missing_codes`` given as text (the command line's ``--missing-codes``) are matched to each
    column's type: "-9" is the number -9 in a numeric column and the text "-9" in a text column.

    A labels sidecar next to the file (:func:`read_labels_sidecar`) adds to what the file itself declares
    (SPSS, Stata, SAS, Parquet): :func:`with_sidecar`.
    """
    table = read_table(source, filename, sheet)
    meta = dict(table.meta)
    if not isinstance(source, (bytes, bytearray)):
        meta = with_sidecar(meta, read_labels_sidecar(Path(source), table.frame))
    for col, codes in (missing_codes or {}).items():
        if col not in table.frame.columns:
            raise InputError(f"Missing codes given for unknown variable '{col}'.")
        m = meta.get(col, VariableMeta())
        typed = typed_codes(table.frame[col], codes)
        meta[col] = replace(m, missing_codes=tuple(m.missing_codes) + tuple(c for c in typed if c not in m.missing_codes))
    name = Path(filename).stem if filename else Path(str(source)).stem
    return Dataset(frame=table.frame, meta=meta, roles=roles or Roles(), missing=missing, name=name)  # type: ignore[arg-type]


def with_sidecar(own: Mapping[str, VariableMeta], side: Mapping[str, VariableMeta]) -> dict[str, VariableMeta]:
    """The metadata a file declares itself (``own``) with what its labels sidecar declares (``side``) added:
    the missing codes of both (the file's first), the value labels of both (the sidecar's text where both
    label one code), the sidecar's variable label when it gives one, and the file's float style.

    Why add, not replace: a release written both as ``rel.csv`` (which writes ``rel.labels.json``) and as
    ``rel.sav`` leaves a sidecar next to the ``.sav``, and replacing dropped the ``.sav``'s own user-missing
    code for suppressed cells, which then read back as a category. A code either declares missing is
    missing, so neither file can make the other's missing values real. A conflicting value label is not
    refused: a label changes no count, and the sidecar is the one a user edits.
    """
    out = dict(own)
    for col, s in side.items():
        m = out.get(col, VariableMeta())
        out[col] = VariableMeta(label=s.label or m.label,
                                value_labels={**dict(m.value_labels), **dict(s.value_labels)},
                                missing_codes=tuple(m.missing_codes) + tuple(
                                    c for c in s.missing_codes if c not in m.missing_codes),
                                float_style=m.float_style)
    return out


def sidecar_path(path: Path) -> Path:
    """``data.csv`` -> ``data.labels.json``: variable and value labels for formats that cannot hold them."""
    return path.with_name(path.stem + ".labels.json")


def input_sidecar(path: Path) -> Path:
    """The labels file read with the input ``path``: the one beside the name given (what the officer sees);
    when there is none there and the name is a symbolic link (or lies in a linked folder), the one beside the
    file it resolves to, so that a link reads as its file does. Hard links have no such fallback: a file's other
    names cannot be listed. (:func:`kanon_core.outputs.data_inputs` protects every one of these from outputs.)"""
    side = sidecar_path(path)
    if side.exists() or os.path.realpath(path) == os.path.abspath(path):
        return side
    real = sidecar_path(Path(os.path.realpath(path)))
    return real if real.exists() else side


def read_labels_sidecar(path: Path, frame: pd.DataFrame) -> dict[str, VariableMeta]:
    """Labels from a JSON sidecar ``{var: {"label": ..., "value_labels": {code: text}, "missing_codes": [...]}}``
    (:func:`input_sidecar`).

    Codes are JSON strings; they are matched to the column's values (numbers or text). A sidecar of another
    shape is refused (:func:`labels_from_spec`).
    """
    side = input_sidecar(Path(path))
    if not side.exists():
        return {}
    import json

    where = f"The labels file {side.name}"
    try:
        spec = json.loads(side.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"{where} is not valid JSON.") from None
    check_labels_spec(spec, where)
    return labels_from_spec(spec, frame, where)


SIDECAR_KEYS = ("label", "value_labels", "missing_codes")
"""What a variable's entry of a labels sidecar may say (:func:`labels_from_spec`)."""


def check_labels_spec(spec: Any, where: str) -> None:
    """Refuse a labels spec (a sidecar's parsed JSON) that is not an object of variables whose entries have the
    shape :func:`labels_from_spec` reads, in one line naming ``where`` (the file's role) and the variable. For
    every reader of a labels file, so each refuses what the others refuse."""
    if not isinstance(spec, Mapping):
        raise InputError(f"{where} must be a JSON object with one entry per variable ({_json_kind(spec)} found).")
    for var, d in spec.items():
        _sidecar_entry(var, d, where)


def labels_from_spec(spec: Mapping[str, Any], frame: pd.DataFrame,
                     where: str = "The labels of the file") -> dict[str, VariableMeta]:
    """The labels and declared missing codes of a sidecar's (or a Parquet file's embedded) ``spec``, for the
    columns of ``frame`` it names; ``where`` names the spec's role in messages ("The labels file x.labels.json").

    Every entry is checked for its shape first, those of variables the frame does not have too, so that
    every reader (in memory, or an engine typing only some columns) gives one verdict on one file. Why: a
    wrong shape was read in ways nobody meant, and some of them hide records: a ``"missing_codes"`` given as
    one text ("-9") was iterated character by character, declaring "-" and "9" missing, so real values
    became wildcards. A lone text is therefore refused, not read as one code: the format says a list, and a
    guess either way could be wrong for another file (is "-9,-8" one code or two?). Entries may omit any key
    and give ``null`` for one; keys other than :data:`SIDECAR_KEYS` are left to other tools. Messages name
    the variable and what is wrong, never a code or a label (they can be values of the data).
    """
    out: dict[str, VariableMeta] = {}
    for var, d in spec.items():
        label, value_labels, codes = _sidecar_entry(var, d, where)
        if var not in frame.columns:
            continue
        numeric = pd.api.types.is_numeric_dtype(frame[var].dtype)
        vl = {_typed_code(k, numeric): v for k, v in value_labels.items()}
        mc = tuple(_typed_code(str(c), numeric) for c in codes)
        out[var] = VariableMeta(label=label, value_labels=vl, missing_codes=mc)
    return out


def _sidecar_entry(var: str, d: Any, where: str) -> tuple[str | None, dict[str, str], list[Any]]:
    """One variable's entry of a labels spec as (label, value labels, missing codes), or an
    :class:`InputError` saying in one line which part of it has the wrong shape."""
    at = f"{where}: variable '{var}'"
    if not isinstance(d, Mapping):
        keys = ", ".join(f'"{k}"' for k in SIDECAR_KEYS)
        raise InputError(f"{at} must be given an object (with {keys}), not {_json_kind(d)}.")
    label = d.get("label")
    if label is not None and not isinstance(label, str):
        raise InputError(f"{at}: \"label\" must be a text, not {_json_kind(label)}.")
    value_labels = d.get("value_labels")
    if value_labels is None:
        value_labels = {}
    if not isinstance(value_labels, Mapping):
        raise InputError(f"{at}: \"value_labels\" must be an object of codes and their labels, "
                         f"not {_json_kind(value_labels)}.")
    odd_labels = [v for v in value_labels.values() if not isinstance(v, str)]
    if odd_labels:
        raise InputError(f"{at}: every value label must be a text (one is {_json_kind(odd_labels[0])}).")
    codes = d.get("missing_codes")
    if codes is None:
        codes = []
    if not isinstance(codes, list):
        raise InputError(f"{at}: \"missing_codes\" must be a list of codes, not {_json_kind(codes)} "
                         "(a single code is written as a list of one).")
    odd = [c for c in codes if isinstance(c, bool) or not isinstance(c, (str, int, float))]
    if odd:
        raise InputError(f"{at}: every missing code must be a text or a number (one is {_json_kind(odd[0])}).")
    return label, dict(value_labels), codes


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words, for a message about a file's shape (never the value itself)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def typed_codes(series: pd.Series, codes: Any) -> tuple[Any, ...]:
    """Codes (text or numbers) as values of ``series``: numbers in a numeric column, text otherwise."""
    numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
    out: list[Any] = []
    for c in codes:
        v = _typed_code(c, numeric) if isinstance(c, str) else c
        if not numeric and not isinstance(v, str):
            v = cell_text(v)
        if v not in out:
            out.append(v)
    return tuple(out)


def _typed_code(code: str, numeric: bool) -> Any:
    """A code's text as a value of a numeric column (an integer when whole), or the text itself."""
    if not numeric:
        return code
    t = code.strip()
    if re.fullmatch(r"[-+]?[0-9]+", t):
        return int(t)
    try:
        f = float(t)
    except ValueError:
        return code
    if not np.isfinite(f):
        return code
    return int(f) if f.is_integer() else f


def _extension(filename: str) -> str:
    return Path(filename).suffix.lower()


def _read_csv(raw: bytes) -> tuple[pd.DataFrame, dict[str, VariableMeta]]:
    """A CSV file with every cell read as its exact text, then typed column by column (:func:`type_column`);
    the metadata records the float style of columns not in the default one."""
    text = decode_text(raw)
    if not text.strip():
        raise InputError("The file is empty.")
    if "\x00" in text:  # anywhere: a NUL is no text (and EXTRA_FIELD relies on no name holding one)
        raise InputError(f"{BINARY_FILE} (UTF-16 needs a byte-order mark).")
    sample = text[:65536]
    lines = sample.splitlines()
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        sep = dialect.delimiter
    except csv.Error:
        first = lines[0] if lines else ""
        sep = max(",;\t|", key=first.count)
    header = header_record(_lines(text), sep)
    check_header(header)  # pandas would silently rename duplicated and empty names (a.1, "Unnamed: 1")
    try:
        frame = _cells(text, sep)
    except (pd.errors.ParserWarning, pd.errors.ParserError) as exc:
        kept = _without_empty_extra_fields(text, sep, len(header))
        if kept is None:
            raise InputError(_too_many_fields(text, sep, len(header)) or _parser_problem(str(exc))) from None
        frame = kept
    typed = {col: type_column(frame[col]) for col in frame.columns}
    meta = {str(col): VariableMeta(float_style=style) for col, (_, style) in typed.items() if style != "repr"}
    return pd.DataFrame({col: s for col, (s, _) in typed.items()}, index=frame.index), meta


BINARY_FILE = "This looks like a binary file, not a CSV text file"
"""The words for a CSV file holding a NUL character, wherever it is: no text file holds one, and a cell
holding one would be read as text by some readers and cut short by others. The in-memory reader and the
out-of-core engines (:func:`kanon_core.engines.csv_checks.check_quotes_closed`) both refuse such a file."""


_LINE_END = re.compile(r"\r\n|\n|\r")


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` with their ends (LF, CRLF or CR), one at a time: a reader that needs only the
    first record does not split (or copy) the whole file."""
    start = 0
    for end in _LINE_END.finditer(text):
        yield text[start:end.end()]
        start = end.end()
    if start < len(text):
        yield text[start:]


def header_record(lines: Iterable[str], sep: str) -> list[str]:
    """The first record of a CSV text (``lines`` keep their line ends), read in full however long it is:
    a header of thousands of names runs past any sample, and a quoted name may hold the delimiter or a
    line break."""
    try:
        return next(csv.reader(lines, delimiter=sep), [])
    except csv.Error:  # a name (or a quoted name never closed) longer than the csv module's field limit
        raise InputError("The header cannot be read: a quoted name is never closed, or a name is far too long; "
                         "check the quotes.") from None


def check_header(names: list[str]) -> None:
    """Refuse a header with a column that has no name or a name used twice (compared without surrounding
    spaces): readers would invent names ("Unnamed: 1") or rename ("sex.1"), and the variables the user
    names would no longer be the file's. Every column without a name is given by its position."""
    unnamed = [position for position, name in enumerate(names, start=1) if not name.strip()]
    if unnamed:
        raise InputError(no_name_message(unnamed, " in the header"))
    counts = Counter(n.strip() for n in names)
    dupes = sorted(n for n, times in counts.items() if times > 1)
    if dupes:
        raise InputError(f"Duplicated column names: {', '.join(dupes)}. Rename them so each variable is unique.")


def _cells(text: str, sep: str, names: list[str] | None = None) -> pd.DataFrame:
    """Every cell of a CSV text as its exact text; a record with a field beyond the header (beyond
    ``names``, when given in place of the header's) raises (pandas would drop it with a warning, here an
    error), but for empty ones after a first record that ends with a delimiter (``index_col=False``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        if names is None:
            return pd.read_csv(io.StringIO(text), sep=sep, low_memory=False, keep_default_na=False, **_AS_TEXT)
        # the header read as a record (pandas would size every record by it), then left out
        frame = pd.read_csv(io.StringIO(text), sep=sep, low_memory=False, header=None, names=names,
                            keep_default_na=False, **_AS_TEXT)
        return frame.iloc[1:].reset_index(drop=True)


_AS_TEXT: dict[str, Any] = {"dtype": object, "na_filter": False, "index_col": False}
"""How the reader has pandas read a CSV text, with ``keep_default_na=False`` written at each call: every cell as
its exact text ("NA" stays text), no column taken as the index."""


def _without_empty_extra_fields(text: str, sep: str, n_header: int) -> pd.DataFrame | None:
    """The cells of a CSV text whose records have fields beyond the header's, when those are all empty (a
    delimiter at a record's end, as some exports write on some records), with them left out; else None:
    there are none, or one holds text, which is never dropped.

    Why: the out-of-core engines read such fields as nothing (DuckDB and Polars drop them), and pandas only
    when the first record has one; every reader must read a file alike. pandas reads the file again with
    names for the extra fields (as many as the widest record has), so every cell is read by the same
    tokenizer as any other file's."""
    try:
        widest = max((len(r) for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep)), default=0)
        if widest <= n_header:
            return None
        header = list(pd.read_csv(io.StringIO(text), sep=sep, nrows=0, keep_default_na=False, **_AS_TEXT).columns)
    except (csv.Error, pd.errors.ParserWarning, pd.errors.ParserError):
        return None
    if len(header) != n_header:
        return None
    extra = [f"{EXTRA_FIELD}{i}" for i in range(widest - n_header)]
    try:
        frame = _cells(text, sep, header + extra)
    except (pd.errors.ParserWarning, pd.errors.ParserError):
        return None
    if frame[extra].fillna("").ne("").any(axis=None):
        return None
    return frame[header]


EXTRA_FIELD = "\x00extra field "
"""The names given to fields beyond the header while they are read (no header name holds a NUL: the
reader refuses such files)."""


def _too_many_fields(text: str, sep: str, n_header: int) -> str | None:
    """The message for the first record with text in a field beyond the header's (such a field is never
    dropped; empty ones are, :func:`_without_empty_extra_fields`), or None."""
    try:
        for number, row in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter=sep), start=1):
            if any(row[n_header:]):
                return (f"Record {number - 1} (line {number} when no cell holds a line break) has {len(row)} "
                        f"fields but the header names {n_header}; check the delimiter and the quotes.")
    except csv.Error:
        return None
    return None


def _parser_problem(message: str) -> str:
    """pandas' tokenizer message reduced to its kind and row number (it may quote no data, but be sure)."""
    where = re.search(r"(row|line) (\d+)", message)  # pandas counts rows from 0 (the header), lines from 1
    at = f" near line {int(where.group(2)) + (where.group(1) == 'row')}" if where else ""
    kind = "a quoted cell is never closed" if "EOF" in message else "the records do not split into the header's fields"
    return f"The file cannot be read as CSV{at}: {kind}; check the delimiter and the quotes."


_CANONICAL_INT = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


FLOAT_STYLES = ("repr", "plain")


def float_text(value: float, style: str = "repr") -> str:
    """A float in Python's shortest round-trip form (``repr``: "0.1", "2.0", "1e+16"), or with
    ``style="plain"`` the same without a trailing ".0" ("2"), as R and Stata write. A release writes this
    for every float but the infinities and -0.0 (:func:`float_cell`)."""
    text = repr(float(value))
    return text[:-2] if style == "plain" and text.endswith(".0") else text


INFINITY_TEXTS = ("Infinity", "-Infinity")
"""How a release writes the infinities (see :func:`float_cell`)."""


def float_cell(value: float, style: str = "repr") -> str:
    """A float as a release writes it in a CSV cell: :func:`float_text`, except for the two values whose
    Python text the reader could not read back as that number.

    * An infinity is written "Infinity" or "-Infinity", not Python's "inf": "inf" is also what a person
      writes for a word ("inf" for inferior, informal, ...) and stays text (:func:`type_column`), so the
      writer spells the name out, as Java, JavaScript, PostgreSQL and Spark write it and as pandas, R and
      DuckDB read it back.
    * A zero is written without a sign ("0.0" for -0.0): -0.0 equals 0.0 and is one value in every count
      kanon makes (pandas, DuckDB and Polars group them together), so a release writing "-0.0" would show a
      distinction its risk measures never saw, and the text would read back as a category apart.
    """
    f = float(value)
    if math.isinf(f):
        return INFINITY_TEXTS[f < 0]
    return float_text(f + 0.0, style)  # (-0.0 + 0.0 is 0.0)


def cell_text(value: Any, float_style: str = "repr") -> str:
    """The text a release writes for one observed value: integers without ".0", floats as
    :func:`float_cell` (in the column's style), text unchanged.

    The reader keeps a column numeric only when every cell's text equals this (see :func:`type_column`),
    so writing an untreated column gives back its exact text.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return float_cell(value, float_style)
    return str(value)


def type_column(text: pd.Series) -> tuple[pd.Series, str]:
    """Type one column of cell texts exactly; empty cells are missing, nothing else is. Returns the
    column and its float style (see :func:`float_text`; "repr" for columns that are not floats).

    * integer (``int64``, or nullable ``Int64`` with empty cells) when every non-empty cell is a canonical
      integer text (no sign but "-", no leading zeros, no spaces, no exponent) within 64 bits;
    * float (``float64``, empty cells NaN) when every non-empty cell is the text :func:`float_cell` writes
      for a float in one style for the whole column: "repr" ("1.5", "2.0") or else "plain" ("1.5",
      "2"); never "1e3", "1.50" or " 1.5", and never "2.0" and "2" in one column;
    * text otherwise, each cell's text unchanged ("02138", " 7", "NA"), empty cells NaN.

    One rule decides the edges of the floats, the writer's: a cell is a number only when the writer writes
    that number so. Infinities are numbers as "Infinity" and "-Infinity" (what a release writes for them,
    so a released float column reads back as the same floats); a person's "inf", "Inf", "infinity" or
    "+Infinity" stays text, as it always has ("inf" is as often a word or an abbreviation as a number, and
    reading it as one would turn a column of codes into numbers). "-0.0" stays text (the writer writes no
    sign on a zero: -0.0 equals 0.0, so "-0.0" and "0.0" would become one category), and so does "nan" (a
    missing value is written as an empty cell, and "nan" is a value unless declared missing).
    """
    values = text.to_numpy(dtype=object)
    codes, uniques = pd.factorize(values)
    uniques = np.asarray(uniques, dtype=object)
    empty_u = uniques == ""
    present = uniques[~empty_u].tolist()
    empty = (codes < 0) | empty_u[codes]  # (codes < 0: a short record's absent fields)
    if not present:
        return pd.Series(np.nan, index=text.index, dtype="float64"), "repr"
    ints = _as_ints(present)
    if ints is not None:
        table = np.zeros(len(uniques), dtype=np.int64)
        table[~empty_u] = ints
        out = table[codes]
        if empty.any():
            return pd.Series(pd.arrays.IntegerArray(out, empty), index=text.index), "repr"
        return pd.Series(out, index=text.index), "repr"
    for style in FLOAT_STYLES:
        floats = _as_floats(present, style)
        if floats is not None:
            table_f = np.full(len(uniques), np.nan)
            table_f[~empty_u] = floats
            out_f = table_f[codes]
            out_f[empty] = np.nan
            return pd.Series(out_f, index=text.index), style
    cells = values.copy()
    cells[empty] = np.nan
    return pd.Series(cells, index=text.index, dtype="str"), "repr"


def _as_ints(texts: list[str]) -> np.ndarray | None:
    out = []
    for t in texts:
        if not _CANONICAL_INT.fullmatch(t) or t == "-0":
            return None
        v = int(t)
        if not _INT64_MIN <= v <= _INT64_MAX:
            return None
        out.append(v)
    return np.array(out, dtype=np.int64)


def _as_floats(texts: list[str], style: str) -> np.ndarray | None:
    out = []
    for t in texts:
        try:
            f = float(t)
        except ValueError:
            return None
        if f != f or float_cell(f, style) != t:
            return None  # (NaN is written as an empty cell; "-0.0" as "0.0": see type_column)
        out.append(f)
    return np.array(out, dtype=np.float64)


MISSING_LIKE_TEXT = frozenset({
    "na", "n/a", "n.a.", "n.a", "#n/a", "nan", "null", "none", "nil", "missing", ".", "-", "--", "?", "*",
})
"""Texts that some programs treat as missing (compared ignoring case and surrounding spaces). kanon never
does on its own; :func:`missing_like_counts` reports them so they can be declared missing on purpose."""


def is_missing_like(value: Any) -> bool:
    """True for text that often means "missing" ("NA", "n/a", "NULL", "None", "nan", ".", "-", "?" ...)."""
    return isinstance(value, str) and value.strip().lower() in MISSING_LIKE_TEXT


def missing_like_values(ds: Dataset) -> dict[str, dict[str, int]]:
    """Per text column, the missing-like texts it holds (not already declared missing) and their counts."""
    out: dict[str, dict[str, int]] = {}
    for col in ds.columns:
        s = ds.frame[col]
        if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_datetime64_any_dtype(s.dtype):
            continue
        declared = set(ds.meta_of(col).missing_codes)
        counts = s.value_counts(dropna=True)
        found = {str(v): int(n) for v, n in counts.items()
                 if is_missing_like(v) and v not in declared}
        if found:
            out[col] = dict(sorted(found.items()))
    return out


def missing_like_counts(ds: Dataset) -> dict[str, int]:
    """Per column, the number of cells holding missing-like text (see :func:`missing_like_values`)."""
    return {col: sum(found.values()) for col, found in missing_like_values(ds).items()}


def missing_like_notice(counts: Mapping[str, int]) -> str:
    """The one-line notice about missing-like text (names columns and counts, never values)."""
    listed = ", ".join(f"{col} ({n:,})" for col, n in counts.items())
    return (f"columns with text that often means missing (not treated as missing): {listed}; "
            "declare with --missing-codes")


_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_text(raw: bytes) -> str:
    """The text of a file, with one encoding for the whole file (never cell by cell).

    * a byte-order mark decides (UTF-8, UTF-16, UTF-32); the file must then decode completely;
    * otherwise UTF-8 when the whole file is valid UTF-8;
    * otherwise, when the file holds no valid UTF-8 multi-byte character at all, it is a single-byte file
      and is decoded as Windows-1252 (Latin-1 when it uses bytes Windows-1252 leaves undefined);
    * a file that is UTF-8 except for some stray bytes mixes encodings: guessing would turn every
      "Montréal" into "MontrÃ©al", so it stops with the number of the first line that is not UTF-8.
    """
    for bom, enc in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(enc)
            except UnicodeDecodeError as exc:
                # the UTF-8 decoder drops the mark before decoding, so its offsets start after it
                offset = exc.start + len(raw) - len(exc.object)
                raise InputError(f"Line {_line_of(raw, offset, enc)} is not valid {enc.upper().replace('-SIG', '')} "
                                 "although the file starts with its byte-order mark.") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    lenient = raw.decode("utf-8", errors="surrogateescape")
    if any(ord(ch) > 0x7F and not 0xDC80 <= ord(ch) <= 0xDCFF for ch in lenient):
        raise InputError(f"Line {_line_of(raw, first_bad)} is not valid UTF-8 while other lines are: the file "
                         "mixes text encodings. Save it again as UTF-8.")
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _line_of(raw: bytes, offset: int, encoding: str = "utf-8") -> int:
    """The 1-based line number of byte ``offset`` (``\\n``, ``\\r\\n`` or ``\\r`` line ends) in a file of
    this encoding (the text before the offset is decoded, so UTF-16 counts right)."""
    head = raw[:offset].decode(encoding, errors="replace")
    lf = head.count("\n")
    return lf + 1 if lf else head.count("\r") + 1


def _read_stat(fmt: str, ext: str, data: bytes | None, path: Path | None) -> tuple[pd.DataFrame, dict[str, VariableMeta]]:
    import tempfile

    import pyreadstat

    readers = {"SPSS": pyreadstat.read_sav, "Stata": pyreadstat.read_dta, "SAS": pyreadstat.read_sas7bdat}
    reader = readers[fmt]
    if data is not None:
        # pyreadstat reads from paths only: a private temporary file, removed at once.
        with tempfile.TemporaryDirectory(prefix="kanon-") as tmp:
            p = Path(tmp) / f"upload{ext}"
            p.write_bytes(data)
            os.chmod(p, 0o600)
            frame, meta = _call_reader(reader, fmt, p)
    else:
        frame, meta = _call_reader(reader, fmt, path)  # type: ignore[arg-type]
    return frame, meta


def _call_reader(reader, fmt: str, path: Path) -> tuple[pd.DataFrame, dict[str, VariableMeta]]:
    """The frame and metadata pyreadstat reads; SPSS user-missing values are kept as values and declared
    missing codes (:func:`spss_missing_codes`), so a release can write them back."""
    kwargs: dict[str, Any] = {}
    if fmt == "SPSS":
        kwargs["user_missing"] = True
    frame, m = reader(str(path), **kwargs)
    labels = dict(zip(m.column_names, m.column_labels or [None] * len(m.column_names), strict=False))
    value_labels = {col: m.value_labels.get(lab, {}) for col, lab in (m.variable_to_label or {}).items()}
    user_missing: dict[str, tuple[Any, ...]] = {}
    for col, specs in (getattr(m, "missing_user_values", None) or {}).items():
        user_missing[col] = tuple(specs)
    for col, ranges in (getattr(m, "missing_ranges", None) or {}).items():
        if col in frame.columns:
            known = user_missing.get(col, ())
            user_missing[col] = tuple(known) + tuple(c for c in spss_missing_codes(frame[col], ranges)
                                                     if c not in known)
    meta = {
        str(c): VariableMeta(label=labels.get(c) or None, value_labels=dict(value_labels.get(c, {})),
                             missing_codes=tuple(user_missing.get(c, ())))
        for c in frame.columns
    }
    return frame, meta


def spss_missing_codes(column: pd.Series, ranges: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The missing codes an SPSS variable declares, as pyreadstat gives them (``{"lo": .., "hi": ..}`` each), as
    values of ``column``: a discrete value (lo equal to hi) as it is, a range (``-9 THRU -7``, ``LO THRU -1``)
    as every distinct value of the column inside it, bounds included, in ascending order.

    Why values, not the range: kanon declares missing codes as a list of values (:class:`VariableMeta`),
    which every reader of them matches by equality (risk counts and estimates through
    :func:`~kanon_core.dataset.missing_mask`, the labels sidecar, the SPSS, Stata and CSV releases), and a
    range over floats has no finite list of values. The values present are what the data can hold missing,
    so every count and estimate is that of the same file declaring them one by one; a range was dropped
    before, and its values counted as categories. A release to SPSS declares the values found (at most 3,
    as SPSS allows), not the range; a value a later treatment brings into the range is not missing."""
    out: list[Any] = []
    present: list[Any] | None = None
    for r in ranges:
        lo, hi = r.get("lo"), r.get("hi")
        if lo == hi:
            found = [lo]
        else:
            if present is None:
                present = sorted(pd.unique(column.dropna().to_numpy()).tolist(), key=lambda v: (type(v).__name__, v))
            found = [v for v in present if _within(v, lo, hi)]
        out.extend(v for v in found if v not in out)
    return out


def _within(value: Any, lo: Any, hi: Any) -> bool:
    """``lo <= value <= hi`` for values of one kind (numbers, or text); False across kinds."""
    try:
        return bool(lo <= value <= hi)
    except TypeError:
        return False


def _normalize(frame: pd.DataFrame) -> pd.DataFrame:
    """Column names as str; integer-valued float columns (NA-holding ints; not with an infinity) as nullable
    Int64; empty text cells missing (Stata and SPSS strings have no other missing value), other text kept."""
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    for col in frame.columns:
        s = frame[col]
        if isinstance(s, pd.DataFrame):  # duplicated names: validate_frame reports them
            continue
        if pd.api.types.is_float_dtype(s.dtype):
            v = s.to_numpy()
            finite = v[np.isfinite(v)]
            if len(finite) and np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 2**53) \
                    and not np.isinf(v).any():  # an infinity is no integer: the column stays float
                frame[col] = s.astype("Int64")
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            empty = s.map(lambda v: isinstance(v, str) and v == "").to_numpy(dtype=bool)
            if empty.any():
                frame[col] = s.where(~empty)
    return frame


# -- writing ---------------------------------------------------------------------------------------------------
BYTE_STABLE_FORMATS = (".csv", ".parquet", ".dta", ".sav")
"""Formats whose bytes depend only on the data: the same release written twice is identical. Excel
files embed creation times in their zip container and document properties, so they are not."""

# SPSS and Stata headers hold the file's creation time; ReadStat (under pyreadstat) stamps the current
# clock and pyreadstat offers no way to set it. The writers below overwrite it with this fixed moment
# (the Unix epoch), so a release replayed from a recipe is byte-identical to the one exported before.
FIXED_SAV_DATE, FIXED_SAV_TIME = b"01 Jan 70", b"00:00:00"
FIXED_DTA_TIMESTAMP = b"01 Jan 1970 00:00"
_SAV_DATE = re.compile(rb"\d\d [A-Z][a-z]{2} \d\d")
_SAV_TIME = re.compile(rb"\d\d:\d\d:\d\d")
_DTA_TIMESTAMP = re.compile(rb"\d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d")


def csv_bytes(frame: pd.DataFrame, float_styles: Mapping[str, str] | None = None) -> bytes:
    """UTF-8 CSV, comma-separated, ``\\n`` line ends, no index, shortest round-trip floats, empty = missing.

    Deterministic: the bytes depend only on the frame (column order, values and dtypes) and the float
    style of each column (``float_styles``, default "repr"; see :func:`float_text`). Every observed value is
    written as :func:`cell_text` gives it, the form the reader accepts as a number, so an untreated cell
    read by :func:`read_table` is written back with its exact text.

    In a frame of one column a cell made only of spaces and tabs is quoted, as an empty one is: unquoted, its
    line would be read back as a blank line and the record lost. pandas quotes only cells holding the
    delimiter, a quote or a line break (and an empty one alone on its line), so such a frame is written
    cell by cell, each quoted when pandas would quote it or when it is only spaces and tabs (the out-of-core
    engines write one column the same way).
    """
    styles = float_styles or {}
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c].dtype)]
    if floats:
        frame = frame.assign(**{str(c): _float_texts(frame[c], styles.get(c, "repr")) for c in floats})
    one = frame.iloc[:, 0] if len(frame.columns) == 1 else None
    spaces = False
    if one is not None and not pd.api.types.is_numeric_dtype(one.dtype):
        try:
            spaces = bool(one.str.fullmatch(r"[ \t]+", na=False).any())
        except AttributeError:  # a column without text (dates, say): no cell of spaces
            spaces = False
    if one is not None and spaces:

        def field(text: str) -> str:
            if not text.strip(" \t") or any(ch in text for ch in ',"\r\n'):
                return '"' + text.replace('"', '""') + '"'
            return text

        cells = ["" if v is None or (not isinstance(v, str) and pd.isna(v)) else cell_text(v)
                 for v in one.tolist()]
        return "".join(field(t) + "\n" for t in [str(frame.columns[0]), *cells]).encode("utf-8")
    buf = io.StringIO()
    frame.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue().encode("utf-8")


def _float_texts(s: pd.Series, style: str) -> pd.Series:
    """A float column as the text :func:`cell_text` writes (missing cells empty)."""
    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    texts = np.array([float_cell(x, style) for x in v.tolist()], dtype=object)
    texts[np.isnan(v)] = ""
    return pd.Series(texts, index=s.index, dtype=object)


def parquet_bytes(frame: pd.DataFrame, metadata: Mapping[str, str] | None = None) -> bytes:
    """Parquet through pyarrow; ``metadata`` is added to the schema's key-value metadata (e.g. labels).

    pyarrow writes no time stamps, so the bytes depend only on the frame, the metadata and the versions
    of pandas and pyarrow recorded in the file.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode("utf-8"): v.encode("utf-8") for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def write_stat(frame: pd.DataFrame, path: str | os.PathLike, *, column_labels: list[str] | None = None,
               value_labels: Mapping[str, Mapping[Any, str]] | None = None,
               missing_ranges: Mapping[str, list] | None = None,
               missing_user_values: Mapping[str, list[str]] | None = None, file_label: str = "") -> Path:
    """Write an SPSS ``.sav`` or Stata ``.dta`` file with pyreadstat, with a fixed creation time.

    ``missing_ranges`` (SPSS: user-missing values) and ``missing_user_values`` (Stata: extended missing
    letters ``a``..``z`` placed in the column) are passed through. The frame must already hold types the
    formats accept (float/int, or str).
    """
    import pyreadstat

    path = Path(path)
    ext = _extension(path.name)
    if ext == ".sav":
        pyreadstat.write_sav(frame, str(path), file_label=file_label, column_labels=column_labels,
                             variable_value_labels=dict(value_labels or {}) or None,
                             missing_ranges=dict(missing_ranges or {}) or None)
    elif ext == ".dta":
        pyreadstat.write_dta(frame, str(path), file_label=file_label, column_labels=column_labels,
                             variable_value_labels=dict(value_labels or {}) or None,
                             missing_user_values=dict(missing_user_values or {}) or None)
    else:
        raise InputError(f"Cannot write '{ext}' as SPSS or Stata.")
    fix_timestamp(path)
    return path


def fix_timestamp(path: Path) -> None:
    """Overwrite the creation time in an SPSS/Stata header with the fixed epoch (same length, in place).

    The header is checked against the format's layout first; a file that does not match is left as it is.
    """
    with open(path, "r+b") as fh:
        head = fh.read(512)
        if head[:4] in (b"$FL2", b"$FL3"):
            # record type 4 + product 60 + layout, case size, compression, weight, cases 4 x 5 + bias 8 = 92
            if _SAV_DATE.fullmatch(head[92:101]) and _SAV_TIME.fullmatch(head[101:109]):
                fh.seek(92)
                fh.write(FIXED_SAV_DATE + FIXED_SAV_TIME)
            return
        tag = b"<timestamp>"
        at = head.find(tag)
        if at >= 0 and head[at + len(tag)] == 17:
            start = at + len(tag) + 1
            if _DTA_TIMESTAMP.fullmatch(head[start:start + 17]):
                fh.seek(start)
                fh.write(FIXED_DTA_TIMESTAMP)


def stat_bytes(frame: pd.DataFrame, ext: str, **kwargs: Any) -> bytes:
    """:func:`write_stat` into memory (pyreadstat writes paths only: a private temporary file, removed)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kanon-") as tmp:
        p = Path(tmp) / f"release{ext}"
        write_stat(frame, p, **kwargs)
        return p.read_bytes()


def labels_spec(meta: Mapping[str, VariableMeta], columns: list[str],
                extra_missing: Mapping[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """The JSON sidecar (see :func:`read_labels_sidecar`) for ``columns``: labels and missing codes.

    ``extra_missing[col] = (code, label)`` adds a declared missing code with its value label
    (a CSV release's code for suppressed cells). Columns without any metadata are left out.
    """
    out: dict[str, Any] = {}
    for col in columns:
        m = meta.get(col, VariableMeta())
        d: dict[str, Any] = {}
        if m.label:
            d["label"] = m.label
        vl = {_code_text(k): str(v) for k, v in m.value_labels.items()}
        mc = [_code_text(c) for c in m.missing_codes]
        if extra_missing and col in extra_missing:
            code, label = extra_missing[col]
            vl[code] = label
            if code not in mc:
                mc.append(code)
        if vl:
            d["value_labels"] = vl
        if mc:
            d["missing_codes"] = mc
        if d:
            out[col] = d
    return out


def labels_json(spec: Mapping[str, Any]) -> bytes:
    """The sidecar's bytes: stable key order as given, 2-space indent, UTF-8, final newline."""
    import json

    return (json.dumps(spec, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _code_text(code: Any) -> str:
    if isinstance(code, (float, np.floating)) and float(code).is_integer():
        return str(int(code))
    return str(code)
