"""Packing several integer code columns into one int64 key per row, without overflow.

Counting equivalence classes is a group-by on several columns; numpy is fastest on one int64 key.
Mixed-radix packing (key = key * (cardinality + 1) + code + 1) is exact while the product of the
radices fits in 63 bits; beyond that the partial key is re-densified with ``np.unique`` (ranks
instead of raw values), which keeps the key exact for any number of columns.
"""

from __future__ import annotations

import numpy as np

_LIMIT = np.int64(2**62)
_DENSE_KEYS = 1 << 22
"""Keys below this are grouped by counting (a bincount of 32 MiB at most) rather than by sorting."""


def pack_rows(codes: np.ndarray) -> np.ndarray:
    """One int64 key per row; equal rows get equal keys, different rows different keys.

    ``codes`` is an (n, m) int array whose values are >= -1 (-1 = missing is treated as a value).
    """
    n, m = codes.shape
    key = np.zeros(n, dtype=np.int64)
    if m == 0:
        return key
    span = 1  # number of distinct key values possible so far (upper bound)
    for j in range(m):
        col = codes[:, j].astype(np.int64) + 1
        radix = int(col.max()) + 1 if n else 1
        if span * radix >= _LIMIT:
            uniq, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64).reshape(-1)
            span = len(uniq)
        key = key * radix + col
        span *= radix
    return key


def group_ids(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense group id per row and the size of each group (identical rows form a group)."""
    key = pack_rows(codes)
    if len(key) and int(key.max()) < _DENSE_KEYS:  # small key range: count, no sort (same ids: sorted keys)
        counts = np.bincount(key)
        present = np.flatnonzero(counts)
        dense = np.zeros(len(counts), dtype=np.int64)
        dense[present] = np.arange(len(present))
        return dense[key], counts[present].astype(np.int64)
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


def unique_rows(codes: np.ndarray, return_index: bool = False, return_inverse: bool = False,
                return_counts: bool = False):
    """``np.unique(codes, axis=0, ...)``, the same arrays in the same order (the inverse 1-D), by packing rows
    into int64 keys: numpy sorts the rows as byte strings, about ten times slower on survey tables.

    Any integer codes (suppressed cells may read -2): each column is shifted to start at -1 before packing,
    and mixed-radix packing (first column most significant, ranks when re-densified) keeps the rows'
    lexicographic order, which is numpy's.
    """
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError("unique_rows needs a 2-D array")
    n, m = codes.shape
    if n == 0 or m == 0:  # nothing to pack: numpy's own answer
        return np.unique(codes, axis=0, return_index=return_index, return_inverse=return_inverse,
                         return_counts=return_counts)
    low = codes.min(axis=0).astype(np.int64)
    key = pack_rows(codes.astype(np.int64) - low[None, :] - 1)
    _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    result = [codes[first]]
    if return_index:
        result.append(first.astype(np.intp))
    if return_inverse:
        result.append(inverse.reshape(-1).astype(np.intp))
    if return_counts:
        result.append(counts.astype(np.intp))
    return result[0] if len(result) == 1 else tuple(result)
