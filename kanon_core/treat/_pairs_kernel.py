"""Compiled core of :mod:`.discernibility_bound`: the matching pairs of input classes that differ on few QIs.

numba, because the work is a loop over every pair of input classes (a quarter of a billion on the bundled
sample) with a test per pair that numpy could only do by materialising the pairs. The column loop that
finds where two classes differ is written so that LLVM vectorises it (as the MINUC kernel's is), and the
pairs are split between threads by rows, each with its own tallies.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ..risk._minuc_kernel import _bit_index, _disagreements


@numba.njit(cache=True, nogil=True)
def _merge_level(tables, j, x, y, height):  # pragma: no cover - compiled
    """The lowest level at which data codes x and y of QI j fall in one group (``height``: never)."""
    if x < 0 or y < 0:  # a missing cell against an observed one (category semantics): never equal
        return height
    for lv in range(height):
        if tables[j, lv, x] == tables[j, lv, y]:
            return lv
    return height


@numba.njit(cache=True, nogil=True)
def merge_levels(tables, heights, width):  # pragma: no cover - compiled
    """``out[j, x, y]``: :func:`_merge_level` of data codes x and y of QI j, for every pair of codes below
    ``width``, so that the pair count looks a level up instead of walking the levels (on the bundled sample the
    count took 0.069 s instead of 0.084 s with pairs alone, 0.12 s instead of 0.18 s with triples too)."""
    q = tables.shape[0]
    out = np.empty((q, width, width), dtype=np.int8)
    for j in range(q):
        for x in range(width):
            for y in range(width):
                out[j, x, y] = _merge_level(tables, j, x, y, heights[j])
    return out


def _merge(tables, merged, j, x, y, height):  # pragma: no cover - replaced when compiled
    """:func:`_merge_level` for the pair count (its compiled form is chosen by :func:`_merge_compiled`)."""
    raise NotImplementedError


@overload(_merge, inline="always")
def _merge_compiled(tables, merged, j, x, y, height):
    """:func:`_merge_level`, read from ``merged`` when it is :func:`merge_levels`'s table (one byte a level),
    else walked (``merged`` an empty placeholder of wider items). Chosen by the array's type when the pair count
    is compiled, so each of its two compiled copies has one way only: with both ways in the loop, one chosen by
    the array's contents, the count took 0.22 s instead of 0.12 s on the sample."""
    if merged.dtype == types.int8:
        def read(tables, merged, j, x, y, height):  # pragma: no cover - compiled
            if x < 0 or y < 0:
                return height
            return np.int64(merged[j, x, y])
        return read

    def walk(tables, merged, j, x, y, height):  # pragma: no cover - compiled
        return _merge_level(tables, j, x, y, height)
    return walk


@numba.njit(cache=True, nogil=True)
def pair_tallies(codes0, data, count, tables, heights, category, bitvals, part, n_parts, triple_of,
                 merged):  # pragma: no cover - compiled
    """The records of matching ordered pairs, by the QIs on which their classes differ at level 0.

    ``codes0`` (q, n): the input classes' codes at level 0 of each QI (-1: missing), ``data`` (q, n) their
    data codes, ``count`` their records, ``tables[j, l, c]`` the code at level l of data code c of QI j
    (padded), ``heights`` the levels of each QI, ``bitvals[j]`` = 1 << j in the mask type. Two classes differ
    on QI j at level 0 when their level-0 codes differ and, under wildcard semantics (``category`` False),
    both are observed there.

    Returns (same, one, two, three): ``same`` the records of ordered pairs of records that agree at level 0 on
    every QI (a record with itself included); ``one[j, l]`` those whose classes differ on QI j alone and first
    fall in one group of it at level l; ``two[j, i, l, m]`` (j < i) those differing on QIs j and i alone, first
    joined at levels l and m; ``three[t, l, m, o]`` those differing on QIs j < i < h alone, ``t =
    triple_of[j, i, h]``, first joined at levels l, m and o. With ``triple_of`` empty (shape (0, 0, 0)) pairs
    differing on three QIs are not counted, nor are those differing on four or more ever. Each unordered pair
    of classes is met once (by the class of lower row) and counted for both orders. ``merged``: the levels at
    which codes join (:func:`merge_levels`), or an empty table to walk the levels instead.

    Per row, its masks against every row come from the MINUC search's column loop
    (:func:`~kanon_core.risk._minuc_kernel._disagreements`, which LLVM vectorises); those of the rows after
    it are flagged (at most two bits) in a loop LLVM vectorises too, and the few flagged pairs (3 % on the
    bundled sample) are found eight flags at a time. The narrowest code and mask types that fit (int16,
    uint16) double the vector width of int32 and uint32 (the mask loops took 0.06 s instead of 0.11 s on the
    sample); masks of the rows after it alone took as long as those of every row, and 1.2 s when its loops
    ran from a row offset (LLVM left them scalar), 0.31 s over a 2-D slice of the codes.

    ``part`` of ``n_parts``: one thread's share (every ``n_parts``-th row from ``part``); the shares add up.
    """
    q, n = codes0.shape
    hmax = 1
    for j in range(q):
        hmax = max(hmax, heights[j])
    same = np.int64(0)
    one = np.zeros((q, hmax), dtype=np.int64)
    two = np.zeros((q, q, hmax, hmax), dtype=np.int64)
    triples = triple_of.shape[0] > 0
    three = np.zeros((triple_of.max() + 1 if triples else 0, hmax, hmax, hmax), dtype=np.int64)
    width = (n + 7) // 8 * 8
    diff = np.empty(width, dtype=bitvals.dtype)
    flag = np.zeros(width, dtype=np.uint8)
    words = flag.view(np.uint64)
    zero = bitvals[0] ^ bitvals[0]
    unit = bitvals[0]
    for r in range(part, n, n_parts):
        cr = count[r]
        same += cr * cr
        lo = r + 1
        m = n - lo
        if m == 0:
            continue
        _disagreements(codes0[:, r], codes0, category, diff, bitvals)
        d = diff[lo:n]
        f = flag[:m]
        if triples:  # flagged: at most three QIs apart (else two); a loop each, the test fixed within it
            for s in range(m):
                rest = d[s] & (d[s] - unit)
                rest = rest & (rest - unit)
                f[s] = np.uint8((rest & (rest - unit)) == zero)
        else:
            for s in range(m):
                rest = d[s] & (d[s] - unit)
                f[s] = np.uint8((rest & (rest - unit)) == zero)
        flag[m:] = 0
        for t in range((m + 7) // 8):
            w = words[t]
            while w:
                b = _bit_index(w)
                w &= w - np.uint64(1)
                s = 8 * t + (b >> 3)
                ds = d[s]
                other = count[lo + s]
                if ds == zero:
                    same += 2 * cr * other
                    continue
                j = _bit_index(ds)
                a = _merge(tables, merged, j, data[j, r], data[j, lo + s], heights[j])
                if a >= heights[j]:
                    continue
                rest = ds & (ds - unit)
                if rest == zero:
                    one[j, a] += 2 * cr * other
                    continue
                i = _bit_index(rest)
                b2 = _merge(tables, merged, i, data[i, r], data[i, lo + s], heights[i])
                if b2 >= heights[i]:
                    continue
                rest = rest & (rest - unit)
                if rest == zero:
                    two[j, i, a, b2] += 2 * cr * other
                    continue
                h = _bit_index(rest)
                c = _merge(tables, merged, h, data[h, r], data[h, lo + s], heights[h])
                if c < heights[h]:
                    three[triple_of[j, i, h], a, b2, c] += 2 * cr * other
    return same, one, two, three
