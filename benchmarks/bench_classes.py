"""Class sizes (fk, Fk) on large synthetic data, under both missing semantics.

Prints a table: rows x QIs, missing pattern, semantics, alpha (sdcMicro's weight of wildcard matches;
below 1 the wildcard part is counted apart), seconds, peak extra memory.
Run: python benchmarks/bench_classes.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
from kanon_core.risk.classes import compute_class_sizes  # noqa: E402

CARDS = [2, 7, 6, 5, 9, 8, 13, 3, 4, 6]


def make(rows: int, seed: int, missing_cols: list[int], rate: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = np.empty((rows, len(CARDS)), dtype=np.int32)
    for j, c in enumerate(CARDS):
        p = rng.dirichlet(np.full(c, 0.8))
        codes[:, j] = rng.choice(c, size=rows, p=p)
    for j in missing_cols:
        codes[rng.random(rows) < rate, j] = -1
    weights = rng.lognormal(5.0, 0.7, rows)
    return codes, weights


def measure(codes, weights, missing, alpha=1.0):
    compute_class_sizes(codes[:1000], missing, weights[:1000], alpha=alpha)  # compile/warm up
    tracemalloc.start()
    t0 = time.perf_counter()
    res = compute_class_sizes(codes, missing, weights, alpha=alpha)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 2**20, int(res.fk.min()), int((res.fk < 3).sum())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
    print(f"input: {args.rows:,} rows x {len(CARDS)} QIs, category counts {CARDS}")
    cases = [
        ("no missing", [], 0.0, "category"),
        ("no missing", [], 0.0, "wildcard"),
        ("3 QIs, 5% missing each", [3, 6, 8], 0.05, "category"),
        ("3 QIs, 5% missing each", [3, 6, 8], 0.05, "wildcard"),
        ("10 QIs, 1% missing each", list(range(10)), 0.01, "wildcard"),
        ("3 QIs, 5% missing each", [3, 6, 8], 0.05, "wildcard", 0.5),
        ("10 QIs, 1% missing each", list(range(10)), 0.01, "wildcard", 0.5),
    ]
    print(f"{'missing values':<26} {'semantics':<9} {'alpha':>5} {'seconds':>8} {'peak MiB':>9} {'fk<3':>9}")
    for label, cols, rate, sem, *alpha in cases:
        a = alpha[0] if alpha else 1.0
        codes, w = make(args.rows, 1, cols, rate)
        s, mem, _, viol = measure(codes, w, sem, a)
        print(f"{label:<26} {sem:<9} {a:5.2f} {s:8.2f} {mem:9.0f} {viol:9,}")


if __name__ == "__main__":
    main()
