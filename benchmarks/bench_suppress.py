"""Local suppression on the seeded ELS-like table (11,204 records, seed 000's 19 QIs): exact vs greedy.

For each case: cells suppressed and seconds of the exact method (proven optimal for the record-wise
model of seed 000, then the verified joint pass), of the exact method through the MINUC engine (MINUC
search included in the time), and of the greedy heuristic; peak resident memory of the process. Each run
is a fresh process after a warm-up that loads the compiled kernels. Targets (2 cores): 19 QIs k = 2
optimal <= 60 s, 10 QIs k = 2 <= 5 s, 10 QIs k = 3 and 5 <= 30 s.

Run: python benchmarks/bench_suppress.py [--cases 19:2,10:2,10:3,10:5]
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
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import NAMES, make_els_like  # noqa: E402
from kanon_core.treat.suppress import suppress  # noqa: E402


def one(q: int, k: int, how: str) -> dict:
    codes = make_els_like()
    warm = np.ascontiguousarray(codes[:300, :5])
    suppress(warm, 2, method="greedy" if how == "greedy" else "exact",
             engine="minucs" if how == "minucs" else "auto")
    sub = np.ascontiguousarray(codes[:, :q])
    t = time.perf_counter()
    if how == "greedy":
        res = suppress(sub, k, qis=NAMES[:q], method="greedy")
    else:
        res = suppress(sub, k, qis=NAMES[:q], engine="minucs" if how == "minucs" else "direct")
    seconds = time.perf_counter() - t
    return {"q": q, "k": k, "how": how, "seconds": seconds, "cells": res.n_suppressed,
            "record_wise": res.record_wise_cost, "lower": res.lower_bound, "optimal": res.optimal,
            "records": res.records_touched, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "hard": res.stats.get("hard_instances", 0), "violations": res.violations_after}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="19:2,10:2,10:3,10:5", help="comma-separated QIs:k pairs")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        q, k, how = args.one.split(":")
        print(json.dumps(one(int(q), int(k), how)))
        return
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print("input: seeded ELS-like table, 11,204 records, first q of 19 QIs (no missing values), unit costs")
    print(f"{'QIs':>4} {'k':>3}  {'method':<22} {'seconds':>8} {'cells':>8} {'records':>8} "
          f"{'record-wise':>11} {'lower bound':>11} {'optimal':>7} {'peak MiB':>8}")
    for case in args.cases.split(","):
        q, k = (int(x) for x in case.split(":"))
        for how, label in (("direct", "exact (direct)"), ("minucs", "exact (MINUCs incl.)"), ("greedy", "greedy")):
            if how == "minucs" and k > 2 and q > 10:
                continue  # the MINUC family for k > 2 on many QIs is huge; the direct engine needs none
            proc = subprocess.run([sys.executable, __file__, "--one", f"{q}:{k}:{how}"], capture_output=True,
                                  text=True, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            assert r["violations"] == 0
            rw = f"{r['record_wise']:,.0f}" if how != "greedy" else "-"
            lb = f"{r['lower']:,.0f}" if how != "greedy" else "-"
            print(f"{q:>4} {k:>3}  {label:<22} {r['seconds']:>8.2f} {r['cells']:>8,} {r['records']:>8,} "
                  f"{rw:>11} {lb:>11} {str(r['optimal']):>7} {r['peak_mib']:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
