"""Brute-force references for equivalence-class sizes and MINUCs, by direct counting.

``brute_force_class_sizes`` compares every pair of records (O(n^2)); ``brute_force_minucs`` counts the
records agreeing with each record on every subset of its quasi-identifiers. Both follow the definitions
in the README ("How MINUCs are found") and in :mod:`kanon_core.risk.classes`, and share no code with the
fast implementations they check.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np


def brute_force_class_sizes(codes: np.ndarray, missing: str, weights: np.ndarray | None = None,
                            alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """fk and Fk of every record by comparing it with every record (integer codes, -1 = missing).

    Record j counts for record i when they match; it counts 1 when it has i's exact key or no missing
    value, ``alpha`` otherwise. fk is int64 at alpha = 1, float64 below.
    """
    codes = np.asarray(codes)
    n = codes.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    fk = np.zeros(n, dtype=np.int64 if alpha == 1.0 else np.float64)
    Fk = np.zeros(n)
    for i in range(n):
        for j in range(n):
            a, b = codes[i], codes[j]
            if missing == "category":
                ok = bool(np.all(a == b))
            else:
                ok = bool(np.all((a == b) | (a < 0) | (b < 0)))
            if ok:
                share = 1.0 if (bool(np.all(a == b)) or not bool((b < 0).any())) else alpha
                fk[i] += 1 if alpha == 1.0 else share
                Fk[i] += share * w[j]
    return fk, Fk


def brute_force_minucs(codes: np.ndarray, k: int = 2, missing: str = "wildcard",
                       max_size: int | None = None) -> list[set[int]]:
    """For every record the set of its MINUC masks (bit j = QI j), by counting every subset."""
    codes = np.asarray(codes)
    n, q = codes.shape
    limit = q if max_size is None else max_size
    out: list[set[int]] = []
    for r in range(n):
        own = [j for j in range(q) if missing == "category" or codes[r, j] >= 0]
        unsafe: dict[int, bool] = {}

        def count(mask: int, r: int = r) -> int:
            cols = [j for j in range(q) if (mask >> j) & 1]
            if not cols:
                return n
            a = codes[:, cols]
            x = codes[r, cols]
            if missing == "category":
                ok = (a == x).all(axis=1)
            else:
                ok = ((a == x) | (a < 0)).all(axis=1)
            return int(ok.sum())

        found: set[int] = set()
        for size in range(1, min(limit, len(own)) + 1):
            for combo in combinations(own, size):
                mask = sum(1 << j for j in combo)
                unsafe[mask] = count(mask) < k
                if unsafe[mask] and all(not unsafe.get(mask & ~(1 << j), False) for j in combo):
                    found.add(mask)
        out.append(found)
    return out
