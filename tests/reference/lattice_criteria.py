"""Brute-force twin of the generalization search under privacy criteria: every node, every record.

Each node is generalized record by record through the hierarchy rows (label lookups), its class table is
built from scratch (no roll-up), each criterion decides its failing classes there, and the records of
classes failing any criterion are the node's suppressed records (ARX's rule); a node is acceptable when they
are within the limit and, blanked together, meet the criteria as one class of the release. Prec is computed
from its definition. Nothing here uses :mod:`kanon_core.treat.lattice`.
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


def blanked_fail(codes: np.ndarray, small: np.ndarray, criteria, weights: np.ndarray | None,
                 sensitive: dict) -> bool:
    """Whether the records ``small``, blanked on every QI, fail a criterion as the class they form together in
    the release: the release's table built record by record (the blanked records given one new code on every
    QI, a value of its own under category semantics), each criterion deciding there."""
    if not small.any():
        return False
    released = np.where(small[:, None], codes.max(initial=0) + 1, codes).astype(np.int32)
    table = ClassTable.from_codes(released, None, weights, sensitive)
    ev = Evaluation(table, "category", table.class_sizes("category", 1.0, wildcard_split=False))
    fails = np.zeros(len(small), dtype=bool)
    for c in criteria:
        fails |= np.asarray(c.failing_classes(ev), dtype=bool)[table.record_class]
    return bool(fails[small].any())


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
                       "group_fails": blanked_fail(codes, small, criteria, weights, sensitive),
                       "prec": prec(frame, rows, levels, small)}
    return out


def acceptable(node: dict, limit: int) -> bool:
    """Suppressed records within ``limit``, and none, or a blanked group meeting the criteria."""
    return node["n_small"] <= limit and not node["group_fails"]


def optimum(nodes: dict, limit: int) -> float:
    """Least Prec over the acceptable nodes (inf when none)."""
    feasible = [r["prec"] for r in nodes.values() if acceptable(r, limit)]
    return min(feasible) if feasible else math.inf


def successors(levels: tuple[int, ...], heights: Sequence[int]):
    for j, (lv, h) in enumerate(zip(levels, heights, strict=True)):
        if lv + 1 < h:
            yield levels[:j] + (lv + 1,) + levels[j + 1:]
