"""Background jobs: the result is stored, Cancel stops at the next checkpoint and says so, errors are kept."""

from __future__ import annotations

import contextlib
import threading
import time

from kanon_app import background
from kanon_core.errors import InputError


def test_result_is_stored_from_the_worker_thread():
    stored = []
    job = background.start("k", "sum", lambda progress: sum(range(10)), store=stored.append)
    assert job.wait(30)
    assert job.state == "done" and job.result == 45 and stored == [45]


def test_cancel_stops_at_the_next_checkpoint_and_stores_nothing():
    started, stored = threading.Event(), []

    def work(progress):
        started.set()
        for i in range(10_000_000):
            progress.update(i / 10_000_000, "working")  # raises Cancelled once cancel() was called
        return "finished"

    job = background.start("k", "loop", work, store=stored.append)
    assert started.wait(30)
    job.cancel()
    assert job.wait(30)
    assert job.state == "cancelled" and job.result is None and stored == []


def test_a_user_error_is_a_message_and_another_error_is_kept_for_the_script_thread():
    def bad_input(progress):
        raise InputError("No quasi-identifiers.")

    job = background.start("k", "x", bad_input)
    assert job.wait(30)
    assert job.state == "failed" and job.error == "No quasi-identifiers." and job.exception is None

    def bug(progress):
        raise ZeroDivisionError

    job = background.start("k", "x", bug)
    assert job.wait(30)
    assert job.state == "failed" and isinstance(job.exception, ZeroDivisionError)


def test_heavy_jobs_beyond_the_cap_take_turns(monkeypatch):
    """With one slot, the second job waits until the first has finished."""
    monkeypatch.setattr(background, "HEAVY_SLOTS", threading.BoundedSemaphore(1))
    release, order = threading.Event(), []

    def first(progress):
        order.append("first starts")
        release.wait(30)
        order.append("first ends")

    def second(progress):
        order.append("second starts")

    a = background.start("a", "a", first)
    while not order:
        threading.Event().wait(0.01)
    b = background.start("b", "b", second)
    assert not b.wait(0.3) and b.state == "waiting"
    release.set()
    assert a.wait(30) and b.wait(30)
    assert order == ["first starts", "first ends", "second starts"]


def test_a_cancelled_minuc_search_says_so_and_leaves_the_version_unchanged(monkeypatch):
    from kanon_app import prefetch

    from .helpers import open_page

    monkeypatch.setattr(prefetch, "AHEAD_SECONDS", -1.0)  # the officer's own search, none started ahead

    at = open_page("minucs.py")
    qis = ["BYSEX", "BYRACE", "BYPARED"]
    at.multiselect(key="w_minuc_qis").set_value(qis).run()
    at.number_input(key="w_minuc_k").set_value(2).run()
    hist = at.session_state["history"]
    ds = hist.current.dataset
    key = (hist.uid, hist.current_id, "minucs", (tuple(qis), 2, None, ds.missing))
    started, stored = threading.Event(), []

    def endless(progress):
        started.set()
        while True:
            progress.update(0.5, "searching")  # raises Cancelled once the job is cancelled
            threading.Event().wait(0.01)

    job = background.start(key, "MINUC search", endless, store=stored.append)
    at.session_state["jobs"] = {"minucs": job}
    assert started.wait(30)
    job.cancel()  # what the page's Cancel button does
    at.run()
    assert not at.exception
    assert any("MINUC search cancelled" in i.value and "nothing was changed" in i.value for i in at.info)
    assert not at.metric and stored == []
    assert at.session_state["history"].current_id == hist.current_id == 0 and len(hist.versions) == 1
    at.run()  # the next run offers the search again
    assert any(b.key == "btn_find_minucs" for b in at.button)


