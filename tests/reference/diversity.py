"""Brute-force references for l-diversity and t-closeness, record by record.

For every record the records it matches are found by comparing it with every record (wildcard: equal or
missing on every QI; category: identical codes), their sensitive values are collected in a list, and the
measures are computed from the definitions (Machanavajjhala et al. 2007 for l-diversity, over the observed
values of S; Li et al. 2007 for the Earth Mover's Distance, solved here as a
transportation problem by linear programming, not by the closed forms the fast code uses). Nothing is
shared with :mod:`kanon_core.risk.diversity` or :mod:`kanon_core.risk.closeness`.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np


def matching_records(codes: np.ndarray, missing: str) -> list[list[int]]:
    codes = np.asarray(codes)
    n = len(codes)
    out = []
    for i in range(n):
        row = []
        for j in range(n):
            a, b = codes[i], codes[j]
            ok = bool(np.all(a == b)) if missing == "category" else bool(np.all((a == b) | (a < 0) | (b < 0)))
            if ok:
                row.append(j)
        out.append(row)
    return out


def brute_l_diversity(codes: np.ndarray, svals: list, missing: str, kind: str, c: float = 2.0) -> np.ndarray:
    """l per record; ``svals`` holds the sensitive value of each record, None when missing."""
    out = []
    for members in matching_records(codes, missing):
        values = [svals[j] for j in members]
        observed = Counter(v for v in values if v is not None)  # missing values are no value of S
        if kind == "distinct":
            out.append(len(observed))
        elif kind == "entropy":
            total = sum(observed.values())
            out.append(math.exp(-sum(x / total * math.log(x / total) for x in observed.values())) if total else 0)
        else:
            r = sorted(observed.values(), reverse=True)
            if not r:
                out.append(0)
                continue
            best = 1
            for ell in range(2, len(r) + 1):
                if r[0] < c * sum(r[ell - 1:]):
                    best = ell
            out.append(best)
    return np.asarray(out, dtype=float)


def emd_lp(p: np.ndarray, q: np.ndarray, ground: np.ndarray) -> float:
    """Earth Mover's Distance by the transportation linear program (scipy's HiGHS)."""
    from scipy.optimize import linprog

    m = len(p)
    cost = ground.reshape(-1)
    a_eq, b_eq = [], []
    for i in range(m):  # mass leaving i is p_i
        row = np.zeros((m, m))
        row[i, :] = 1
        a_eq.append(row.reshape(-1))
        b_eq.append(p[i])
    for j in range(m):  # mass arriving at j is q_j
        row = np.zeros((m, m))
        row[:, j] = 1
        a_eq.append(row.reshape(-1))
        b_eq.append(q[j])
    res = linprog(cost, A_eq=np.array(a_eq), b_eq=np.array(b_eq), bounds=(0, None), method="highs")
    return float(res.fun)


def brute_t_closeness(codes: np.ndarray, svals: list, missing: str, distance: str) -> np.ndarray:
    """EMD per record between its matching records' observed values of S and the file's."""
    domain = sorted({v for v in svals if v is not None})
    m = len(domain)
    index = {v: i for i, v in enumerate(domain)}
    qc = np.zeros(m)
    for v in svals:
        if v is not None:
            qc[index[v]] += 1
    q = qc / qc.sum() if m else qc
    if distance == "equal":
        ground = 1.0 - np.eye(m)
    else:
        ii = np.arange(m)
        ground = np.abs(ii[:, None] - ii[None, :]) / max(m - 1, 1)
    out = []
    for members in matching_records(codes, missing):
        pc = np.zeros(m)
        for j in members:
            if svals[j] is not None:
                pc[index[svals[j]]] += 1
        if pc.sum() == 0 or m <= 1:
            out.append(0.0)
            continue
        out.append(emd_lp(pc / pc.sum(), q, ground))
    return np.asarray(out)
