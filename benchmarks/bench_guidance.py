"""Suggesting variable roles at load (kanon_core.guidance): what the Data page spends before it shows the role
table, on the bundled sample and on generated household surveys of growing size.

Prints a table: input, records x variables, seconds (median of --repeat runs). Run:
python benchmarks/bench_guidance.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
from kanon_core.dataset import Roles  # noqa: E402
from kanon_core.guidance import suggest_roles  # noqa: E402
from kanon_core.io import load_dataset  # noqa: E402
from tests.test_guidance import make_survey  # noqa: E402


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
    inputs = [("ELS-like sample", load_dataset(ROOT / "sample_data" / "els_like.csv").with_roles(Roles()))]
    for n in (4_580, 100_000, 1_000_000):
        inputs.append(("household survey (generated)", make_survey(n)))
    print(f"{'input':40} {'records':>10} {'variables':>9} {'seconds':>8}")
    for name, data in inputs:
        frame = data.frame if hasattr(data, "frame") else data
        s = timed(lambda data=data: suggest_roles(data), args.repeat)
        print(f"{name:40} {len(frame):>10,} {frame.shape[1]:>9} {s:>8.3f}")


if __name__ == "__main__":
    main()
