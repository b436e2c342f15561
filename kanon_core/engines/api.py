"""What kanon asks of a file at scale, whichever engine answers: the class table, the column summary and
the preview, and a release written with recodes and suppressions.

:class:`OutOfCore` implements these on an engine's four primitives (see :mod:`kanon_core.engines.base`);
:class:`PandasEngine` answers them in memory, through :func:`kanon_core.io.load_dataset`, which is the
reference every engine is tested against.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..classtable import ClassTable
from ..dataset import Roles, VariableMeta
from ..errors import InputError
from ..io import cell_text, labels_json, labels_spec
from ..treat.recode import generalized_meta, missing_code_text, refuse_labels_written_as_codes
from .base import ENGINES, EngineSettings, RankedSuppression, ReleasePlan, choose_engine, get_engine, register
from .source import Source, open_source
from .table import class_table as _class_table
from .table import declared_meta, type_distinct

SUMMARY_DISTINCT_LIMIT = 1_000_000
"""A column with more distinct values than this is not typed exactly in the summary (its type is then
"text or number (not checked)"); the class table always types its QIs exactly."""


@dataclass(frozen=True)
class FileSummary:
    """The Data page's view of a file: records, per-column type/distinct/missing, and the first rows."""

    n_records: int
    columns: pd.DataFrame
    preview: pd.DataFrame
    engine: str


