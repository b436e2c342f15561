"""Compiled pairwise scan for wildcard class sizes (see :mod:`kanon_core.risk.classes`).

numba, because the scan touches only rows with missing values and a numpy broadcast would materialise
n_missing x n x q booleans (gigabytes on survey files). For each row with a missing value the clash
flags against every other row are built column by column (a loop LLVM vectorises, on the narrowest
integer type that holds the codes), then matches are tallied in one pass; the rows are split into
blocks that run on separate threads with their own accumulators (the functions release the GIL).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def wildcard_scan_block(cols, has_miss, mult, wsum, lo, hi):  # pragma: no cover - compiled
    """Matches between distinct collapsed rows a in [lo, hi) with a missing value and every other row.

    Each unordered pair is counted once: row a (with missing) against every row b that is complete or
    has a larger index; both ends receive the other's multiplicity and weight. Returns (fk, Fk)
    increments for all rows.
    """
    q, n = cols.shape
    fk = np.zeros(n, dtype=np.int64)
    Fk = np.zeros(n, dtype=np.float64)
    clash = np.empty(n, dtype=np.uint8)
    for a in range(lo, hi):
        if not has_miss[a]:
            continue
        for b in range(n):
            clash[b] = 0
        for v in range(q):
            x = cols[v, a]
            if x < 0:
                continue
            col = cols[v]
            for b in range(n):
                y = col[b]
                clash[b] |= np.uint8((y >= 0) & (y != x))
        for b in range(n):
            if clash[b] or b == a or (has_miss[b] and b < a):
                continue
            fk[a] += mult[b]
            Fk[a] += wsum[b]
            fk[b] += mult[a]
            Fk[b] += wsum[a]
    return fk, Fk
