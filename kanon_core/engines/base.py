"""The engine boundary: what an out-of-core engine must do for kanon, written once.

kanon asks an engine four things about a file, and nothing else:

* :meth:`Engine.aggregate`: one ``GROUP BY`` over some columns (the QIs, plus a sensitive variable when
  asked), returning one row per distinct combination of raw values with its record count and weight sum.
  Only this table comes back to Python; :mod:`kanon_core.engines.table` types its values exactly as the
  in-memory reader would and builds the :class:`~kanon_core.classtable.ClassTable`;
* :meth:`Engine.column_stats`: per column, the missing and distinct counts (the Data page's summary);
* :meth:`Engine.preview`: the first rows;
* :meth:`Engine.write_release`: the records with recodes (mapping tables) and suppressions (cells keyed
  by class) applied, streamed to CSV or Parquet.

Engines are registered objects (:data:`ENGINES`), looked up by name; ``auto`` is resolved by
:func:`choose_engine`. Every engine reads CSV cells as text (an empty cell is missing, nothing else is)
and Parquet columns with their own types; the typing of text happens afterwards, on distinct values only.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pyarrow as pa

from ..errors import InputError
from .source import Source

ProgressFn = Callable[[str], None]

KEY_PREFIX = "k"
"""Aggregated key columns are named k0, k1, ... (column names of the file may be anything)."""

WEIGHT_STATS = ("w_bad", "w_missing", "w_nonfinite", "w_nonpositive")
"""Per-group counts an aggregate with a weight returns, so that weights are validated as
:func:`kanon_core.dataset.validate_weights` validates them, in the same pass."""


def default_memory_limit() -> int:
    """Half of the machine's physical memory, in bytes (the engines spill to disk beyond their limit)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 4 << 30
    return max(256 << 20, total // 2)


def parse_memory(text: str | int | None) -> int:
    """``"2GB"``, ``"512MiB"``, ``"0.5"`` (a fraction of RAM) or bytes -> bytes; None -> the default."""
    if text is None:
        return default_memory_limit()
    if isinstance(text, int):
        return text
    t = str(text).strip().upper().replace(" ", "")
    units = {"TIB": 1 << 40, "GIB": 1 << 30, "MIB": 1 << 20, "KIB": 1 << 10,
             "TB": 10**12, "GB": 10**9, "MB": 10**6, "KB": 10**3, "T": 1 << 40, "G": 1 << 30, "M": 1 << 20,
             "K": 1 << 10, "B": 1}
    unit = next((u for u in units if t.endswith(u)), "")
    num, mult = (t[: -len(unit)], units[unit]) if unit else (t, 0)
    try:
        value = float(num)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:  # (float() reads "nan" and "inf" too)
        raise InputError("--memory-limit expects a size such as 4GB or 512MiB, or a fraction of RAM such as 0.5.")
    if mult == 0:
        if 0 < value <= 1:
            return int(default_memory_limit() * 2 * value)
        mult = 1
    out = int(value * mult)
    if out < 64 << 20:
        raise InputError("--memory-limit must be at least 64 MiB.")
    return out


@dataclass
class EngineSettings:
    """How an engine may use the machine: a memory ceiling, a private spill folder, a Spark master.

    The spill folder is created on first use with mode 0700 and removed by :meth:`close`.
    """

    memory_limit: int = field(default_factory=default_memory_limit)
    threads: int | None = None
    spark_master: str = "local[2]"
    progress: ProgressFn | None = None
    cancelled: Callable[[], bool] | None = None
    """Polled while a query runs: an engine that can stop a query mid-way (DuckDB's interrupt) stops it
    when this turns True and raises :class:`~kanon_core.errors.Cancelled`; the others stop at the next
    :meth:`say` (after the current query), where the progress sink raises it."""
    query_progress: Callable[[float], None] | None = None
    """Receives the running query's share done (0..1) where the engine knows it (DuckDB)."""
    _temp: tempfile.TemporaryDirectory | None = field(default=None, repr=False)

    @property
    def temp_dir(self) -> str:
        if self._temp is None:
            self._temp = tempfile.TemporaryDirectory(prefix="kanon-spill-")
            os.chmod(self._temp.name, 0o700)
        return self._temp.name

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    def close(self) -> None:
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None


@dataclass(frozen=True)
class ColumnStats:
    """Missing and distinct counts of one column as an engine counted them (text not yet typed)."""

    name: str
    n_missing: int
    n_distinct: int


@dataclass(frozen=True)
class ReleasePlan:
    """What to change when writing a release.

    ``recodes[c]`` is a two-column table (``key``: the raw value as the engine reads it, ``value``: the
    new value) covering every observed value of column c. ``suppress`` is a table whose first columns are
    ``qis`` (values after the recodes; null matches missing) and whose further boolean columns
    ``s0, s1, ...`` say which QI to blank in every record of that class. ``ranked`` blanks cells of some
    records of a class only (:class:`RankedSuppression`). ``drop`` columns are left out.
    ``blank_code``, in a CSV release, is written in the blanked cells instead of leaving them empty: the code for
    suppressed cells the in-memory writer writes (and the labels sidecar declares), so that a release does not
    depend on the engine that wrote it; a Parquet release leaves them null, as the in-memory writer does.
    """

    recodes: dict[str, pa.Table] = field(default_factory=dict)
    qis: tuple[str, ...] = ()
    suppress: pa.Table | None = None
    drop: tuple[str, ...] = ()
    ranked: RankedSuppression | None = None
    blank_code: int | None = None
    blank_texts: dict[str, str] = field(default_factory=dict)
    """Per QI of a CSV input, the text ``blank_code`` is written as: the in-memory writer writes it in the
    column's type (``-99.0`` in a column of decimals, as its other numbers); ``str(blank_code)`` otherwise."""


@dataclass(frozen=True)
class RankedSuppression:
    """Suppressions by class and by rank within the class (local suppression at scale).

    ``classes`` maps raw QI values (``k0, k1, ...``, after recodes, null matching missing) to a class
    number ``kanon_cls``; several raw rows may share one class (declared missing codes merge them).
    The records of a class are ranked 0, 1, ... in input order; ``ranges`` gives, per class, rank
    ranges ``[lo, hi)`` (``kanon_cls``, ``lo``, ``hi``) and flags ``s0, s1, ...`` saying which QI to
    blank in those records. Records outside every range are written as they are.
    """

    classes: pa.Table
    ranges: pa.Table


class Engine(Protocol):
    """An engine kanon can run its aggregations on (see the module docstring)."""

    name: str
    description: str
    in_memory: bool

    def available(self) -> bool: ...

    def aggregate(self, source: Source, keys: Sequence[str], weight: str | None,
                  settings: EngineSettings) -> pa.Table: ...

    def column_stats(self, source: Source, settings: EngineSettings) -> tuple[int, list[ColumnStats]]: ...

    def distinct(self, source: Source, column: str, limit: int, settings: EngineSettings) -> pa.Array | None: ...

    def preview(self, source: Source, n: int, settings: EngineSettings) -> pa.Table: ...

    def write_release(self, source: Source, plan: ReleasePlan, out: Path, settings: EngineSettings) -> None: ...


ENGINES: dict[str, Engine] = {}
"""The registered engines by name (``pandas`` is the in-memory path and is handled by its caller)."""

ENGINE_CHOICES = ("auto", "pandas", "duckdb", "polars", "spark")

DEFAULT_EMBEDDED = "duckdb"
"""The embedded out-of-core engine ``auto`` picks for large files (chosen on the benchmark in the README)."""

AUTO_THRESHOLD_BYTES = 200 << 20
"""``auto`` reads files up to this size in memory (pandas) and larger ones with :data:`DEFAULT_EMBEDDED`.
200 MiB of CSV is about 2-3 million records of ten variables: still seconds in memory."""


def register(engine: Engine) -> Engine:
    ENGINES[engine.name] = engine
    return engine


def get_engine(name: str) -> Engine:
    _load_builtin()
    if name not in ENGINES:
        raise InputError(f"Unknown engine '{name}'; choose one of: {', '.join(ENGINE_CHOICES)}.")
    engine = ENGINES[name]
    if not engine.available():
        raise InputError(f"The {name} engine is not installed on this machine.")
    return engine


def choose_engine(name: str, path: str | os.PathLike, threshold: int = AUTO_THRESHOLD_BYTES) -> str:
    """Resolve ``auto``: pandas for files below ``threshold`` bytes or not CSV/Parquet, else the embedded
    engine. Any other name is returned as given (checked by :func:`get_engine` when used)."""
    from .source import is_scale_format

    if name not in ENGINE_CHOICES:
        raise InputError(f"Unknown engine '{name}'; choose one of: {', '.join(ENGINE_CHOICES)}.")
    if name != "auto":
        return name
    p = Path(path)
    if not is_scale_format(p) or not p.exists() or p.stat().st_size < threshold:
        return "pandas"
    return DEFAULT_EMBEDDED


def _load_builtin() -> None:
    from . import api, duckdb_engine, polars_engine, spark_engine  # noqa: F401  (each registers itself)


def key_names(n: int) -> list[str]:
    return [f"{KEY_PREFIX}{i}" for i in range(n)]
