"""Local suppression of a file out of core: the strict model, or a limit on individual risk, solved on the
engine's class table, and the release written by the engine.

The records are never read into pandas. The engine aggregates the file into its class table (one
``GROUP BY``); :func:`kanon_core.treat.strict.classes.suppress_classes` decides how many records of each
class take which suppression pattern and checks the result independently, or
:func:`kanon_core.treat.suppress_risk.suppress_table_to_risk` blanks cells of whole classes until no
class's individual risk exceeds the limit and recounts the risks; the engine then numbers the records of
each class in input order and blanks the cells of the ranks each pattern covers (a
:class:`~kanon_core.engines.base.RankedSuppression` keyed by the raw values the aggregate returned; a
risk-targeted class takes one pattern for all its ranks), streaming the release to CSV or Parquet.
``kanon suppress --engine`` and the dashboard's Suppress page for a large file both run these functions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..classtable import ClassTable
from ..errors import InputError
from ..progress import Progress
from .base import EngineSettings, RankedSuppression


@dataclass
class SuppressedAtScale:
    """A file's class table on its QIs with the strict suppression solved on it.

    ``keys`` are the engine's raw aggregate rows and ``class_of_row`` each row's class (declared missing
    codes can merge raw rows into one class): what the release needs to find the records again.
    """

    qis: tuple[str, ...]
    k: int
    missing: str
    table: ClassTable
    keys: Any
    class_of_row: np.ndarray
    result: Any  # kanon_core.treat.strict.classes.ClassSuppression
    costs: np.ndarray
    protected: np.ndarray
    seconds_aggregate: float
    seconds_solve: float

    @property
    def gap(self) -> float:
        """The relative gap between the cost and its lower bound (0 when proven optimal)."""
        return self.result.optimality().gap

    def per_variable(self) -> dict[str, int]:
        """Suppressed cells per quasi-identifier."""
        return dict(zip(self.qis, (int(c) for c in self.result.per_variable(len(self.qis))), strict=True))

    def ranked(self) -> RankedSuppression:
        """The engine's plan: each class's records by rank, as the solver assigned the patterns."""
        return ranked_plan(self.keys, self.class_of_row, self.table.n_classes, self.result.assignment,
                           len(self.qis), self.table.codes)


@dataclass
class RiskSuppressedAtScale:
    """A file's class table on its QIs (with weight sums when weighted) and the risk-targeted suppression
    solved on it (:func:`kanon_core.treat.suppress_risk.suppress_table_to_risk`, one row per class)."""

    qis: tuple[str, ...]
    table: ClassTable
    keys: Any
    class_of_row: np.ndarray
    result: Any  # kanon_core.treat.suppress_risk.RiskSuppressionResult
    seconds_aggregate: float
    seconds_solve: float

    def ranked(self) -> RankedSuppression:
        """The engine's plan: every record of a treated class loses the class's cells (ranks 0 to its count)."""
        mask = self.result.mask & (self.table.codes >= 0)  # observed cells only, as in memory
        rows = np.flatnonzero(mask.any(axis=1))
        return plan_of_ranges(self.keys, self.class_of_row, self.table.n_classes, rows,
                              np.zeros(len(rows), np.int64), self.table.count[rows].astype(np.int64), mask[rows])


def solve_at_scale(engine: Any, path: str | Path, qis: Sequence[str], k: int, missing: str,
                   costs: np.ndarray | None = None, protected: np.ndarray | None = None,
                   node_limit: int | None = None, missing_codes: Mapping[str, Sequence[str]] | None = None,
                   settings: EngineSettings | None = None, progress: Progress | None = None, *,
                   weight: str | None = None) -> SuppressedAtScale:
    """Aggregate ``path`` on ``qis`` with ``engine`` and solve the strict model at ``k`` on its class table
    (importances ``costs``, default 1 each; ``protected`` QIs never suppressed).

    A ``weight`` is aggregated only to be checked as in memory (the strict model counts records, not
    weights): the command refuses the same weights whichever engine reads the file."""
    from ..treat.strict.classes import suppress_classes
    from ..treat.suppress import NODE_LIMIT
    from .source import open_source
    from .table import aggregate_table

    settings = settings or EngineSettings()
    qis = list(qis)
    costs = np.ones(len(qis)) if costs is None else np.asarray(costs, dtype=np.float64)
    protected = np.zeros(len(qis), dtype=bool) if protected is None else np.asarray(protected, dtype=bool)
    t0 = time.perf_counter()
    table, keys, class_of_row, _ = aggregate_table(engine, open_source(path), qis, weight, missing_codes, settings)
    table, class_of_row = canonical_order(table, class_of_row)
    t1 = time.perf_counter()
    settings.say(f"strict suppression on {table.n_classes:,} classes ({table.n_records:,} records, {missing})")
    res = suppress_classes(table.codes, table.count, int(k), costs, protected, missing,
                           NODE_LIMIT if node_limit is None else int(node_limit), progress)
    return SuppressedAtScale(tuple(qis), int(k), missing, table, keys, class_of_row, res, costs, protected,
                             t1 - t0, time.perf_counter() - t1)


def solve_risk_at_scale(engine: Any, path: str | Path, qis: Sequence[str], threshold: float,
                        weight: str | None = None, missing: str = "wildcard", costs: np.ndarray | None = None,
                        protected: np.ndarray | None = None, method: str = "approx", alpha: float = 1.0,
                        missing_codes: Mapping[str, Sequence[str]] | None = None,
                        settings: EngineSettings | None = None,
                        progress: Progress | None = None) -> RiskSuppressedAtScale:
    """Aggregate ``path`` on ``qis`` (with ``weight``'s sums) and blank cells of whole classes until no
    class's individual risk exceeds ``threshold`` (the in-memory algorithm, which works on the class table
    of the records: the same cells per class)."""
    from ..treat.suppress_risk import suppress_table_to_risk
    from .source import open_source
    from .table import aggregate_table

    settings = settings or EngineSettings()
    t0 = time.perf_counter()
    table, keys, class_of_row, _ = aggregate_table(engine, open_source(path), list(qis), weight, missing_codes,
                                                   settings)
    table, class_of_row = canonical_order(table, class_of_row)
    t1 = time.perf_counter()
    settings.say(f"suppression to individual risk <= {threshold:g} on {table.n_classes:,} classes "
                 f"({table.n_records:,} records, {missing})")
    res = suppress_table_to_risk(table, threshold, costs=costs, protected=protected, method=method, alpha=alpha,
                                 missing=missing, progress=progress)  # type: ignore[arg-type]
    return RiskSuppressedAtScale(tuple(qis), table, keys, class_of_row, res, t1 - t0, time.perf_counter() - t1)


def canonical_order(table: ClassTable, class_of_row: np.ndarray) -> tuple[ClassTable, np.ndarray]:
    """The classes sorted by their codes (which follow the sorted values), and each raw row's class renumbered.

    An engine's ``GROUP BY`` returns its groups in an order that varies with its threads, and the solver
    breaks ties between optima of equal cost by position: in this order the same file gives the same
    release on every run and every engine.
    """
    if table.n_classes < 2:
        return table, class_of_row
    order = np.lexsort(table.codes.T[::-1])
    new_of_old = np.empty(len(order), dtype=np.int64)
    new_of_old[order] = np.arange(len(order))
    weight = None if table.weight is None else table.weight[order]
    sorted_table = ClassTable(table.qis, table.codes[order], table.count[order], weight, table.values,
                              table.labels, {}, None)
    return sorted_table, new_of_old[class_of_row]


def ranked_plan(keys: Any, class_of_row: np.ndarray, n_classes: int, assignment: Any, q: int,
                codes: np.ndarray | None = None) -> RankedSuppression:
    """The engine's :class:`~kanon_core.engines.base.RankedSuppression` for an assignment: the raw key rows
    of the classes that lose cells (a class merged from several raw rows lists each of them) and, per
    class, the rank ranges with their flags (empty patterns use up ranks but are not listed).

    With the classes' ``codes`` (-1 missing), a pattern's bit on a missing cell is dropped: a pattern may
    name one (blanking it changes nothing the solver counts), and the in-memory release blanks observed
    cells only, so a declared missing code stays in the release as it was read, and a release that writes
    a code in suppressed cells writes it where a value was suppressed, never over a missing one."""

    from ..treat.strict.classes import rank_ranges

    row, lo, hi, pattern = rank_ranges(assignment, n_classes)
    listed = pattern != 0
    row, lo, hi, pattern = row[listed], lo[listed], hi[listed], pattern[listed]
    flags = np.column_stack([((pattern >> j) & 1).astype(bool) for j in range(q)]) if q else \
        np.zeros((len(row), 0), bool)
    if codes is not None and q:
        flags &= np.asarray(codes)[row] >= 0
    return plan_of_ranges(keys, class_of_row, n_classes, row, lo, hi, flags)


def plan_of_ranges(keys: Any, class_of_row: np.ndarray, n_classes: int, row: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray, flags: np.ndarray) -> RankedSuppression:
    """The :class:`~kanon_core.engines.base.RankedSuppression` blanking QI j (``flags[i, j]``) in the records
    of rank ``[lo[i], hi[i])`` of class ``row[i]``, with the raw key rows of those classes."""
    import pyarrow as pa

    touched = np.zeros(n_classes, dtype=bool)
    touched[row] = True
    key_rows = np.flatnonzero(touched[class_of_row])
    classes = keys.take(pa.array(key_rows, pa.int64())).append_column(
        "kanon_cls", pa.array(class_of_row[key_rows].astype(np.int64), pa.int64()))
    cols: dict[str, Any] = {"kanon_cls": pa.array(row, pa.int64()), "lo": pa.array(lo, pa.int64()),
                            "hi": pa.array(hi, pa.int64())}
    for j in range(flags.shape[1]):
        cols[f"s{j}"] = pa.array(flags[:, j], pa.bool_())
    return RankedSuppression(classes, pa.table(cols))


def write_suppressed_release(engine: Any, path: str | Path, found: SuppressedAtScale | RiskSuppressedAtScale,
                             out: str | Path,
                             missing_codes: Mapping[str, Sequence[str]] | None = None,
                             settings: EngineSettings | None = None, batch: Any = None,
                             code: int | None = None) -> list[str]:
    """Write the release of ``found`` to ``out`` (.csv or .parquet) with the input's labels sidecar when it
    has labels; the names written. Within ``batch`` (an :class:`~kanon_core.outputs.OutputBatch`) or in a
    batch of its own, so the files appear only when complete.

    ``code``: in a CSV release, the code written in the suppressed cells and declared in the sidecar as a
    missing code labelled as suppressed, the release ``kanon suppress -o x.csv`` writes in memory
    (:func:`kanon_core.export.release_files`), so that the release is the same whichever engine wrote it
    (with ``--engine auto`` a file above the size threshold would otherwise change format). The code must
    not be a value of a column it is written in, as in memory; without a code, suppressed cells are empty.
    A sidecar of an earlier release at ``out`` is overwritten, as the in-memory writer does, even with
    nothing to declare (else it would be read back with the new data)."""
    from ..outputs import OutputBatch
    from .source import open_source

    settings = settings or EngineSettings()
    ranked = found.ranked()
    csv = Path(out).suffix.lower() == ".csv"
    code = code if csv else None
    extra: dict[str, tuple[str, str]] = {}
    texts: dict[str, str] = {}
    if code is not None:
        from ..export import SUPPRESSED_LABEL, ExportOptions

        code = int(ExportOptions(suppressed_code=code).suppressed_code)  # checked as in memory
        per_class = suppressed_per_class(ranked, found.table.n_classes, len(found.qis))
        check_code_unused(found.table, per_class, code)
        extra = {q: (str(code), SUPPRESSED_LABEL) for j, q in enumerate(found.qis) if per_class[:, j].any()}
        texts = code_texts(open_source(path), found, code)
    with OutputBatch() if batch is None else nullcontext(batch) as b:
        target = b.temp_path(out) if engine.name != "spark" else Path(out)
        engine.release(path, target, qis=list(found.qis), missing_codes=missing_codes, settings=settings,
                       sidecar=False, ranked=ranked, blank_code=code, blank_texts=texts)
        labels = engine.release_labels(open_source(path), (), missing_codes, settings=settings, extra=extra)
        written = [Path(out).name, *write_release_labels(b, out, labels)]
    return written


def write_release_labels(batch: Any, out: str | Path, labels: bytes | None) -> list[str]:
    """Write a release's labels sidecar beside ``out`` in ``batch`` (an :class:`~kanon_core.outputs.OutputBatch`),
    as the in-memory writer does: the labels when there is something to declare, an empty file over an earlier
    release's sidecar (else it would be read with the new data), nothing otherwise; the names written."""
    from ..io import labels_json
    from ..outputs import sidecar_of

    if labels is None and sidecar_of(out).exists():
        labels = labels_json({})
    if labels is None:
        return []
    batch.write_bytes(sidecar_of(out), labels)
    return [sidecar_of(out).name]


