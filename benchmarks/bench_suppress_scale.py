"""Local suppression at scale: ``kanon suppress`` (strict model) by DuckDB and Polars beside the in-memory path.

The file is ``gen_scale.py``'s census-like file (default 1M rows, Parquet and CSV, written to a temporary
folder, never into the repository), coarsened for suppression: six of its ten QIs (sex, age, region,
education, marital, household; two with missing cells), so that the records below k are few, which is
the situation local suppression is meant for (after recoding). Each contender runs as a whole process
under ``/usr/bin/time -v`` (wall time, peak resident memory); the JSON gives the classes, the records
below k, the cells suppressed, the cost, the lower bound and whether it is proven optimal, and the
people findable among fewer than k released records (recounted). ``--missing`` picks the semantics.

Run: python benchmarks/bench_suppress_scale.py [--rows 1000000] [--k 3] [--missing category] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bench_scale import KANON, timed  # noqa: E402
from benchmarks.gen_scale import generate, label  # noqa: E402
from benchmarks.machine import describe as describe_machine  # noqa: E402

QIS = ("sex", "age", "region", "education", "marital", "household")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--missing", choices=("category", "wildcard"), default="category")
    ap.add_argument("--formats", default="parquet,csv")
    ap.add_argument("--engines", default="pandas,duckdb,polars")
    ap.add_argument("--data", default=None, help="folder for the generated files (default: a temporary folder)")
    ap.add_argument("--apply", action="store_true", help="also replay a recipe ending in local suppression")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="kanon-suppress-scale-")
    data = Path(args.data) if args.data else Path(tmp.name)
    work = Path(tmp.name)
    formats = tuple(f for f in args.formats.split(",") if f)
    paths = generate(args.rows, data, formats=formats)
    print(f"Machine: {describe_machine()}")
    print(f"Workload: kanon suppress (strict, exact) at k = {args.k} on {len(QIS)} QIs ({', '.join(QIS)}), "
          f"missing as {args.missing}; {label(args.rows)} rows; each contender a whole process\n")
    print("| rows | format | file MiB | engine | wall s | peak RSS GiB | classes | records below k | cells | "
          "cost | lower bound | optimal | findable below k |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for fmt in formats:
        path = paths[fmt]
        mib = path.stat().st_size / 2**20
        for engine in [e for e in args.engines.split(",") if e]:
            out = work / f"release_{engine}_{fmt}.{fmt}"
            js = work / f"summary_{engine}_{fmt}.json"
            cmd = [*KANON, "suppress", str(path), "--qi", ",".join(QIS), "--k", str(args.k), "--missing",
                   args.missing, "--engine", engine, "-o", str(out), "--json", str(js)]
            if engine != "pandas":
                cmd += ["--memory-limit", "1GiB"]
            wall, rss, _, code = timed(cmd)
            if code != 0:
                print(f"| {label(args.rows)} | {fmt} | {mib:,.0f} | {engine} | {wall:.1f} | {rss:.2f} | failed ({code}) "
                      "| | | | | | |", flush=True)
                continue
            p = json.loads(js.read_text())
            classes = p.get("n_classes", p["stats"].get("distinct_rows", ""))
            print(f"| {label(args.rows)} | {fmt} | {mib:,.0f} | {engine} | {wall:.1f} | {rss:.2f} | {classes} | "
                  f"{p['stats'].get('unsafe_records', '')} | {p['n_suppressed']} | {p['cost']:g} | "
                  f"{p['lower_bound']:g} | {'yes' if p['optimal'] else 'no'} | {p['findable_below_k']} |", flush=True)
    if args.apply:
        apply_rows(args, paths, work, formats)
    tmp.cleanup()


def apply_rows(args: argparse.Namespace, paths: dict, work: Path, formats: tuple[str, ...]) -> None:
    """``kanon apply`` of a recipe built on a survey (a recode, then the strict local suppression on the same
    QIs) replayed on the whole file: at scale (the suppression solved on the replayed class rows, the cells
    written by the engine by class and rank) against in memory."""
    from kanon_core.dataset import Roles
    from kanon_core.recipe import Recipe
    from kanon_core.steps import SetRoles
    from kanon_core.treat.recode import RecodeStep
    from kanon_core.treat.suppress import SuppressStep

    recipe = work / "recipe.json"
    Recipe(steps=(SetRoles(qis=QIS), RecodeStep("marital", merge=(2, 3)), SuppressStep(qis=QIS, k=args.k)),
           roles=Roles(), missing=args.missing, extra={"k": args.k}).save(recipe)
    print(f"\nkanon apply: a recipe recoding marital (2, 3 merged) then suppressing to k = {args.k} (strict, exact) "
          "on the same QIs, replayed on the whole file\n")
    print("| rows | format | engine | wall s | peak RSS GiB | cells | cost | lower bound | optimal | "
          "records below k (recounted on the release) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for fmt in formats:
        for engine in [e for e in args.engines.split(",") if e]:
            out, js = work / f"applied_{engine}_{fmt}.{fmt}", work / f"applied_{engine}_{fmt}.json"
            cmd = [*KANON, "apply", str(recipe), str(paths[fmt]), "-o", str(out), "--engine", engine,
                   "--json", str(js)]
            if engine != "pandas":
                cmd += ["--memory-limit", "1GiB"]
            wall, rss, _, code = timed(cmd)
            if code != 0:
                print(f"| {label(args.rows)} | {fmt} | {engine} | {wall:.1f} | {rss:.2f} | failed ({code}) | | | | |",
                      flush=True)
                continue
            p = json.loads(js.read_text())
            local = p.get("local_suppression", {})
            print(f"| {label(args.rows)} | {fmt} | {engine} | {wall:.1f} | {rss:.2f} | {p['suppressed_cells']} | "
                  f"{local.get('cost', '')} | {local.get('lower_bound', '')} | "
                  f"{'' if not local else 'yes' if local['optimal'] else 'no'} | {p['records_below_k']} |", flush=True)


if __name__ == "__main__":
    main()
