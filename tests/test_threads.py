"""Two officers at once: a MINUC search and a suppression in concurrent threads give the sequential results.

The dashboard runs each session's script in its own thread; these tests run the core calls the MINUCs
and Suppress pages make, at the same moment, several times over, and compare every result with the one
computed alone. They also check the threading set-up of :mod:`kanon_core.threads`: a thread-safe numba
layer (or serial kernels), and that a parallel kernel excludes every other compute task.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest

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


@pytest.mark.skipif(threads.MAX_WORKERS < 2, reason="needs two compute slots")
def test_map_computes_on_a_helper_beside_the_calling_thread():
    """Two items that each wait for the other's thread at a barrier: only two threads at once end them. The
    helper's item then ends later than the caller's, and its result is waited for."""
    meet = threading.Barrier(2, timeout=10)
    caller = threading.current_thread().name

    def work(x: int) -> tuple[int, str]:
        meet.wait()
        name = threading.current_thread().name
        if name != caller:
            time.sleep(0.1)
        return x, name

    got = threads.map_workers(work, range(2))
    assert [x for x, _ in got] == [0, 1]
    assert len({name for _, name in got}) == 2 and caller in {name for _, name in got}


def test_map_ends_in_the_calling_thread_when_every_helper_is_busy():
    """Helpers held by other work (another session's call, or work started ahead waiting for its turn) take
    nothing of this call until free: the caller computes every item, in order, and does not wait for them."""
    release = threading.Event()
    busy = [threads._helpers().submit(release.wait) for _ in range(threads.MAX_WORKERS)]
    try:
        time.sleep(0.05)
        who: list[str] = []
        got: list[list[int]] = []
        caller = threading.Thread(target=lambda: got.append(threads.map_workers(
            lambda x: (who.append(threading.current_thread().name), x * 3)[1], range(20))), name="caller")
        caller.start()
        caller.join(10)
        assert not caller.is_alive(), "the call waited for busy helpers"
        assert got == [[x * 3 for x in range(20)]]
        assert set(who) == {"caller"}
    finally:
        release.set()
    for f in busy:
        f.result(timeout=10)
    assert threads.map_workers(lambda x: -x, range(5)) == [0, -1, -2, -3, -4]  # the helpers serve again


def test_map_raises_the_first_error_once_every_item_has_ended():
    ended: list[int] = []

    def work(x: int) -> int:
        if x in (3, 7):
            raise ValueError(f"item {x}")
        time.sleep(0.01 if x == 9 else 0.0)
        ended.append(x)
        return x

    with pytest.raises(ValueError, match="item 3"):
        threads.map_workers(work, range(10))
    assert sorted(ended) == [0, 1, 2, 4, 5, 6, 8, 9]


def test_map_inside_a_parallel_section_runs_in_the_calling_thread():
    with threads.parallel_section():  # every slot is held here: a pool would wait for ever
        assert threads.map_workers(lambda x: x + 1, range(10)) == list(range(1, 11))


def _wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_fair_slots_serve_requests_in_the_order_asked():
    """A thread that gives a slot back and asks again at once goes behind the threads already waiting (a
    plain semaphore let it take the slot back: a search's pool kept both slots for its whole run)."""
    slots = threads.FairSlots(1)
    order: list[str] = []
    slots.acquire()

    def take(name: str) -> None:
        slots.acquire()
        order.append(name)
        slots.release()

    waiters = [threading.Thread(target=take, args=(name,)) for name in ("b", "c")]
    for queued, t in enumerate(waiters, start=1):
        t.start()
        _wait_until(lambda queued=queued: slots.waiting == queued)
    slots.release()
    slots.acquire()  # at once again, as a pool thread going to its next chunk
    order.append("a")
    slots.release()
    for t in waiters:
        t.join()
    assert order == ["b", "c", "a"]
    assert slots.free == 1 and slots.waiting == 0


def test_a_request_for_every_slot_is_not_overtaken():
    """A parallel kernel's request for all slots is served whole in its turn: a later one-slot request
    waits behind it although a slot is free meanwhile."""
    slots = threads.FairSlots(2)
    slots.acquire()
    events: list[str] = []
    all_taken = threading.Event()

    def whole() -> None:
        slots.acquire(2)
        events.append("all")
        all_taken.set()
        time.sleep(0.05)
        slots.release(2)

    def one() -> None:
        slots.acquire()
        events.append("one")
        slots.release()

    t_all = threading.Thread(target=whole)
    t_all.start()
    _wait_until(lambda: slots.waiting == 1)
    t_one = threading.Thread(target=one)
    t_one.start()
    _wait_until(lambda: slots.waiting == 2)
    assert slots.free == 1 and not events  # a free slot, yet the one-slot request waits its turn
    slots.release()
    t_all.join()
    t_one.join()
    assert events == ["all", "one"]
    with pytest.raises(ValueError):
        slots.release()  # more than taken
    with pytest.raises(ValueError):
        slots.acquire(3)


def test_a_short_task_waits_for_a_chunk_not_for_a_long_search():
    """Every slot busy with a long run of chunks (each worker asking again at once): a task asked for in
    the middle is served after a chunk or two, not after the run."""
    chunks = 200
    served_at: list[int] = []
    done = [0] * threads.MAX_WORKERS
    go = threading.Event()

    def looper(i: int) -> None:
        go.wait()
        for _ in range(chunks):
            with threads.worker_slot():
                time.sleep(0.002)
            done[i] += 1

    loopers = [threading.Thread(target=looper, args=(i,)) for i in range(threads.MAX_WORKERS)]
    for t in loopers:
        t.start()
    go.set()
    _wait_until(lambda: min(done) >= 5)
    asked_at = sum(done)
    with threads.worker_slot():
        served_at.append(sum(done))
    for t in loopers:
        t.join()
    assert served_at[0] - asked_at <= 2 * threads.MAX_WORKERS  # a chunk or two per slot after it asked


def test_work_started_ahead_waits_for_foreground_work_until_promoted(monkeypatch):
    """Work under a Deferral takes a compute slot only in a gap between foreground work (a grace period
    after the last one ends); the tasks it submits inherit that; promoting it lifts the wait at once, and
    work not started ahead never waits."""
    monkeypatch.setattr(threads, "GRACE_SECONDS", 0.2)
    deferral = threads.Deferral()
    took: list[str] = []

    def ahead(name: str) -> None:
        with threads.started_ahead(deferral), threads.worker_slot():
            took.append(name)

    with threads.foreground():
        t = threading.Thread(target=ahead, args=("ahead",))
        t.start()
        with threads.worker_slot():  # asked-for work is not held back
            took.append("asked")
        assert not t.join(0.3) and t.is_alive() and took == ["asked"]
    ended = time.monotonic()
    t.join(10)
    assert took == ["asked", "ahead"] and time.monotonic() - ended >= 0.15  # after the grace period

    # a pool's tasks submitted from work started ahead wait too, and a promotion releases them at once
    monkeypatch.setattr(threads, "GRACE_SECONDS", 60.0)
    second = threads.Deferral()
    results: list[list[int]] = []

    def submit() -> None:
        with threads.started_ahead(second), ThreadPoolExecutor(max_workers=2) as pool:
            results.append([f.result() for f in threads.submit_all(pool, lambda x: x * 2, range(4))])

    with threads.foreground():
        pass  # a page drawn after the work was started, ended just now: a gap opens after the (long) grace
    s = threading.Thread(target=submit)
    s.start()
    assert not s.join(0.3) and s.is_alive() and not results
    second.promote()
    s.join(10)
    assert results == [[0, 2, 4, 6]]



def test_the_run_that_starts_work_ahead_does_not_hold_it_back(monkeypatch):
    """A page starting a search ahead of its own click: that page's run and its drawing do not defer the
    search (its head start is what the click gains); a page drawn after it does."""
    monkeypatch.setattr(threads, "GRACE_SECONDS", 60.0)
    took = threading.Event()
    with threads.foreground():
        deferral = threads.Deferral()  # started by this run

        def ahead() -> None:
            with threads.started_ahead(deferral), threads.worker_slot():
                took.set()

        threading.Thread(target=ahead).start()
        assert took.wait(10)  # not held back by the run that started it
    later = threading.Event()
    gate = threading.Event()

    def ahead_again() -> None:
        gate.wait()
        with threads.started_ahead(deferral), threads.worker_slot():
            later.set()

    threading.Thread(target=ahead_again).start()
    with threads.foreground():  # the next page
        gate.set()
        assert not later.wait(0.3)
    assert not later.wait(0.3)  # and the grace after it
    deferral.promote()
    assert later.wait(10)


def test_work_a_page_starts_for_another_page_waits_for_that_page_until_shown_there(monkeypatch):
    """The Risk page starting the MINUCs page's search: the Risk page's run and the longer wait after it
    (its drawing, STARTING_PAGE_SECONDS) hold the work back; the page it was started for lifts that wait
    when it shows it (held_from_here), and is not held back by its own drawing either."""
    monkeypatch.setattr(threads, "GRACE_SECONDS", 0.0)
    monkeypatch.setattr(threads, "STARTING_PAGE_SECONDS", 60.0)
    took = threading.Event()
    with threads.foreground():
        deferral = threads.Deferral(held_by_this_run=True)

        def ahead() -> None:
            with threads.started_ahead(deferral), threads.worker_slot():
                took.set()

        threading.Thread(target=ahead).start()
        assert not took.wait(0.3)  # held back by the run that started it
    assert not took.wait(0.3)  # and for STARTING_PAGE_SECONDS after it
    with threads.foreground():  # the page it was started for
        deferral.held_from_here()
        assert took.wait(10)  # computes while that page is drawn
    assert deferral.deferred  # still not asked for: later pages hold it back again

    # outside a page, held_by_this_run is the plain Deferral: only runs started after it hold it back
    outside = threads.Deferral(held_by_this_run=True)
    assert outside.starting_run is None and outside._wait_left() == 0.0
