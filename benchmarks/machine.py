"""What every benchmark prints first: the machine (CPU model, cores, RAM, system, Python) and its load."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe() -> str:
    """One line; the load average matters, since a shared machine's load inflates every wall time."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f", {int(line.split()[1]) / 1024 ** 2:.0f} GiB RAM"
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = ", load average {:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores{ram}; {platform.system()}, Python {platform.python_version()}{load}"
