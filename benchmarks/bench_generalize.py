"""Optimal full-domain generalization on Adult (30,162 records) with ARX's hierarchies, 8 QIs, k = 5.

QIs sex, age, race, marital-status, education, native-country, workclass, occupation: a lattice of
2 x 5 x 2 x 3 x 4 x 3 x 3 x 3 = 6,480 nodes. For each suppression limit (0 % and 1 %) and each metric:
seconds of the exact search (on a freshly built problem, so the distinct rows and metric tables are
included), nodes whose classes were counted, anonymous nodes, the chosen levels, the loss and the records
suppressed; Datafly for comparison. Target (2 cores): <= 5 s per search.

Run: python benchmarks/bench_generalize.py [--k 5] [--limits 0,0.01] [--metrics prec,dm,aecs,entropy]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kanon_core.dataset import Roles  # noqa: E402
from kanon_core.io import load_dataset  # noqa: E402
from kanon_core.treat.hierarchy import load_hierarchies  # noqa: E402
from kanon_core.treat.lattice import build_problem, datafly, search_optimal  # noqa: E402

ADULT = ROOT / "sample_data" / "adult"
QIS = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation")
SHORT = {"sex": "sex", "age": "age", "race": "rac", "marital-status": "mar", "education": "edu",
         "native-country": "nat", "workclass": "wrk", "occupation": "occ"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--limits", default="0,0.01", help="comma-separated suppression limits (fractions)")
    ap.add_argument("--metrics", default="prec,dm,aecs,entropy")
    args = ap.parse_args()
    limits = [float(x) for x in args.limits.split(",")]
    metrics = args.metrics.split(",")

    t = time.perf_counter()
    ds = load_dataset(ADULT / "adult.csv", roles=Roles(qis=QIS))
    hierarchies = load_hierarchies(ADULT, QIS)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    problem = build_problem(ds, hierarchies, QIS)
    build_s = time.perf_counter() - t
    search_optimal(build_problem(ds, hierarchies, QIS[:2]), 2)  # warm-up: imports, first numpy calls

    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"input: Adult, {problem.n_records:,} records, {len(QIS)} QIs with ARX hierarchies "
          f"(heights {'x'.join(str(int(h)) for h in problem.heights)} = {problem.n_nodes:,} nodes), k = {args.k}; "
          f"load {load_s:.2f} s, encode {build_s:.2f} s")
    print(f"levels in the order {', '.join(SHORT[q] for q in QIS)}")
    print(f"{'limit':>6} {'metric':<8} {'algorithm':<9} {'seconds':>8} {'evaluated':>9} {'anonymous':>9} "
          f"{'levels':<17} {'loss':>14} {'suppressed':>10}")
    for lim in limits:
        for metric in metrics:
            for algo in ("optimal", "datafly"):
                fresh = build_problem(ds, hierarchies, QIS)
                t = time.perf_counter()
                if algo == "optimal":
                    res = search_optimal(fresh, args.k, lim, metric)
                else:
                    res = datafly(fresh, args.k, lim, metric)
                seconds = time.perf_counter() - t
                levels = " ".join(str(lv) for lv in res.level_tuple)
                anon = f"{res.n_anonymous:,}" if res.n_anonymous is not None else "-"
                print(f"{100 * lim:>5.1f}% {metric:<8} {algo:<9} {seconds:>8.2f} {res.nodes_evaluated:>9,} "
                      f"{anon:>9} {levels:<17} {res.loss:>14.6g} {res.n_suppressed_records:>10,}", flush=True)


if __name__ == "__main__":
    main()
