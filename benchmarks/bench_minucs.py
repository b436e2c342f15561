"""MINUC search on the seeded ELS-like table (11,204 records x 19 QIs, Wilson et al.'s Table 1 shape).

Prints, for the first 10, 13, 16 and all 19 QIs: seconds, peak resident memory of the process, MINUCs
in total and by size, records with at least one MINUC. Each configuration runs in a fresh process so
the peak memory is its own (after a warm-up that loads the compiled kernels). For 10 and 13 QIs it also
times Wilson et al.'s method (every frequency table of every QI subset, level by level) as a cross-check of
the totals and as a yardstick. Goals (2 cores): 13 QIs <= 0.79 s (0.3 x sdcMicro's SUDA2 core), 19 QIs <= 4 s,
peak <= 4 GB.

Run: python benchmarks/bench_minucs.py [--k 2] [--qis 10,13,16,19] [--missing wildcard]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import NAMES, make_els_like  # noqa: E402
from kanon_core.risk.keys import group_ids  # noqa: E402
from kanon_core.risk.minucs import find_minucs  # noqa: E402


def levelwise_total(codes: np.ndarray, k: int) -> int:
    """Wilson et al.'s procedure: tabulate every subset, a record's combination is a MINUC when it is rare
    and none of its one-smaller sub-combinations is (complete data, no missing values)."""
    n, q = codes.shape
    prev: dict[tuple[int, ...], np.ndarray] = {(): np.zeros(n, dtype=bool)}
    total = 0
    for size in range(1, q + 1):
        cur: dict[tuple[int, ...], np.ndarray] = {}
        for combo in combinations(range(q), size):
            gid, counts = group_ids(codes[:, combo])
            unsafe = counts[gid] < k
            blocked = np.zeros(n, dtype=bool)
            for j in range(size):
                blocked |= prev[combo[:j] + combo[j + 1:]]
            total += int((unsafe & ~blocked).sum())
            cur[combo] = unsafe | blocked  # unsafe, or contains a smaller MINUC: no superset is minimal
        prev = cur
    return total


def one(q: int, k: int, missing: str) -> dict:
    codes = make_els_like()
    find_minucs(codes[:200, :4], k=k, missing=missing)  # load the compiled kernels
    sub = np.ascontiguousarray(codes[:, :q])
    t = time.perf_counter()
    res = find_minucs(sub, k=k, missing=missing, names=NAMES[:q])
    seconds = time.perf_counter() - t
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"q": q, "seconds": seconds, "peak_mib": peak_kib / 1024, "total": res.total,
           "records": res.records_with_minucs(), "by_size": res.totals_by_size()}
    if q <= 13 and missing == "category":
        t = time.perf_counter()
        out["levelwise_total"] = levelwise_total(sub, k)
        out["levelwise_seconds"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--qis", default="10,13,16,19")
    ap.add_argument("--missing", default="category", choices=["category", "wildcard"],
                    help="the synthetic table has no missing values, so both give the same MINUCs")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.k, args.missing)))
        return
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"input: seeded ELS-like table, 11,204 records, first q of 19 QIs, k = {args.k}")
    print(f"{'QIs':>4} {'seconds':>8} {'peak MiB':>9} {'MINUCs':>12} {'records':>8} "
          f"{'Wilson tables s':>18}  MINUCs by size 1..q")
    for q in [int(x) for x in args.qis.split(",")]:
        proc = subprocess.run([sys.executable, __file__, "--one", str(q), "--k", str(args.k),
                               "--missing", args.missing], capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        lw = ""
        if "levelwise_total" in r:
            ok = "ok" if r["levelwise_total"] == r["total"] else f"MISMATCH {r['levelwise_total']}"
            lw = f"{r['levelwise_seconds']:.2f} ({ok})"
        sizes = " ".join(str(v) for v in r["by_size"].values())
        print(f"{q:>4} {r['seconds']:>8.2f} {r['peak_mib']:>9.0f} {r['total']:>12,} {r['records']:>8,} {lw:>18}  {sizes}")


if __name__ == "__main__":
    main()
