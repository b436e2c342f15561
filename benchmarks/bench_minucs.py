"""MINUC search on the seeded ELS-like table (11,204 records x 19 QIs, Wilson et al.'s Table 1 shape).

Prints, for the first 10, 13, 16 and all 19 QIs: seconds, peak resident memory of the process, MINUCs
in total and by size, records with at least one MINUC. Each configuration runs in a fresh process so
the peak memory is its own (after a warm-up that loads the compiled kernels). For 10 and 13 QIs it also
times Wilson et al.'s method (every frequency table of every QI subset, level by level) as a cross-check of
the totals and as a yardstick. Goals (2 cores): 13 QIs <= 0.79 s (0.3 x sdcMicro's SUDA2 core), 19 QIs <= 4 s,
peak <= 4 GB.

With ``--phases`` it instead times the MINUCs page's search on the bundled sample (all its QIs, its
declared missing semantics, ``--k``, default 3 as on the page) in CPU seconds of the process, twice, and
splits one single-threaded pass into the kernel's phases (disagreement masks, distinct masks, reduced
edge family, enumeration), so a change to one phase can be judged on a shared machine.

Run: python benchmarks/bench_minucs.py [--k 2] [--qis 10,13,16,19] [--missing wildcard] [--phases]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
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


def phases(k: int) -> None:
    """CPU seconds of the page's search on the sample, and of each kernel phase (cumulative passes)."""
    import numba

    from kanon_app.samples import ELS_QIS, load_sample
    from kanon_core.risk import _minuc_kernel as kern
    from kanon_core.risk.minucs import _check, _chunks, _row_class_sizes, collapse, kernel_inputs

    ds = load_sample("els")
    qm = ds.qi_matrix(list(ELS_QIS))
    find_minucs(qm.codes[:200, :4], k=2)  # load the compiled kernels
    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
    print(f"input: bundled sample, {qm.codes.shape[0]:,} records x {qm.codes.shape[1]} QIs, k = {k}, {ds.missing}")
    for run in (1, 2):
        cpu = time.process_time()
        wall = time.perf_counter()
        res = find_minucs(qm, k=k, missing=ds.missing)
        print(f"find_minucs run {run}: {time.process_time() - cpu:.2f} CPU s, "
              f"{time.perf_counter() - wall:.2f} s wall, {res.total:,} MINUCs")

    @numba.njit
    def upto(cols, mult, fk, k, category, stage, bitvals, order):  # pragma: no cover - compiled
        q, n = cols.shape
        seen = np.zeros(1 << q, dtype=np.uint8)
        d = np.empty(n, dtype=bitvals.dtype)
        dmask = np.empty(n, dtype=np.uint64)
        dweight = np.empty(n, dtype=np.int64)
        emask = np.empty(n, dtype=np.uint64)
        eweight = np.empty(n, dtype=np.int64)
        must = np.empty(n + kern.MUST_LANES, dtype=bitvals.dtype)
        buf = np.empty(1 << 12, dtype=bitvals.dtype)
        freq, new_bit, bit_of = np.zeros(q, np.int64), np.zeros(q, np.uint64), np.zeros(q, np.uint64)
        table = np.zeros(((q + kern.LABEL_CHUNK_BITS - 1) // kern.LABEL_CHUNK_BITS, 1 << kern.LABEL_CHUNK_BITS),
                         dtype=np.uint64)
        sizes = np.zeros(3, dtype=np.int64)  # distinct masks, edges, MINUCs (over distinct rows)
        prev = -1
        for u in order:  # as the kernel takes a chunk's rows: in the order of their codes
            if fk[u] >= k:
                continue
            if prev < 0:
                kern._disagreements(cols[:, u], cols, category, d, bitvals)
            else:
                kern._redo_disagreements(cols[:, u], cols[:, prev], cols, category, d, bitvals)
            prev = u
            if stage < 2:
                continue
            nd, m0 = kern._distinct_masks(d, mult, k - 1, seen, dmask, dweight)
            sizes[0] += nd
            if m0 >= k or stage < 3:
                continue
            ne = kern._reduce_family(dmask, dweight, nd, q, k - 1 - m0, emask, eweight, must)
            sizes[1] += ne
            if stage < 4:
                continue
            kern._relabel_rare_first(emask, ne, q, freq, new_bit, bit_of)  # as the kernel does
            buf, nbuf, _ = kern._enumerate_minimal(emask, eweight, ne, q, k - 1 - m0, q, buf, 0)
            kern._restore_labels(buf, 0, nbuf, bit_of, table)
            sizes[2] += nbuf
        return sizes

    codes, _ = _check(qm.codes, k, ds.missing, None)
    col = collapse(codes)
    cols, bitvals = kernel_inputs(col.rows)
    fk = _row_class_sizes(codes, col, ds.missing)
    category = ds.missing == "category"
    # one chunk's order per chunk of the search (kanon_core.risk.minucs._chunks)
    everything = np.arange(len(fk), dtype=np.int64)
    order = np.concatenate([span[kern._similar_rows_first(cols, span)] for span in
                            (everything[lo:hi] for lo, hi in _chunks(len(fk)))])
    upto(cols[:, :50].copy(), col.mult[:50], fk[:50], k, category, 4, bitvals, order[order < 50])  # compile
    print(f"one thread, {len(col.mult):,} distinct rows, {int((fk < k).sum()):,} of them below k:")
    labels = ["disagreement masks", "distinct masks", "reduced edge family", "enumeration"]
    before = 0.0
    for stage in range(1, 5):
        cpu = time.process_time()
        sizes = upto(cols, col.mult, fk, k, category, stage, bitvals, order)
        total = time.process_time() - cpu
        extra = ["", f"{sizes[0]:,} masks", f"{sizes[1]:,} edges", f"{sizes[2]:,} MINUCs (distinct rows)"][stage - 1]
        print(f"  {labels[stage - 1]:<20} {total - before:6.2f} CPU s  {extra}")
        before = total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=None, help="threshold (default 2; with --phases 3, the page's default)")
    ap.add_argument("--qis", default="10,13,16,19")
    ap.add_argument("--missing", default="category", choices=["category", "wildcard"],
                    help="the synthetic table has no missing values, so both give the same MINUCs")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--phases", action="store_true",
                    help="time the MINUCs page's search on the bundled sample and each kernel phase")
    args = ap.parse_args()
    if args.phases:
        phases(args.k or 3)
        return
    args.k = args.k or 2
    if args.one:
        print(json.dumps(one(args.one, args.k, args.missing)))
        return
    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
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