class OutOfCore:
    """The high-level operations on top of an engine's primitives (mixed into each engine class)."""

    name: str
    package: str = ""
    """The Python package the engine runs on; the engine is available when it is installed."""

    def available(self) -> bool:
        import importlib.util

        return importlib.util.find_spec(self.package) is not None

    def class_table(self, path: str | os.PathLike, qis: Sequence[str], weight: str | None = None,
                    sensitive: Sequence[str] = (), missing_codes: Mapping[str, Sequence[str]] | None = None,
                    settings: EngineSettings | None = None) -> ClassTable:
        return _class_table(self, open_source(path), qis, weight, sensitive, missing_codes,  # type: ignore[arg-type]
                            settings or EngineSettings())

    def summary(self, path: str | os.PathLike, settings: EngineSettings | None = None,
                preview_rows: int = 20) -> FileSummary:
        settings = settings or EngineSettings()
        source = open_source(path)
        settings.say(f"{self.name}: summarising {len(source.columns)} columns")
        n, stats = self.column_stats(source, settings)  # type: ignore[attr-defined]
        rows = []
        typed = {}
        for st in stats:
            kind = source.kind(st.name)
            dtype = {"int": "integer", "float": "float", "bool": "boolean", "other": "other"}.get(kind, "text")
            if kind in ("text", "float", "int") and st.n_distinct <= SUMMARY_DISTINCT_LIMIT and kind != "other":
                raw = self.distinct(source, st.name, SUMMARY_DISTINCT_LIMIT, settings)  # type: ignore[attr-defined]
                if raw is not None:
                    t = type_distinct(source, st.name, raw, st.n_missing > 0)
                    typed[st.name] = t
                    dtype = {"int": "integer", "float": "float", "bool": "boolean"}.get(t.dtype, "text")
            elif kind == "text" and source.format == "csv":
                dtype = "text or number (not checked: too many distinct values)"
            rows.append({"variable": st.name, "type": dtype, "distinct": st.n_distinct, "missing": st.n_missing})
        meta = declared_meta(source, typed)
        for r in rows:  # declared missing codes are missing, as in memory
            codes = meta.get(r["variable"], VariableMeta()).missing_codes
            if codes and r["variable"] in typed:
                r["declared_missing_codes"] = len(codes)
        pv = self.preview(source, preview_rows, settings).to_pandas()  # type: ignore[attr-defined]
        return FileSummary(n, pd.DataFrame(rows), pv, self.name)

    def release(self, path: str | os.PathLike, out: str | os.PathLike, qis: Sequence[str] = (),
                recodes: Mapping[str, Mapping[Any, Any]] | None = None,
                suppress: pd.DataFrame | None = None, drop: Sequence[str] = (),
                missing_codes: Mapping[str, Sequence[str]] | None = None,
                settings: EngineSettings | None = None, sidecar: bool = True,
                ranked: RankedSuppression | None = None, blank_code: int | None = None,
                blank_texts: Mapping[str, str] | None = None) -> Path:
        """Write the records of ``path`` to ``out`` (.csv or .parquet) with recodes and suppressions.

        ``recodes[c]`` maps every observed value of column c (typed as kanon reads it) to its new value
        (None or no entry: the column is released as read); a declared missing code it does not map keeps its
        code, as text, as a generalization in memory keeps it;
        ``suppress`` has one row per class to treat: the QIs' values (after recodes; None = missing) and
        a boolean column ``suppress_<qi>`` per QI; ``ranked`` blanks cells of some records of a class
        only (keyed by the values after recodes: a recoded QI's key is its new value, any other QI's the
        raw value the engine's aggregate returned, see :class:`~kanon_core.engines.base.RankedSuppression`).
        The labels sidecar (``<out>.labels.json``) keeps the labels and declared missing codes of the input.
        ``blank_code``: in a CSV release, the code written in the blanked cells (:class:`ReleasePlan`); the
        caller declares it in the sidecar (:meth:`release_labels`); ``blank_texts``, its text per QI of a CSV
        input (:attr:`ReleasePlan.blank_texts`).
        """
        settings = settings or EngineSettings()
        source = open_source(path)
        out = Path(out)
        if out.suffix.lower() not in (".csv", ".parquet"):
            raise InputError("A release at scale is written as .csv or .parquet.")
        plan_recodes = {}
        typed = {}
        for c, mapping in (recodes or {}).items():
            raw = self.distinct(source, c, 10_000_000, settings)  # type: ignore[attr-defined]
            if raw is None:
                raise InputError(f"Column '{c}' has too many distinct values to recode.")
            t = type_distinct(source, c, raw, True)
            typed[c] = t
            # the column's declared missing codes (given, or in its labels) typed as its values, as in memory
            m = declared_meta(source, {c: t}, {c: codes for c, codes in (missing_codes or {}).items()
                                               if c in recodes}).get(c, VariableMeta())
            declared = set(m.missing_codes)
            style = VariableMeta(float_style=t.float_style)
            new = []
            for v in t.values:
                if v in mapping:
                    new.append(mapping[v])
                elif v in declared:  # a declared missing code keeps its code, as text, as in memory
                    new.append(missing_code_text(v, style))
                else:
                    raise InputError(f"The recoding of '{c}' does not cover all of its values.")
            refuse_labels_written_as_codes(c, [mapping[v] for v in t.values if v in mapping and v not in declared],
                                           generalized_meta(m).missing_codes)
            plan_recodes[c] = pa.table({"key": raw, "value": _arrow_values(new, source.format == "csv")})
        sup_table = None
        if suppress is not None and len(suppress):
            cols = {}
            for j, q in enumerate(qis):
                vals = suppress[q].tolist()
                if q in plan_recodes:  # the values after recoding, written as the recode writes them, in the
                    # mapping table's type (a list of only missing values would otherwise have no type to join on)
                    cols[f"k{j}"] = _arrow_values(vals, source.format == "csv").cast(
                        plan_recodes[q].column("value").type)
                elif source.format == "csv":
                    cols[f"k{j}"] = pa.array([None if _isna(v) else cell_text(v) for v in vals], pa.string())
                else:
                    cols[f"k{j}"] = pa.array([None if _isna(v) else v for v in vals])
            for j, q in enumerate(qis):
                cols[f"s{j}"] = pa.array(suppress[f"suppress_{q}"].astype(bool).tolist(), pa.bool_())
            sup_table = pa.table(cols)
        if ranked is not None and plan_recodes:
            ranked = _ranked_after_recodes(ranked, qis, plan_recodes, source.format == "csv")
        plan = ReleasePlan(plan_recodes, tuple(qis), sup_table, tuple(drop), ranked,
                           blank_code if out.suffix.lower() == ".csv" else None, dict(blank_texts or {}))
        settings.say(f"{self.name}: writing {out.name}")
        self.write_release(source, plan, out, settings)  # type: ignore[attr-defined]
        if sidecar:
            data = self.release_labels(source, drop, missing_codes, typed, tuple(recodes or {}), settings)
            if data is not None:
                out.with_name(out.stem + ".labels.json").write_bytes(data)
        return out

    def release_labels(self, source: Source, drop: Sequence[str] = (),
                       missing_codes: Mapping[str, Sequence[str]] | None = None,
                       typed: Mapping[str, Any] | None = None, recoded: Sequence[str] = (),
                       settings: EngineSettings | None = None,
                       extra: Mapping[str, tuple[str, str]] | None = None) -> bytes | None:
        """The labels sidecar of a release (the input's labels and declared missing codes of the columns
        kept; of a recoded column, its label and its codes as text, :func:`~kanon_core.treat.recode.
        generalized_meta`), or None when there is nothing to declare; callers that write the release
        to a temporary name write it themselves. Declared codes are matched to values typed as the
        in-memory reader types them, so the columns the labels name are typed first (their distinct
        values, one query each). ``extra[c]`` = (code, label) declares one more missing code of column c, with
        its label: the code a CSV release writes in suppressed cells, as the in-memory writer declares it
        (:func:`kanon_core.export.sidecar_spec`)."""
        typed = dict(typed or {})
        for c in labelled_columns(source, missing_codes):
            if c in typed or c in drop:
                continue
            raw = self.distinct(source, c, 10_000_000, settings or EngineSettings())  # type: ignore[attr-defined]
            if raw is not None:
                typed[c] = type_distinct(source, c, raw, True)
        meta = declared_meta(source, typed, missing_codes)
        keep = [c for c in source.columns if c not in drop]
        # a recoded (generalized) column keeps its label and its declared missing codes, as text, as in memory
        spec = labels_spec({c: generalized_meta(m) if c in recoded else m for c, m in meta.items()}, keep,
                           dict(extra or {}))
        return labels_json(spec) if spec else None


