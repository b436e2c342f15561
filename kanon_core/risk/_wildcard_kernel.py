"""Compiled pairwise scan for wildcard class sizes (see :mod:`kanon_core.risk.classes`).

numba, because the scan touches only rows with missing values and a numpy broadcast would materialise
n_missing x n x q booleans (gigabytes on survey files). For each row with a missing value the clash
flags against every other row are built column by column (a loop LLVM vectorises, on the narrowest
integer type that holds the codes), then matches are tallied in one pass; the rows are split into
blocks that run on separate threads with their own accumulators (the functions release the GIL).

When asked (alpha < 1, or the wildcard-dependent records), the kernels also return the part of the
matches that are *wildcard matches*, records with a missing QI and a key other than the receiving row's
(sdcMicro's ``alpha`` weighs only those; see :func:`kanon_core.risk.classes.compute_class_sizes`).
Distinct collapsed rows always have different keys, so a match from another row is a wildcard match
exactly when that other row has a missing value. The plain scan is a function of its own and the pattern
join branches once per pattern pair, so the count at alpha = 1 keeps its speed.
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
        clashes(cols, a, clash)
        for b in range(n):
            if clash[b] or b == a or (has_miss[b] and b < a):
                continue
            fk[a] += mult[b]
            Fk[a] += wsum[b]
            fk[b] += mult[a]
            Fk[b] += wsum[a]
    return fk, Fk


@numba.njit(cache=True, nogil=True)
def wildcard_scan_block_split(cols, has_miss, mult, wsum, lo, hi):  # pragma: no cover - compiled
    """:func:`wildcard_scan_block` that also counts the wildcard part: (fk, Fk, fk_wild, Fk_wild).

    b always receives a wildcard match from a (a has a missing value); a receives one from a b with a
    missing value. A separate function, so that the plain count keeps its compiled code and speed.
    """
    q, n = cols.shape
    fk = np.zeros(n, dtype=np.int64)
    Fk = np.zeros(n, dtype=np.float64)
    fkw = np.zeros(n, dtype=np.int64)
    Fkw = np.zeros(n, dtype=np.float64)
    clash = np.empty(n, dtype=np.uint8)
    for a in range(lo, hi):
        if not has_miss[a]:
            continue
        clashes(cols, a, clash)
        for b in range(n):
            if clash[b] or b == a or (has_miss[b] and b < a):
                continue
            fk[a] += mult[b]
            Fk[a] += wsum[b]
            fk[b] += mult[a]
            Fk[b] += wsum[a]
            fkw[b] += mult[a]
            Fkw[b] += wsum[a]
            if has_miss[b]:
                fkw[a] += mult[b]
                Fkw[a] += wsum[b]
    return fk, Fk, fkw, Fkw


@numba.njit(cache=True, nogil=True, inline="always")
def clashes(cols, a, clash):  # pragma: no cover - compiled
    """clash[b] = 1 when rows a and b differ on a QI observed in both (column by column, vectorised)."""
    q, n = cols.shape
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


@numba.njit(cache=True, nogil=True, inline="always")
def _row_hash(uniq, r, cols, nc):  # pragma: no cover - compiled
    h = np.uint64(1469598103934665603)
    for t in range(nc):
        h = (h ^ np.uint64(uniq[r, cols[t]] + 1)) * np.uint64(1099511628211)
    return h


@numba.njit(cache=True, nogil=True, inline="always")
def _same_on(uniq, a, b, cols, nc):  # pragma: no cover - compiled
    for t in range(nc):  # noqa: SIM110 - numba compiles no generator expressions
        if uniq[a, cols[t]] != uniq[b, cols[t]]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _cross(a0, a1, b0, b1, mult, wsum, fk, Fk, fkw, Fkw, wild_a, wild_b):  # pragma: no cover - compiled
    """Rows a0..a1 and b0..b1 of two patterns observed on no common QI: every row matches every row."""
    ca = 0
    wa = 0.0
    for i in range(a0, a1):
        ca += mult[i]
        wa += wsum[i]
    cb = 0
    wb = 0.0
    for i in range(b0, b1):
        cb += mult[i]
        wb += wsum[i]
    for i in range(a0, a1):
        fk[i] += cb
        Fk[i] += wb
        if wild_a:
            fkw[i] += cb
            Fkw[i] += wb
    for i in range(b0, b1):
        fk[i] += ca
        Fk[i] += wa
        if wild_b:
            fkw[i] += ca
            Fkw[i] += wa


@numba.njit(cache=True, nogil=True, inline="always")
def _give_back(s0, s1, slot_of, got_c, got_w, fk, Fk, fkw, Fkw, wild_s):  # pragma: no cover - compiled
    """The matches the probing side found, added to the hashed rows of the smaller side."""
    for i in range(s0, s1):
        s = slot_of[i - s0]
        fk[i] += got_c[s]
        Fk[i] += got_w[s]
        if wild_s:
            fkw[i] += got_c[s]
            Fkw[i] += got_w[s]


@numba.njit(cache=True, nogil=True)
def pattern_pairs(uniq, offsets, observed, mult, wsum, split):  # pragma: no cover - compiled
    """Wildcard matches between rows of different missing patterns, one hash join per pattern pair.

    The rows are grouped by missing pattern (rows ``offsets[p]`` to ``offsets[p + 1]`` have pattern p).
    Rows of patterns A and B match exactly when they agree on the QIs observed in both, so each unordered
    pair of patterns is a join on those columns: the smaller side is hashed (open addressing, codes
    compared on collision), the larger side probes it; matched counts flow both ways. Rows of the same
    pattern never match each other (distinct rows differ on an observed QI). Work is about (number of
    patterns) x (number of rows) x (QIs), with no sorting. With ``split``, matches from a pattern with a
    missing QI are also added to the wildcard increments (fk_wild, Fk_wild) of the receiving rows (a
    branch constant over each pattern pair). The increments come back in the same (grouped) order.
    """
    n, q = uniq.shape
    P = offsets.shape[0] - 1
    fk = np.zeros(n, dtype=np.int64)
    Fk = np.zeros(n, dtype=np.float64)
    fkw = np.zeros(n, dtype=np.int64)
    Fkw = np.zeros(n, dtype=np.float64)
    complete = np.ones(P, dtype=np.bool_)
    for p in range(P):
        for j in range(q):
            if not observed[p, j]:
                complete[p] = False
    cols = np.empty(q, dtype=np.int64)
    for pa in range(P):
        for pb in range(pa + 1, P):
            wild_a = split and not complete[pb]  # rows of pa receive wildcard matches from pb
            wild_b = split and not complete[pa]
            nc = 0
            for j in range(q):
                if observed[pa, j] and observed[pb, j]:
                    cols[nc] = j
                    nc += 1
            a0, a1 = offsets[pa], offsets[pa + 1]
            b0, b1 = offsets[pb], offsets[pb + 1]
            if nc == 0:
                _cross(a0, a1, b0, b1, mult, wsum, fk, Fk, fkw, Fkw, wild_a, wild_b)
                continue
            if a1 - a0 <= b1 - b0:
                s0, s1, l0, l1 = a0, a1, b0, b1
                wild_s, wild_l = wild_a, wild_b
            else:
                s0, s1, l0, l1 = b0, b1, a0, a1
                wild_s, wild_l = wild_b, wild_a
            size = 1
            while size < 2 * (s1 - s0):
                size *= 2
            rep = np.full(size, -1, dtype=np.int64)
            cnt = np.zeros(size, dtype=np.int64)
            wts = np.zeros(size, dtype=np.float64)
            got_c = np.zeros(size, dtype=np.int64)
            got_w = np.zeros(size, dtype=np.float64)
            slot_of = np.empty(s1 - s0, dtype=np.int64)
            mask = np.uint64(size - 1)
            for i in range(s0, s1):
                s = np.int64(_row_hash(uniq, i, cols, nc) & mask)
                while rep[s] >= 0 and not _same_on(uniq, rep[s], i, cols, nc):
                    s = (s + 1) & (size - 1)
                if rep[s] < 0:
                    rep[s] = i
                cnt[s] += mult[i]
                wts[s] += wsum[i]
                slot_of[i - s0] = s
            for i in range(l0, l1):
                s = np.int64(_row_hash(uniq, i, cols, nc) & mask)
                while rep[s] >= 0 and not _same_on(uniq, rep[s], i, cols, nc):
                    s = (s + 1) & (size - 1)
                if rep[s] >= 0:
                    fk[i] += cnt[s]
                    Fk[i] += wts[s]
                    if wild_l:
                        fkw[i] += cnt[s]
                        Fkw[i] += wts[s]
                    got_c[s] += mult[i]
                    got_w[s] += wsum[i]
            _give_back(s0, s1, slot_of, got_c, got_w, fk, Fk, fkw, Fkw, wild_s)
    return fk, Fk, fkw, Fkw


@numba.njit(cache=True, nogil=True)
def pattern_pairs_packed(keys, offsets, colmask, complete, mult, wsum, split):  # pragma: no cover - compiled
    """:func:`pattern_pairs` on rows packed into 64-bit keys.

    Row i is ``keys[i]``: every QI's code + 1 in a bit field of its own (0: missing). Two rows of patterns A
    and B agree on the QIs observed in both exactly when their keys agree under ``colmask[A] & colmask[B]``
    (the fields observed in both), so a join compares one integer per row and never reads the rows
    themselves; a projected key is never 0 (some field observed in both holds a code + 1 >= 1), which marks
    an empty slot. The rows of each pattern are contiguous, so every pass reads memory in order.
    """
    n = keys.shape[0]
    P = offsets.shape[0] - 1
    fk = np.zeros(n, dtype=np.int64)
    Fk = np.zeros(n, dtype=np.float64)
    fkw = np.zeros(n, dtype=np.int64)
    Fkw = np.zeros(n, dtype=np.float64)
    golden = np.uint64(0x9E3779B97F4A7C15)
    for pa in range(P):
        for pb in range(pa + 1, P):
            wild_a = split and not complete[pb]  # rows of pa receive wildcard matches from pb
            wild_b = split and not complete[pa]
            m = colmask[pa] & colmask[pb]
            a0, a1 = offsets[pa], offsets[pa + 1]
            b0, b1 = offsets[pb], offsets[pb + 1]
            if m == 0:
                _cross(a0, a1, b0, b1, mult, wsum, fk, Fk, fkw, Fkw, wild_a, wild_b)
                continue
            if a1 - a0 <= b1 - b0:
                s0, s1, l0, l1 = a0, a1, b0, b1
                wild_s, wild_l = wild_a, wild_b
            else:
                s0, s1, l0, l1 = b0, b1, a0, a1
                wild_s, wild_l = wild_b, wild_a
            bits = 1
            while (1 << bits) < 2 * (s1 - s0):
                bits += 1
            size = 1 << bits
            shift = np.uint64(64 - bits)
            tkey = np.zeros(size, dtype=np.uint64)
            cnt = np.zeros(size, dtype=np.int64)
            wts = np.zeros(size, dtype=np.float64)
            got_c = np.zeros(size, dtype=np.int64)
            got_w = np.zeros(size, dtype=np.float64)
            slot_of = np.empty(s1 - s0, dtype=np.int64)
            for i in range(s0, s1):
                k = keys[i] & m
                s = np.int64((k * golden) >> shift)
                while tkey[s] != 0 and tkey[s] != k:
                    s = (s + 1) & (size - 1)
                tkey[s] = k
                cnt[s] += mult[i]
                wts[s] += wsum[i]
                slot_of[i - s0] = s
            for i in range(l0, l1):
                k = keys[i] & m
                s = np.int64((k * golden) >> shift)
                while tkey[s] != 0 and tkey[s] != k:
                    s = (s + 1) & (size - 1)
                if tkey[s] == k:
                    fk[i] += cnt[s]
                    Fk[i] += wts[s]
                    if wild_l:
                        fkw[i] += cnt[s]
                        Fkw[i] += wts[s]
                    got_c[s] += mult[i]
                    got_w[s] += wsum[i]
            _give_back(s0, s1, slot_of, got_c, got_w, fk, Fk, fkw, Fkw, wild_s)
    return fk, Fk, fkw, Fkw


@numba.njit(cache=True, nogil=True)
def pack_keys(uniq, shifts):  # pragma: no cover - compiled
    """One 64-bit key per row: each QI's code + 1 (0: missing) shifted into its field, row by row in order."""
    n, q = uniq.shape
    keys = np.zeros(n, dtype=np.uint64)
    for i in range(n):
        k = np.uint64(0)
        for j in range(q):
            k |= np.uint64(uniq[i, j] + 1) << shifts[j]
        keys[i] = k
    return keys


