"""From an engine's aggregate to the class table, typing values exactly as the in-memory reader does.

An engine returns raw values: CSV cells as text, Parquet values with their own types, missing as null.
How :mod:`kanon_core.io` types a column depends only on the *set* of its distinct cells (a CSV column is
an integer when every non-empty cell is a canonical integer, and so on; a Parquet float column becomes
an integer when every finite value is whole), so the distinct values of a column, which the aggregate
holds, are typed here with the very functions the in-memory reader uses (:func:`kanon_core.io.
type_column`, :func:`kanon_core.dataset.encode_column`) and give the same values, codes and labels.
Declared missing codes (the labels sidecar, the labels a Parquet file embeds, ``--missing-codes``) are
matched to the typed values as :func:`kanon_core.io.load_dataset` matches them; rows that become equal
(a declared code turned missing) are merged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..classtable import ClassTable, _ordered_numbers, _sparse_counts
from ..dataset import VariableMeta, check_weight_total, encode_column
from ..errors import InputError
from ..io import (
    PARQUET_LABELS_KEY,
    PARQUET_LABELS_ROLE,
    labels_from_spec,
    read_labels_sidecar,
    type_column,
    typed_codes,
    with_sidecar,
)
from ..risk.keys import group_ids
from .base import WEIGHT_STATS, Engine, EngineSettings
from .source import Source

INT53 = 2**53


@dataclass(frozen=True)
class TypedColumn:
    """A column's distinct raw values (``raw``, an arrow array) typed as the in-memory reader types them.

    ``values`` are the typed values in the order of ``raw``; ``dtype`` is the pandas dtype the whole
    column would have; ``float_style`` the CSV float style (see :func:`kanon_core.io.float_text`).
    """

    name: str
    raw: pa.Array
    values: list[Any]
    dtype: str
    float_style: str = "repr"

    def series(self) -> pd.Series:
        if self.dtype == "int":
            return pd.Series(self.values, dtype="Int64") if self.values else pd.Series([], dtype="float64")
        if self.dtype == "float":
            return pd.Series(self.values, dtype="float64")
        return pd.Series(self.values, dtype=object)


def type_distinct(source: Source, column: str, raw: pa.Array, has_missing: bool) -> TypedColumn:
    """Type the distinct non-missing raw values of one column (see the module docstring)."""
    kind = source.kind(column)
    py = raw.to_pylist()
    if source.format == "csv":
        if not py:
            return TypedColumn(column, raw, [], "float")
        typed, style = type_column(pd.Series(py, dtype=object))
        if pd.api.types.is_integer_dtype(typed.dtype):
            return TypedColumn(column, raw, [int(v) for v in typed.tolist()], "int", style)
        if pd.api.types.is_float_dtype(typed.dtype):
            return TypedColumn(column, raw, [float(v) for v in typed.tolist()], "float", style)
        return TypedColumn(column, raw, [str(v) for v in py], "text", style)
    if kind == "int":  # missing values or not, the in-memory reader holds exact integers
        return TypedColumn(column, raw, [int(v) for v in py], "int")
    if kind == "float":
        # NaN is missing (pandas' isna); engines that keep NaN as a value leave it to be typed here
        arr = np.asarray([np.nan if v is None else v for v in py], dtype=np.float64)
        nan = np.isnan(arr)
        finite = arr[np.isfinite(arr)]
        if len(finite) and np.all(finite == np.round(finite)) and np.all(np.abs(finite) < INT53) \
                and len(finite) == int((~nan).sum()):  # an infinity is no integer: the column stays float
            return TypedColumn(column, raw, [None if m else int(v) for v, m in zip(arr.tolist(), nan, strict=True)],
                               "int")
        return TypedColumn(column, raw, arr.tolist(), "float")
    if kind == "bool":
        return TypedColumn(column, raw, [bool(v) for v in py], "bool")
    return TypedColumn(column, raw, [str(v) for v in py], "text")


def declared_meta(source: Source, typed: Mapping[str, TypedColumn],
                  missing_codes: Mapping[str, Sequence[str]] | None = None) -> dict[str, VariableMeta]:
    """Labels and declared missing codes of the typed columns, as :func:`kanon_core.io.load_dataset` reads
    them: labels a Parquet file embeds, then what the ``.labels.json`` sidecar adds to them
    (:func:`kanon_core.io.with_sidecar`), then codes given on the command line (as text, matched to each
    column's type). Codes given as :class:`~kanon_core.declare_missing.GivenMissingCodes` (the command
    line's ``--missing-codes``) that are text for a column of numbers are refused, by the in-memory path's
    rule (:func:`~kanon_core.declare_missing.refuse_text_codes_on_numbers`), for each column typed here."""
    frame = pd.DataFrame({c: t.series().iloc[:1].reset_index(drop=True) if t.values else pd.Series([np.nan])
                          for c, t in typed.items()})
    meta: dict[str, VariableMeta] = {}
    if source.format == "parquet":
        import pyarrow.parquet as pq

        raw = (pq.read_schema(source.path).metadata or {}).get(PARQUET_LABELS_KEY)
        if raw:
            try:
                spec = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                raise InputError("The labels embedded in the Parquet file are not valid JSON.") from None
            if isinstance(spec, Mapping):
                meta.update(labels_from_spec(spec, frame, PARQUET_LABELS_ROLE))
    meta = with_sidecar(meta, read_labels_sidecar(source.path, frame))
    from ..declare_missing import GivenMissingCodes, holds_numbers, refuse_text_codes_on_numbers

    for col, codes in (missing_codes or {}).items():
        if col not in source.columns:
            raise InputError(f"Missing codes given for unknown variable '{col}'.")
        if col not in typed:
            continue
        series = typed[col].series()
        if isinstance(missing_codes, GivenMissingCodes):
            refuse_text_codes_on_numbers(col, holds_numbers(series), codes)
        m = meta.get(col, VariableMeta())
        typed_c = typed_codes(series, codes)
        meta[col] = replace(m, missing_codes=tuple(m.missing_codes) + tuple(c for c in typed_c if c not in m.missing_codes))
    return meta


def _dictionary(arr: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array, bool]:
    """Per row the index of its value in the column's distinct values (-1 for null), those values, and
    whether there is a null."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):  # (Polars gives a Parquet dictionary column so, with unsigned indices)
        arr = arr.cast(arr.type.value_type)
    enc = pc.dictionary_encode(arr)
    idx = enc.indices
    has_null = bool(idx.null_count)
    if has_null:
        idx = pc.fill_null(idx, -1)
    return idx.to_numpy(zero_copy_only=False), enc.dictionary, has_null


def encode_keys(source: Source, agg: pa.Table, columns: Sequence[str], meta: Mapping[str, VariableMeta] | None,
                missing_codes: Mapping[str, Sequence[str]] | None):
    """Codes (rows x columns, -1 missing) of the aggregate's key columns, with values, labels and meta.

    ``injective`` is True when distinct raw values got distinct codes in every column (no declared missing
    code, no NaN beside null, no two raw values typed alike): the aggregate's rows are then distinct
    classes already and need no merging.
    """
    from ..threads import map_workers

    idxs, typed = [], {}
    injective = True
    # each column's dictionary on the compute threads (Arrow's kernels release the interpreter)
    encoded = map_workers(lambda i: _dictionary(agg.column(f"k{i}")), range(len(columns)))
    for c, (idx, dictionary, has_null) in zip(columns, encoded, strict=True):
        idxs.append(idx)
        typed[c] = type_distinct(source, c, dictionary, has_null)
    if meta is None:
        meta = declared_meta(source, typed, missing_codes)
    from ._codes_kernel import rows_of_codes

    values, labels, lookups = [], [], []
    for c in columns:
        m = meta.get(c, VariableMeta())
        dict_codes, v, lab = encode_column(typed[c].series(), m.missing_codes, m.value_labels)
        lookups.append(dict_codes.astype(np.int32))
        injective &= bool((dict_codes >= 0).all()) and len(np.unique(dict_codes)) == len(dict_codes)
        values.append(v)
        labels.append(lab)
    luts = np.full((len(columns), max([len(x) for x in lookups] + [1])), -1, dtype=np.int32)
    for j, lookup in enumerate(lookups):
        luts[j, :len(lookup)] = lookup
    index = np.empty((len(columns), agg.num_rows), dtype=np.int32)  # Arrow's dictionary indices are int32
    for j, idx in enumerate(idxs):
        index[j] = idx
    return rows_of_codes(index, luts), tuple(values), tuple(labels), meta, injective


def check_weights(agg: pa.Table, weight: str, declared: np.ndarray | None = None) -> None:
    """The messages of :func:`kanon_core.dataset.validate_weights`, in its order, from the aggregate's weight
    counts, the weights' total included (every weighted figure divides by it).

    ``declared`` marks the rows of an aggregate on the weight itself whose value is a declared missing code:
    in memory such a cell is missing before any check, so its records count as missing weights, never as a
    weight of that value (not as non-numeric, infinite or negative either)."""
    keep = None if declared is None else pa.array(~declared)

    def total(column: str) -> int:
        values = agg.column(column) if keep is None else pc.filter(agg.column(column), keep)
        return int(pc.sum(values).as_py() or 0)

    bad, missing, nonfinite, nonpos = (total(c) for c in WEIGHT_STATS)
    if declared is not None:
        missing += int(agg.column("n").to_numpy()[declared].sum())
    if bad:
        raise InputError(f"Weight '{weight}' has {bad} non-numeric value(s).")
    if missing:
        raise InputError(f"Weight '{weight}' is missing for {missing} record(s); every record needs a weight.")
    if nonfinite:
        raise InputError(f"Weight '{weight}' has infinite values.")
    if nonpos:
        raise InputError(f"Weight '{weight}' has {nonpos} zero or negative value(s); weights must be positive.")
    check_weight_total(agg.column("w").to_numpy(), weight)


def typed_aggregate(engine: Engine, source: Source, keys: Sequence[str], weight: str | None,
                    missing_codes: Mapping[str, Sequence[str]] | None, settings: EngineSettings, message: str):
    """The engine's ``GROUP BY`` on ``keys`` (variables of the file, checked), its weights checked with the
    records' messages, and its keys typed and coded as the in-memory reader does (:func:`encode_keys`)."""
    for c in [*keys, *([weight] if weight else [])]:
        if c not in source.columns:
            raise InputError(f"'{c}' is not a variable of the data.")
    settings.say(message)
    agg = engine.aggregate(source, list(keys), weight, settings)
    if weight is not None:
        check_aggregate_weights(engine, source, agg, weight, missing_codes, settings)
    return agg, encode_keys(source, agg, keys, None, missing_codes)


def check_aggregate_weights(engine: Engine, source: Source, agg: pa.Table, weight: str,
                            missing_codes: Mapping[str, Sequence[str]] | None, settings: EngineSettings) -> None:
    """The weights of an aggregate with ``weight`` checked as in memory, with their declared missing codes."""
    if _declares_missing(source, weight, missing_codes):
        _check_declared_missing_weights(engine, source, weight, missing_codes, settings)
    check_weights(agg, weight)


def check_file_weights(engine: Engine, source: Source, weight: str,
                       missing_codes: Mapping[str, Sequence[str]] | None = None,
                       settings: EngineSettings | None = None) -> None:
    """The weights of the whole file checked as in memory (:meth:`kanon_core.dataset.Dataset.weights`), for a
    command that names a weight but aggregates without it: one pass with no keys, then
    :func:`check_aggregate_weights` (the same messages, with the declared missing codes)."""
    settings = settings or EngineSettings()
    if weight not in source.columns:
        raise InputError(f"'{weight}' is not a variable of the data.")
    agg = engine.aggregate(source, [], weight, settings)
    check_aggregate_weights(engine, source, agg, weight, missing_codes, settings)


def _declares_missing(source: Source, weight: str, missing_codes: Mapping[str, Sequence[str]] | None) -> bool:
    """Whether missing codes are declared for the weight: on the command line, in the labels sidecar or in the
    labels a Parquet file embeds (all three count in memory; the sidecar's and the file's were ignored)."""
    unread = TypedColumn(weight, pa.array([], pa.string()), [], "text")
    return bool(declared_meta(source, {weight: unread}, missing_codes).get(weight, VariableMeta()).missing_codes)


def _check_declared_missing_weights(engine: Engine, source: Source, weight: str,
                                    missing_codes: Mapping[str, Sequence[str]] | None,
                                    settings: EngineSettings) -> None:
    """The weights checked as in memory (:meth:`kanon_core.dataset.Dataset.weights`) when codes are declared
    missing for them: the weight's distinct values are typed and coded as the in-memory reader codes them and
    :func:`check_weights` counts the records of a value coded missing as missing weights, before the other
    checks, which leave them out (one more GROUP BY, made only when codes are declared on the weight)."""
    by_value = engine.aggregate(source, [weight], weight, settings)
    codes = encode_keys(source, by_value, [weight], None, missing_codes)[0]
    check_weights(by_value, weight, codes[:, 0] < 0)  # (a missing cell too: its records are missing either way)


def aggregate_table(engine: Engine, source: Source, qis: Sequence[str], weight: str | None = None,
                    missing_codes: Mapping[str, Sequence[str]] | None = None,
                    settings: EngineSettings | None = None) -> tuple[ClassTable, pa.Table, np.ndarray, dict]:
    """The class table on ``qis`` with the engine's raw aggregate and, per aggregate row, its class.

    The raw keys let per-class results be joined back to the records by the engine (``--per-record``).
    """
    settings = settings or EngineSettings()
    qis = list(qis)
    if not qis:
        raise InputError("Choose at least one quasi-identifier.")
    agg, (codes, values, labels, meta, injective) = typed_aggregate(
        engine, source, qis, weight, missing_codes, settings,
        f"{engine.name}: counting classes on {len(qis)} quasi-identifiers")
    count = agg.column("n").to_numpy().astype(np.int64)
    w = None if weight is None else agg.column("w").to_numpy().astype(np.float64)
    table = ClassTable(tuple(qis), codes, count, w, values, labels, {}, None)
    class_of_row = np.arange(table.n_classes, dtype=np.int64)
    if table.n_classes and not injective:
        gid, _ = group_ids(table.codes)
        if int(gid.max()) + 1 < table.n_classes:  # declared codes made some rows equal
            table = table._merge(gid, table.codes)
            class_of_row = gid
    return table, agg.select([f"k{i}" for i in range(len(qis))]), class_of_row, meta


def class_table(engine: Engine, source: Source, qis: Sequence[str], weight: str | None = None,
                sensitive: Sequence[str] = (), missing_codes: Mapping[str, Sequence[str]] | None = None,
                settings: EngineSettings | None = None) -> ClassTable:
    """The class table of a file on ``qis`` computed by ``engine`` (one GROUP BY, plus one per sensitive
    variable), equal to :meth:`ClassTable.from_dataset` on the same file read in memory."""
    settings = settings or EngineSettings()
    for c in sensitive:
        if c not in source.columns:
            raise InputError(f"'{c}' is not a variable of the data.")
    table, _, _, _ = aggregate_table(engine, source, qis, weight, missing_codes, settings)
    table = with_sensitive(engine, source, table, sensitive, missing_codes, settings)
    settings.say(f"{engine.name}: {table.n_classes:,} classes of {table.n_records:,} records")
    return table


def with_sensitive(engine: Engine, source: Source, table: ClassTable, sensitive: Sequence[str],
                   missing_codes: Mapping[str, Sequence[str]] | None = None,
                   settings: EngineSettings | None = None) -> ClassTable:
    """``table`` (aggregated on its QIs) with the per-class value counts of each sensitive variable: one
    GROUP BY on the QIs and the variable, its rows matched to the table's classes by their codes."""
    settings = settings or EngineSettings()
    qis = list(table.qis)
    for c in sensitive:
        if c not in source.columns:
            raise InputError(f"'{c}' is not a variable of the data.")
    if not sensitive:
        return table
    sens = {}
    for s in sensitive:
        settings.say(f"{engine.name}: counting the values of {s} per class")
        sagg = engine.aggregate(source, [*qis, s], None, settings)
        scodes_all, svalues, _, meta, _ = encode_keys(source, sagg, [*qis, s], None, missing_codes)
        class_index = _class_index(table.codes, scodes_all[:, : len(qis)])
        labels = meta[s].value_labels if s in meta else None
        sens[s] = _sparse_counts(s, tuple(svalues[-1]), class_index, scodes_all[:, -1],
                                 sagg.column("n").to_numpy().astype(np.int64),
                                 _ordered_numbers(tuple(svalues[-1]), labels))
    return replace(table, sensitive=sens)


def _class_index(table_codes: np.ndarray, row_codes: np.ndarray) -> np.ndarray:
    """The class (row of ``table_codes``, all distinct) of each row of ``row_codes``."""
    gid, _ = group_ids(np.vstack([table_codes, row_codes]))
    n = len(table_codes)
    of_gid = np.full(int(gid.max()) + 1, -1, np.int64)
    of_gid[gid[:n]] = np.arange(n)
    out = of_gid[gid[n:]]
    if (out < 0).any():
        raise InputError("The sensitive counts name a class the class table does not have.")
    return out
