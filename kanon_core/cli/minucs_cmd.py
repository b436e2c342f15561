"""``kanon minucs``: every minimal unsafe combination of every record, with SUDA scores for k = 2."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..outputs import OutputBatch, check_outputs, data_inputs
from ..risk.classes import check_alpha
from ..risk.minucs_by_subsets import METHODS
from .common import add_input_options, check_k, load_from_args, open_fraction, split_list, write_json
from .minucs_scale import minucs_at_scale
from .scale import add_engine_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("minucs", help="minimal unsafe combinations (MINUCs / minimal sample uniques), SUDA scores")
    add_input_options(p)
    p.add_argument("--k", type=int, default=2, help="threshold: a combination is unsafe below k records (default 2)")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="weight of wildcard matches (sdcMicro's freqCalc); the MINUC search counts them in full, "
                        "so only 1 (the default) is accepted")
    p.add_argument("--max-size", type=int, default=None, help="largest MINUC size searched (default: all)")
    p.add_argument("--dis-fraction", type=open_fraction, default=0.01,
                   help="sampling fraction (between 0 and 1) for DIS-SUDA (k = 2)")
    p.add_argument("-o", "--output", "--json", dest="json_out", default="-",
                   help="write the summary as JSON here (default stdout); -o, --output and --json are the same")
    p.add_argument("--per-record", help="write per-record counts by size (size1..sizeQ) as CSV, input row order")
    p.add_argument("--list", dest="list_out", help="write every MINUC as CSV rows (record, size, variables)")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="compare distinct records (or an engine's classes) pairwise (pairs: many QIs), count "
                        "every QI subset on them (subsets: many records or classes, few QIs), or the one "
                        "forecast cheaper (auto, the default); the same MINUCs either way")
    add_engine_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..risk.minucs import find_minucs
    from ..risk.qid import minimal_qids_from_minucs
    from ..risk.suda import suda_scores

    check_k(args.k)
    if args.weight is not None and args.weight in split_list(args.qi):  # the engines read it as both
        raise InputError("The weight cannot also be a quasi-identifier.")
    if check_alpha(args.alpha) != 1.0:
        raise InputError("kanon minucs counts records with missing values in full: --alpha must be 1 "
                         "(use kanon risk --alpha for fractional class sizes).")
    scaled = minucs_at_scale(args)  # an out-of-core engine: the counts from the class table
    if scaled is not None:
        return scaled
    check_outputs({"-o/--json": args.json_out, "--per-record": args.per_record, "--list": args.list_out},
                  data_inputs(args.file))
    ds = load_from_args(args)
    qm = ds.qi_matrix()
    res = find_minucs(qm, k=args.k, missing=ds.missing, max_size=args.max_size, method=args.method)
    payload = res.to_json()
    payload["top_values"] = res.value_contributions(qm, top=20).drop(columns="code").to_dict(orient="records")
    if res.complete:
        qids = minimal_qids_from_minucs(res)
        payload["minimal_violating_qids"] = {"count": len(qids), "smallest": list(qids[0]) if qids else []}
    suda = None
    if args.k == 2:
        suda = suda_scores(res, qm, dis_fraction=args.dis_fraction)
        payload["suda"] = suda.summary()
    with OutputBatch() as batch:
        if args.per_record:
            by_size = res.counts_by_size()
            out = pd.DataFrame(by_size, columns=[f"size{s + 1}" for s in range(res.n_qis)])
            if suda is not None:
                out["suda"] = suda.score
                out["dis_suda"] = suda.dis_score
            out.to_csv(batch.temp_path(args.per_record), index=False, lineterminator="\n")
        if args.list_out:
            _write_list(batch.temp_path(args.list_out), res)
        write_json(args.json_out, payload, batch)
    return 0


def _write_list(path: str | Path, res) -> None:
    """One line per (record, MINUC), streamed in blocks so tens of millions of lines fit in memory."""
    from ..risk.minucs import popcount

    names = np.array(res.names, dtype=object)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("record,size,variables\n")
        block = 200_000
        rec_all = res.record
        mask_all = res.mask
        for lo in range(0, len(rec_all), block):
            rec = rec_all[lo:lo + block]
            msk = mask_all[lo:lo + block]
            sizes = popcount(msk)
            bits = ((msk[:, None] >> np.arange(res.n_qis, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(bool)
            lines = [f"{r},{s},{'|'.join(names[b])}\n" for r, s, b in zip(rec.tolist(), sizes.tolist(), bits, strict=True)]
            fh.writelines(lines)
