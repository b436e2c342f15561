"""Two officers at once: a MINUC search and a suppression in concurrent threads give the sequential results.

The dashboard runs each session's script in its own thread; these tests run the core calls the MINUCs
and Suppress pages make, at the same moment, several times over, and compare every result with the one
computed alone. They also check the threading set-up of :mod:`kanon_core.threads`: a thread-safe numba
layer (or serial kernels), and that a parallel kernel excludes every other compute task.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from kanon_core import threads
from kanon_core.risk.minucs import find_minucs
from kanon_core.treat.suppress import suppress


def _table(seed: int, n: int = 400, q: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 4, size=(n, q)).astype(np.int32)
    codes[rng.random(codes.shape) < 0.03] = -1
    return codes


def _minucs(codes: np.ndarray) -> tuple:
    res = find_minucs(codes, k=3, missing="wildcard")
    return res.total, res.row_offsets.tobytes(), res.row_masks.tobytes()


def _suppression(codes: np.ndarray, model: str) -> tuple:
    res = suppress(codes, 3, model=model, method="exact", missing="wildcard")
    return res.cost, res.lower_bound, res.mask.tobytes(), res.findable_below_k


def test_concurrent_minucs_and_suppression_equal_the_sequential_results():
    a, b = _table(1), _table(2)
    want = [_minucs(a), _suppression(b, "strict"), _suppression(b, "record"), _minucs(b)]
    start = threading.Barrier(4)

    def run(i: int) -> tuple:
        start.wait()  # all four begin together
        return [lambda: _minucs(a), lambda: _suppression(b, "strict"), lambda: _suppression(b, "record"),
                lambda: _minucs(b)][i]()

    for _ in range(3):
        with ThreadPoolExecutor(max_workers=4) as pool:
            got = list(pool.map(run, range(4)))
        assert got == want


def test_the_numba_layer_is_thread_safe_or_kernels_are_serial():
    _suppression(_table(3, n=120), "record")  # runs a parallel kernel, so numba has chosen its layer
    layer = numba.threading_layer()
    assert layer in threads.SETUP.installed
    assert layer in ("omp", "tbb") or threads.SETUP.serial_kernels
    assert numba.config.NUMBA_NUM_THREADS == threads.MAX_WORKERS or os.environ.get("NUMBA_NUM_THREADS")
    assert threads.workers(10_000) == threads.MAX_WORKERS and threads.workers(1) == 1


def test_a_parallel_section_excludes_every_worker_slot():
    inside = threading.Event()
    leave = threading.Event()
    got_slot = threading.Event()

    def kernel_owner() -> None:
        with threads.parallel_section():
            inside.set()
            leave.wait()

    def worker() -> None:
        with threads.worker_slot():
            got_slot.set()

    owner = threading.Thread(target=kernel_owner)
    owner.start()
    inside.wait()
    other = threading.Thread(target=worker)
    other.start()
    assert not got_slot.wait(0.3)  # every slot is held by the parallel section
    leave.set()
    owner.join()
    other.join()
    assert got_slot.is_set()


def test_sections_nest_within_a_thread_and_map_keeps_order():
    with threads.worker_slot(), threads.parallel_section(), threads.worker_slot():
        pass  # re-entrant: no deadlock
    assert threads.map_workers(lambda x: x * x, range(50)) == [x * x for x in range(50)]


def test_map_inside_a_parallel_section_runs_in_the_calling_thread():
    with threads.parallel_section():  # every slot is held here: a pool would wait for ever
        assert threads.map_workers(lambda x: x + 1, range(10)) == list(range(1, 11))
