"""Optimal full-domain generalization: Adult (ARX's hierarchies) and the bundled sample (wildcard semantics).

Rows (issue "interactive speed", each against its goal and ARX's anchor):

* Adult (30,162 records), 8 QIs sex, age, race, marital-status, education, native-country, workclass,
  occupation with ARX's hierarchies (2 x 5 x 2 x 3 x 4 x 3 x 3 x 3 = 6,480 nodes), k = 5 at 0 % and 1 %
  suppression, each metric, the exact search and Datafly. Anchors: ARX's Flash 27 ms on Adult (Kohlmayer
  et al.'s benchmark, a 2015 desktop); ARX with all settings <= 2.5 s on Ihis. Goals: <= 0.1 s at 0 %,
  <= 0.2 s at 1 %.
* The same with privacy criteria beyond k (``--criteria``, default k=5 with distinct 2-diversity of
  salary-class).
* The bundled ELS-like sample (16,197 records, missing values, wildcard semantics), 8 QIs: parents'
  education (BYPARED, BYMOTHED, BYFATHED, BYGPARED), occupations (BYOCCUM, BYOCCUF), income (BYINCOME) and
  date of birth (BYDOB_P), with kanon's default hierarchies, k = 5 at 0 % and 1 %. Goal: <= 2 s.

Each search runs on a freshly built problem (class table and metric tables included). Wall seconds and
the process's CPU seconds are printed, with the load average: on a shared machine the wall time of a
compute-bound search is its CPU time stretched by the other processes.

``--phases`` instead splits the sample's search (as ``bench_speed.py`` runs it: k = 3, the dashboard's default,
and Prec) into its compiled wildcard scans, its compiled roll-ups and the rest (the search's Python
bookkeeping, the other kernels), each node's scan and roll-up timed where the search calls them.

Run: python benchmarks/bench_generalize.py [--k 5] [--limits 0,0.01] [--metrics prec,dm,aecs,entropy]
     [--criteria "k=5,l=2:salary-class"] [--skip-sample] [--phases]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
from kanon_core.dataset import Roles  # noqa: E402
from kanon_core.io import load_dataset  # noqa: E402
from kanon_core.treat.default_hierarchy import default_hierarchies  # noqa: E402
from kanon_core.treat.hierarchy import load_hierarchies  # noqa: E402
from kanon_core.treat.lattice import build_problem, datafly, search_optimal  # noqa: E402

ADULT = ROOT / "sample_data" / "adult"
SAMPLE = ROOT / "sample_data" / "els_like.csv"
QIS = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation")
SAMPLE_QIS = ("BYPARED", "BYMOTHED", "BYFATHED", "BYGPARED", "BYOCCUM", "BYOCCUF", "BYINCOME", "BYDOB_P")
GOALS = {0.0: 0.1, 0.01: 0.2}
ANCHORS = {0.0: "ARX Flash 27 ms (Adult)", 0.01: "ARX <= 2.5 s (Ihis, all settings)"}
HEADER = (f"{'input':<8} {'limit':>6} {'criteria':<22} {'metric':<8} {'algorithm':<9} {'wall s':>7} {'cpu s':>7} "
          f"{'goal s':>6} {'evaluated':>9} {'told':>5} {'passing':>8} {'levels':<17} {'loss':>12} {'suppr.':>7}  anchor")
"""``told``: failing nodes told without evaluating them (the union of passing nodes' failing records)."""


def timed(fn, *a, **kw):
    w, c = time.perf_counter(), time.process_time()
    out = fn(*a, **kw)
    return out, time.perf_counter() - w, time.process_time() - c


def row(name, lim, crit, metric, algo, res, wall, cpu, goal, anchor) -> str:
    levels = " ".join(str(lv) for lv in res.level_tuple)
    passing = f"{res.n_anonymous:,}" if res.n_anonymous is not None else "-"
    g = f"{goal:.1f}" if goal is not None else "-"
    return (f"{name:<8} {100 * lim:>5.1f}% {crit:<22} {metric:<8} {algo:<9} {wall:>7.3f} {cpu:>7.3f} {g:>6} "
            f"{res.nodes_evaluated:>9,} {res.nodes_inferred:>5,} {passing:>8} {levels:<17} {res.loss:>12.6g} "
            f"{res.n_suppressed_records:>7,}  "
            f"{anchor}")


def phases(limits: list[float], repeat: int = 3) -> None:
    """The sample's 8-QI search split into the wildcard scans, the roll-ups and the rest, per limit (fastest of
    ``repeat`` runs by total; the kernels are wrapped where the search looks them up, at each call)."""
    from benchmarks.bench_speed import _sample8
    from kanon_core.treat import _lattice_kernel as kernels

    spent = {"scan": 0.0, "roll-up": 0.0}
    calls = {"scan": 0, "roll-up": 0}

    def clocked(name: str, fn):
        def run(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.perf_counter() - t
                calls[name] += 1
        return run

    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
    print("sample: 16,197 records x 8 QIs (wildcard), k = 3, Prec; fastest of "
          f"{repeat} runs by total (wall seconds)")
    print(f"{'limit':>6} {'evaluated':>9} {'total s':>8} {'scans s':>8} {'roll-ups s':>10} {'rest s':>7} "
          f"{'scan ms/node':>12} {'roll-up ms/call':>15}")
    originals = {"scan": kernels.wildcard_small, "roll-up": kernels.rollup}
    for lim in limits:
        prepare, call, _ = _sample8(lim)
        best = None
        try:
            kernels.wildcard_small = clocked("scan", originals["scan"])
            kernels.rollup = clocked("roll-up", originals["roll-up"])
            for _ in range(repeat):
                arg = prepare()
                for name in spent:
                    spent[name], calls[name] = 0.0, 0
                res, wall, _cpu = timed(call, arg)
                got = (wall, dict(spent), dict(calls), res.nodes_evaluated)
                if best is None or wall < best[0]:
                    best = got
        finally:
            kernels.wildcard_small, kernels.rollup = originals["scan"], originals["roll-up"]
        wall, sp, n, evaluated = best
        rest = wall - sp["scan"] - sp["roll-up"]
        print(f"{100 * lim:>5.1f}% {evaluated:>9,} {wall:>8.2f} {sp['scan']:>8.2f} {sp['roll-up']:>10.2f} "
              f"{rest:>7.2f} {1e3 * sp['scan'] / max(n['scan'], 1):>12.3f} "
              f"{1e3 * sp['roll-up'] / max(n['roll-up'], 1):>15.3f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--limits", default="0,0.01", help="comma-separated suppression limits (fractions)")
    ap.add_argument("--metrics", default="prec,dm,aecs,entropy")
    ap.add_argument("--criteria", default="k=5,l=2:salary-class",
                    help="comma-separated criteria for the Adult rows beyond k ('' to skip)")
    ap.add_argument("--skip-sample", action="store_true")
    ap.add_argument("--phases", action="store_true", help="split the sample's search (k = 3) into its kernels")
    ap.add_argument("--k-minimal", action="store_true",
                    help="time the searches that classify every node and list the k-minimal ones (as the Recode "
                         "page's 'List every k-minimal node'), not the searches of the optimum alone")
    args = ap.parse_args()
    limits = [float(x) for x in args.limits.split(",")]
    if args.phases:
        phases(limits)
        return
    metrics = args.metrics.split(",")
    criteria = [c for c in args.criteria.split(",") if c]
    optimal = functools.partial(search_optimal, k_minimal=args.k_minimal)

    t = time.perf_counter()
    ds = load_dataset(ADULT / "adult.csv", roles=Roles(qis=QIS))
    hierarchies = load_hierarchies(ADULT, QIS)
    load_s = time.perf_counter() - t
    problem = build_problem(ds, hierarchies, QIS)
    search_optimal(build_problem(ds, hierarchies, QIS[:2]), 2)  # warm-up: imports, compiled kernels

    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
    print(f"Adult: {problem.n_records:,} records ({problem.class_table().n_classes:,} distinct on the QIs), "
          f"{len(QIS)} QIs with ARX hierarchies (heights {'x'.join(str(int(h)) for h in problem.heights)} = "
          f"{problem.n_nodes:,} nodes), k = {args.k}; load {load_s:.2f} s")
    print(f"levels in the order {', '.join(QIS)}; "
          + ("every node classified, k-minimal nodes listed" if args.k_minimal else "the optimum alone"))
    print(HEADER)
    for lim in limits:
        for metric in metrics:
            for algo in ("optimal", "datafly"):
                fresh = build_problem(ds, hierarchies, QIS)
                run = optimal if algo == "optimal" else datafly
                res, wall, cpu = timed(run, fresh, args.k, lim, metric)
                goal = GOALS.get(lim) if algo == "optimal" else None
                print(row("Adult", lim, f"k={args.k}", metric, algo, res, wall, cpu, goal,
                          ANCHORS.get(lim, "") if algo == "optimal" else ""), flush=True)
        if criteria:
            sens = sorted({c.split(":")[-1] for c in criteria if c.startswith(("l=", "t="))})
            fresh = build_problem(ds, hierarchies, QIS, sensitive=sens)
            res, wall, cpu = timed(optimal, fresh, None, lim, "prec", criteria=criteria)
            print(row("Adult", lim, " & ".join(criteria), "prec", "optimal", res, wall, cpu, None, ""), flush=True)

    if args.skip_sample:
        return
    sample = load_dataset(SAMPLE, roles=Roles(qis=SAMPLE_QIS))
    sh = default_hierarchies(sample, SAMPLE_QIS)
    sp = build_problem(sample, sh, SAMPLE_QIS)
    print(f"\nsample: {sp.n_records:,} records ({sp.class_table().n_classes:,} distinct on the QIs), "
          f"{int((sample.qi_matrix(SAMPLE_QIS).codes < 0).any(axis=1).sum()):,} with a missing QI, "
          f"{sample.missing} semantics, {len(SAMPLE_QIS)} QIs with the default hierarchies (heights "
          f"{'x'.join(str(int(h)) for h in sp.heights)} = {sp.n_nodes:,} nodes), k = {args.k}")
    print(f"levels in the order {', '.join(SAMPLE_QIS)}")
    print(HEADER)
    for lim in limits:
        for metric in metrics:
            fresh = build_problem(sample, sh, SAMPLE_QIS)
            res, wall, cpu = timed(optimal, fresh, args.k, lim, metric)
            print(row("sample", lim, f"k={args.k}", metric, "optimal", res, wall, cpu, 2.0, "-"), flush=True)


if __name__ == "__main__":
    main()
