"""What every benchmark prints first: the machine (CPU model, cores, RAM, system, Python) and its load."""

from __future__ import annotations

import functools
import os
import platform
import time
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


PROBE_ROUNDS = 3
"""Each probe runs this many times; the fastest counts (the others show a busy machine's noise)."""


@functools.cache
def _probe_kernels():
    """The compiled probe loops, built on first use in the process and kept (numba; no cache on disk, so no stale
    file can time a different build): a benchmark that probes before and after its rows compiles them once."""
    import numba
    import numpy as np

    @numba.njit(nogil=True)
    def compute(n):  # pragma: no cover - compiled
        """Integer work in registers: a xorshift sequence and the popcount of each value, summed."""
        x = np.uint64(0x9E3779B97F4A7C15)
        total = np.uint64(0)
        for _ in range(n):
            x ^= x << np.uint64(13)
            x ^= x >> np.uint64(7)
            x ^= x << np.uint64(17)
            y = x
            c = np.uint64(0)
            while y:
                y &= y - np.uint64(1)
                c += np.uint64(1)
            total += c
        return total

    @numba.njit(nogil=True)
    def table(n, bits):  # pragma: no cover - compiled
        """Read-modify-writes at pseudo-random places of a byte table of 2^bits bytes, then its sum."""
        t = np.zeros(1 << bits, dtype=np.uint8)
        mask = np.uint64((1 << bits) - 1)
        x = np.uint64(0x2545F4914F6CDD1D)
        for _ in range(n):
            x ^= x << np.uint64(13)
            x ^= x >> np.uint64(7)
            x ^= x << np.uint64(17)
            i = x & mask
            t[i] = min(t[i] + np.uint8(1), np.uint8(200))
        return int(t.astype(np.int64).sum())

    return compute, table


def _fastest(fn, rounds: int = PROBE_ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def speed(scale: float = 1.0) -> dict[str, float]:
    """Seconds of three fixed single-thread workloads, fastest of :data:`PROBE_ROUNDS` (smaller is faster).

    Why: the benchmarks run on shared virtual machines whose speed can change with the host, and the load
    average does not show it (the host's other guests are not in it). With the same code, the MINUC search's
    phases on the sample (``bench_minucs.py --phases``) took 0.31, 0.74, 0.85 and 2.23 CPU s one afternoon and
    0.29, 0.48, 0.61 and 1.48 s six minutes later, at a lower load average. These loops use nothing of kanon, so
    a table's rows can be read against the machine's speed at the time, and the benchmarks print them before
    and after their rows, so that a run during which the host slowed shows it: ``compute`` is integer work in
    registers (as the MINUC enumeration is), ``table`` read-modify-writes in a 512 KB byte table (as the
    search's distinct masks are), ``memory`` sums 512 MB (the memory bus, shared with the host's other guests).
    Whether they would have shown that afternoon's slowdown was not observed (it was over before they were
    written). ``scale`` shrinks the work (tests).
    """
    import numpy as np

    compute, table = _probe_kernels()
    n_compute, n_table = max(1, int(10_000_000 * scale)), max(1, int(100_000_000 * scale))
    compute(10)
    table(10, 19)
    big = np.ones(max(1, int(64_000_000 * scale)), dtype=np.int64)
    return {"compute": _fastest(lambda: compute(n_compute)),
            "table": _fastest(lambda: table(n_table, 19)),
            "memory": _fastest(lambda: big.sum())}


def describe_speed(seconds: dict[str, float]) -> str:
    """The probe's line, as every benchmark prints it."""
    return ("speed probe (one thread, fastest of {}; smaller is faster): compute {compute:.3f} s, "
            "512 KB table {table:.3f} s, memory {memory:.3f} s").format(PROBE_ROUNDS, **seconds)
