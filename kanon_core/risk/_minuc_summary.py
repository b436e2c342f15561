"""Compiled tallies over MINUC lists (tens of millions of masks: a Python loop would take minutes)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def value_counts(rows, mult, offsets, masks, value_offset):  # pragma: no cover - compiled
    """counts[value_offset[j] + code + 1] += records holding that MINUC, for each QI j in each MINUC."""
    n_rows, q = rows.shape
    counts = np.zeros(value_offset[q], dtype=np.int64)
    for r in range(n_rows):
        for t in range(offsets[r], offsets[r + 1]):
            m = masks[t]
            for j in range(q):
                if (m >> np.uint64(j)) & np.uint64(1):
                    counts[value_offset[j] + rows[r, j] + 1] += mult[r]
    return counts


@numba.njit(cache=True, nogil=True)
def suda_tallies(mask_sizes, masks, offsets, q, weights):  # pragma: no cover - compiled
    """Per distinct row: SUDA score (sum of size weights) and per-QI raw contributions."""
    n_rows = offsets.shape[0] - 1
    score = np.zeros(n_rows, dtype=np.float64)
    contrib = np.zeros((n_rows, q), dtype=np.float64)
    for r in range(n_rows):
        for t in range(offsets[r], offsets[r + 1]):
            w = weights[mask_sizes[t]]
            score[r] += w
            m = masks[t]
            for j in range(q):
                if (m >> np.uint64(j)) & np.uint64(1):
                    contrib[r, j] += w
    return score, contrib


@numba.njit(cache=True, nogil=True)
def distinct_masks_table(masks, q):  # pragma: no cover - compiled
    """Distinct values of ``masks`` (q <= 24), via a table of 2^q flags (no sort of tens of millions)."""
    seen = np.zeros(1 << q, dtype=np.bool_)
    out = np.empty(min(masks.shape[0], 1 << q), dtype=np.uint64)
    n = 0
    for t in range(masks.shape[0]):
        m = masks[t]
        if not seen[m]:
            seen[m] = True
            out[n] = m
            n += 1
    return out[:n]


@numba.njit(cache=True, nogil=True)
def minimal_masks(sorted_masks):  # pragma: no cover - compiled
    """Inclusion-minimal masks of a list sorted by number of bits."""
    keep = np.empty(sorted_masks.shape[0], dtype=np.uint64)
    n = 0
    for t in range(sorted_masks.shape[0]):
        x = sorted_masks[t]
        red = False
        for i in range(n):
            if keep[i] & x == keep[i]:
                red = True
                break
        if not red:
            keep[n] = x
            n += 1
    return keep[:n]