def labelled_columns(source: Source, missing_codes: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Columns the input's labels name: the ``.labels.json`` sidecar, labels a Parquet file embeds, and
    missing codes given on the command line (the file's own columns only)."""
    import json

    from ..io import PARQUET_LABELS_KEY, input_sidecar

    names: list[str] = list(missing_codes or {})
    side = input_sidecar(Path(source.path))
    specs = []
    if side.exists():
        try:
            specs.append(json.loads(side.read_text(encoding="utf-8")))
        except (ValueError, UnicodeDecodeError):
            raise InputError(f"The labels file {side.name} is not valid JSON.") from None
    if source.format == "parquet":
        import pyarrow.parquet as pq

        raw = (pq.read_schema(source.path).metadata or {}).get(PARQUET_LABELS_KEY)
        if raw:
            try:
                specs.append(json.loads(raw.decode("utf-8")))
            except (ValueError, UnicodeDecodeError):
                raise InputError("The labels embedded in the Parquet file are not valid JSON.") from None
    for spec in specs:
        if isinstance(spec, Mapping):
            names += [str(c) for c in spec]
    return [c for c in dict.fromkeys(names) if c in source.columns]


def csv_field(text: str) -> str:
    """A cell (or the name) of a one-column CSV release as written: quoted when empty, made only of spaces
    and tabs (the default reader would skip either line as blank, losing the record), or holding a comma, a
    quote or a line break, with its quotes doubled. Every engine and the in-memory writer
    (:func:`kanon_core.io.csv_bytes`) write one column this way."""
    if not text.strip(" \t") or any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


CELL_KINDS = ("float", "whole", "bool")
"""The kinds of released columns whose cells an engine must write itself in a CSV release to give the
default writer's text (:func:`kanon_core.io.cell_text`): "float", Python's shortest round-trip text of the
float64 (a float32 widened first: "0.10000000149011612", as the default writer writes it); "whole", a float
column the default reader holds as integers (every value whole and below 2**53), written as integers;
"bool", "True" and "False". Integers and text are written alike by every writer."""


def csv_cell_kinds(source: Source, plan: ReleasePlan, keep: Sequence[str]) -> dict[str, str]:
    """The released columns of a Parquet input whose cells an engine formats itself (see :data:`CELL_KINDS`),
    with "float" or "bool"; a recoded column by the type of its new values. A float column not recoded is
    "float" here: whether it is "whole" takes a pass over its values, which each engine makes
    (:func:`whole_candidates`). A CSV input has none: its cells are text, written as read, and its recodes'
    new values are already the default writer's text."""
    if source.format != "parquet":
        return {}
    kinds = {}
    for c in keep:
        if c in plan.recodes:
            t = plan.recodes[c].column("value").type
            kind = "float" if pa.types.is_floating(t) else "bool" if pa.types.is_boolean(t) else ""
        else:
            kind = source.kind(c) if source.kind(c) in ("float", "bool") else ""
        if kind:
            kinds[c] = kind
    return kinds


def blank_values(source: Source, plan: ReleasePlan, keep: Sequence[str]) -> dict[str, str | int]:
    """Per released QI, what its blanked cells hold (:attr:`ReleasePlan.blank_code`): the code's text in a text
    column (every CSV input's, as :attr:`ReleasePlan.blank_texts` gives it, and a recoded column of text
    values), the code as a number in a numeric one, as the in-memory writer puts it in each; nothing without
    a code. A boolean column has no code the in-memory writer and the engines would write alike, so it is
    refused."""
    if plan.blank_code is None:
        return {}
    kinds: dict[str, str | int] = {}
    for c in plan.qis:
        if c not in keep:
            continue
        if c in plan.recodes:
            t = plan.recodes[c].column("value").type
            kind = "number" if pa.types.is_integer(t) or pa.types.is_floating(t) else \
                "bool" if pa.types.is_boolean(t) else "text"
        else:
            kind = {"int": "number", "float": "number", "bool": "bool"}.get(source.kind(c), "text")
        if kind == "bool":
            raise InputError(f"Column '{c}' is boolean: a code for its suppressed cells cannot be written at scale; "
                             "write the release as .parquet or use --engine pandas.")
        kinds[c] = plan.blank_texts.get(c, str(int(plan.blank_code))) if kind == "text" else int(plan.blank_code)
    return kinds


def whole_candidates(kinds: Mapping[str, str], plan: ReleasePlan) -> list[str]:
    """The float columns of the input released as read, which the default reader holds as integers when every
    value is whole (its typing of a Parquet file, :func:`kanon_core.io.read_table`): the engine checks them in
    one pass over those columns only, before writing."""
    return [c for c, k in kinds.items() if k == "float" and c not in plan.recodes]


def _isna(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _ranked_after_recodes(ranked: RankedSuppression, qis: Sequence[str], recodes: Mapping[str, pa.Table],
                          as_text: bool) -> RankedSuppression:
    """The ranked suppressions with the keys of recoded QIs written as the recode writes its new values, in
    the mapping table's type (the join compares a record's recoded value with the key; a key column holding
    only missing values would otherwise have no type to join on)."""
    classes = ranked.classes
    for j, q in enumerate(qis):
        if q in recodes:
            name = f"k{j}"
            col = _arrow_values(classes.column(name).to_pylist(), as_text).cast(recodes[q].column("value").type)
            classes = classes.set_column(classes.schema.get_field_index(name), name, col)
    return RankedSuppression(classes, ranked.ranges)


def _arrow_values(values: list[Any], as_text: bool) -> pa.Array:
    """New values as one arrow type: text in a CSV release (as the writer would write them), else the
    values' own type when they share one, text otherwise."""
    clean = [None if _isna(v) else v for v in values]
    if as_text:
        return pa.array([None if v is None else cell_text(v) for v in clean], pa.string())
    try:
        return pa.array(clean)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else cell_text(v) for v in clean], pa.string())


class PandasEngine:
    """The in-memory path: the file read by :func:`kanon_core.io.load_dataset` (the reference)."""

    name = "pandas"
    description = "pandas, in memory (every format; the reference the other engines are tested against)"
    in_memory = True

    def available(self) -> bool:
        return True

    def _load(self, path, qis=(), weight=None, missing_codes=None):
        from ..io import load_dataset

        return load_dataset(path, roles=Roles(qis=tuple(qis), weight=weight),
                            missing_codes={k: tuple(v) for k, v in (missing_codes or {}).items()})

    def class_table(self, path: str | os.PathLike, qis: Sequence[str], weight: str | None = None,
                    sensitive: Sequence[str] = (), missing_codes: Mapping[str, Sequence[str]] | None = None,
                    settings: EngineSettings | None = None) -> ClassTable:
        ds = self._load(path, qis, weight, missing_codes)
        return ClassTable.from_dataset(ds, tuple(qis), weighted=weight is not None, sensitive=tuple(sensitive))

    def summary(self, path: str | os.PathLike, settings: EngineSettings | None = None,
                preview_rows: int = 20) -> FileSummary:
        ds = self._load(path)
        rows = []
        for c in ds.columns:
            s = ds.frame[c]
            miss = ds.missing_mask(c)
            dtype = ("integer" if pd.api.types.is_integer_dtype(s.dtype) else
                     "float" if pd.api.types.is_float_dtype(s.dtype) else
                     "boolean" if pd.api.types.is_bool_dtype(s.dtype) else "text")
            rows.append({"variable": c, "type": dtype, "distinct": int(s[~miss].nunique()),
                         "missing": int(miss.sum())})
        return FileSummary(ds.n_records, pd.DataFrame(rows), ds.frame.head(preview_rows), self.name)


register(PandasEngine())  # type: ignore[arg-type]


def engine_for(name: str, path: str | os.PathLike) -> Any:
    """The engine object for ``--engine NAME`` (``auto`` resolved by the file's size)."""
    return get_engine(choose_engine(name, path))


def registered() -> dict[str, Any]:
    get_engine("pandas")
    return dict(ENGINES)


def source_of(path: str | os.PathLike) -> Source:
    return open_source(path)