def test_two_jobs_run_side_by_side_within_the_cap(monkeypatch):
    """Two officers' searches both start at once (the kernels interleave in kanon_core.threads)."""
    monkeypatch.setattr(background, "HEAVY_SLOTS", threading.BoundedSemaphore(2))
    both = threading.Barrier(2)
    jobs = [background.start(i, "side", lambda progress: both.wait(30)) for i in range(2)]
    assert all(j.wait(30) for j in jobs)
    assert [j.state for j in jobs] == ["done", "done"]  # a barrier of two passes only if both ran at once


def test_a_search_finished_while_the_page_was_not_shown_is_found_and_its_job_dropped(monkeypatch):
    from kanon_app import prefetch
    from kanon_core.risk.minucs import find_minucs

    from .helpers import metric, open_page

    monkeypatch.setattr(prefetch, "AHEAD_SECONDS", -1.0)  # the officer's own search, none started ahead

    at = open_page("minucs.py")
    qis = ["BYSEX", "BYRACE", "BYPARED"]
    at.multiselect(key="w_minuc_qis").set_value(qis).run()
    at.number_input(key="w_minuc_k").set_value(2).run()
    hist = at.session_state["history"]
    ds = hist.current.dataset
    key = (hist.uid, hist.current_id, "minucs", (tuple(qis), 2, None, ds.missing))
    view = at.session_state["memo"]
    job = background.start(key, "MINUC search", lambda progress: find_minucs(
        ds.qi_matrix(qis), k=2, missing=ds.missing, progress=progress), store=lambda v: view.put(key, v))
    at.session_state["jobs"] = {"minucs": job}
    assert job.wait(60) and job.state == "done"
    at.run()
    assert not at.exception
    assert metric(at, "MINUCs") == f"{job.result.total:,}"
    assert "minucs" not in at.session_state["jobs"]


def test_work_started_ahead_never_makes_asked_for_work_wait(monkeypatch):
    """A speculative job runs only in a slot free at once (else it is skipped, as cancelled); a job asked for
    that finds the slots taken cancels the speculative jobs holding them and runs."""
    monkeypatch.setattr(background, "HEAVY_SLOTS", threading.BoundedSemaphore(1))
    holding, release = threading.Event(), threading.Event()

    def hold(progress):
        holding.set()
        while not release.is_set():
            progress.update(0.5, "working")  # raises once cancelled
            threading.Event().wait(0.01)
        return "held"

    asked = background.start("asked-1", "asked", hold)  # the officer's own job takes the only slot
    assert holding.wait(30)
    skipped = background.start("ahead-1", "ahead", lambda progress: "never", speculative=True)
    assert skipped.wait(30) and skipped.state == "cancelled"  # no free slot: not run, not waiting
    release.set()
    assert asked.wait(30) and asked.state == "done"

    holding.clear()
    release.clear()
    ahead = background.start("ahead-2", "ahead", hold, speculative=True)
    assert holding.wait(30) and ahead.state == "running"
    mine = background.start("asked-2", "asked", lambda progress: "mine")
    assert mine.wait(30) and mine.result == "mine"  # it did not wait for the speculative job to end
    assert ahead.wait(30) and ahead.state == "cancelled"
    release.set()


def _page_waiting_for_a_stalled_job() -> None:
    """A page driving a job whose progress never changes (it waits for the gate the test holds)."""
    import streamlit as st

    from kanon_app import background

    gate = st.session_state["gate"]
    background.run("stalled", "stalled", "A stalled job", lambda progress: gate.wait(120), start_now=True)
    st.write("done")


def test_a_rerun_or_stop_is_heard_while_the_progress_bar_stands_still():
    """While a job reports no progress (e.g. it waits for a heavy slot), the page's wait must still give way to
    a click or a stop: Streamlit hears them only at its interruption points. AppTest stops a run that times
    out and waits for the script thread; a wait deaf to that stop would hang here."""
    from streamlit.testing.v1 import AppTest

    gate = threading.Event()
    at = AppTest.from_function(_page_waiting_for_a_stalled_job, default_timeout=2)
    at.session_state["gate"] = gate
    outcome: list = []

    def drive() -> None:
        try:
            at.run()
            outcome.append("finished")
        except RuntimeError as exc:  # "AppTest script run timed out": the stop was heard
            outcome.append(str(exc))

    driver = threading.Thread(target=drive, daemon=True)
    try:
        driver.start()
        driver.join(30)
        assert not driver.is_alive(), "the page's wait did not hear the stop"
        assert outcome and "timed out" in outcome[0]
    finally:
        gate.set()


