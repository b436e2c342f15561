"""Risk measures beyond k on the bundled sample and on larger synthetic files.

Prints a table: data, records, QIs, classes, semantics, and the seconds of the individual risk (per
record, from fk/Fk already counted), distinct/entropy/recursive l-diversity and t-closeness (on the class
table, wildcard classes by the compiled matching scan; the first call of a process also compiles it, so
every figure here is after a warm-up) and of risk-targeted suppression on the sample.
Run: python benchmarks/bench_risk_measures.py [--rows 200000] [--skip-suppress]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
from kanon_core.classtable import ClassTable  # noqa: E402
from kanon_core.risk.classes import compute_class_sizes  # noqa: E402
from kanon_core.risk.closeness import t_closeness_classes  # noqa: E402
from kanon_core.risk.diversity import l_diversity_classes  # noqa: E402
from kanon_core.risk.individual import individual_risk  # noqa: E402

CARDS = [2, 7, 6, 5, 9, 8, 13, 3, 4, 6]


def synthetic(rows: int, seed: int = 1, rate: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.choice(c, size=rows, p=rng.dirichlet(np.full(c, 0.8))) for c in CARDS])
    for j in (2, 5, 8):
        codes[rng.random(rows) < rate, j] = -1
    sens = rng.integers(0, 50, rows)
    return codes.astype(np.int32), rng.lognormal(5.0, 0.7, rows), sens


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_table(name: str, table: ClassTable, codes: np.ndarray, weights: np.ndarray | None, sens: str) -> None:
    for missing in ("category", "wildcard"):
        sizes = compute_class_sizes(codes, missing, weights)
        t_ir, _ = timed(lambda sizes=sizes: individual_risk(sizes.fk, sizes.Fk))
        l_diversity_classes(table, sens, missing)  # warm-up (numba compile in a fresh process)
        t_l = {k: timed(lambda k=k, missing=missing: l_diversity_classes(table, sens, missing, k))[0]
               for k in ("distinct", "entropy", "recursive")}
        t_t, _ = timed(lambda missing=missing: t_closeness_classes(table, sens, missing))
        print(f"| {name} | {table.n_records:,} | {len(table.qis)} | {table.n_classes:,} | {missing} | {t_ir:.3f} | "
              f"{t_l['distinct']:.2f} | {t_l['entropy']:.2f} | {t_l['recursive']:.2f} | {t_t:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--skip-suppress", action="store_true")
    args = ap.parse_args()
    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
    print("| data | records | QIs | classes | semantics | individual risk s | distinct l s | entropy l s | "
          "recursive l s | t-closeness s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    from kanon_app.samples import load_sample

    ds = load_sample("els")
    qm = ds.qi_matrix()
    table = ClassTable.from_dataset(ds, sensitive=["BYTXMSTD"])
    run_table("ELS-like sample, S = BYTXMSTD", table, qm.codes, ds.weights(), "BYTXMSTD")
    codes, w, sens = synthetic(args.rows)
    vals = tuple(range(50))
    table2 = ClassTable.from_codes(codes, weights=w, sensitive={"s": (sens.astype(np.int32), vals)})
    run_table("synthetic, S 50 values", table2, codes, w, "s")
    if not args.skip_suppress:
        from kanon_core.treat.suppress_risk import suppress_to_risk

        qis = ("BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION", "BYURBAN", "BYOCCUM")
        ds7 = dataclasses.replace(ds, roles=dataclasses.replace(ds.roles, qis=qis))
        seconds, res = timed(lambda: suppress_to_risk(ds7, 0.01))
        s = res.summary()
        print(f"\nrisk-targeted suppression, ELS-like sample, {len(qis)} QIs, max risk 0.01: "
              f"{s['records_above_before']:,} records above before, {s['records_above_after']:,} after, "
              f"{s['n_suppressed']:,} cells, {s['passes']} pass(es), {seconds:.1f} s")
        # sdcMicro's localSupp for comparison: one chosen variable blanked in every record above the threshold
        qm7 = ds7.qi_matrix()
        risky = res.risk_before > 0.01
        for j, name in enumerate(qis):
            rel = qm7.codes.copy()
            cells = int((risky & (rel[:, j] >= 0)).sum())
            rel[risky, j] = -1
            sz = compute_class_sizes(rel, ds7.missing, ds7.weights())
            left = int((individual_risk(sz.fk, sz.Fk) > 0.01).sum())
            print(f"  sdcMicro-style localSupp on {name}: {cells:,} cells, {left:,} records still above 0.01")


if __name__ == "__main__":
    main()
