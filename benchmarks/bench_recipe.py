"""Replaying the demo recipe (sample_data/demo.recipe.json) on the ELS-like sample, writing the release in
every format and building the HTML report: what `kanon apply` and the Export page spend their time on.

Prints a table: stage, seconds (median of --repeat runs), output size. Run:
python benchmarks/bench_recipe.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
from kanon_core.export import FORMATS, export_bytes  # noqa: E402
from kanon_core.io import load_dataset  # noqa: E402
from kanon_core.recipe import Recipe  # noqa: E402
from kanon_core.report import ReportOptions, build_report, render_html  # noqa: E402


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    recipe = Recipe.load(ROOT / "sample_data" / "demo.recipe.json")
    data = ROOT / "sample_data" / "els_like.csv"
    print(f"machine: {describe_machine()}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(describe_speed(speed()))
    ds = load_dataset(data)
    print(f"input: {ds.n_records:,} records x {len(ds.columns)} variables; recipe: {len(recipe.steps)} steps "
          f"({sum(s.kind == 'recode' for s in recipe.steps)} recodes, suppression to k=3 on "
          f"{len(recipe.steps[-1].qis)} QIs)")
    recipe.replay(ds)  # warm up: compiled kernels, imports
    rows = []
    s, _ = timed(lambda: load_dataset(data), args.repeat)
    rows.append(("load CSV + labels", s, ""))
    from kanon_core.steps import version_fingerprint

    s, _ = timed(lambda: version_fingerprint(load_dataset(data)) and None, args.repeat)
    s_load, _ = timed(lambda: load_dataset(data), args.repeat)
    rows.append(("version fingerprint (recipe check, per version)", max(s - s_load, 0.0), ""))
    s, history = timed(lambda: recipe.replay(load_dataset(data)), args.repeat)
    rows.append((f"load + replay {len(recipe.steps)} steps", s, ""))
    original, treated = history.original.dataset, history.current.dataset
    for f in FORMATS.values():
        s, out = timed(lambda key=f.key: export_bytes(treated, key, original), args.repeat)
        rows.append((f"write {f.title}", s, f"{len(out.data) / 2**20:.1f} MiB"))
    s, report = timed(lambda: build_report(history, options=ReportOptions(k=3)), 1)
    rows.append(("build report (risk per step, MINUCs, utility)", s, ""))
    s, text = timed(lambda: render_html(report), args.repeat)
    rows.append(("render report HTML", s, f"{len(text) / 2**20:.1f} MiB"))
    print(f"{'stage':<48} {'seconds':>8} {'size':>10}")
    for name, sec, size in rows:
        print(f"{name:<48} {sec:8.2f} {size:>10}")


if __name__ == "__main__":
    main()
