"""Engines: where kanon's aggregations run (pandas in memory; DuckDB, Polars or Spark out of core).

See :mod:`kanon_core.engines.base` for the boundary and :mod:`kanon_core.engines.api` for what callers
use: ``engine_for(name, path).class_table(...)``, ``.summary(...)``, ``.release(...)``.
"""

from .base import (
    AUTO_THRESHOLD_BYTES,
    DEFAULT_EMBEDDED,
    ENGINE_CHOICES,
    EngineSettings,
    choose_engine,
    get_engine,
    parse_memory,
)

__all__ = ["AUTO_THRESHOLD_BYTES", "DEFAULT_EMBEDDED", "ENGINE_CHOICES", "EngineSettings", "choose_engine",
           "engine_for", "get_engine", "parse_memory"]


def engine_for(name: str, path):
    """The engine object for ``--engine NAME`` on ``path`` (``auto`` resolved by the file's size)."""
    return get_engine(choose_engine(name, path))