def test_work_holding_a_slot_does_not_wait_for_a_job_queued_for_one(monkeypatch):
    """The report's build holds a heavy slot and may take the MINUCs page's search: with every slot taken, a
    search still queued is given up on (waiting could never end), while a running one is waited for."""
    monkeypatch.setattr(background, "HEAVY_SLOTS", threading.BoundedSemaphore(1))

    def search(progress):
        return "minucs"

    queued = background.start("search", "MINUC search", search)  # takes the only slot ...
    assert queued.wait(30) and queued.result == "minucs"
    assert background.finish_unless_queued(queued)  # finished: nothing to wait for

    holder = threading.Event()
    first = background.start("hold", "another computation", lambda progress: holder.wait(30))
    queued = background.start("search", "MINUC search", search)  # ... now queued behind it
    try:
        assert not queued.wait(0.3) and queued.state == "waiting"
        assert not background.finish_unless_queued(queued, patience=0.3)
    finally:
        holder.set()
    assert first.wait(30) and queued.wait(30) and queued.state == "done"

    running_release = threading.Event()
    running = background.start("slow", "slow search", lambda progress: running_release.wait(30) and "found")
    threading.Timer(0.5, running_release.set).start()
    assert background.finish_unless_queued(running, patience=0.1) and running.result == "found"


