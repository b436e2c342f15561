"""Reading and writing microdata files, keeping variable and value labels.

Formats are chosen by file extension. CSV delimiters are sniffed (``,`` ``;`` tab ``|``), so the
semicolon files common in Europe load as they are. SPSS, Stata and SAS files go through pyreadstat,
which returns variable labels, value labels and (SPSS) user-missing codes.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .dataset import Dataset, Roles, VariableMeta, validate_frame
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


def read_table(source: str | os.PathLike | bytes, filename: str | None = None) -> LoadedTable:
    """Read a table from a path or from bytes (an upload; ``filename`` gives the extension).

    Raises :class:`InputError` with a message that names the problem but never the data.
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
    try:
        if fmt == "CSV":
            frame, meta = _read_csv(data if data is not None else path.read_bytes()), {}  # type: ignore[union-attr]
        elif fmt == "Parquet":
            frame, meta = pd.read_parquet(io.BytesIO(data) if data is not None else path), {}
        elif fmt == "Excel":
            frame, meta = pd.read_excel(io.BytesIO(data) if data is not None else path), {}
        else:
            frame, meta = _read_stat(fmt, ext, data, path)
    except InputError:
        raise
    except Exception as exc:  # readers raise many types; report the kind, never the content
        raise InputError(f"Could not read the file as {fmt}: {type(exc).__name__}. Is it really a {fmt} file?") from None
    frame = _normalize(frame)
    validate_frame(frame)
    return LoadedTable(frame=frame, meta=meta, format=fmt)


def load_dataset(
    source: str | os.PathLike | bytes,
    filename: str | None = None,
    roles: Roles | None = None,
    missing: str = "wildcard",
    missing_codes: Mapping[str, tuple[Any, ...]] | None = None,
) -> Dataset:
    """Read a file into a :class:`Dataset` (version 0 of a session)."""
    table = read_table(source, filename)
    meta = dict(table.meta)
    if not isinstance(source, (bytes, bytearray)):
        meta.update(read_labels_sidecar(Path(source), table.frame))
    for col, codes in (missing_codes or {}).items():
        if col not in table.frame.columns:
            raise InputError(f"Missing codes given for unknown variable '{col}'.")
        m = meta.get(col, VariableMeta())
        meta[col] = VariableMeta(m.label, m.value_labels, tuple(m.missing_codes) + tuple(codes))
    name = Path(filename).stem if filename else Path(str(source)).stem
    return Dataset(frame=table.frame, meta=meta, roles=roles or Roles(), missing=missing, name=name)  # type: ignore[arg-type]


def sidecar_path(path: Path) -> Path:
    """``data.csv`` -> ``data.labels.json``: variable and value labels for formats that cannot hold them."""
    return path.with_name(path.stem + ".labels.json")


def read_labels_sidecar(path: Path, frame: pd.DataFrame) -> dict[str, VariableMeta]:
    """Labels from a JSON sidecar ``{var: {"label": ..., "value_labels": {code: text}, "missing_codes": [...]}}``.

    Codes are JSON strings; they are matched to the column's values (numbers or text).
    """
    side = sidecar_path(path)
    if not side.exists():
        return {}
    import json

    try:
        spec = json.loads(side.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"The labels file {side.name} is not valid JSON.") from None
    return labels_from_spec(spec, frame)


def labels_from_spec(spec: Mapping[str, Any], frame: pd.DataFrame) -> dict[str, VariableMeta]:
    out: dict[str, VariableMeta] = {}
    for var, d in spec.items():
        if var not in frame.columns or not isinstance(d, Mapping):
            continue
        numeric = pd.api.types.is_numeric_dtype(frame[var].dtype)
        vl = {_typed_code(k, numeric): str(v) for k, v in (d.get("value_labels") or {}).items()}
        mc = tuple(_typed_code(str(c), numeric) for c in (d.get("missing_codes") or ()))
        out[var] = VariableMeta(label=d.get("label"), value_labels=vl, missing_codes=mc)
    return out


def _typed_code(code: str, numeric: bool) -> Any:
    if not numeric:
        return code
    try:
        f = float(code)
    except ValueError:
        return code
    return int(f) if f.is_integer() else f


def _extension(filename: str) -> str:
    return Path(filename).suffix.lower()