def code_texts(source: Any, found: SuppressedAtScale | RiskSuppressedAtScale, code: int) -> dict[str, str]:
    """Per QI of a CSV input, the code for suppressed cells as the in-memory writer writes it in that column:
    in a column the in-memory reader types as decimals, as a decimal in the column's float style (``-99.0``, or
    ``-99`` in the "plain" style), else as the whole number. The column's type comes from its distinct values
    (the engine's aggregate keys), typed as that reader types them."""
    import pyarrow.compute as pc

    from ..io import float_cell
    from .table import type_distinct

    if source.format != "csv":
        return {}
    out = {}
    for j, q in enumerate(found.qis):
        raw = pc.unique(found.keys.column(f"k{j}").combine_chunks())
        typed = type_distinct(source, q, raw.drop_null(), raw.null_count > 0)
        out[q] = float_cell(float(code), typed.float_style) if typed.dtype == "float" else str(int(code))
    return out


def suppressed_per_class(ranked: RankedSuppression, n_classes: int, q: int) -> np.ndarray:
    """(classes x QIs) the records of each class whose QI cell the plan ``ranked`` blanks."""
    out = np.zeros((n_classes, q), dtype=np.int64)
    ranges = ranked.ranges
    if not ranges.num_rows:
        return out
    cls = ranges.column("kanon_cls").to_numpy()
    size = ranges.column("hi").to_numpy() - ranges.column("lo").to_numpy()
    for j in range(q):
        flag = ranges.column(f"s{j}").to_numpy(zero_copy_only=False).astype(bool)
        np.add.at(out[:, j], cls[flag], size[flag])
    return out


def check_code_unused(table: ClassTable, per_class: np.ndarray, code: int) -> None:
    """Refuse, in the in-memory writer's words (:func:`kanon_core.export.check_options`), a code for
    suppressed cells that is also a value a record keeps in a QI with suppressed cells: the two could no
    longer be told apart. A column of numbers compares numbers (``-99.0`` is -99), any other its cells'
    text, as in memory; found on the class table, with no pass over the file."""
    for j, name in enumerate(table.qis):
        if not per_class[:, j].any():
            continue
        values = table.values[j] if table.values else ()
        numeric = bool(values) and all(isinstance(v, (int, float, np.integer, np.floating))
                                       and not isinstance(v, (bool, np.bool_)) for v in values)
        hits = [i for i, v in enumerate(values) if (float(v) == float(code) if numeric else _text(v) == str(code))]
        if not hits:
            continue
        kept = table.count - per_class[:, j]
        if (kept[np.isin(table.codes[:, j], hits)] > 0).any():
            text = str(code)
            raise InputError(f"The code for suppressed cells ({text}) is also a value of {name}; "
                             "choose another code.")


def _text(v: Any) -> str:
    """A value's text as the in-memory writer compares it with the code (a whole float as an integer)."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)
