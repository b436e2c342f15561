"""Compiled pairwise scan for wildcard class sizes (see :mod:`kanon_core.risk.classes`).

numba, because the loop has an early exit per pair and touches only rows with missing values; a numpy
broadcast would materialise n_missing x n x q booleans (gigabytes on survey files) and cannot exit early.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def wildcard_scan(uniq, has_miss, mult, wsum, fk, Fk):  # pragma: no cover - compiled
    """Add to fk/Fk the matches between distinct collapsed rows where at least one has a missing value.

    Each unordered pair is visited once: row a (with missing) against every row b that is complete or
    has a larger index. Both ends receive the other's multiplicity and weight.
    """
    n, q = uniq.shape
    for a in range(n):
        if not has_miss[a]:
            continue
        for b in range(n):
            if b == a or (has_miss[b] and b < a):
                continue
            ok = True
            for j in range(q):
                x = uniq[a, j]
                y = uniq[b, j]
                if x != y and x >= 0 and y >= 0:
                    ok = False
                    break
            if ok:
                fk[a] += mult[b]
                Fk[a] += wsum[b]
                fk[b] += mult[a]
                Fk[b] += wsum[a]
    return np.int64(0)
