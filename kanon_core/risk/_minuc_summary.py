"""Compiled tallies over MINUC lists (tens of millions of masks: a Python loop would take minutes)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def value_counts(rows, mult, offsets, masks, value_offset, size_weights):  # pragma: no cover - compiled
    """counts[value_offset[j] + code + 1] += multiplicity x size weight, for each QI j of each MINUC.

    With all size weights 1 this counts MINUCs per value; with SUDA's weights it gives sdcMicro's
    attribute-level contributions (before normalisation).
    """
    n_rows, q = rows.shape
    counts = np.zeros(value_offset[q], dtype=np.float64)
    for r in range(n_rows):
        for t in range(offsets[r], offsets[r + 1]):
            m = masks[t]
            s = 0
            for j in range(q):
                if (m >> np.uint64(j)) & np.uint64(1):
                    s += 1
            w = mult[r] * size_weights[s]
            for j in range(q):
                if (m >> np.uint64(j)) & np.uint64(1):
                    counts[value_offset[j] + rows[r, j] + 1] += w
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


@numba.njit(cache=True, nogil=True)
def row_tallies(mult, offsets, masks, q):  # pragma: no cover - compiled
    """One pass over all MINUCs: per distinct row its counts by size and smallest size; per QI the
    MINUCs containing it and the records holding such a MINUC (both weighted by row multiplicity)."""
    n_rows = offsets.shape[0] - 1
    by_size = np.zeros((n_rows, q), dtype=np.int64)
    smallest = np.zeros(n_rows, dtype=np.int64)
    per_var = np.zeros(q, dtype=np.int64)
    per_var_records = np.zeros(q, dtype=np.int64)
    for r in range(n_rows):
        seen = np.uint64(0)
        best = q + 1
        for t in range(offsets[r], offsets[r + 1]):
            m = masks[t]
            seen |= m
            s = 0
            for j in range(q):
                if (m >> np.uint64(j)) & np.uint64(1):
                    s += 1
                    per_var[j] += mult[r]
            by_size[r, s - 1] += 1
            if s < best:
                best = s
        smallest[r] = best if best <= q else 0
        for j in range(q):
            if (seen >> np.uint64(j)) & np.uint64(1):
                per_var_records[j] += mult[r]
    return by_size, smallest, per_var, per_var_records
