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
        cost = float(self.result.cost)
        return 0.0 if cost <= 0 else max(0.0, (cost - float(self.result.lower_bound)) / cost)

    def per_variable(self) -> dict[str, int]:
        """Suppressed cells per quasi-identifier."""
        return dict(zip(self.qis, (int(c) for c in self.result.per_variable(len(self.qis))), strict=True))

    def ranked(self) -> RankedSuppression:
        """The engine's plan: each class's records by rank, as the solver assigned the patterns."""
        return ranked_plan(self.keys, self.class_of_row, self.table.n_classes, self.result.assignment,
                           len(self.qis))


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
        mask = self.result.mask
        rows = np.flatnonzero(mask.any(axis=1))
        return plan_of_ranges(self.keys, self.class_of_row, self.table.n_classes, rows,
                              np.zeros(len(rows), np.int64), self.table.count[rows].astype(np.int64), mask[rows])


def solve_at_scale(engine: Any, path: str | Path, qis: Sequence[str], k: int, missing: str,
                   costs: np.ndarray | None = None, protected: np.ndarray | None = None,
                   node_limit: int | None = None, missing_codes: Mapping[str, Sequence[str]] | None = None,
                   settings: EngineSettings | None = None, progress: Progress | None = None) -> SuppressedAtScale:
    """Aggregate ``path`` on ``qis`` with ``engine`` and solve the strict model at ``k`` on its class table
    (importances ``costs``, default 1 each; ``protected`` QIs never suppressed)."""
    from ..treat.strict.classes import suppress_classes
    from ..treat.suppress import NODE_LIMIT
    from .source import open_source
    from .table import aggregate_table

    settings = settings or EngineSettings()
    qis = list(qis)
    costs = np.ones(len(qis)) if costs is None else np.asarray(costs, dtype=np.float64)
    protected = np.zeros(len(qis), dtype=bool) if protected is None else np.asarray(protected, dtype=bool)
    t0 = time.perf_counter()
    table, keys, class_of_row, _ = aggregate_table(engine, open_source(path), qis, None, missing_codes, settings)
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


def ranked_plan(keys: Any, class_of_row: np.ndarray, n_classes: int, assignment: Any, q: int) -> RankedSuppression:
    """The engine's :class:`~kanon_core.engines.base.RankedSuppression` for an assignment: the raw key rows
    of the classes that lose cells (a class merged from several raw rows lists each of them) and, per
    class, the rank ranges with their flags (empty patterns use up ranks but are not listed)."""

    from ..treat.strict.classes import rank_ranges

    row, lo, hi, pattern = rank_ranges(assignment, n_classes)
    listed = pattern != 0
    row, lo, hi, pattern = row[listed], lo[listed], hi[listed], pattern[listed]
    flags = np.column_stack([((pattern >> j) & 1).astype(bool) for j in range(q)]) if q else \
        np.zeros((len(row), 0), bool)
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
                             settings: EngineSettings | None = None, batch: Any = None) -> list[str]:
    """Write the release of ``found`` to ``out`` (.csv or .parquet) with the input's labels sidecar when it
    has labels; the names written. Within ``batch`` (an :class:`~kanon_core.outputs.OutputBatch`) or in a
    batch of its own, so the files appear only when complete."""
    from ..outputs import OutputBatch, sidecar_of
    from .source import open_source

    settings = settings or EngineSettings()
    ranked = found.ranked()
    with OutputBatch() if batch is None else nullcontext(batch) as b:
        target = b.temp_path(out) if engine.name != "spark" else Path(out)
        engine.release(path, target, qis=list(found.qis), missing_codes=missing_codes, settings=settings,
                       sidecar=False, ranked=ranked)
        labels = engine.release_labels(open_source(path), (), missing_codes, settings=settings)
        written = [Path(out).name]
        if labels is not None:
            b.write_bytes(sidecar_of(out), labels)
            written.append(sidecar_of(out).name)
    return written
