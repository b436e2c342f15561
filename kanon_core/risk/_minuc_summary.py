"""Compiled tallies over MINUC lists (tens of millions of masks: a Python loop would take minutes)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def _popcount(x):  # pragma: no cover - compiled
    x = np.uint64(x)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, nogil=True, inline="always")
def _low_bit(x):  # pragma: no cover - compiled
    """Position of the lowest set bit of ``x`` (x != 0)."""
    x = np.uint64(x)
    return _popcount((x & (~x + np.uint64(1))) - np.uint64(1))


@numba.njit(cache=True, nogil=True)
def value_counts(rows, mult, offsets, masks, value_offset, size_weights):  # pragma: no cover - compiled
    """counts[value_offset[j] + code + 1] += multiplicity x size weight, for each QI j of each MINUC.

    With all size weights 1 this counts MINUCs per value; with SUDA's weights it gives sdcMicro's
    attribute-level contributions (before normalisation). The QIs of a MINUC are visited by its set bits
    (lowest first, the order of the sums), not by testing every QI.
    """
    n_rows, q = rows.shape
    counts = np.zeros(value_offset[q], dtype=np.float64)
    for r in range(n_rows):
        for t in range(offsets[r], offsets[r + 1]):
            m = np.uint64(masks[t])
            w = mult[r] * size_weights[_popcount(m)]
            while m:
                j = _low_bit(m)
                counts[value_offset[j] + rows[r, j] + 1] += w
                m &= m - np.uint64(1)
    return counts


@numba.njit(cache=True, nogil=True)
def count_containing(offsets, masks, sel):  # pragma: no cover - compiled
    """Per distinct row: its MINUCs that contain every bit of ``sel``."""
    n_rows = offsets.shape[0] - 1
    out = np.zeros(n_rows, dtype=np.int64)
    s = np.uint64(sel)
    for r in range(n_rows):
        c = 0
        for t in range(offsets[r], offsets[r + 1]):
            if (np.uint64(masks[t]) & s) == s:
                c += 1
        out[r] = c
    return out


@numba.njit(cache=True, nogil=True)
def suda_tallies(masks, offsets, q, weights):  # pragma: no cover - compiled
    """Per distinct row: SUDA score (sum of size weights) and per-QI raw contributions."""
    n_rows = offsets.shape[0] - 1
    score = np.zeros(n_rows, dtype=np.float64)
    contrib = np.zeros((n_rows, q), dtype=np.float64)
    for r in range(n_rows):
        for t in range(offsets[r], offsets[r + 1]):
            m = np.uint64(masks[t])
            w = weights[_popcount(m)]
            score[r] += w
            while m:
                contrib[r, _low_bit(m)] += w
                m &= m - np.uint64(1)
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
def copy_ranges(src, src_start, length, dst, dst_start):  # pragma: no cover - compiled
    """dst[dst_start[i]:+length[i]] = src[src_start[i]:+length[i]] for every i: one pass over millions of
    carried MINUCs, where numpy would build an index array as large."""
    for i in range(length.shape[0]):
        a = src_start[i]
        o = dst_start[i]
        for t in range(length[i]):
            dst[o + t] = src[a + t]


@numba.njit(cache=True, nogil=True)
def flag_ranges(src, src_start, length, flags):  # pragma: no cover - compiled
    """flags[m] = 1 for every mask m of src[src_start[i]:+length[i]] (the distinct QI sets of carried rows)."""
    for i in range(length.shape[0]):
        a = src_start[i]
        for t in range(length[i]):
            flags[src[a + t]] = 1
