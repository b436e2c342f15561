"""Worker threads, in one place: a thread-safe numba threading layer and a process-wide cap.

The dashboard runs every session's script in its own thread, so two officers can start a MINUC search
and a suppression at the same moment, and both call compiled kernels. Two things must then hold:

* **no crash.** numba's ``workqueue`` threading layer aborts the process when two threads launch
  parallel kernels at once; the ``omp`` (GNU OpenMP) and ``tbb`` layers are thread-safe. Before the
  first parallel kernel runs, this module asks numba for a thread-safe layer when one is installed
  (``NUMBA_THREADING_LAYER=threadsafe``), and otherwise keeps ``workqueue`` and runs parallel kernels
  one at a time (:func:`parallel_section` is then exclusive).
* **no starvation, no oversubscription.** At most :data:`MAX_WORKERS` compute threads run at once in
  the whole process (default: the number of cores; ``KANON_THREADS`` lowers it). Thread-pool tasks
  each hold one slot of a process-wide semaphore while they compute (:func:`worker_slot`,
  :func:`map_workers`); a parallel kernel, which uses every core, holds all slots
  (:func:`parallel_section`). Slots are granted in the order they were asked for (:class:`FairSlots`),
  and work is split into chunks, so two searches interleave rather than one waiting for the other to
  finish, and a page's tenth-of-a-second count started during a long search waits for one chunk, not
  for the search.
* **work started ahead waits for work asked for.** A computation started ahead of a request (the
  dashboard's searches ahead of a click) runs under a :class:`Deferral`: each of its compute slots is
  taken only while no :func:`foreground` work that started after it (a page being drawn) is under way or
  ended less than :data:`GRACE_SECONDS` ago, while the browser draws what it was sent. Work a page starts
  ahead of another page (the Risk page's start of the MINUCs page's search) waits for that page too. Once
  asked for (:meth:`Deferral.promote`) it computes like any other work.

A user's own ``NUMBA_THREADING_LAYER`` or ``NUMBA_NUM_THREADS`` is respected.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def _cap_from_env() -> int:
    cores = os.cpu_count() or 1
    raw = os.environ.get("KANON_THREADS", "").strip()
    if raw.isdigit() and int(raw) >= 1:
        return min(int(raw), cores)
    return cores


MAX_WORKERS: int = _cap_from_env()
"""Compute threads that may run at once in this process."""

class FairSlots:
    """``n`` compute slots granted first come, first served; a request may take several at once.

    A plain semaphore lets the thread that releases a slot take it back at once, ahead of threads already
    waiting (nothing orders its waiters against a running thread): a search whose pool threads go from one
    chunk straight to the next kept both slots for its whole run, and a page's class count of 0.1 s
    started during the 19-QI MINUC search waited 3.9 s, the rest of the search. Here a release hands the
    freed slots to the oldest request while it can be served whole, so a thread asking again joins the
    back of the queue. A request for every slot (a parallel kernel) is served whole, in its turn: later
    requests wait behind it rather than take the slots it is waiting to fill.
    """

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError("at least one slot")
        self.n = n
        self._free = n
        self._lock = threading.Lock()
        self._queue: deque[tuple[int, threading.Event]] = deque()

    def acquire(self, count: int = 1) -> None:
        """Wait for ``count`` slots (1 to n), granted after every earlier request."""
        if not 1 <= count <= self.n:
            raise ValueError("count must be between 1 and the number of slots")
        with self._lock:
            if not self._queue and self._free >= count:
                self._free -= count
                return
            granted = threading.Event()
            self._queue.append((count, granted))
        granted.wait()

    def release(self, count: int = 1) -> None:
        """Give back ``count`` slots; the oldest requests that can be served whole get them."""
        with self._lock:
            if self._free + count > self.n:
                raise ValueError("more slots released than taken")
            self._free += count
            while self._queue and self._queue[0][0] <= self._free:
                wanted, granted = self._queue.popleft()
                self._free -= wanted
                granted.set()

    @property
    def free(self) -> int:
        """Slots free now (for tests and diagnostics)."""
        return self._free

    @property
    def waiting(self) -> int:
        """Requests waiting now (for tests and diagnostics)."""
        return len(self._queue)


_slots = FairSlots(MAX_WORKERS)
_held = threading.local()

GRACE_SECONDS = 0.5
"""How long work started ahead still waits after foreground work ended: the browser draws the page it was
sent then, on the same cores."""
STARTING_PAGE_SECONDS = 2.0
"""The same wait after the run of a page that started work ahead of another page: that page is being read
and its charts drawn (a session's first chart makes the browser load its chart code, 1.3-1.6 s of work)."""
_gate = threading.Condition()
_runs_started = 0  # foreground runs so far, numbered from 1
_running: set[int] = set()  # the numbers of those under way
_ended: deque[tuple[int, float]] = deque(maxlen=64)  # (number, monotonic end) of the last ones ended
_ahead = threading.local()  # .deferral: the Deferral of the work this thread does, if it was started ahead
_this_run = threading.local()  # .number: the foreground run under way on this thread, if any


class Deferral:
    """The standing of one computation started ahead of a request: ``deferred`` while nobody waits for it.

    Its compute slots are taken only in the gaps between foreground work that started after it
    (:func:`foreground`); a gap starts :data:`GRACE_SECONDS` after such work ends. The run that starts it (a
    page starting a search ahead of its own click) and its drawing do not hold it back: that page is the one
    the officer is reading, and the search's head start is what the click then gains. The threads it submits
    work to inherit it (:func:`submit_all`). :meth:`promote` (the request came: someone waits for the result,
    or it is cancelled and must reach its checkpoint) lifts the wait at once, also for a task already
    waiting for its turn.

    ``held_by_this_run``: the foreground run on the calling thread holds it back too, and for
    :data:`STARTING_PAGE_SECONDS` after it ends, for work a page starts ahead of another page: that page is
    drawn first, on the same cores, and the officer reads it while the work goes on.
    """

    def __init__(self, held_by_this_run: bool = False) -> None:
        self.deferred = True
        self.starting_run: int | None = None
        with _gate:
            self.after = _runs_started
            number = getattr(_this_run, "number", None)
            if held_by_this_run and number is not None:
                self.after = number - 1
                self.starting_run = number

    def held_from_here(self) -> None:
        """The page drawn now on the calling thread shows the wait for this work (the page it was started
        ahead for, or one that will take its result): that page and the ones before it no longer hold it
        back, only pages drawn after."""
        number = getattr(_this_run, "number", None)
        with _gate:
            if number is not None and number > self.after:
                self.after = number
                _gate.notify_all()

    def promote(self) -> None:
        with _gate:
            self.deferred = False
            _gate.notify_all()

    def _wait_left(self) -> float | None:
        """Seconds to wait now (None: until a foreground run ends), 0 when a gap is open. Under ``_gate``."""
        if any(n > self.after for n in _running):
            return None
        last = max((t + (STARTING_PAGE_SECONDS if n == self.starting_run else GRACE_SECONDS)
                    for n, t in _ended if n > self.after), default=float("-inf"))
        return max(0.0, last - time.monotonic())


@contextmanager
def foreground() -> Iterator[None]:
    """Mark work asked for and under way (a page being drawn): work started ahead before it waits meanwhile."""
    global _runs_started
    with _gate:
        _runs_started += 1
        number = _runs_started
        _running.add(number)
    outer = getattr(_this_run, "number", None)
    _this_run.number = number
    try:
        yield
    finally:
        _this_run.number = outer
        with _gate:
            _running.discard(number)
            _ended.append((number, time.monotonic()))
            _gate.notify_all()


@contextmanager
def started_ahead(deferral: Deferral | None) -> Iterator[None]:
    """Run the block (and the tasks it submits) as work started ahead, under ``deferral`` (None: asked for)."""
    before = getattr(_ahead, "deferral", None)
    _ahead.deferral = deferral
    try:
        yield
    finally:
        _ahead.deferral = before


def wait_for_a_gap() -> None:
    """In work started ahead and still deferred: wait until no foreground work that started after it is
    under way or recent. Taking a compute slot does this; work ahead calls it itself before a step that
    takes none (plain numpy work), so that step waits its turn too."""
    deferral = getattr(_ahead, "deferral", None)
    if deferral is None or not deferral.deferred:
        return
    with _gate:
        while deferral.deferred:
            left = deferral._wait_left()
            if left == 0.0:
                return
            _gate.wait(left)


def _installed_layers() -> tuple[str, ...]:
    """numba threading layers whose libraries load on this machine."""
    found = []
    for name, module in (("tbb", "tbbpool"), ("omp", "omppool"), ("workqueue", "workqueue")):
        try:
            __import__(f"numba.np.ufunc.{module}")
        except Exception:  # noqa: BLE001 - a missing shared library raises ImportError or OSError
            continue
        found.append(name)
    return tuple(found)


@dataclass(frozen=True)
class ThreadingSetup:
    """What was chosen: the layer numba was asked for, the installed layers, and whether parallel
    kernels run one at a time (only when no thread-safe layer is installed)."""

    requested: str
    installed: tuple[str, ...]
    serial_kernels: bool
    max_workers: int


def _configure() -> ThreadingSetup:
    import numba
    from numba.np.ufunc import parallel

    installed = _installed_layers()
    threadsafe = any(layer in installed for layer in ("tbb", "omp"))
    user_layer = os.environ.get("NUMBA_THREADING_LAYER")
    launched = bool(getattr(parallel, "_is_initialized", False))
    if user_layer:
        requested = user_layer
    elif launched:
        requested = str(numba.config.THREADING_LAYER)
    else:
        requested = "threadsafe" if threadsafe else "workqueue"
        numba.config.THREADING_LAYER = requested
    if not launched and not os.environ.get("NUMBA_NUM_THREADS"):
        numba.config.NUMBA_NUM_THREADS = MAX_WORKERS
    serial = requested == "workqueue" or (requested in ("default", "threadsafe") and not threadsafe)
    return ThreadingSetup(requested=requested, installed=installed, serial_kernels=serial,
                          max_workers=MAX_WORKERS)


SETUP: ThreadingSetup = _configure()


def _count() -> int:
    return int(getattr(_held, "count", 0))


def holds_slots() -> bool:
    """Whether this thread holds compute slots (work it starts must then run in it, not wait for more)."""
    return bool(_count())


@contextmanager
def worker_slot() -> Iterator[None]:
    """Hold one compute slot while the block runs (a no-op in a thread that already holds slots)."""
    if _count():
        yield
        return
    wait_for_a_gap()
    _slots.acquire()
    _held.count = 1
    try:
        yield
    finally:
        _held.count = 0
        _slots.release()


@contextmanager
def parallel_section() -> Iterator[None]:
    """Hold every compute slot while a parallel kernel (numba ``prange``) runs.

    The kernel uses all cores, so nothing else computes meanwhile; under ``workqueue`` this is also
    what keeps two launches from overlapping. Re-entrant within a thread (a no-op when slots are held).
    """
    if _count():
        yield
        return
    wait_for_a_gap()
    _slots.acquire(MAX_WORKERS)
    _held.count = MAX_WORKERS
    try:
        yield
    finally:
        _held.count = 0
        _slots.release(MAX_WORKERS)


def run_parallel(kernel: Callable[..., R], *args: object) -> R:
    """``kernel(*args)`` inside :func:`parallel_section`."""
    with parallel_section():
        return kernel(*args)


def workers(requested: int | None = None) -> int:
    """Threads for a pool: ``requested`` (default all cores), never more than :data:`MAX_WORKERS`."""
    return max(1, min(int(requested or MAX_WORKERS), MAX_WORKERS))


def _in_slot(fn: Callable[[T], R], item: T, deferral: Deferral | None = None) -> R:
    with started_ahead(deferral), worker_slot():
        return fn(item)


def submit_all(pool: ThreadPoolExecutor, fn: Callable[[T], R], items: Iterable[T]) -> list[Future[R]]:
    """Submit ``fn(item)`` for every item; each task computes inside :func:`worker_slot`, as work started
    ahead when the submitting thread's is (its :class:`Deferral`)."""
    deferral = getattr(_ahead, "deferral", None)
    return [pool.submit(_in_slot, fn, item, deferral) for item in items]


_helper_pool: ThreadPoolExecutor | None = None
_helper_pool_lock = threading.Lock()


def _helpers() -> ThreadPoolExecutor:
    """The process's helper threads for :func:`map_workers` (:data:`MAX_WORKERS` of them, made once)."""
    global _helper_pool
    with _helper_pool_lock:
        if _helper_pool is None:
            _helper_pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="kanon-helper")
        return _helper_pool