@numba.njit(cache=True, nogil=True)
def gappy_columns(uniq):  # pragma: no cover - compiled
    """Per QI: whether some row has it missing (one pass over the rows, in memory order)."""
    n, q = uniq.shape
    out = np.zeros(q, dtype=np.bool_)
    for i in range(n):
        for j in range(q):
            if uniq[i, j] < 0:
                out[j] = True
    return out


@numba.njit(cache=True, nogil=True)
def group_keys_by_pattern(keys, gappy, mult, wsum):  # pragma: no cover - compiled
    """Packed rows grouped by missing pattern, for :func:`pattern_pairs_packed`, in two passes.

    A row's pattern is the bit set of the fields ``gappy[c]`` (of the QIs missing somewhere) that are 0 in
    its key; the groups come in increasing order of it, so the complete rows first (the order of
    :func:`kanon_core.risk.classes.missing_pattern_ids`), rows in input order within a group (a counting
    sort). Returns the permutation (``order[s]``: the row at sorted position s), the groups' offsets, their
    patterns, and the rows' keys, counts and weights in sorted order.
    """
    n = keys.shape[0]
    m = gappy.shape[0]
    pat = np.empty(n, dtype=np.int64)
    counts = np.zeros(1 << m, dtype=np.int64)
    for i in range(n):
        p = 0
        for c in range(m):
            if keys[i] & gappy[c] == 0:
                p |= 1 << c
        pat[i] = p
        counts[p] += 1
    n_pat = 0
    for v in range(1 << m):
        if counts[v] > 0:
            n_pat += 1
    values = np.empty(n_pat, dtype=np.int64)
    offsets = np.zeros(n_pat + 1, dtype=np.int64)
    start = np.zeros(1 << m, dtype=np.int64)
    t = 0
    for v in range(1 << m):
        if counts[v] > 0:
            values[t] = v
            start[v] = offsets[t]
            offsets[t + 1] = offsets[t] + counts[v]
            t += 1
    order = np.empty(n, dtype=np.int64)
    k_sorted = np.empty(n, dtype=np.uint64)
    m_sorted = np.empty(n, dtype=np.int64)
    w_sorted = np.empty(n, dtype=np.float64)
    for i in range(n):
        s = start[pat[i]]
        start[pat[i]] = s + 1
        order[s] = i
        k_sorted[s] = keys[i]
        m_sorted[s] = mult[i]
        w_sorted[s] = wsum[i]
    return order, offsets, values, k_sorted, m_sorted, w_sorted


@numba.njit(cache=True, nogil=True)
def totals_in_row_order(order, mult, wsum, fk_s, Fk_s, fkw_s, Fkw_s):  # pragma: no cover - compiled
    """Each row's own count and weight plus the matches the join found for it (given in sorted order)."""
    n = order.shape[0]
    fk = np.empty(n, dtype=np.int64)
    Fk = np.empty(n, dtype=np.float64)
    fkw = np.empty(n, dtype=np.int64)
    Fkw = np.empty(n, dtype=np.float64)
    for s in range(n):
        i = order[s]
        fk[i] = mult[i] + fk_s[s]
        Fk[i] = wsum[i] + Fk_s[s]
        fkw[i] = fkw_s[s]
        Fkw[i] = Fkw_s[s]
    return fk, Fk, fkw, Fkw
