"""The benchmark's CPU meter: the server's CPU and the browser's (Chromium processes under the benchmark) apart."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cpu_meter import CpuMeter

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def _burn_code(seconds: float) -> str:
    """A script that burns ``seconds`` of CPU, then sleeps (its time stays readable)."""
    return BURN.format(s=seconds) + "time.sleep(30)"


def _burn(executable: str, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([executable, "-c", _burn_code(seconds)])


LAUNCHER = """import subprocess, sys, time
kids = [subprocess.Popen([exe, '-c', code]) for exe, code in zip(sys.argv[1::2], sys.argv[2::2])]
print(' '.join(str(k.pid) for k in kids), flush=True)
time.sleep(30)
"""


def _tree(*burns: tuple[str, float]) -> tuple[subprocess.Popen, list[int]]:
    """A process of its own (the meter's root) that starts a burn per ``(executable, seconds)``: the meter then
    sees only these under it, not a Chromium another test of this process left running (a browser fixture kept
    for the whole session under the same test worker)."""
    args = [a for exe, secs in burns for a in (exe, _burn_code(secs))]
    root = subprocess.Popen([sys.executable, "-c", LAUNCHER, *args], stdout=subprocess.PIPE, text=True)
    line = root.stdout.readline() if root.stdout is not None else ""
    return root, [int(x) for x in line.split()]


def _kill(*pids: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):  # already gone
            os.kill(pid, 9)


def _wait_for_cpu(meter: CpuMeter, start: tuple[float, float], side: str, at_least: float) -> float:
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        got = getattr(meter.since(start), side)
        if got >= at_least:
            return got
        time.sleep(0.05)
    return got


def test_the_meter_tells_the_servers_cpu_from_the_browsers(tmp_path):
    """A process named like Chromium under this one counts as the browser, the server's pid as the server, and
    another child as neither (a process's time is read over its threads, from /proc)."""
    fake_browser = tmp_path / "chromium-fake"
    os.symlink(sys.executable, fake_browser)  # the process's name (comm) is the name it was started by
    server = _burn(sys.executable, 0.0)
    # under the root: a process named like the browser, and one that is not (neither side)
    root, (browser_pid, other_pid) = _tree((str(fake_browser), 0.4), (sys.executable, 0.4))
    try:
        meter = CpuMeter(server.pid, root=root.pid)
        assert meter.available
        start = (meter.sample()[0], 0.0)  # the browser's burn may have started before the first sample
        other_meter = CpuMeter(other_pid)
        assert _wait_for_cpu(other_meter, (0.0, 0.0), "server", 0.35) >= 0.35
        assert _wait_for_cpu(meter, start, "browser", 0.35) >= 0.35
        split = meter.since(start)
        assert split.browser < 0.4 + 0.2 and split.server < 0.2  # the other child's time in neither
    finally:
        _kill(browser_pid, other_pid)
        for p in (server, root):
            p.kill()


def test_the_servers_own_cpu_is_counted():
    root, _ = _tree()  # first: its start takes a tenth of a second, which the server's burn must not spend
    server = _burn(sys.executable, 0.4)
    try:
        meter = CpuMeter(server.pid, root=root.pid)
        start = meter.sample()
        assert _wait_for_cpu(meter, start, "server", 0.3) >= 0.3
        assert meter.since(start).browser < 0.2  # no process named like Chromium under the root
    finally:
        server.kill()
        root.kill()


def test_a_timeline_splits_a_wait_into_who_worked_when():
    """Readings every 0.1 s: the server alone for 0.2 s, both for 0.1 s, the browser alone for 0.2 s, then
    neither; the window keeps the slots that overlap it, with times from its start."""
    from benchmarks.cpu_meter import CpuTimeline, timeline_text, who_worked

    timeline = CpuTimeline(meter=None)  # type: ignore[arg-type]  # readings given by hand, no thread
    spent = [(0.0, 0.0), (0.2, 0.0), (0.4, 0.01), (0.5, 0.1), (0.51, 0.2), (0.51, 0.3), (0.52, 0.3)]
    for i, (server, browser) in enumerate(spent):
        timeline.record(100.0 + i / 10, server, browser)
    slots = timeline.window(100.0, 100.6)
    assert [round(s.start, 2) for s in slots] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    assert [tuple(round(c, 1) for c in s.cores()) for s in slots] == [
        (2.0, 0.0), (2.0, 0.1), (1.0, 0.9), (0.1, 1.0), (0.0, 1.0), (0.1, 0.0)]
    assert {k: round(v, 2) for k, v in who_worked(slots).items()} == {
        "server alone": 0.2, "browser alone": 0.2, "both": 0.1, "neither": 0.1}
    inner = timeline.window(100.25, 100.35)  # the slots overlapping it, from its start
    assert [round(s.start, 2) for s in inner] == [-0.05, 0.05]
    text = timeline_text(slots)
    assert "server alone 0.20 s, browser alone 0.20 s, both 0.10 s, neither 0.10 s" in text
    assert len(text.splitlines()) == 1 + len(slots)


def test_a_timeline_reads_its_meter_on_a_thread_until_stopped():
    from benchmarks.cpu_meter import CpuTimeline

    class Counting:
        calls = 0

        def sample(self):
            Counting.calls += 1
            return float(Counting.calls), 0.0

    import time

    timeline = CpuTimeline(Counting(), step=0.01)  # type: ignore[arg-type]
    timeline.start()
    time.sleep(0.2)
    timeline.stop()
    taken = len(timeline.samples)
    assert taken >= 3 and [s[1] for s in timeline.samples] == [float(i + 1) for i in range(taken)]
    time.sleep(0.05)
    assert len(timeline.samples) == taken  # stopped
