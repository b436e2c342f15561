"""Heavy computations (MINUC search, suppression, the report) in a worker thread, with progress and Cancel.

The script thread only waits and redraws a progress bar, so any click on the page stops that wait at once
(Streamlit ends a script run at its next element update) and the new run finds the job still going: the
page stays responsive, and leaving the page does not lose the work. The worker stores its result in the
session's part of the shared cache (kanon_app.cache), so the result is found by the memo even when the
page that started it is no longer shown.

Cancel sets the flag of the job's :class:`~kanon_core.progress.Progress`; kanon_core's computations stop at
their next checkpoint and the page says "cancelled". Nothing is applied to the history by a job, so the
current version is unchanged.

At most ``KANON_HEAVY_JOBS`` heavy jobs of all sessions run at once (default 2; more wait their turn, and
say so): each holds its own large memory (a 19-variable MINUC search, hundreds of megabytes). The compiled
kernels' own thread safety and the process-wide cap on compute threads are kanon_core.threads' (two jobs
interleave there rather than one starving the other).

Work started ahead of a click (``speculative``, kanon_app.prefetch) never makes an officer's own work wait:
it starts only when a slot is free at once (else it is skipped, as cancelled), and a job asked for that
finds every slot taken cancels the speculative jobs holding them, which stop at their next checkpoint. Until
someone waits for its result (:meth:`Job.wait`) it computes only between the pages drawn after it started
(:class:`kanon_core.threads.Deferral`; the app marks its script runs with
:func:`kanon_core.threads.foreground`), so the pages an officer opens meanwhile get the cores.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kanon_core import threads
from kanon_core.errors import KanonError
from kanon_core.progress import Progress

T = TypeVar("T")

_jobs_setting = os.environ.get("KANON_HEAVY_JOBS", "").strip()
HEAVY_JOBS = max(1, int(_jobs_setting)) if _jobs_setting.isdigit() else 2
HEAVY_SLOTS = threading.BoundedSemaphore(HEAVY_JOBS)
POLL_SECONDS = 0.25
"""How often a waiting page looks whether a click asked for a rerun (:func:`_interruption_point`) and whether
its progress bar moved. A finished job ends the wait at once (an event)."""
REDRAW_SECONDS = 1.0
"""Least time between two redraws of a waiting page's progress bar (a new state, such as waiting for a slot,
is shown at once). Each redraw is a message the browser draws, on the cores the job itself is using: on two
cores, Chromium drew four redraws a second of the MINUC search's bar with a fifth of a core, one a second
with a tenth."""
_SPECULATIVE: dict[int, Job] = {}
"""Speculative jobs holding a heavy slot now (cancelled when asked-for work needs the slot)."""
_SPECULATIVE_LOCK = threading.Lock()
_UNFINISHED: dict[int, Job] = {}
"""Every job of this process not yet finished (all sessions'), for :func:`unfinished`."""
_UNFINISHED_LOCK = threading.Lock()


@dataclass
class Job(Generic[T]):
    """One computation running (or finished) in a worker thread.

    ``state`` is "waiting" (for a heavy slot), "running", "done", "cancelled" or "failed"; ``error`` holds
    the message of a :class:`KanonError` (shown to the user) and ``exception`` any other error (re-raised in
    the script thread, so it is not silently lost).
    """

    key: Hashable
    label: str
    progress: Progress = field(default_factory=Progress)
    fraction: float = 0.0
    message: str = ""
    state: str = "waiting"
    result: T | None = None
    error: str | None = None
    exception: BaseException | None = None
    stored: bool = False
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0
    finished: threading.Event = field(default_factory=threading.Event)
    deferral: threads.Deferral | None = None
    """Set for work started ahead: it computes between the pages drawn after it until someone waits for it."""

    def cancel(self) -> None:
        """Ask the computation to stop at its next checkpoint (a no-op once finished). Work started ahead stops
        waiting for pages being drawn, so it reaches that checkpoint (else a page waiting for the heavy slot it
        holds would keep it waiting for ever)."""
        self.progress.cancel()
        self.ask()

    def ask(self) -> None:
        """The result is wanted now: work started ahead no longer waits for pages being drawn."""
        if self.deferral is not None:
            self.deferral.promote()

    def shown_here(self) -> None:
        """The page being drawn is the one this work started ahead for, or one that will take its result: it
        computes meanwhile, held back only by pages drawn after (:meth:`kanon_core.threads.Deferral.held_from_here`)."""
        if self.deferral is not None:
            self.deferral.held_from_here()

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the job to end (``timeout`` seconds at most); true when it has. Whoever waits wants the
        result: the job is asked for (:meth:`ask`)."""
        self.ask()
        return self.finished.wait(timeout)


def start(key: Hashable, label: str, work: Callable[[Progress], T],
          store: Callable[[T], Any] | None = None, heavy: bool = True, speculative: bool = False,
          held_by_this_run: bool = False) -> Job[T]:
    """Run ``work(progress)`` in a daemon thread; ``store(result)`` is called in that thread when it succeeds.

    A ``heavy`` job waits for one of the ``KANON_HEAVY_JOBS`` slots; a light one (a fraction of a second, little
    memory: kanon_app.prefetch) starts at once, so a page waiting for it never waits behind a long search. A
    ``speculative`` heavy job (work started ahead of a click) runs only in a slot free at once and gives it
    up to work asked for (see the module docstring); ``held_by_this_run``: the page starting it is drawn first
    (work for another page, :class:`kanon_core.threads.Deferral`)."""
    deferral = threads.Deferral(held_by_this_run) if speculative else None
    job: Job[T] = Job(key=key, label=label, deferral=deferral)

    def update(fraction: float, message: str) -> None:
        job.fraction, job.message = fraction, message

    job.progress.callback = update

    slots = _Slot(job, speculative) if heavy else contextlib.nullcontext(True)
    with _UNFINISHED_LOCK:
        _UNFINISHED[id(job)] = job

    def run() -> None:
        try:
            with slots as held:
                if job.progress.cancelled or not held:
                    job.state = "cancelled"
                    return
                job.state = "running"
                t0 = time.perf_counter()
                with threads.started_ahead(job.deferral):
                    value = work(job.progress)
                job.seconds = time.perf_counter() - t0
            if store is not None:
                job.stored = store(value) is not False
            job.result, job.state = value, "done"
        except KanonError as exc:
            if job.progress.cancelled:
                job.state = "cancelled"
            else:
                job.error, job.state = str(exc), "failed"
        except BaseException as exc:  # noqa: BLE001 - handed to the script thread, which re-raises it
            job.exception, job.state = exc, "failed"
        finally:
            with _UNFINISHED_LOCK:
                _UNFINISHED.pop(id(job), None)
            job.finished.set()

    threading.Thread(target=run, name=f"kanon-{label}", daemon=True).start()
    return job


def unfinished() -> list[Job]:
    """The jobs of every session of this process that have not finished yet (queued or running)."""
    with _UNFINISHED_LOCK:
        return list(_UNFINISHED.values())


EXIT_PATIENCE = 10.0
"""Seconds the process waits at exit, in all, for the jobs still unfinished (asked to stop first)."""


def drain(jobs: list[Job] | None = None, patience: float = EXIT_PATIENCE) -> list[Job]:
    """Ask ``jobs`` (default: every unfinished job) to stop and wait for them, ``patience`` seconds in all;
    returns those still unfinished. Registered to run at exit: a job's daemon thread still inside compiled code
    when the interpreter tears down that code's thread pool (OpenMP) aborts the process ("terminate called
    without an active exception")."""
    jobs = unfinished() if jobs is None else jobs
    for job in jobs:
        job.cancel()
    deadline = time.monotonic() + patience
    return [job for job in jobs if not job.wait(max(0.0, deadline - time.monotonic()))]


atexit.register(drain)


QUEUED_PATIENCE = 1.0
"""Seconds :func:`finish_unless_queued` lets a job wait for a heavy slot before it gives up on it."""


def finish_unless_queued(job: Job, patience: float = QUEUED_PATIENCE) -> bool:
    """Wait for ``job`` to finish, unless it is queued for a heavy slot for ``patience`` seconds; true when it
    finished.

    For work that holds a heavy slot itself (the report's build) and would take another job's result: if
    that job waits for a slot, the slots may all be held by such waiters, none of which can ever go on. A job
    running (it holds its slot) is waited for to its end, as it ends or is cancelled at its next checkpoint.
    """
    queued = 0.0
    step = 0.05
    while not job.wait(step):
        if job.state == "waiting":
            queued += step
            if queued >= patience:
                return False
    return True


class _Slot:
    """A heavy slot for ``job``, as a context: true when held. A speculative job takes one only if free at
    once; a job asked for that finds none free first cancels the speculative jobs holding slots."""

    def __init__(self, job: Job, speculative: bool) -> None:
        self.job, self.speculative, self.held = job, speculative, False
        self.slots = HEAVY_SLOTS  # released where acquired, whatever the module's semaphore is by then

    def __enter__(self) -> bool:
        if self.speculative:
            self.held = self.slots.acquire(blocking=False)
            if self.held:
                with _SPECULATIVE_LOCK:
                    _SPECULATIVE[id(self.job)] = self.job
            return self.held
        if not self.slots.acquire(blocking=False):
            with _SPECULATIVE_LOCK:
                for other in list(_SPECULATIVE.values()):
                    other.cancel()
            self.slots.acquire()
        self.held = True
        return True

    def __exit__(self, *exc: object) -> None:
        if self.held:
            with _SPECULATIVE_LOCK:
                _SPECULATIVE.pop(id(self.job), None)
            self.slots.release()


def _jobs() -> dict[str, Job]:
    import streamlit as st

    return st.session_state.setdefault("jobs", {})


def register(name: str, job: Job) -> None:
    """Keep ``job`` as this session's job ``name`` (a computation started ahead of the page that shows it;
    that page finds it with :func:`running`). A job of that name still running for other parameters is left
    to finish; its result is stored all the same."""
    _jobs()[name] = job


def registered(name: str, key: Hashable) -> Job | None:
    """This session's job ``name`` for ``key``, running or finished (until :func:`sweep` drops it)."""
    job = _jobs().get(name)
    return job if job is not None and job.key == key else None


def running(name: str, key: Hashable) -> Job | None:
    """This session's unfinished job ``name`` for ``key`` (e.g. to hide a Run button while it runs)."""
    job = registered(name, key)
    return job if job is not None and not job.done else None


def sweep() -> None:
    """Drop this session's finished jobs whose result the cache kept (the memo finds it now): a job left in
    the session would hold its result outside the cache's byte bound."""
    import streamlit as st

    jobs = st.session_state.get("jobs")
    if jobs:
        for name in [n for n, j in jobs.items() if j.done and j.stored]:
            del jobs[name]


def run(name: str, key: Hashable, label: str, work: Callable[[Progress], T], *, start_now: bool,
        store: Callable[[T], Any] | None = None, cancelled_text: str | None = None) -> T | None:
    """Drive this session's job ``name`` for ``key`` from a page script; the result when it is ready, else None.

    ``start_now`` (the page's Run button was just clicked) starts it, cancelling a job of the same name for
    other parameters; a job of these parameters that has finished with a result gives that result. While it runs the page shows a progress bar and a Cancel button and waits; a cancelled
    job says so, a failed one shows its message. ``store`` keeps the result (e.g. in the memo) from the
    worker thread, so it survives the page being left. ``cancelled_text`` is what a cancelled job says.
    """
    import streamlit as st

    jobs = _jobs()
    job = jobs.get(name)
    if job is not None and job.key != key:
        if start_now:
            job.cancel()
        job = None
    # a click finding a job of these parameters finished with a result takes that result: it may have ended
    # after the page looked at the memo (a search started ahead, finishing as the click's run is drawn);
    # only a cancelled or failed one is run again
    if job is None or (start_now and job.done and job.state != "done"):
        if not start_now:
            return None
        job = start(key, label, work, store)
        jobs[name] = job
    if not job.done:
        holder = st.empty()  # the bar and its Cancel button: both gone once the job ends within this run
        with holder.container():
            bar = st.progress(job.fraction, text=_text(job))
            st.button("Cancel", key=f"btn_cancel_{name}", help="Stop this computation; nothing is changed",
                      icon=":material/cancel:", on_click=job.cancel, disabled=job.progress.cancelled)
        shown = (round(job.fraction, 2), _text(job))
        phase, drawn = _phase(job), time.monotonic()
        while not job.wait(POLL_SECONDS):
            _interruption_point()  # a click elsewhere ends the wait, even while the bar stands still
            now = (round(min(max(job.fraction, 0.0), 1.0), 2), _text(job))
            # redrawn only when it changed: at once when the job is waiting, running or cancelling anew, else
            # at most once per REDRAW_SECONDS
            if now != shown and (_phase(job) != phase or time.monotonic() - drawn >= REDRAW_SECONDS):
                bar.progress(now[0], text=now[1])
                shown, phase, drawn = now, _phase(job), time.monotonic()
        holder.empty()
    if jobs.get(name) is job:
        del jobs[name]
    if job.state == "cancelled":
        st.info(cancelled_text or f"{label} cancelled: nothing was changed.")
        return None
    if job.exception is not None:
        raise job.exception
    if job.error is not None:
        st.error(job.error)
        return None
    return job.result


def _interruption_point() -> None:
    """Let Streamlit end this script run here if a click (a rerun) or the server (a stop) asked it to.

    Streamlit honours those requests only where the script sends an element or touches the session state;
    a wait whose progress bar does not change (a job waiting for a slot, or a long step that reports
    nothing) would otherwise hold the script thread until the job ends: no click on the page would be
    heard, Cancel included. Looking at the session state is such a point, and costs nothing.
    """
    import streamlit as st

    _ = "jobs" in st.session_state


def _phase(job: Job) -> tuple[str, bool]:
    """What a waiting page shows at once when it changes: the job's state and whether it is being cancelled. A
    job that has just ended ("done" or "failed", its thread about to say it has finished) is still running for
    the bar, which is removed a moment later: no redraw for that."""
    state = "running" if job.state in ("done", "failed") else job.state
    return state, job.progress.cancelled


def _text(job: Job) -> str:
    if job.progress.cancelled:
        return f"{job.label}: cancelling…"
    if job.state == "waiting":
        return f"{job.label}: waiting for another computation on this server to finish"
    return f"{job.label}: {job.message}" if job.message else job.label
