"""A process-wide, thread-safe result cache bounded by bytes, with least-recently-used eviction.

Every Streamlit session runs its script in a thread of one server process, so the memo of expensive results
(MINUCs, suppressions, comparisons, reports) is shared by all sessions. Keys carry the session history's
``uid`` and the version id, so sessions never see each other's results. A count bound (``max_entries``) does
not protect the server: one MINUC result of 19 quasi-identifiers holds hundreds of megabytes, a risk summary a
few kilobytes. The bound here is on the estimated bytes of the values held.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd


def _max_bytes_from_env() -> int:
    """``KANON_CACHE_MB`` (a positive number of megabytes) or 1024; anything else is ignored."""
    try:
        mb = float(os.environ.get("KANON_CACHE_MB", "1024"))
    except ValueError:
        mb = 1024.0
    return int((mb if mb > 0 else 1024.0) * 2**20)


DEFAULT_MAX_BYTES = _max_bytes_from_env()


LONG_CONTAINER = 256
"""Items of a list, tuple, set or dict measured one by one; a longer one (the 100,000 labels of a postcode's
codes, the rows of its hierarchy) is estimated from an even sample of :data:`CONTAINER_SAMPLE` items: walking
each of them took seconds for every result stored."""
CONTAINER_SAMPLE = 64


def _items_size(items: Any, seen: set[int], depth: int) -> int:
    """Estimated bytes of the items of a container (of a dict: its keys and values)."""
    n = len(items)
    if isinstance(items, dict):
        seq: Any = list(items.items())
    else:
        seq = items if isinstance(items, list | tuple) else list(items)
    sample = seq if n <= LONG_CONTAINER else seq[:: max(1, n // CONTAINER_SAMPLE)][:CONTAINER_SAMPLE]
    if isinstance(items, dict):
        total = sum(size_of(k, seen, depth) + size_of(v, seen, depth) for k, v in sample)
    else:
        total = sum(size_of(v, seen, depth) for v in sample)
    return total if n <= LONG_CONTAINER else int(total / len(sample) * n)


def size_of(value: Any, _seen: set[int] | None = None, _depth: int = 0) -> int:
    """Estimated bytes held by ``value``: arrays and frames by their buffers, containers and dataclasses by
    their items (each object counted once; a long container from a sample of them). An estimate, cheap on
    large results (no per-element walk of arrays, of frames' numeric columns or of long containers)."""
    seen = set() if _seen is None else _seen
    if id(value) in seen or _depth > 6:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value.base if isinstance(value.base, np.ndarray) else None
        return 0 if base is not None and id(base) in seen else int(value.nbytes) + 112
    if isinstance(value, pd.DataFrame | pd.Series | pd.Index):
        try:
            return int(value.memory_usage(index=True, deep=False).sum()) + _object_extra(value)
        except (TypeError, ValueError):
            return sys.getsizeof(value)
    if isinstance(value, str | bytes | bytearray | int | float | bool | None):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + _items_size(value, seen, _depth + 1)
    if isinstance(value, list | tuple | set | frozenset):
        return sys.getsizeof(value) + _items_size(value, seen, _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value)]
        # and what a cached_property keeps beside the fields (e.g. a hierarchy's row indexes)
        names += [k for k in getattr(value, "__dict__", {}) if k not in names]
        return sys.getsizeof(value) + sum(size_of(getattr(value, n, None), seen, _depth + 1) for n in names)
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return sys.getsizeof(value) + size_of(attrs, seen, _depth + 1)
    return sys.getsizeof(value)


def _object_extra(obj: pd.DataFrame | pd.Series | pd.Index) -> int:
    """Bytes of the Python objects behind object columns, estimated from a few of them (a deep walk of a
    16,000-row string column takes milliseconds; of a million rows, most of a second)."""
    frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
    if isinstance(frame, pd.Index):
        cols = [frame] if frame.dtype == np.dtype(object) else []
    else:
        cols = [frame[c] for c in frame.columns if frame[c].dtype == np.dtype(object)]
    extra = 0
    for col in cols:
        n = len(col)
        if n:
            head = col[:64] if isinstance(col, pd.Index) else col.iloc[:64]
            extra += int(sum(sys.getsizeof(v) for v in head) / len(head) * n)
    return extra


class ByteLRU:
    """A mapping bounded by the estimated bytes of its values, evicting the least recently used first.

    All methods hold one lock, so script threads of several sessions (and background jobs) may use it at
    once. A value larger than the whole bound is not kept (the caller still has it).
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, sizer: Callable[[Any], int] = size_of) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = int(max_bytes)
        self._sizer = sizer
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    @property
    def nbytes(self) -> int:
        """Estimated bytes held now (never above ``max_bytes``)."""
        with self._lock:
            return self._bytes

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key`` (marked as most recently used), else ``default``."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return default
            self._data.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: Any, nbytes: int | None = None) -> bool:
        """Store ``value``; evict least recently used entries until the bound holds. False when not kept."""
        size = int(self._sizer(value) if nbytes is None else nbytes)
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return False
            self._data[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, s) = self._data.popitem(last=False)
                self._bytes -= s
            return True

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            item = self._data.pop(key, None)
            if item is None:
                return default
            self._bytes -= item[1]
            return item[0]

    def items(self) -> list[tuple[Hashable, Any]]:
        """A snapshot of (key, value) pairs, least recently used first (does not change the order)."""
        with self._lock:
            return [(k, v) for k, (v, _) in self._data.items()]

    def __iter__(self) -> Iterator[Hashable]:
        return iter([k for k, _ in self.items()])

    def discard_where(self, predicate: Callable[[Hashable], bool]) -> int:
        """Drop every entry whose key satisfies ``predicate`` (e.g. a dropped session's history); the count."""
        with self._lock:
            gone = [k for k in self._data if predicate(k)]
            for k in gone:
                self._bytes -= self._data.pop(k)[1]
            return len(gone)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0


_SHARED: ByteLRU | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> ByteLRU:
    """The server's one result cache (``KANON_CACHE_MB`` megabytes, default 1024)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = ByteLRU(DEFAULT_MAX_BYTES)
        return _SHARED


class SessionView(Mapping):
    """One session's part of a shared :class:`ByteLRU`: its keys are stored under a token of its own, so
    sessions never read each other's entries, and a fresh view starts empty (a new data source)."""

    _tokens = itertools.count(1)

    def __init__(self, store: ByteLRU | None = None) -> None:
        self.store = shared() if store is None else store
        self.token = next(self._tokens)

    def __getitem__(self, key: Hashable) -> Any:
        value = self.store.get((self.token, key), _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return (self.token, key) in self.store

    def __iter__(self) -> Iterator[Hashable]:
        return iter([k[1] for k, _ in self.store.items() if k[0] == self.token])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def items(self) -> list[tuple[Hashable, Any]]:  # type: ignore[override]
        """A snapshot of this session's (key, value) pairs, without changing their recency."""
        return [(k[1], v) for k, v in self.store.items() if k[0] == self.token]

    def put(self, key: Hashable, value: Any) -> bool:
        return self.store.put((self.token, key), value)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value under ``key``, else ``compute()`` stored there: what a page's memo and work started ahead
        for that page (on a worker thread, without the session) both call."""
        value = self.store.get((self.token, key), _MISSING)
        if value is _MISSING:
            value = compute()
            self.put(key, value)
        return value


_MISSING = object()