def _read_csv(raw: bytes) -> pd.DataFrame:
    text = _decode(raw)
    if not text.strip():
        raise InputError("The file is empty.")
    if "\x00" in text[:4096]:
        raise InputError("This looks like a binary file, not a CSV text file.")
    sample = text[:65536]
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        sep = dialect.delimiter
    except csv.Error:
        first = sample.splitlines()[0] if sample.splitlines() else ""
        sep = max(",;\t|", key=first.count)
    header = next(csv.reader(io.StringIO(sample), delimiter=sep), [])
    names = [h.strip() for h in header]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:  # pandas would silently rename them to a.1, a.2
        raise InputError(f"Duplicated column names: {', '.join(dupes)}. Rename them so each variable is unique.")
    frame = pd.read_csv(io.StringIO(text), sep=sep, low_memory=False, keep_default_na=True)
    return frame


def _decode(raw: bytes) -> str:
    for enc in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            return raw.decode(enc)
        except UnicodeDecodeError:
            continue
    raise InputError("The file's text encoding is not recognised (try UTF-8).")


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
        vals = [r["lo"] for r in ranges if r.get("lo") == r.get("hi")]
        user_missing[col] = tuple(user_missing.get(col, ())) + tuple(vals)
    meta = {
        str(c): VariableMeta(label=labels.get(c) or None, value_labels=dict(value_labels.get(c, {})),
                             missing_codes=tuple(user_missing.get(c, ())))
        for c in frame.columns
    }
    return frame, meta


def _normalize(frame: pd.DataFrame) -> pd.DataFrame:
    """Column names as str; integer-valued float columns (NA-holding ints) as nullable Int64."""
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    for col in frame.columns:
        s = frame[col]
        if isinstance(s, pd.DataFrame):  # duplicated names: validate_frame reports them
            continue
        if pd.api.types.is_float_dtype(s.dtype):
            v = s.to_numpy()
            finite = v[np.isfinite(v)]
            if len(finite) and np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 2**53):
                frame[col] = s.astype("Int64")
    return frame


# -- writing ---------------------------------------------------------------------------------------------------
WRITE_FORMATS = {".csv": "CSV", ".parquet": "Parquet", ".dta": "Stata", ".sav": "SPSS", ".xlsx": "Excel"}


def write_table(ds: Dataset, path: str | os.PathLike, suppressed_code: int | None = None) -> Path:
    """Write ``ds.release_frame()``; SPSS/Stata keep variable and value labels.

    ``suppressed_code`` (e.g. -99) replaces missing values of the QIs in SPSS/Stata output and is
    declared there as a user-missing value/label, so suppressed cells remain recognisable.
    """
    path = Path(path)
    ext = _extension(path.name)
    if ext not in WRITE_FORMATS:
        raise InputError(f"Cannot write '{ext}'. Use one of: {', '.join(sorted(WRITE_FORMATS))}.")
    frame = ds.release_frame()
    if ext == ".csv":
        frame.to_csv(path, index=False, lineterminator="\n")
    elif ext == ".parquet":
        frame.to_parquet(path, index=False)
    elif ext == ".xlsx":
        frame.to_excel(path, index=False)
    else:
        _write_stat(ds, frame, path, ext, suppressed_code)
    return path


def _write_stat(ds: Dataset, frame: pd.DataFrame, path: Path, ext: str, suppressed_code: int | None) -> None:
    import pyreadstat

    frame = frame.copy()
    value_labels: dict[str, dict[Any, str]] = {}
    column_labels: list[str] = []
    missing_ranges: dict[str, list] = {}
    for col in frame.columns:
        m = ds.meta_of(col)
        column_labels.append(m.label or "")
        labels = {k: v for k, v in m.value_labels.items() if isinstance(k, (int, float, np.integer, np.floating))}
        if suppressed_code is not None and col in ds.roles.qis and pd.api.types.is_numeric_dtype(frame[col].dtype):
            if frame[col].isna().any():
                frame[col] = frame[col].astype("Float64").fillna(suppressed_code)
                labels[suppressed_code] = "Suppressed or missing"
                missing_ranges[col] = [suppressed_code]
        if labels:
            value_labels[col] = {float(k) if ext == ".sav" else int(k): v for k, v in labels.items()}
        if pd.api.types.is_extension_array_dtype(frame[col].dtype) and pd.api.types.is_numeric_dtype(frame[col].dtype):
            frame[col] = frame[col].astype("float64")
    if ext == ".sav":
        pyreadstat.write_sav(frame, str(path), column_labels=column_labels, variable_value_labels=value_labels,
                             missing_ranges=missing_ranges or None)
    else:
        int_labels = {c: {int(k): v for k, v in vl.items()} for c, vl in value_labels.items()}
        pyreadstat.write_dta(frame, str(path), column_labels=column_labels, variable_value_labels=int_labels)
