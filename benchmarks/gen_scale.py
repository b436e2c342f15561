"""Census-sized synthetic microdata for the scale benchmark: N rows x 10 QIs, Parquet and CSV.

Each QI has Zipf-skewed categories (probability of the i-th category ~ 1 / i^1.1: a few large ones and a
long tail of rare ones, as ages, regions and occupations are in a census), seven are integer codes and
three are text labels ("r007"); three QIs have missing cells (0.5 %, 1 % and 2 %), written as empty
cells in CSV and nulls in Parquet. ``weight`` is a positive lognormal sampling weight written with
Python's float text (so kanon types it as a float), ``income`` a sensitive variable. Rows are written in
chunks of one million, so memory stays small at any size. Everything derives from the seed.

Run: python benchmarks/gen_scale.py --rows 10000000 --out DIR   (writes DIR/scale_10M.parquet and .csv)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

QIS = ("sex", "age", "region", "district", "occupation", "education", "marital", "citizenship", "industry",
       "household")
CARDS = (2, 10, 5, 12, 8, 6, 4, 7, 5, 3)
TEXT_QIS = ("region", "occupation", "citizenship")
MISSING = {"education": 0.005, "occupation": 0.01, "household": 0.02}
CHUNK = 1_000_000


def zipf_probs(n: int, s: float = 1.1) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return p / p.sum()


def chunk(rng: np.random.Generator, rows: int) -> pa.Table:
    cols: dict[str, pa.Array] = {}
    for q, c in zip(QIS, CARDS, strict=True):
        codes = rng.choice(c, size=rows, p=zipf_probs(c)).astype(np.int64)
        mask = rng.random(rows) < MISSING[q] if q in MISSING else None
        if q in TEXT_QIS:
            labels = np.array([f"{q[0]}{i:03d}" for i in range(c)], dtype=object)
            cols[q] = pa.array(labels[codes], pa.string(), mask=mask)
        else:
            cols[q] = pa.array(codes, pa.int64(), mask=mask)
    cols["weight"] = pa.array(np.round(rng.lognormal(5.0, 0.7, rows), 3))
    cols["income"] = pa.array(rng.choice(20, size=rows, p=zipf_probs(20, 0.8)).astype(np.int64))
    return pa.table(cols)


def label(rows: int) -> str:
    return f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else str(rows)


def generate(rows: int, out: Path, seed: int = 0, formats: tuple[str, ...] = ("parquet", "csv")) -> dict[str, Path]:
    """Write ``out/scale_<N>.parquet`` and ``.csv`` (skipped when already there) and return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {f: out / f"scale_{label(rows)}.{f}" for f in formats}
    todo = {f: p for f, p in paths.items() if not p.exists()}
    if not todo:
        return paths
    rng = np.random.default_rng(seed)
    tmp = {f: p.with_suffix(p.suffix + ".part") for f, p in todo.items()}
    pw = cw = None
    done = 0
    try:
        while done < rows:
            t = chunk(rng, min(CHUNK, rows - done))
            if "parquet" in todo:
                pw = pw or pq.ParquetWriter(tmp["parquet"], t.schema)
                pw.write_table(t)
            if "csv" in todo:
                cw = cw or pacsv.CSVWriter(tmp["csv"], t.schema,
                                           write_options=pacsv.WriteOptions(quoting_style="needed"))
                cw.write_table(t)
            done += t.num_rows
    finally:
        for w in (pw, cw):
            if w is not None:
                w.close()
    for f, p in todo.items():
        tmp[f].rename(p)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", required=True, help="folder for the files (outside the repository)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    paths = generate(args.rows, Path(args.out), args.seed)
    for p in paths.values():
        print(f"{p.name}: {p.stat().st_size / 2**20:,.0f} MiB")
    print(f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
