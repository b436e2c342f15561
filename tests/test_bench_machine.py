"""The benchmarks' speed probe does the work it names: its loops give the results of plain Python loops
(so the compiler kept every step), and the probe reports three positive timings."""

from __future__ import annotations

from benchmarks.machine import _probe_kernels, describe_speed, speed

MASK64 = (1 << 64) - 1


def _xorshift(x: int) -> int:
    x ^= (x << 13) & MASK64
    x ^= x >> 7
    x ^= (x << 17) & MASK64
    return x


def test_compute_loop_sums_the_popcounts_of_the_sequence():
    compute, _ = _probe_kernels()
    x, total = 0x9E3779B97F4A7C15, 0
    for _ in range(2_000):
        x = _xorshift(x)
        total += bin(x).count("1")
    assert int(compute(2_000)) == total


def test_table_loop_counts_its_visits_capped():
    _, table = _probe_kernels()
    bits, n = 6, 20_000  # 64 places: many visits each, so the cap at 200 is reached
    t = [0] * (1 << bits)
    x = 0x2545F4914F6CDD1D
    for _ in range(n):
        x = _xorshift(x)
        i = x & ((1 << bits) - 1)
        t[i] = min(t[i] + 1, 200)
    assert max(t) == 200
    assert table(n, bits) == sum(t)


def test_speed_reports_three_positive_timings():
    seconds = speed(scale=0.001)
    assert set(seconds) == {"compute", "table", "memory"}
    assert all(s > 0 for s in seconds.values())
    assert "compute" in describe_speed(seconds) and "512 KB table" in describe_speed(seconds)
