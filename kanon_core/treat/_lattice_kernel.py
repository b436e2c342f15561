"""Compiled test of k-anonymity under wildcard semantics on one node's class table (see ``lattice``).

Only classes with fewer than k records of their own can fail, and each needs only enough matches to
reach k, so the scan per class stops as soon as the count is reached; a complete class can only be
matched by classes with a missing value, so it scans those alone. Every match of a class agrees with it,
or is missing, on each QI it has observed, so the class scans only the shortest such posting list (the
rows missing that QI or holding its value there) instead of every row. The candidate rows are ordered with
the classes most likely to match first (those missing the most QIs). When only the
question "within the suppression limit or not?" is asked, the whole scan stops at the first class that
takes the failing records over the limit.

The result is exact: a class reported as reaching k has at least k matching records (counted with
``alpha`` for wildcard matches, as :func:`kanon_core.risk.classes.alpha_count`), and the counts of the
classes not reaching it are complete, so the caller applies the one rounding rule of ``alpha_count``.

Discernibility needs every class's matches in full: :func:`wildcard_fk` counts them, the classes with a
missing value scanning rows bucketed by two of their QIs, and stops early when asked (a node that cannot
win). The compiled helpers of the search's roll-ups and lattice bookkeeping follow.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def node_marginals(codes, count):  # pragma: no cover - compiled
    """A table's marginals: per QI and code, the records holding it and those among them with a missing
    value on some QI (flat: QI j's code c at ``off[j] + c``), per QI the records missing it, and the width
    of the codes (every code + 1 is at most it: the scan's key fields and posting-list groups).

    A QI's marginals at a node depend on that QI's level alone (generalizing never makes a cell missing
    or observed), so the search computes them once per QI and level
    (:class:`~kanon_core.treat.lattice.NodeEvaluator`) rather than once per node; this function is the
    definition it is checked against, and the marginals of a table met outside the search.
    """
    n, q = codes.shape
    off = np.zeros(q + 1, dtype=np.int64)
    for j in range(q):
        w = 0
        for i in range(n):
            if codes[i, j] + 1 > w:
                w = codes[i, j] + 1
        off[j + 1] = off[j] + w
    marg = np.zeros(off[q] + 1, dtype=np.int64)  # one entry beyond the codes: the scan reads a missing cell's
    marg_m = np.zeros(off[q] + 1, dtype=np.int64)  # slot without a branch (a QI missing everywhere has none)
    miss = np.zeros(q, dtype=np.int64)
    for i in range(n):
        has = False
        for j in range(q):
            if codes[i, j] < 0:
                has = True
        for j in range(q):
            c = codes[i, j]
            if c < 0:
                miss[j] += count[i]
            else:
                marg[off[j] + c] += count[i]
                if has:
                    marg_m[off[j] + c] += count[i]
    width = 1
    for j in range(q):
        width = max(width, off[j + 1] - off[j])
    return marg, marg_m, off[:q].copy(), miss, width


@numba.njit(cache=True, nogil=True)
def _posting_list(codes, has_miss, order, j, width, start, out, fill):  # pragma: no cover - compiled
    """QI j's posting list for :func:`wildcard_small`: every row, in ``order`` (most missing values first),
    grouped: the rows missing j (group 0), then per code c the rows with a missing value holding c (group
    c + 1), then per code the complete rows holding it (group width + 2 + c); ``start`` (2 * width + 3
    entries, zeros) receives the groups' offsets. Every match of a class observed at j lies in its groups
    at j, so a class scans only those of its shortest list."""
    n = codes.shape[0]
    n_groups = 2 * width + 2
    for i in range(n):
        start[codes[i, j] + 2 + (0 if has_miss[i] else width + 1)] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    fill[:] = start[:n_groups]
    for t in range(n):
        i = order[t]
        g = codes[i, j] + 1 + (0 if has_miss[i] else width + 1)
        out[fill[g]] = i
        fill[g] += 1


@numba.njit(cache=True, nogil=True)
def _packed_rows(codes, width):  # pragma: no cover - compiled
    """What the scans read of each row: whether rows are packed (every QI's code + 1 fits a field of one 64-bit
    word), each row's key (0: missing) and observed fields, whether it has a missing value, and the rows in
    the scans' order: those missing the most QIs first (a row missing more QIs matches more rows), then the
    complete rows (a counting sort). Two packed rows agree wherever both are observed exactly when their keys
    agree under the AND of those masks (:func:`_agree`: one comparison instead of a loop over the QIs).

    One pass over the cells, without a branch per cell (which cells are missing is data, so such a branch is
    often mispredicted).
    """
    n, q = codes.shape
    bits = 1
    while (1 << bits) <= width:
        bits += 1
    packed = bits * q <= 64
    keys = np.zeros(n if packed else 0, dtype=np.uint64)
    seen = np.zeros(n if packed else 0, dtype=np.uint64)
    one = np.uint64((1 << bits) - 1)
    has_miss = np.zeros(n, dtype=np.bool_)
    n_missing = np.empty(n, dtype=np.int64)
    bucket = np.zeros(q + 2, dtype=np.int64)
    for i in range(n):
        m = 0
        key = np.uint64(0)
        obs = np.uint64(0)
        for j in range(q):
            c = codes[i, j]
            m += c < 0
            if packed:
                shift = np.uint64(j * bits)
                key |= np.uint64(c + 1) << shift  # a missing cell's field stays 0
                obs |= (one * np.uint64(c >= 0)) << shift
        if packed:
            keys[i] = key
            seen[i] = obs
        n_missing[i] = m
        bucket[q - m + 1] += 1
        has_miss[i] = m > 0
    for b in range(1, q + 2):
        bucket[b] += bucket[b - 1]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        b = q - n_missing[i]
        order[bucket[b]] = i
        bucket[b] += 1
    return packed, keys, seen, has_miss, order


@numba.njit(cache=True, nogil=True, inline="always")
def _agree(codes, packed, keys, seen, r, s):  # pragma: no cover - compiled
    """Whether rows r and s agree wherever both are observed (see :func:`_packed_rows`)."""
    if packed:
        return not ((keys[r] ^ keys[s]) & seen[r] & seen[s])
    for j in range(codes.shape[1]):
        a = codes[r, j]
        b = codes[s, j]
        if a != b and a >= 0 and b >= 0:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def wildcard_small(codes, count, marg, marg_m, marg_off, miss, width, k, alpha, limit, known,
                   doomed=None):  # pragma: no cover - compiled
    """Per class: reached (bool), surely failing (bool), matches counted in full and wildcard matches;
    and whether the scan stopped.

    ``codes`` (n, q) int32 with -1 missing, rows distinct. ``marg``, ``marg_m``, ``marg_off``, ``miss``,
    ``width``: the table's marginals as :func:`node_marginals` gives them (``width`` may exceed every code +
    1: the search passes its levels' numbers of codes, sparing a pass over the cells). A class counts as
    reached when ``full + alpha * wild >= k + 1e-7`` (exactly k at alpha = 1). Before any scan, a class's
    matches are bounded by the records that agree with it or are missing on a single QI (the least such count
    over its observed QIs); below k it fails without a scan ("surely failing", its counts then left partial).
    With ``limit`` >= 0 (only at alpha = 1) the scan stops as soon as the records of classes not reaching k
    exceed it (``stopped`` True). ``known`` marks classes already known to reach k (a class containing one
    that reached k at a less general node: its matches only grew), which are not scanned. ``doomed``
    (optional) marks classes known to fail (holding records that fail at a more general node: their matches
    can only have been fewer here); they count as surely failing, unscanned.
    """
    n, q = codes.shape
    big = np.iinfo(np.int64).max
    reached = np.zeros(n, dtype=np.bool_)
    sure = np.zeros(n, dtype=np.bool_)
    full = np.zeros(n, dtype=np.int64)
    wild = np.zeros(n, dtype=np.int64)
    packed, keys, seen, has_miss, order = _packed_rows(codes, width)
    # per class still open, from the marginals: the single-QI bound on its matches, and the QI of its
    # shortest posting list (the records missing the QI or holding the class's code there; a complete class
    # skips the complete rows, which never match it)
    failed = 0
    target = k if alpha == 1.0 else k + 1e-7
    bound = np.full(n, big, dtype=np.int64)
    best_of = np.full(n, -1, dtype=np.int64)
    for r in range(n):
        own = count[r]
        full[r] = own
        if own >= k or known[r]:
            reached[r] = True
            continue
        if doomed is not None and doomed[r]:
            sure[r] = True
            failed += own
            continue
        ub = big
        best = -1
        best_len = big
        hm = has_miss[r]
        for j in range(q):
            c = codes[r, j]
            at = marg_off[j] + max(c, 0)  # a missing cell reads a slot that exists (the arrays end with a spare)
            b = marg[at] + miss[j] if c >= 0 else big
            ln = b if hm else (marg_m[at] + miss[j] if c >= 0 else big)
            ub = min(ub, b)
            if ln < best_len:
                best = j
                best_len = ln
        best_of[r] = best
        if ub < k:  # fewer than k records can match it even counted in full
            sure[r] = True
            failed += own
        else:
            bound[r] = ub
    if limit >= 0 and failed > limit:
        return reached, sure, full, wild, True
    # the classes with the fewest possible matches first: a failing node is found failing sooner (a counting
    # sort of the classes still to scan by their bound: linear, where a comparison sort of every class was
    # a large part of the work); only the QIs some class scans get lists (often one or two of them)
    top = 0
    n_todo = 0
    slot_of = np.full(q, -1, dtype=np.int64)
    n_used = 0
    for r in range(n):
        if not (reached[r] or sure[r]):
            n_todo += 1
            if bound[r] < big and bound[r] > top:
                top = bound[r]
            j = best_of[r]
            if j >= 0 and slot_of[j] < 0:
                slot_of[j] = n_used
                n_used += 1
    if n_todo == 0:
        return reached, sure, full, wild, False
    slots = np.zeros(top + 3, dtype=np.int64)
    for r in range(n):
        if not (reached[r] or sure[r]):
            b = bound[r] if bound[r] <= top else top + 1
            slots[b + 1] += 1
    for b in range(top + 2):
        slots[b + 1] += slots[b]
    todo = np.empty(n_todo, dtype=np.int64)
    for r in range(n):
        if not (reached[r] or sure[r]):
            b = bound[r] if bound[r] <= top else top + 1
            todo[slots[b]] = r
            slots[b] += 1
    # Posting lists of each QI some class scans (see _posting_list), each filled when a class first needs it: a
    # node found failing stops after a few hundred classes, which on the bundled sample use 1.4 of the 4.7
    # QIs whose lists the whole scan would need.
    n_groups = 2 * width + 2
    start = np.zeros((n_used, n_groups + 1), dtype=np.int64)
    lists = np.empty((n_used, max(n, 1)), dtype=np.int64)
    built = np.zeros(n_used, dtype=np.bool_)
    fill = np.empty(n_groups, dtype=np.int64)
    for t in range(n_todo):
        r = todo[t]
        best = best_of[r]
        own = count[r]
        u = slot_of[best] if best >= 0 else -1
        if u >= 0 and not built[u]:
            _posting_list(codes, has_miss, order, best, width, start[u], lists[u], fill)
            built[u] = True
        f = own
        w = 0
        ok = False
        for seg in range(3):
            if best < 0:  # missing on every QI: every row matches it
                if seg > 0:
                    break
                lst = order
                lo, hi = 0, n
            else:
                g = 0 if seg == 0 else codes[r, best] + 1 if seg == 1 else codes[r, best] + width + 2
                if seg == 2 and not has_miss[r]:
                    break
                lst = lists[u]
                lo, hi = start[u, g], start[u, g + 1]
            for t2 in range(lo, hi):
                s = lst[t2]
                if s == r:
                    continue
                if not _agree(codes, packed, keys, seen, r, s):
                    continue
                if has_miss[s]:
                    w += count[s]
                else:
                    f += count[s]
                if f + alpha * w >= target:
                    ok = True
                    break
            if ok:
                break
        full[r] = f
        wild[r] = w
        reached[r] = ok
        if not ok and limit >= 0:
            failed += own
            if failed > limit:
                return reached, sure, full, wild, True
    return reached, sure, full, wild, False


FK_INDEX_QIS = 2
"""QIs a class with a missing value indexes its scan by (see :func:`wildcard_fk`)."""


@numba.njit(cache=True, nogil=True)
def wildcard_fk(codes, count, marg, marg_m, marg_off, miss, width, part, n_parts, running, ceiling):  # pragma: no cover
    """Per class, its matching records fk under wildcard semantics, exact: its own and those of every class
    that agrees with it wherever both are observed (what discernibility charges each kept record).

    Arguments as :func:`wildcard_small` takes them (``marg_m`` unused). Only the classes with a missing value
    scan, and each matching pair is counted once, for both sides, by the scan of one of them: a complete class
    matches no other complete class, so a pair holds a class with a missing value, whose scan finds the other
    (matching is symmetric); of two classes with a missing value, the one of lower row number counts the pair
    (a bucket keeps its rows in row order, those with a missing value apart: the scan starts after its own
    row there). Counting such pairs from both sides read twice the rows: they were half the rows read on the
    bundled sample, and the count is 7 % faster at the nodes near its optimum at 1 %.

    A class scans the rows that are missing or hold its code on each of up to :data:`FK_INDEX_QIS` of its
    observed QIs (those with the fewest such records by the marginals): every match is among them. The rows
    are bucketed once per set of QIs some class uses (a counting sort on the codes + 1 of those QIs, 0:
    missing), and the class reads the 2^t buckets that combine "missing" or "its code" on each. On the bundled
    sample's 8 QIs, where a QI has 7 to 18 codes, one QI's list held 2,100 rows per class on average (9.8M
    rows read per node, against 2.6M with two QIs).

    ``part`` of ``n_parts``: the share of the work of one thread, whose results add up (the classes' own
    records in part 0, the rows that index by no QI there too, every ``n_parts``-th set of QIs from ``part``).

    Cut short: ``running[part]`` receives what this share has added so far to the sum over classes of records
    times fk beyond each class's own records squared (each pair counted adds the product of its records
    twice, once for each side). Once the shares' sum exceeds ``ceiling`` the
    count stops and says so (the second value): the sizes are then partial, each at most the exact one. The
    shares run at once, each reading the others' progress (a stale read is smaller: still a lower bound).
    """
    n, q = codes.shape
    big = np.iinfo(np.int64).max
    fk = count.astype(np.int64) if part == 0 else np.zeros(n, dtype=np.int64)
    packed, keys, seen, has_miss, order = _packed_rows(codes, width)
    slots = np.ones(q, dtype=np.int64)  # per QI, its codes + 1 (0: missing)
    for i in range(n):
        for j in range(q):
            if codes[i, j] + 2 > slots[j]:
                slots[j] = codes[i, j] + 2
    cap = 4 * n + 64  # buckets per index at most (a counting sort's cost)
    t_max = FK_INDEX_QIS if q <= 62 else 1
    set_of = np.full(n, -1, dtype=np.int64)  # the QI set as a bit mask (q <= 62), or the QI (q > 62)
    lens = np.empty(q, dtype=np.int64)
    for r in range(n):
        if not has_miss[r]:
            continue
        for j in range(q):
            c = codes[r, j]
            lens[j] = marg[marg_off[j] + c] + miss[j] if c >= 0 else big
        buckets = 1
        for _ in range(t_max):
            best = -1
            for j in range(q):
                if lens[j] < big and (best < 0 or lens[j] < lens[best]):
                    best = j
            if best < 0 or buckets * slots[best] > cap:
                break
            buckets *= slots[best]
            lens[best] = big
            set_of[r] = max(set_of[r], 0) | (1 << best) if t_max > 1 else best
    # one QI set at a time (the rows bucketed for it, then its classes' scans), so the work space is one
    # index whatever the number of sets; a bucket's rows are copied out in order (key, observed fields,
    # records; the row when complete), so a scan reads consecutive memory and tests each row without a
    # branch: a branch on whether a row matches is taken at random and waits for its row's loads
    by_set = np.argsort(set_of)
    first = 0
    while first < n and set_of[by_set[first]] < 0:
        first += 1
    for t in range(first if part == 0 else 0):  # no QI to index by (missing on every QI, or too many codes)
        r = by_set[t]
        if not has_miss[r]:
            continue
        own = count[r]
        for s in range(n):
            if (s > r or not has_miss[s]) and _agree(codes, packed, keys, seen, r, s):
                fk[r] += count[s]
                fk[s] += own
                running[part] += 2 * own * count[s]
        if running.sum() > ceiling:
            return fk, True
    qis = np.empty(FK_INDEX_QIS, dtype=np.int64)
    stride = np.empty(FK_INDEX_QIS, dtype=np.int64)
    start = np.empty(2 * cap + 2, dtype=np.int64)
    bucket = np.empty(n, dtype=np.int64)
    b_key = np.empty(n, dtype=np.uint64)
    b_seen = np.empty(n, dtype=np.uint64)
    b_count = np.empty(n, dtype=np.int64)
    b_row = np.empty(n, dtype=np.int64)
    t = first
    n_set = -1
    while t < n:
        key = set_of[by_set[t]]
        stop = t
        while stop < n and set_of[by_set[stop]] == key:
            stop += 1
        n_set += 1
        if n_set % n_parts != part:
            t = stop
            continue
        m = 0
        if t_max == 1:
            qis[0] = key
            m = 1
        else:
            for j in range(q):
                if (key >> j) & 1:
                    qis[m] = j
                    m += 1
        nb = 1
        for i in range(m - 1, -1, -1):
            stride[i] = nb
            nb *= slots[qis[i]]
        start[:2 * nb + 1] = 0
        for i in range(n):
            b = 0
            for x in range(m):
                b += (codes[i, qis[x]] + 1) * stride[x]
            b = 2 * b + (0 if has_miss[i] else 1)  # per bucket its rows with a missing value, then the complete
            bucket[i] = b
            start[b + 1] += 1
        for b in range(2 * nb):
            start[b + 1] += start[b]
        for i in range(n):
            at = start[bucket[i]]
            start[bucket[i]] = at + 1
            if packed:
                b_key[at] = keys[i]
                b_seen[at] = seen[i]
            b_count[at] = count[i]
            b_row[at] = i
        for b in range(2 * nb, 0, -1):  # back to each bucket's start
            start[b] = start[b - 1]
        start[0] = 0
        for x in range(t, stop):
            r = by_set[x]
            if not has_miss[r]:
                continue
            own = count[r]
            kr = keys[r] if packed else np.uint64(0)
            sr = seen[r] if packed else np.uint64(0)
            got = 0
            for combo in range(1 << m):  # per QI of the set: bit set = the class's code, clear = missing
                b = 0
                for i in range(m):
                    if (combo >> i) & 1:
                        b += (codes[r, qis[i]] + 1) * stride[i]
                # the rows with a missing value after r (in row order within a bucket), then the complete rows
                lo = start[2 * b]
                hi = start[2 * b + 1]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if b_row[mid] <= r:
                        lo = mid + 1
                    else:
                        hi = mid
                for at in range(lo, start[2 * b + 2]):
                    if packed:
                        ok = ((kr ^ b_key[at]) & sr & b_seen[at]) == 0
                    else:
                        ok = _agree(codes, packed, keys, seen, r, b_row[at])
                    got += b_count[at] * ok
                    if ok:  # (a store per matching row only: storing own * ok on every row was slower)
                        fk[b_row[at]] += own
            fk[r] += got
            running[part] += 2 * own * got
            if running.sum() > ceiling:
                return fk, True
        t = stop
    return fk, False


@numba.njit(cache=True, nogil=True)
def pick_source(lv, nc, m, levels):  # pragma: no cover - compiled
    """The row among ``lv[:m]`` at or below ``levels`` on every QI with the fewest classes ``nc`` (the first
    such row on ties; rows of dropped tables hold the int64 maximum), or -1 when there is none: the
    cached table a node's table is rolled up from."""
    q = lv.shape[1]
    none = np.iinfo(np.int64).max
    best = -1
    best_nc = none
    for i in range(m):
        c = nc[i]
        if c >= best_nc:
            continue
        ok = True
        for j in range(q):
            if lv[i, j] > levels[j]:
                ok = False
                break
        if ok:
            best = i
            best_nc = c
    return best


_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as a signed int64 (unsigned would turn the product into a float)


@numba.njit(cache=True, nogil=True)
def _hash_slot(key, shift, mask):  # pragma: no cover - compiled
    h = (key ^ (key >> 31)) * _GOLDEN  # multiply-shift: the well-mixed high bits index the table
    return (h >> shift) & mask


@numba.njit(cache=True, nogil=True)
def rollup(codes, luts, changed, radix, count, slots, stamp, span):  # pragma: no cover - compiled
    """One node's class table from a less general one: map the codes, merge equal rows (a hash join).

    ``luts[j, c]`` is the new code of old code c of QI j (used where ``changed[j]``); ``radix[j]`` bounds
    the new codes + 2 so that a row packs into one int64 key (the caller checks that ``span``, the product
    of the radixes, fits). Returns the new class of each old row, the new codes, and the new counts;
    classes are numbered in order of first appearance, so the result does not depend on hashing.

    ``slots`` is a reusable table of at least 2 n entries, two int64 per entry side by side (the key, and
    ``stamp << 32 | class``), so that a probe touches one cache line. An entry is in use only when its stamp
    equals ``stamp`` (no clearing between calls); the first power of two >= 2 n entries are used. When
    every key is below that (``span``) the key itself is the entry: no hashing and no collisions.
    """
    n, q = codes.shape
    size = 16
    bits = 4
    while size < 2 * n:
        size *= 2
        bits += 1
    direct = span <= size
    mask = size - 1
    shift = 64 - bits
    gid = np.empty(n, dtype=np.int64)
    new_codes = np.empty((n, q), dtype=np.int32)
    new_count = np.zeros(n, dtype=np.int64)
    row = np.empty(q, dtype=np.int32)
    n_new = 0
    for i in range(n):
        key = 0
        for j in range(q):
            c = codes[i, j]
            if changed[j] and c >= 0:
                c = luts[j, c]
            row[j] = c
            key = key * radix[j] + (c + 1)
        h = key if direct else _hash_slot(key, shift, mask)
        while True:
            tag = slots[2 * h + 1]
            if (tag >> 32) != stamp:
                slots[2 * h] = key
                slots[2 * h + 1] = (stamp << 32) | n_new
                g = n_new
                for j in range(q):
                    new_codes[g, j] = row[j]
                n_new += 1
                break
            g = tag & 0xFFFFFFFF
            if slots[2 * h] == key:
                break
            h = (h + 1) & mask
        gid[i] = g
        new_count[g] += count[i]
    return gid, new_codes[:n_new].copy(), new_count[:n_new].copy()


PARTITION_ROWS = 1 << 17
"""From this many rows :func:`rollup_partitioned` replaces :func:`rollup`."""


@numba.njit(cache=True, nogil=True)
def rollup_partitioned(codes, luts, changed, radix, count, slots, scratch):  # pragma: no cover - compiled
    """:func:`rollup` for millions of rows: the same classes, numbered by hash partition, then first appearance.

    A hash join over millions of rows misses the processor's cache on every row (the table is hundreds of
    megabytes). Here the rows are first split by the high bits of their key's hash into partitions of
    about 16,000 rows (a counting sort of row numbers), and each partition is joined with a table that
    fits in cache; a partition holds every row of each of its keys, so the classes are exact. The new
    codes are unpacked from the keys once per class. ``slots`` needs at least 2 n entries and ``scratch`` 5 n:
    reused across calls, they spare the hundreds of megabytes a call on millions of rows would otherwise
    allocate, and the page faults of touching them anew (a large share of the time otherwise).
    """
    n, q = codes.shape
    pbits = 0
    while (n >> pbits) > 16384 and pbits < 16:
        pbits += 1
    n_part = 1 << pbits
    keys = scratch[:n]
    part = scratch[n:2 * n]
    start = np.zeros(n_part + 1, dtype=np.int64)
    for i in range(n):
        key = 0
        for j in range(q):
            c = codes[i, j]
            if changed[j] and c >= 0:
                c = luts[j, c]
            key = key * radix[j] + (c + 1)
        keys[i] = key
        p = _hash_slot(key, 64 - pbits, n_part - 1) if pbits > 0 else 0
        part[i] = p
        start[p + 1] += 1
    for p in range(n_part):
        start[p + 1] += start[p]
    fill = start[:n_part].copy()
    order = scratch[2 * n:3 * n]
    pkeys = scratch[3 * n:4 * n]  # keys and counts in partition order: the joins below read them in turn
    pcount = scratch[4 * n:5 * n]
    for i in range(n):
        p = part[i]
        t = fill[p]
        order[t] = i
        pkeys[t] = keys[i]
        pcount[t] = count[i]
        fill[p] = t + 1
    gid = np.empty(n, dtype=np.int64)
    new_keys = keys  # the keys are all in pkeys by now: their room holds the new classes' keys
    new_count = np.zeros(n, dtype=np.int64)
    n_new = 0
    for p in range(n_part):
        lo, hi = start[p], start[p + 1]
        m = hi - lo
        size = 16
        bits = 4
        while size < 2 * m:
            size *= 2
            bits += 1
        mask = size - 1
        shift = 64 - bits
        slots[:2 * size] = -1
        for t in range(lo, hi):
            key = pkeys[t]
            # the low bits of the hash (the high ones chose the partition): rotate before the shift
            h = _hash_slot((key << 17) ^ key, shift, mask)
            while True:
                k0 = slots[2 * h]
                if k0 == -1:
                    slots[2 * h] = key
                    slots[2 * h + 1] = n_new
                    g = n_new
                    new_keys[g] = key
                    n_new += 1
                    break
                if k0 == key:
                    g = slots[2 * h + 1]
                    break
                h = (h + 1) & mask
            gid[order[t]] = g
            new_count[g] += pcount[t]
    new_codes = np.empty((n_new, q), dtype=np.int32)
    for g in range(n_new):
        key = new_keys[g]
        for j in range(q - 1, -1, -1):
            new_codes[g, j] = key % radix[j] - 1
            key //= radix[j]
    return gid, new_codes, new_count[:n_new].copy()


@numba.njit(cache=True, nogil=True)
def _box(v, heights, strides, upward):  # pragma: no cover - compiled
    """The box of the up-set (``upward``) or down-set of ``v``: per-QI level bounds, its size, and the id of
    its first node."""
    q = v.shape[0]
    lo = np.empty(q, dtype=np.int64)
    hi = np.empty(q, dtype=np.int64)
    size = 1
    node = 0
    for j in range(q):
        if upward:
            lo[j] = v[j]
            hi[j] = heights[j] - 1
        else:
            lo[j] = 0
            hi[j] = v[j]
        size *= hi[j] - lo[j] + 1
        node += lo[j] * strides[j]
    return lo, hi, size, node


@numba.njit(cache=True, nogil=True)
def _next_in_box(cur, lo, hi, strides, node):  # pragma: no cover - compiled
    """Advance the odometer ``cur`` (last QI fastest, so ids increase); returns the next node's id."""
    j = cur.shape[0] - 1
    while j >= 0:
        if cur[j] < hi[j]:
            cur[j] += 1
            return node + strides[j]
        node -= (cur[j] - lo[j]) * strides[j]
        cur[j] = lo[j]
        j -= 1
    return node


@numba.njit(cache=True, nogil=True)
def box_ids(v, heights, strides, upward, status, skip):  # pragma: no cover - compiled
    """Ids of the nodes in the up-set (``upward``) or down-set of level vector ``v``, in increasing order,
    leaving out those whose ``status`` is ``skip`` (-1: none).

    The set is a box of the lattice grid (levels from v to the top, or from 0 to v, per QI), enumerated
    with an odometer, so the cost is the size of the set, not of the lattice.
    """
    lo, hi, size, node = _box(v, heights, strides, upward)
    out = np.empty(size, dtype=np.int64)
    cur = lo.copy()
    n_out = 0
    for _ in range(size):
        if status[node] != skip:
            out[n_out] = node
            n_out += 1
        node = _next_in_box(cur, lo, hi, strides, node)
    return out[:n_out]


@numba.njit(cache=True, nogil=True)
def tag_box(v, heights, strides, upward, status, unknown, new):  # pragma: no cover - compiled
    """Set the status of the nodes of the up-set (``upward``) or down-set of ``v`` that are ``unknown`` to
    ``new`` (Flash's tagging), visiting only that box of the grid."""
    lo, hi, size, node = _box(v, heights, strides, upward)
    cur = lo.copy()
    for _ in range(size):
        if status[node] == unknown:
            status[node] = new
        node = _next_in_box(cur, lo, hi, strides, node)


@numba.njit(cache=True, nogil=True)
def raise_box(v, heights, strides, upward, status, skip, target, value):  # pragma: no cover - compiled
    """``target[node] = max(target[node], value)`` over the up-set (``upward``) or down-set of ``v``,
    leaving out the nodes whose ``status`` is ``skip`` (-1: none)."""
    lo, hi, size, node = _box(v, heights, strides, upward)
    cur = lo.copy()
    for _ in range(size):
        if status[node] != skip and value > target[node]:
            target[node] = value
        node = _next_in_box(cur, lo, hi, strides, node)


@numba.njit(cache=True, nogil=True)
def box_least(v, heights, strides, upward, status, keep, values):  # pragma: no cover - compiled
    """The least of ``values`` over the nodes of the up-set (``upward``) or down-set of ``v`` whose ``status``
    is ``keep``; infinity when there is none."""
    lo, hi, size, node = _box(v, heights, strides, upward)
    cur = lo.copy()
    least = np.inf
    for _ in range(size):
        if status[node] == keep and values[node] < least:
            least = values[node]
        node = _next_in_box(cur, lo, hi, strides, node)
    return least


@numba.njit(cache=True, nogil=True)
def raise_box_rows(v, heights, strides, upward, status, skip, target, value):  # pragma: no cover - compiled
    """:func:`raise_box` with one row per node in ``target``, raised element by element to ``value``."""
    lo, hi, size, node = _box(v, heights, strides, upward)
    cur = lo.copy()
    q = value.shape[0]
    for _ in range(size):
        if status[node] != skip:
            for j in range(q):
                if value[j] > target[node, j]:
                    target[node, j] = value[j]
        node = _next_in_box(cur, lo, hi, strides, node)


@numba.njit(cache=True, nogil=True)
def union_above(lv, cnt, m, levels, offsets, flat, base_count, max_sets, limit, mark, out):  # pragma: no cover
    """The union of the failing input classes of the passing nodes at or above ``levels`` (see
    ``lattice._FailingUnion``): their records in all, and the classes in ``out[:n]``.

    ``lv[:m]`` are the passing nodes' levels, ``cnt`` their failing records, set i is
    ``flat[offsets[i]:offsets[i + 1]]``. At most ``max_sets`` sets are merged, largest first; with
    ``limit`` >= 0 the merge stops as soon as the records exceed it. ``mark`` (one flag per input class,
    all False) is left all False.
    """
    q = lv.shape[1]
    idx = np.empty(m, dtype=np.int64)
    n_above = 0
    for i in range(m):
        ok = True
        for j in range(q):
            if lv[i, j] < levels[j]:
                ok = False
                break
        if ok:
            idx[n_above] = i
            n_above += 1
    # the largest sets first (a selection of at most max_sets: m is small)
    take = min(n_above, max_sets)
    for a in range(take):
        best = a
        for b in range(a + 1, n_above):
            if cnt[idx[b]] > cnt[idx[best]]:
                best = b
        t = idx[a]
        idx[a] = idx[best]
        idx[best] = t
    total = 0
    n_out = 0
    for a in range(take):
        s = idx[a]
        for p in range(offsets[s], offsets[s + 1]):
            c = flat[p]
            if not mark[c]:
                mark[c] = True
                out[n_out] = c
                n_out += 1
                total += base_count[c]
        if limit >= 0 and total > limit:
            break
    for p in range(n_out):
        mark[out[p]] = False
    return total, n_out


@numba.njit(cache=True, nogil=True)
def carry_marks(gid, marked, n_out):  # pragma: no cover - compiled
    """``out[c]`` True when some row i with ``gid[i] == c`` is marked: a roll-up's classes holding a class
    known to reach k (one pass, where numpy's ``out[gid[marked]] = True`` gathered and scattered)."""
    out = np.zeros(n_out, dtype=np.bool_)
    for i in range(gid.shape[0]):
        if marked[i]:
            out[gid[i]] = True
    return out


@numba.njit(cache=True, nogil=True)
def observed_of(codes, count, small):  # pragma: no cover - compiled
    """Per QI, the records of the ``small`` classes with the QI observed (see
    :func:`kanon_core.treat.metrics.suppressed_observed`), in one pass without copying the rows."""
    n, q = codes.shape
    out = np.zeros(q, dtype=np.float64)
    for i in range(n):
        if small[i]:
            for j in range(q):
                if codes[i, j] >= 0:
                    out[j] += count[i]
    return out