class _Shares(Generic[T, R]):
    """The items of one :func:`map_workers` call, taken one at a time by the calling thread and its helpers."""

    def __init__(self, fn: Callable[[T], R], items: list[T], deferral: Deferral | None) -> None:
        self.fn, self.items, self.deferral = fn, items, deferral
        self.results: list[R | None] = [None] * len(items)
        self.errors: dict[int, BaseException] = {}
        self._next = 0
        self._done = 0
        self._cond = threading.Condition()

    def take_all(self) -> None:
        """Compute items until none is left to take."""
        while True:
            with self._cond:
                i = self._next
                if i >= len(self.items):
                    return
                self._next += 1
            try:
                self.results[i] = _in_slot(self.fn, self.items[i], self.deferral)
            except BaseException as exc:  # noqa: BLE001 - raised in the calling thread (gather)
                self.errors[i] = exc
            with self._cond:
                self._done += 1
                self._cond.notify_all()

    def gather(self) -> list[R]:
        """Every result in order, once every item taken has been computed (the first error raised)."""
        with self._cond:
            while self._done < len(self.items):
                self._cond.wait()
        if self.errors:
            raise self.errors[min(self.errors)]
        return self.results  # type: ignore[return-value]


def map_workers(fn: Callable[[T], R], items: Iterable[T], requested: int | None = None) -> list[R]:
    """``[fn(item) for item in items]`` on :func:`workers` threads, each task in a compute slot, in order.

    The calling thread computes items too, beside helpers of a pool made once for the process: a pool per
    call started its threads every time (under cProfile, the 69 calls of the bundled sample's discernibility
    search at k = 5 and 1 % waited 0.2 s for thread starts). A helper still busy with another call (another session's, or
    work started ahead waiting for its turn) takes no item of this one until it is free, and the caller
    waits only for the items a helper has taken: with every helper busy, the caller computes them all, as
    the call would in one thread.
    """
    items = list(items)
    n = workers(requested)
    deferral = getattr(_ahead, "deferral", None)
    if n == 1 or len(items) <= 1 or _count():
        # in this thread (a thread that already holds slots must not wait for more: no deadlock)
        return [_in_slot(fn, item, deferral) for item in items]
    shares = _Shares(fn, items, deferral)
    pool = _helpers()
    for _ in range(min(n, len(items)) - 1):
        pool.submit(shares.take_all)
    shares.take_all()
    return shares.gather()
