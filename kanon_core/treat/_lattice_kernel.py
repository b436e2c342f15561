"""Compiled test of k-anonymity under wildcard semantics on one node's class table (see ``lattice``).

Only classes with fewer than k records of their own can fail, and each needs only enough matches to
reach k, so the scan per class stops as soon as the count is reached; a complete class can only be
matched by classes with a missing value, so it scans those alone. The candidate rows are ordered with
the classes most likely to match first (most missing values, then most records). When only the
question "within the suppression limit or not?" is asked, the whole scan stops at the first class that
takes the failing records over the limit.

The result is exact: a class reported as reaching k has at least k matching records (counted with
``alpha`` for wildcard matches, as :func:`kanon_core.risk.classes.alpha_count`), and the counts of the
classes not reaching it are complete, so the caller applies the one rounding rule of ``alpha_count``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def wildcard_small(codes, count, has_miss, order, n_miss, k, alpha, limit):  # pragma: no cover - compiled
    """Per class: reached (bool), matches counted in full and wildcard matches; and whether it stopped.

    ``codes`` (n, q) int32 with -1 missing, rows distinct; ``order`` all rows, those with a missing value
    first (``n_miss`` of them). A class counts as reached when ``full + alpha * wild >= k + 1e-7``
    (exactly k at alpha = 1). With ``limit`` >= 0 (only at alpha = 1) the scan stops as soon as the
    records of classes not reaching k exceed it (``stopped`` is then True and the counts are partial).
    """
    n, q = codes.shape
    reached = np.zeros(n, dtype=np.bool_)
    full = np.zeros(n, dtype=np.int64)
    wild = np.zeros(n, dtype=np.int64)
    failed = 0
    target = k if alpha == 1.0 else k + 1e-7
    for r in range(n):
        own = count[r]
        full[r] = own
        if own >= k:
            reached[r] = True
            continue
        f = own
        w = 0
        m = n if has_miss[r] else n_miss
        ok = False
        for t in range(m):
            s = order[t]
            if s == r:
                continue
            match = True
            for j in range(q):
                a = codes[r, j]
                b = codes[s, j]
                if a != b and a >= 0 and b >= 0:
                    match = False
                    break
            if not match:
                continue
            if has_miss[s]:
                w += count[s]
            else:
                f += count[s]
            if f + alpha * w >= target:
                ok = True
                break
        full[r] = f
        wild[r] = w
        reached[r] = ok
        if not ok and limit >= 0:
            failed += own
            if failed > limit:
                return reached, full, wild, True
    return reached, full, wild, False
