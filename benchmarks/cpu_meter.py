"""CPU seconds the dashboard's two sides spend while a timed click is waited for: the server and the browser.

On a 2-core machine where the browser runs beside the server (the default: the server listens on localhost), a
click's wait cannot be shorter than the CPU both sides spend on it divided by the cores. Reading both next to
the wall time tells a row waiting for that floor (the server's search and the browser's drawing together
filling both cores) from one waiting for something else (a lock, a timer, the network).

Read from ``/proc`` (Linux): a process's user and system time over all its threads. The browser is every
Chromium process started under this one (the browser, its renderers, its utility processes); a renderer that
ends during a wait takes its time with it, so the browser's figure is at least what was spent.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process's threads) of a live process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def _is_browser(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip().startswith("chrom")
    except OSError:
        return False


@dataclass(frozen=True)
class CpuSplit:
    """CPU seconds of the server and of the browser over one wait."""

    server: float
    browser: float

    def text(self) -> str:
        return f"CPU meanwhile: server {self.server:.2f} s, browser {self.browser:.2f} s"


class CpuMeter:
    """CPU seconds so far of the server process and of the Chromium processes under ``root`` (this process)."""

    def __init__(self, server_pid: int, root: int | None = None) -> None:
        self.server_pid = server_pid
        self.root = os.getpid() if root is None else root
        self.available = Path(f"/proc/{server_pid}/stat").exists()

    def sample(self) -> tuple[float, float]:
        """(server, browser) CPU seconds so far."""
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                got = _stat(int(entry))
                if got is not None:
                    stats[int(entry)] = got
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        browser = 0.0
        todo = list(children.get(self.root, []))
        while todo:
            pid = todo.pop()
            if pid == self.server_pid:  # the server's own children are not the browser's
                continue
            if _is_browser(pid):
                browser += stats[pid][1]
            todo.extend(children.get(pid, []))
        server = stats.get(self.server_pid, (0, 0.0))[1]
        return server, browser

    def since(self, start: tuple[float, float]) -> CpuSplit:
        """The CPU spent since ``start`` (a :meth:`sample`)."""
        server, browser = self.sample()
        return CpuSplit(server - start[0], max(0.0, browser - start[1]))


WORKING_CORES = 0.3
"""A side works in a slot of a timeline when it spends at least this many CPU seconds per second there (a browser
that only blinks a cursor, or a server that only waits, stays below)."""


@dataclass(frozen=True)
class Slot:
    """One step of a timeline: from ``start`` (seconds after the window's start) for ``seconds``, the CPU seconds
    the server and the browser spent in it."""

    start: float
    seconds: float
    server: float
    browser: float

    def cores(self) -> tuple[float, float]:
        """The cores each side kept busy on average over the slot (server, browser)."""
        return self.server / self.seconds, self.browser / self.seconds


class CpuTimeline:
    """A :class:`CpuMeter` read every ``step`` seconds on a thread of its own, between :meth:`start` and
    :meth:`stop`, so that a wait can be split into what each side did when.

    Why: the totals of :class:`CpuSplit` tell a wait at the CPU floor from one waiting for something else, but not
    whether the two sides worked together or one after the other. A click whose results the browser draws only
    once the server has finished has a tail where one side works and a core idles: that tail is the part a
    faster machine would not remove. Reading /proc costs a little CPU on each step, so the benchmark samples
    only when asked (``bench_dashboard.py --timeline``)."""

    def __init__(self, meter: CpuMeter, step: float = 0.1) -> None:
        self.meter = meter
        self.step = step
        self.samples: list[tuple[float, float, float]] = []  # (wall time, server, browser)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cpu-timeline", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while True:
            self.record(time.time(), *self.meter.sample())
            if self._stop.wait(self.step):
                return

    def record(self, at: float, server: float, browser: float) -> None:
        """Keep one reading (the sampling thread's; a test gives its own)."""
        self.samples.append((at, server, browser))

    def window(self, since: float, until: float) -> list[Slot]:
        """The slots between consecutive readings that overlap ``since`` .. ``until`` (wall times), each with
        the CPU spent between its two readings; times relative to ``since``."""
        readings = list(self.samples)
        slots = []
        for (t0, s0, b0), (t1, s1, b1) in zip(readings, readings[1:], strict=False):
            if t1 <= since or t0 >= until or t1 <= t0:
                continue
            slots.append(Slot(t0 - since, t1 - t0, max(0.0, s1 - s0), max(0.0, b1 - b0)))
        return slots


def who_worked(slots: list[Slot], working: float = WORKING_CORES) -> dict[str, float]:
    """Seconds of the slots in which the server alone, the browser alone, both or neither worked (kept at least
    ``working`` cores busy)."""
    out = {"server alone": 0.0, "browser alone": 0.0, "both": 0.0, "neither": 0.0}
    for slot in slots:
        server, browser = (c >= working for c in slot.cores())
        key = "both" if server and browser else "server alone" if server else "browser alone" if browser else "neither"
        out[key] += slot.seconds
    return out


def timeline_text(slots: list[Slot]) -> str:
    """A timeline as lines of text: what each side did, in total, then slot by slot (cores kept busy)."""
    split = ", ".join(f"{k} {v:.2f} s" for k, v in who_worked(slots).items())
    lines = [f"  who worked (at least {WORKING_CORES:g} of a core): {split}"]
    for slot in slots:
        server, browser = slot.cores()
        lines.append(f"  {slot.start:6.2f} s  server {server:4.2f}  browser {browser:4.2f} cores")
    return "\n".join(lines)
