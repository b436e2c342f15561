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
