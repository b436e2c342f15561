"""The benchmark's CPU meter: the server's CPU and the browser's (Chromium processes under the benchmark) apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cpu_meter import CpuMeter

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def _burn(executable: str, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([executable, "-c", BURN.format(s=seconds) + "time.sleep(30)"])


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
    others: list[subprocess.Popen] = []
    try:
        meter = CpuMeter(server.pid)
        assert meter.available
        start = meter.sample()
        others.append(_burn(str(fake_browser), 0.4))
        other = _burn(sys.executable, 0.4)  # not named like the browser: neither side
        others.append(other)
        other_meter = CpuMeter(other.pid)
        assert _wait_for_cpu(other_meter, (0.0, 0.0), "server", 0.35) >= 0.35
        assert _wait_for_cpu(meter, start, "browser", 0.35) >= 0.35
        split = meter.since(start)
        assert split.browser < 0.4 + 0.2 and split.server < 0.2  # the other child's time in neither
    finally:
        for p in [server, *others]:
            p.kill()


def test_the_servers_own_cpu_is_counted():
    server = _burn(sys.executable, 0.4)
    try:
        meter = CpuMeter(server.pid)
        start = meter.sample()
        assert _wait_for_cpu(meter, start, "server", 0.3) >= 0.3
        assert meter.since(start).browser < 0.2  # no process named like Chromium was started here
    finally:
        server.kill()
