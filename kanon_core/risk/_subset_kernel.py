"""Compiled tally of the subset-counting MINUC search (see :mod:`kanon_core.risk.minucs_by_subsets`).

numba, because the step is a loop over subsets and 64-row words with an early exit per word, and the
MINUCs found are tallied bit by bit; the bit helpers are the MINUC kernel's.
"""

from __future__ import annotations

import numba
import numpy as np

from ._minuc_kernel import _bit_index


@numba.njit(cache=True, nogil=True)
def tally_minimal(unsafe, masks, sizes, below, n_rows, q):  # pragma: no cover - compiled
    """Tally the minimal unsafe sets of every row from the unsafe bits of every subset.

    ``unsafe[s, w]`` holds, for subset ``masks[s]`` (of ``sizes[s]`` QIs), bit b set when row 64 w + b is
    unsafe on it; ``below[s]`` lists the indices of its immediate subsets (-1 after the last; none for a
    single QI, whose only subset, the empty set, every record matches). Unsafe sets are closed upwards,
    so S is minimal for a row exactly when S is unsafe and none of its immediate subsets is. Returns the
    rows' MINUCs by size (column s = size s + 1) and by QI, and a flag per subset: some row's MINUC.
    """
    n_sub, n_words = unsafe.shape
    row_sizes = np.zeros((n_rows, q), dtype=np.int64)
    row_qis = np.zeros((n_rows, q), dtype=np.int64)
    found = np.zeros(n_sub, dtype=np.bool_)
    for s in range(n_sub):
        size = sizes[s]
        for w in range(n_words):
            m = unsafe[s, w]
            if m == 0:
                continue
            for p in range(below.shape[1]):
                sub = below[s, p]
                if sub < 0:
                    break
                m &= ~unsafe[sub, w]
            if m == 0:
                continue
            found[s] = True
            while m:
                low = m & (~m + np.uint64(1))
                row = w * 64 + _bit_index(low)
                row_sizes[row, size - 1] += 1
                x = masks[s]
                while x:
                    row_qis[row, _bit_index(x & (~x + np.uint64(1)))] += 1
                    x &= x - np.uint64(1)
                m ^= low
    return row_sizes, row_qis, found
