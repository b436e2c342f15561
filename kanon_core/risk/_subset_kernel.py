"""Compiled tally of the subset-counting MINUC search (see :mod:`kanon_core.risk.minucs_by_subsets`).

numba, because the step is a loop over subsets and 64-row words with an early exit per word, and the
MINUCs found are tallied bit by bit; the bit helpers are the MINUC kernel's.
"""

from __future__ import annotations

import numba
import numpy as np

from ._minuc_kernel import _bit_index


@numba.njit(cache=True, nogil=True, inline="always")
def _minimal_word(unsafe, below, s, w):  # pragma: no cover - compiled
    """The rows 64 w .. 64 w + 63 for which subset s is minimal: unsafe there, and safe on every immediate
    subset (``below[s]``, -1 after the last)."""
    m = unsafe[s, w]
    if m == 0:
        return m
    for p in range(below.shape[1]):
        sub = below[s, p]
        if sub < 0:
            break
        m &= ~unsafe[sub, w]
    return m


@numba.njit(cache=True, nogil=True)
def tally_minimal(unsafe, masks, sizes, below, rows, row_sizes, row_qis):  # pragma: no cover - compiled
    """Tally the minimal unsafe sets of every unsafe row from the unsafe bits of every subset.

    ``unsafe[s, w]`` holds, for subset ``masks[s]`` (of ``sizes[s]`` QIs), bit b set when unsafe row
    64 w + b is unsafe on it; ``below[s]`` lists the indices of its immediate subsets (-1 after the last;
    none for a single QI, whose only subset, the empty set, every record matches). Unsafe sets are closed
    upwards, so S is minimal for a row exactly when S is unsafe and none of its immediate subsets is. Adds
    each MINUC to its row's counts by size (column s = size s + 1) and by QI, in the table's rows
    (``rows[i]``: the row of unsafe row i), and returns a flag per subset: some row's MINUC.
    """
    n_sub, n_words = unsafe.shape
    found = np.zeros(n_sub, dtype=np.bool_)
    for s in range(n_sub):
        size = sizes[s]
        for w in range(n_words):
            m = _minimal_word(unsafe, below, s, w)
            if m == 0:
                continue
            found[s] = True
            while m:
                low = m & (~m + np.uint64(1))
                row = rows[w * 64 + _bit_index(low)]
                row_sizes[row, size - 1] += 1
                x = masks[s]
                while x:
                    row_qis[row, _bit_index(x & (~x + np.uint64(1)))] += 1
                    x &= x - np.uint64(1)
                m ^= low
    return found


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def roll_up_keys(keys, count, keep, of_unsafe):  # pragma: no cover - compiled
    """Merge the classes of a packed table that agree on the fields in ``keep`` (the dropped QI's field
    cleared): returns the new classes' keys and record counts, in order of first appearance, and the new
    class of every unsafe row (``of_unsafe``: its class in this table). A hash table with open addressing
    on the masked key; the slot array says which slots are taken (a masked key may be 0)."""
    n = keys.shape[0]
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    size = 1 << bits
    shift = np.uint64(64 - bits)
    slot_class = np.full(size, -1, dtype=np.int64)
    slot_key = np.zeros(size, dtype=np.uint64)
    gid = np.empty(n, dtype=np.int64)
    new_keys = np.empty(n, dtype=np.uint64)
    new_count = np.zeros(n, dtype=np.int64)
    n_new = 0
    for i in range(n):
        key = keys[i] & keep
        s = np.int64((key * _GOLDEN) >> shift)
        while slot_class[s] >= 0 and slot_key[s] != key:
            s = (s + 1) & (size - 1)
        if slot_class[s] < 0:
            slot_class[s] = n_new
            slot_key[s] = key
            new_keys[n_new] = key
            n_new += 1
        c = slot_class[s]
        gid[i] = c
        new_count[c] += count[i]
    mapped = np.empty(of_unsafe.shape[0], dtype=np.int64)
    for i in range(of_unsafe.shape[0]):
        mapped[i] = gid[of_unsafe[i]]
    return new_keys[:n_new].copy(), new_count[:n_new].copy(), mapped


@numba.njit(cache=True, nogil=True)
def unsafe_bits(size, of_unsafe, k, mask, observed, can_grow, at_limit, words):  # pragma: no cover - compiled
    """Set bit i of ``words`` when unsafe row i is below k on the subset ``mask`` (its class's size in the
    projected table) and, with ``observed`` (wildcard semantics), has every QI of the subset observed.
    Returns True when, at the size limit, some row that could grow is safe here (a larger MINUC may exist)."""
    wildcard = observed.shape[0] > 0
    maybe_larger = False
    for i in range(of_unsafe.shape[0]):
        eligible = (not wildcard) or (observed[i] & mask) == mask
        if not eligible:
            continue
        if size[of_unsafe[i]] < k:
            words[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
        elif at_limit and can_grow[i]:
            maybe_larger = True
    return maybe_larger


@numba.njit(cache=True, nogil=True)
def fill_masks(unsafe, masks, below, rows, offsets, out):  # pragma: no cover - compiled
    """Write every unsafe row's MINUCs (the minimal unsafe subsets of :func:`tally_minimal`) as bit masks into
    ``out``, row ``rows[i]``'s from ``offsets[rows[i]]`` on, in ascending order of the mask (the subsets are
    listed so); ``offsets`` come from the tallies, so every row's run is exactly filled."""
    n_sub, n_words = unsafe.shape
    cursor = np.zeros(rows.shape[0], dtype=np.int64)
    for s in range(n_sub):
        for w in range(n_words):
            m = _minimal_word(unsafe, below, s, w)
            while m:
                low = m & (~m + np.uint64(1))
                i = w * 64 + _bit_index(low)
                out[offsets[rows[i]] + cursor[i]] = masks[s]
                cursor[i] += 1
                m ^= low