def test_the_process_waits_at_exit_for_its_unfinished_jobs(tmp_path):
    """At exit every unfinished job is asked to stop and waited for (a daemon thread left inside compiled code
    while the interpreter tears that code's thread pool down aborts the process): a job that ends by itself
    half a second after the script, and one that runs until cancelled, both finish before the process does."""
    import subprocess
    import sys
    from pathlib import Path

    done = tmp_path / "done"
    probe = (
        "import time\nfrom pathlib import Path\nfrom kanon_app import background\n"
        f"done = Path({str(done)!r})\n"
        "def slow(progress):\n    time.sleep(0.5)\n    done.with_suffix('.slow').write_text('1')\n"
        "def endless(progress):\n"
        "    try:\n        while True:\n            progress.update(0.5, 'working')\n            time.sleep(0.01)\n"
        "    finally:\n        done.with_suffix('.endless').write_text('1')\n"
        "background.start('a', 'slow', slow, heavy=False)\nbackground.start('b', 'endless', endless, heavy=False)\n"
        "time.sleep(0.1)\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert done.with_suffix(".slow").exists() and done.with_suffix(".endless").exists()


def test_drain_gives_up_after_its_patience():
    release = threading.Event()
    job = background.start("k", "deaf", lambda progress: release.wait(30), heavy=False)  # never checks progress
    try:
        t = time.monotonic()
        background.drain(patience=0.3)
        assert time.monotonic() - t < 5 and not job.done
    finally:
        release.set()
        assert job.wait(30)


def _fake_page(monkeypatch) -> list[tuple[float, float, str]]:
    """Stand in for Streamlit on a page waiting for a job: the redraws of its progress bar (time, value, text)."""
    import sys
    import types

    redraws: list[tuple[float, float, str]] = []

    class Bar:
        def progress(self, value: float, text: str = "") -> None:
            redraws.append((time.monotonic(), value, text))

        def empty(self) -> None:
            pass

    class Holder:  # st.empty(): the bar and its Cancel button are drawn in it, and it is emptied at the end
        def container(self) -> contextlib.nullcontext:
            return contextlib.nullcontext()

        def empty(self) -> None:
            pass

    fake = types.SimpleNamespace(session_state={}, progress=lambda value, text="": Bar(),
                                 button=lambda *a, **k: False, info=lambda *a, **k: None, empty=Holder)
    monkeypatch.setitem(sys.modules, "streamlit", fake)
    monkeypatch.setattr(background, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(background, "REDRAW_SECONDS", 0.3)
    return redraws


def test_a_waiting_bar_is_redrawn_at_most_once_per_redraw_interval_while_the_job_reports(monkeypatch):
    """The job reports progress every 10 ms for 1.2 s; the page redraws its bar (a message the browser draws, on
    the job's cores) only every REDRAW_SECONDS, and the last redraw shows a recent step."""
    redraws = _fake_page(monkeypatch)

    def work(progress):
        for i in range(120):
            progress.update(i / 120, f"step {i}")
            time.sleep(0.01)
        return 42

    t0 = time.monotonic()
    assert background.run("redraw", "key", "Test", work, start_now=True) == 42
    elapsed = time.monotonic() - t0  # 1.2 s or more (a busy machine stretches the sleeps)
    gaps = [b[0] - a[0] for a, b in zip(redraws, redraws[1:], strict=False)]
    assert 2 <= len(redraws) <= elapsed / 0.3 + 1, (elapsed, redraws)  # 120 reports, a handful of redraws
    assert all(g >= 0.3 - 0.005 for g in gaps), gaps
    assert int(redraws[-1][2].split()[-1]) >= 60  # not stuck on an early step


def test_a_waiting_bar_shows_a_cancel_at_once(monkeypatch):
    """A new state (here: cancelling, while the job runs on to its next checkpoint) is drawn at the next poll,
    not after the redraw interval."""
    redraws = _fake_page(monkeypatch)
    monkeypatch.setattr(background, "REDRAW_SECONDS", 60.0)
    started = threading.Event()
    jobs: dict = {}

    def work(progress):
        started.set()
        for i in range(300):
            if not progress.cancelled:  # the next checkpoint lies 0.3 s after the cancel
                progress.update(i / 300, f"step {i}")
            elif time.monotonic() - jobs["cancelled_at"] > 0.3:
                progress.update(1.0)  # raises: cancelled
            time.sleep(0.01)
        return 1

    def cancel_soon() -> None:
        started.wait(10)
        time.sleep(0.2)
        jobs["cancelled_at"] = time.monotonic()
        background._jobs()["cancel"].cancel()

    threading.Thread(target=cancel_soon, daemon=True).start()
    assert background.run("cancel", "key", "Test", work, start_now=True) is None
    cancelling = [t for t, _, text in redraws if "cancelling" in text]
    assert cancelling and cancelling[0] - jobs["cancelled_at"] < 0.5


def test_a_speculative_job_computes_between_pages_until_someone_waits_for_it(monkeypatch):
    """Work started ahead takes its compute slots only when no page is being drawn (kanon_core.threads'
    foreground); Job.wait (someone wants the result) lets it compute at once. A job asked for never waits."""
    import threading

    from kanon_app import background
    from kanon_core import threads

    monkeypatch.setattr(threads, "GRACE_SECONDS", 60.0)
    computed, go = threading.Event(), threading.Event()

    def work(progress):
        go.wait()
        with threads.worker_slot():
            computed.set()
        return "ahead"

    job = background.start("ahead", "started ahead", work, speculative=True)
    with threads.foreground():  # a page drawn after the job started
        go.set()
        asked = background.start("asked", "asked for", lambda progress: threads.map_workers(lambda x: x, [1, 2]))
        assert asked.wait(10) and asked.result == [1, 2]
        assert not computed.wait(0.3) and not job.done
    assert not computed.wait(0.3)  # within the grace period after the page
    assert job.wait(10) and job.result == "ahead"  # asked for now: computed at once


def test_a_cancelled_speculative_job_stops_while_a_page_is_drawn(monkeypatch):
    """A job started ahead and waiting for a gap between pages still hears its cancel: a page that asks for
    work needing the heavy slot it holds cancels it, and keeps drawing (its script run is foreground) until
    that work is done, so the job must stop without the gap it waits for."""
    from kanon_app import background
    from kanon_core import threads

    monkeypatch.setattr(threads, "GRACE_SECONDS", 60.0)
    monkeypatch.setattr(background, "HEAVY_SLOTS", threading.BoundedSemaphore(1))
    chunks: list[int] = []
    go = threading.Event()

    def ahead(progress):
        go.wait()
        for i in range(1000):
            with threads.worker_slot():
                chunks.append(i)
            progress.update(i / 1000, "chunk")  # raises Cancelled once cancelled
        return "all"

    job = background.start("ahead", "started ahead", ahead, speculative=True)
    with threads.foreground():  # the page that asks for the other work, drawn until that work is done
        go.set()
        time.sleep(0.2)
        assert not chunks and job.state == "running"  # holds the slot, waits for a gap
        asked = background.start("asked", "asked for", lambda progress: "mine")  # cancels the job ahead
        assert asked.wait(10) and asked.result == "mine"
    assert job.finished.wait(10) and job.state == "cancelled" and len(chunks) <= 1


def test_a_job_a_page_starts_for_another_page_waits_until_that_page_shows_it(monkeypatch):
    """A speculative job held by the run that starts it (the Risk page starting the MINUCs page's search)
    does nothing, not even a step that takes no compute slot (threads.wait_for_a_gap), while that page is
    drawn and for STARTING_PAGE_SECONDS after; the page it is for lifts the wait when it shows it
    (Job.shown_here), and the job is still not asked for."""
    from kanon_app import background
    from kanon_core import threads

    monkeypatch.setattr(threads, "STARTING_PAGE_SECONDS", 60.0)
    steps: list[str] = []

    def work(progress):
        threads.wait_for_a_gap()
        steps.append("first step")
        with threads.worker_slot():
            steps.append("computed")
        return "done"

    with threads.foreground():  # the Risk page
        job = background.start("ahead", "started for another page", work, speculative=True, held_by_this_run=True)
        time.sleep(0.2)
        assert not steps
    assert not job.finished.wait(0.5) and not steps  # still held: the page is read
    with threads.foreground():  # the MINUCs page
        job.shown_here()
        assert job.finished.wait(10) and steps == ["first step", "computed"]
    assert job.deferral is not None and job.deferral.deferred  # shown, not asked for


def _page_clicking_run_for_a_finished_job():
    import streamlit as st

    from kanon_app import background

    calls = st.session_state["calls"]
    st.session_state["got"] = background.run("x", "key", "X", lambda progress: calls.append(1) or "again",
                                             start_now=True)


def test_a_click_takes_the_result_of_a_job_of_its_parameters_that_has_just_finished():
    """A search started ahead can finish between the click's look at the memo and its call to run: its result
    is the click's, not a second search. A cancelled job of the same parameters is run again."""
    from streamlit.testing.v1 import AppTest

    finished = background.start("key", "X", lambda progress: "ahead")
    assert finished.wait(30) and finished.state == "done"
    at = AppTest.from_function(_page_clicking_run_for_a_finished_job, default_timeout=30)
    at.session_state["calls"], at.session_state["jobs"] = [], {"x": finished}
    at.run()
    assert not at.exception
    assert at.session_state["got"] == "ahead" and at.session_state["calls"] == []

    cancelled = background.start("key", "X", lambda progress: "ahead")
    cancelled.cancel()
    assert cancelled.wait(30)
    cancelled.state = "cancelled"  # whether it ended before or after its start: a job that gave no result
    at.session_state["jobs"] = {"x": cancelled}
    at.run()
    assert at.session_state["got"] == "again" and at.session_state["calls"] == [1]
