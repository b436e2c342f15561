"""Reading and writing microdata files, keeping variable and value labels.

Formats are chosen by file extension. CSV delimiters are sniffed (``,`` ``;`` tab ``|``), so the
semicolon files common in Europe load as they are. SPSS, Stata and SAS files go through pyreadstat,
which returns variable labels, value labels and (SPSS) user-missing codes.
"""

from __future__ import annotations

import csv
import io
import os
import re
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
            frame, meta = _read_parquet(data, path)
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


PARQUET_LABELS_KEY = b"kanon.labels"
"""Schema metadata key under which kanon's exports embed the labels sidecar in a Parquet file."""


def _read_parquet(data: bytes | None, path: Path | None) -> tuple[pd.DataFrame, dict[str, VariableMeta]]:
    """A Parquet file and the labels kanon embedded in its schema metadata (a sidecar still wins)."""
    import json

    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data) if data is not None else path)
    frame = table.to_pandas()
    raw = (table.schema.metadata or {}).get(PARQUET_LABELS_KEY)
    if not raw:
        return frame, {}
    try:
        spec = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InputError("The labels embedded in the Parquet file are not valid JSON.") from None
    return frame, labels_from_spec(spec, frame) if isinstance(spec, Mapping) else {}


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


def write_table(ds: Dataset, path: str | os.PathLike, suppressed_code: int | None = None) -> Path:
    """Write ``ds.release_frame()``; SPSS/Stata keep variable and value labels.

    ``suppressed_code`` (e.g. -99) replaces missing values of the QIs in SPSS/Stata output and is
    declared there as a user-missing value/label, so suppressed cells remain recognisable. (For a release
    that tells suppressed cells from values missing in the original, see :mod:`kanon_core.export`.)
    """
    path = Path(path)
    ext = _extension(path.name)
    if ext not in WRITE_FORMATS:
        raise InputError(f"Cannot write '{ext}'. Use one of: {', '.join(sorted(WRITE_FORMATS))}.")
    frame = ds.release_frame()
    if ext == ".csv":
        path.write_bytes(csv_bytes(frame))
    elif ext == ".parquet":
        frame.to_parquet(path, index=False)
    elif ext == ".xlsx":
        frame.to_excel(path, index=False)
    else:
        _write_stat(ds, frame, path, ext, suppressed_code)
    return path


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """UTF-8 CSV, comma-separated, ``\\n`` line ends, no index, shortest round-trip floats, empty = missing.

    Deterministic: the bytes depend only on the frame (column order, values and dtypes).
    """
    buf = io.StringIO()
    frame.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue().encode("utf-8")


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


def _write_stat(ds: Dataset, frame: pd.DataFrame, path: Path, ext: str, suppressed_code: int | None) -> None:
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
        write_stat(frame, path, column_labels=column_labels, value_labels=value_labels, missing_ranges=missing_ranges)
    else:
        int_labels = {c: {int(k): v for k, v in vl.items()} for c, vl in value_labels.items()}
        write_stat(frame, path, column_labels=column_labels, value_labels=int_labels)
