"""Brute-force twin of the generalization search under privacy criteria: every node, every record.

Each node is generalized record by record through the hierarchy rows (label lookups), its class table is
built from scratch (no roll-up), each criterion decides its failing classes there, and the records of
classes failing any criterion are the node's suppressed records (ARX's rule). Prec is computed from its
definition. Nothing here uses :mod:`kanon_core.treat.lattice`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from kanon_core.classtable import ClassTable
from kanon_core.criteria.base import Evaluation


def generalize(frame: pd.DataFrame, rows: dict[str, tuple[tuple[str, ...], ...]], levels: Sequence[int]) -> np.ndarray:
    """Integer codes (-1 missing) of the records generalized to ``levels`` (codes = rank of the label)."""
    cols = []
    for (q, hrows), lv in zip(rows.items(), levels, strict=True):
        m = {r[0]: r[lv] for r in hrows}
        labels = [None if pd.isna(v) else m[v] for v in frame[q]]
        uniq = sorted({x for x in labels if x is not None})
        idx = {x: i for i, x in enumerate(uniq)}
        cols.append([-1 if x is None else idx[x] for x in labels])
    return np.array(cols, dtype=np.int32).T.reshape(len(frame), len(rows))


def record_failing(codes: np.ndarray, criteria, missing: str, weights: np.ndarray | None,
                   sensitive: dict) -> dict[str, np.ndarray]:
    """Per criterion spec, which records fail it at this node."""
    table = ClassTable.from_codes(codes, None, weights, sensitive)
    split = any(getattr(c, "alpha", 1.0) < 1.0 for c in criteria)
    ev = Evaluation(table, missing, table.class_sizes(missing, 1.0, wildcard_split=split))
    return {c.spec: np.asarray(c.failing_classes(ev), dtype=bool)[table.record_class] for c in criteria}


def prec(frame: pd.DataFrame, rows: dict, levels: Sequence[int], small: np.ndarray) -> float:
    """1 - Prec over the observed input cells, suppressed records' cells counting 1."""
    num = den = 0.0
    for (q, hrows), lv in zip(rows.items(), levels, strict=True):
        top = len(hrows[0]) - 1
        for v, s in zip(frame[q], small, strict=True):
            if pd.isna(v):
                continue
            den += 1
            num += 1.0 if s else lv / top
    return num / den if den else 0.0


def all_nodes(frame: pd.DataFrame, rows: dict, criteria, missing: str, weights: np.ndarray | None,
              sensitive: dict) -> dict[tuple[int, ...], dict]:
    """Every node: per-criterion failing records, the union, and Prec with the union suppressed."""
    heights = [len(r[0]) for r in rows.values()]
    out = {}
    for levels in itertools.product(*(range(h) for h in heights)):
        codes = generalize(frame, rows, levels)
        per = record_failing(codes, criteria, missing, weights, sensitive)
        small = np.zeros(len(frame), dtype=bool)
        for m in per.values():
            small |= m
        out[levels] = {"per": per, "small": small, "n_small": int(small.sum()),
                       "prec": prec(frame, rows, levels, small)}
    return out


def optimum(nodes: dict, limit: int) -> float:
    """Least Prec over the nodes whose suppressed records are within ``limit`` (inf when none)."""
    feasible = [r["prec"] for r in nodes.values() if r["n_small"] <= limit]
    return min(feasible) if feasible else math.inf


def successors(levels: tuple[int, ...], heights: Sequence[int]):
    for j, (lv, h) in enumerate(zip(levels, heights, strict=True)):
        if lv + 1 < h:
            yield levels[:j] + (lv + 1,) + levels[j + 1:]
