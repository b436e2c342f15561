"""Recipes at scale: ``kanon apply`` by DuckDB and Polars beside the in-memory path.

The officer's workflow: a recipe is built in memory on a sample (the first 50,000 rows of
``gen_scale.py``'s census-like file) and then applied to the whole file (default 1M rows, Parquet and CSV,
written to a temporary folder, never into the repository). The recipe sets roles, declares a missing code,
merges the rare occupations, merges the oldest age codes, labels a variable, drops the sensitive variable
and generalizes region to two groups, blanking the records of classes still smaller than k on the QIs.
Each contender runs as a whole process under ``/usr/bin/time -v`` (wall time, peak resident memory); the
JSON gives the suppressed cells and the records below k counted on the release; the last column says
whether the release equals the in-memory one: the same bytes for CSV, the same values, types, order and
labels read back by ``kanon_core.io.load_dataset`` for Parquet (the writers differ, and the in-memory
writer also embeds the labels in the file). Without the in-memory contender each release is compared with
the first contender's release of the same format instead (the column says with which).

A contender is an engine name, optionally with DuckDB's or Polars' ``--memory-limit`` after a colon:
``duckdb:2GiB`` (the default for the out-of-core engines), ``duckdb:default`` (the engine's own default,
half of RAM for DuckDB).

Run: python benchmarks/bench_apply_scale.py [--rows 1000000] [--k 5] [--missing wildcard] [--data DIR]
     [--engines pandas,duckdb:2GiB,duckdb:default,polars] [--formats parquet,csv]
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

QIS = ("sex", "age", "region", "occupation", "education", "marital", "household")
SAMPLE_ROWS = 50_000


def make_recipe(path: Path, work: Path, k: int, missing: str) -> Path:
    """The recipe built on the file's first rows, as the dashboard would record it."""
    import pyarrow.parquet as pq

    from kanon_core.history import History
    from kanon_core.io import load_dataset
    from kanon_core.recipe import Recipe
    from kanon_core.steps import DeclareMissingCodes, DropVariables, SetMissing, SetRoles
    from kanon_core.treat.hierarchy import Hierarchy
    from kanon_core.treat.recode import GeneralizeStep, RecodeStep
    from kanon_core.value_labels import SetValueLabels

    sample = work / "sample.parquet"
    pq.write_table(pq.ParquetFile(path).read_row_group(0).slice(0, SAMPLE_ROWS), sample)
    regions = [f"r{i:03d}" for i in range(5)]
    h = Hierarchy(tuple((r, "north" if i < 2 else "south", "*") for i, r in enumerate(regions)), "region")
    hist = History.start(load_dataset(sample))
    for step in (SetRoles(qis=QIS, weight="weight"), SetMissing(missing), DeclareMissingCodes("household", (2,)),
                 RecodeStep("occupation", merge=("o005", "o006", "o007"), into="o005+"),
                 RecodeStep("age", merge=(7, 8, 9)),
                 SetValueLabels((("sex", (("0", "Female"), ("1", "Male"))),)),
                 DropVariables(("income",)),
                 GeneralizeStep.build({"region": 1}, {"region": h}, suppress_k=k, qis=QIS)):
        hist.apply(step)
    out = work / "census.recipe.json"
    Recipe.from_history(hist, input_path=sample.name, extra={"k": k}).save(out)
    return out


def same_release(ref: Path, got: Path) -> bool:
    if ref.suffix == ".csv":
        return ref.read_bytes() == got.read_bytes()
    from kanon_core.io import load_dataset

    a, b = load_dataset(ref), load_dataset(got)
    return a.frame.equals(b.frame) and list(a.frame.dtypes) == list(b.frame.dtypes) and a.meta == b.meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--missing", choices=("category", "wildcard"), default="wildcard")
    ap.add_argument("--formats", default="parquet,csv")
    ap.add_argument("--engines", default="pandas,duckdb,polars",
                    help="contenders, e.g. pandas,duckdb:2GiB,duckdb:default,polars (limit 2GiB unless given)")
    ap.add_argument("--data", default=None, help="folder for the generated files (default: a temporary folder)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="kanon-apply-scale-")
    data = Path(args.data) if args.data else Path(tmp.name)
    work = Path(tmp.name)
    formats = tuple(f for f in args.formats.split(",") if f)
    paths = generate(args.rows, data, formats=tuple(sorted(set(formats) | {"parquet"})))
    recipe = make_recipe(paths["parquet"], work, args.k, args.missing)
    print(f"Machine: {describe_machine()}")
    print(f"Workload: kanon apply of an 8-step recipe (recodes, labels, a drop, region generalized with records "
          f"of classes below k = {args.k} blanked on {len(QIS)} QIs, missing as {args.missing}) built on the "
          f"first {SAMPLE_ROWS:,} rows; {label(args.rows)} rows; each contender a whole process\n")
    print("| rows | format | file MiB | engine | memory limit | wall s | peak RSS GiB | suppressed cells | "
          "records below k | equal to in memory |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for fmt in formats:
        path = paths[fmt]
        mib = path.stat().st_size / 2**20
        reference: tuple[str, Path] | None = None
        for i, spec in enumerate(e for e in args.engines.split(",") if e):
            engine, _, limit = spec.partition(":")
            limit = "" if engine == "pandas" else (limit or "2GiB")
            out = work / f"release_{i}_{engine}_{fmt}.{fmt}"
            js = work / f"summary_{i}_{engine}_{fmt}.json"
            cmd = [*KANON, "apply", str(recipe), str(path), "-o", str(out), "--engine", engine, "--json", str(js)]
            if limit and limit != "default":
                cmd += ["--memory-limit", limit]
            wall, rss, _, code = timed(cmd)
            row = f"| {label(args.rows)} | {fmt} | {mib:,.0f} | {engine} | {limit} | {wall:.1f} | {rss:.2f} |"
            if code != 0:
                print(f"{row} failed ({code}) | | |", flush=True)
                continue
            p = json.loads(js.read_text())
            if reference is None or engine == "pandas":
                same = "" if engine == "pandas" else "(reference)"
                reference = (engine, out)
            else:
                same = "yes" if same_release(reference[1], out) else "no"
                same += "" if reference[0] == "pandas" else f" (= {reference[0]})"
            print(f"{row} {p['suppressed_cells']:,} | {p['records_below_k']:,} | {same} |", flush=True)
    tmp.cleanup()


if __name__ == "__main__":
    main()
