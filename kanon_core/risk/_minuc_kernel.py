"""Compiled core of the MINUC engine (see :mod:`kanon_core.risk.minucs` for the method and its proof).

numba, because every step is a tight loop over small integers and bit masks with early exits
(subsumption tests, a depth-first enumeration with pruning) that numpy cannot express without
materialising huge intermediate arrays, and because the compiled functions release the GIL so two
threads can work on two chunks of records at once. The column-wise disagreement loop is written so that
LLVM vectorises it.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import literally, types
from numba.extending import intrinsic

STAMP_MAX_BITS = 22
"""Up to this many QIs, distinct disagreement masks are found with a direct-address table (2^q bytes)."""


@intrinsic
def _ctpop64(typingctx, x):
    """The CPU's population count on a 64-bit word (LLVM ctpop): one instruction on x86-64 and ARM."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.int64(types.uint64), codegen


@intrinsic
def _cttz64(typingctx, x):
    """The CPU's trailing-zero count on a non-zero 64-bit word (LLVM cttz; zero input is undefined)."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.int64(types.uint64), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _popcount(x):  # pragma: no cover - compiled
    """Bits set in a mask."""
    return _ctpop64(np.uint64(x))


@numba.njit(cache=True, nogil=True, inline="always")
def _bit_index(low):  # pragma: no cover - compiled
    """Position of the lowest set bit of a non-zero mask (of its only bit when it has one)."""
    return _cttz64(np.uint64(low))


@numba.njit(cache=True, nogil=True)
def _disagreements(row, cols, category, out, bitvals):  # pragma: no cover - compiled
    """out[w] = bit mask of the QIs on which row w of ``cols`` (QIs by rows) disagrees with ``row`` (a row's
    codes, one per QI; the MINUC search's row u is ``cols[:, u]``).

    Wildcard: bit v is set when both are observed on v and differ (a missing value on either side agrees
    with anything, and the row's missing QIs can never belong to its combinations). Category:
    bit v is set when the codes differ (-1 is a value like any other). ``bitvals[v]`` = 1 << v in the
    mask type: the narrowest codes and masks that fit (int16 codes, uint32 masks for up to 32 QIs)
    let LLVM vectorise the column loops about twice as wide as int32/uint64.
    """
    q, n = cols.shape
    zero = bitvals[0] ^ bitvals[0]
    for w in range(n):
        out[w] = zero
    for v in range(q):
        x = row[v]
        col = cols[v]
        bit = bitvals[v]
        if category:
            for w in range(n):
                out[w] |= bit if col[w] != x else zero
        elif x >= 0:
            for w in range(n):
                y = col[w]
                out[w] |= bit if ((y >= 0) & (y != x)) else zero


@numba.njit(cache=True, nogil=True)
def _redo_disagreements(row, prev, cols, category, out, bitvals):  # pragma: no cover - compiled
    """``out`` (:func:`_disagreements` of the row ``prev``) made that of ``row``: only the QIs on which the two
    rows' codes differ are compared again, bit v of every mask recomputed as :func:`_disagreements` sets it.

    Why: a row's masks read every QI column of every row (600 KB on the sample), for each row searched; rows
    taken in lexicographic order of their codes (:func:`_similar_rows_first`) share most codes with the row
    before, so most columns need no pass (9 of 19 differ on average in a chunk of the sample at k = 3)."""
    q, n = cols.shape
    zero = bitvals[0] ^ bitvals[0]
    for v in range(q):
        x = row[v]
        if x == prev[v]:
            continue
        col = cols[v]
        bit = bitvals[v]
        keep = ~bit
        if category:
            for w in range(n):
                out[w] = (out[w] & keep) | (bit if col[w] != x else zero)
        elif x >= 0:
            for w in range(n):
                y = col[w]
                out[w] = (out[w] & keep) | (bit if ((y >= 0) & (y != x)) else zero)
        else:
            for w in range(n):
                out[w] &= keep


@numba.njit(cache=True, nogil=True)
def _similar_rows_first(cols, which):  # pragma: no cover - compiled
    """An order of ``which`` (positions 0 .. len - 1) that sorts its rows lexicographically by their codes (QI 0
    first): a least-significant-first pass of stable sorts, one per QI, so consecutive rows share long prefixes
    for :func:`_redo_disagreements`."""
    q = cols.shape[0]
    m = which.shape[0]
    order = np.arange(m)
    keys = np.empty(m, dtype=np.int64)
    for v in range(q - 1, -1, -1):
        col = cols[v]
        for t in range(m):
            keys[t] = col[which[order[t]]]
        order = order[np.argsort(keys, kind="mergesort")]
    return order


@numba.njit(cache=True, nogil=True)
def _distinct_masks(d, mult, cap, table, dmask, dweight):  # pragma: no cover - compiled
    """Collapse the masks ``d`` to distinct non-zero masks with summed multiplicities, capped at ``cap``.

    Returns (number of distinct masks, m0) where m0 is the number of records with an empty mask: the
    records that agree with the row on every one of its QIs (the row and its duplicates included).
    Weights are only ever compared with the budget b = k - 1 - m0 <= k - 2 (a sum exceeds b exactly
    when its terms capped at k - 1 do), so the caller passes cap = k - 1 and a weight fits a byte:
    ``table`` is then a direct-address table of one byte per mask (q <= STAMP_MAX_BITS; 512 KB at 19 QIs,
    which stays in the core's own cache where an 8-byte entry per mask, 4 MB, did not), holding the
    running capped weight of each mask and reset to zero for the masks seen once the row is done.
    Without a table (more QIs, or k above 256) the masks are sorted and the weights are exact.
    """
    n = d.shape[0]
    m0 = 0
    nd = 0
    if table.shape[0] > 0:
        for w in range(n):
            x = d[w]
            if x == 0:
                m0 += mult[w]
                continue
            c = np.int64(table[x])
            dmask[nd] = np.uint64(x)  # kept only when x is new: no branch to mispredict (a quarter are new)
            nd += c == 0
            table[x] = min(c + mult[w], cap)
        for t in range(nd):
            x = dmask[t]
            dweight[t] = table[x]
            table[x] = 0
        return nd, m0
    order = np.argsort(d)
    for t in range(n):
        w = order[t]
        x = d[w]
        if x == 0:
            m0 += mult[w]
            continue
        if nd > 0 and dmask[nd - 1] == np.uint64(x):
            dweight[nd - 1] += mult[w]
        else:
            dmask[nd] = np.uint64(x)
            dweight[nd] = mult[w]
            nd += 1
    return nd, m0


MUST_LANES = 32
"""Must masks tested at once by :func:`_contains_any`: the work array it reads needs this many slots past the list."""


@intrinsic
def _lanes_contained(typingctx, masks, t, nx):
    """Bit j (j < MUST_LANES) set when ``masks[t + j] & nx == 0``: one vector load, and, compare and mask move.

    Written as LLVM vector code because the loop form stays scalar: LLVM does not vectorise a loop with an
    early exit, and the test's early exit is its point (94 % of a row's masks contain a must mask, found after
    15 tests on average on the bundled sample). Lanes past the list read whatever the work array holds there;
    the caller masks them off. The code is generic LLVM: each target splits the vector into the widths it has.
    """
    if not isinstance(masks, types.Array) or not isinstance(masks.dtype, types.Integer) or masks.layout != "C":
        return None  # (the load reads consecutive elements: a contiguous array only)

    def codegen(context, builder, signature, args):
        ary, start, not_x = args
        aryty = signature.args[0]
        data = context.make_array(aryty)(context, builder, value=ary).data
        elt = context.get_value_type(aryty.dtype)
        vty = ir.VectorType(elt, MUST_LANES)
        vec = builder.load(builder.bitcast(builder.gep(data, [start]), vty.as_pointer()), align=elt.width // 8)
        lane0 = builder.trunc(not_x, elt) if elt.width < 64 else not_x
        splat = builder.insert_element(ir.Constant(vty, ir.Undefined), lane0, ir.Constant(ir.IntType(32), 0))
        splat = builder.shuffle_vector(splat, ir.Constant(vty, ir.Undefined),
                                       ir.Constant(ir.VectorType(ir.IntType(32), MUST_LANES), [0] * MUST_LANES))
        empty = builder.icmp_unsigned("==", builder.and_(vec, splat), ir.Constant(vty, 0))
        return builder.zext(builder.bitcast(empty, ir.IntType(MUST_LANES)), ir.IntType(64))

    return types.int64(masks, types.int64, types.uint64), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _contains_any(masks, n, x):  # pragma: no cover - compiled
    """Whether x contains one of ``masks[:n]``, ``MUST_LANES`` masks per vector test, the first hit ending the
    scan. ``masks`` needs ``MUST_LANES`` readable slots past n; the lanes past n are masked off, whatever they
    hold. On the sample at k = 3 the edge family took 0.62-0.64 CPU s against 1.10-1.14 s for blocks of 8
    tested one by one without branches (16 lanes: 0.70 s; 8: 0.85-0.91 s)."""
    nx = np.uint64(~np.uint64(x))
    t = 0
    while t < n:
        hit = _lanes_contained(masks, t, nx)
        if n - t < MUST_LANES:
            hit &= (np.int64(1) << (n - t)) - 1
        if hit:
            return True
        t += MUST_LANES
    return False


@numba.njit(cache=True, nogil=True)
def _reduce_family(dmask, dweight, nd, q, b, emask, eweight, must):  # pragma: no cover - compiled
    """The edges that decide safety, sorted by size: returns their number.

    A retained set S is unsafe when the records it does not separate weigh at most ``b`` (= k - 1 - m0),
    i.e. when the masks disjoint from S weigh <= b. A mask whose down-weight (its own weight plus that of
    its subsets) exceeds b must be hit by every unsafe S ("must" masks); a mask strictly containing a
    must mask is then always hit and is dropped; the remaining ("light") masks are kept with their
    weights. For b = 0 (k = 2) this is exactly the family of inclusion-minimal masks.

    A must mask whose kept subsets alone weigh more than b is implied by them and is no edge either: an S
    that leaves it unhit leaves those subsets unhit, and is safe without it. It stays a must mask for the
    test above (a mask containing it is implied by the same subsets). Which sets are unsafe is unchanged,
    so the MINUCs are; the enumeration works on a third fewer edges on the bundled sample at k = 3.

    ``must`` is the must masks' work array, of the caller's mask type (uint32 up to 32 QIs: twice the masks
    per vector test) and at least nd + MUST_LANES long (see :func:`_contains_any`).
    """
    # counting sort by popcount so subsets come before supersets
    counts = np.zeros(q + 2, dtype=np.int64)
    pc = np.empty(nd, dtype=np.int64)
    for i in range(nd):
        pc[i] = _popcount(dmask[i])
        counts[pc[i] + 1] += 1
    for s in range(1, q + 2):
        counts[s] += counts[s - 1]
    smask = np.empty(nd, dtype=np.uint64)
    sweight = np.empty(nd, dtype=np.int64)
    for i in range(nd):
        p = counts[pc[i]]
        smask[p] = dmask[i]
        sweight[p] = dweight[i]
        counts[pc[i]] += 1
    n_must = 0
    must_w = np.empty(nd, dtype=np.int64)
    must_edge = np.empty(nd, dtype=np.bool_)  # False: implied by its light subsets
    n_light = 0
    light = np.empty(nd, dtype=np.uint64)
    light_w = np.empty(nd, dtype=np.int64)
    for i in range(nd):
        x = smask[i]
        if _contains_any(must, n_must, x):
            continue
        wt = sweight[i]
        if b > 0:
            nx = ~x
            for t in range(n_light):
                wt += light_w[t] if (light[t] & nx) == 0 else 0
        if wt > b:
            must[n_must] = x  # fits: the caller's mask type holds q bits
            must_w[n_must] = sweight[i]
            must_edge[n_must] = wt - sweight[i] <= b
            n_must += 1
        else:
            light[n_light] = x
            light_w[n_light] = sweight[i]
            n_light += 1
    ne = 0
    # merge the two lists back in order of size (both are sorted by size already)
    i = 0
    j = 0
    while i < n_must or j < n_light:
        take_must = j >= n_light or (i < n_must and _popcount(must[i]) <= _popcount(light[j]))
        if take_must:
            if must_edge[i]:
                emask[ne] = must[i]
                eweight[ne] = must_w[i]
                ne += 1
            i += 1
        else:
            emask[ne] = light[j]
            eweight[ne] = light_w[j]
            j += 1
            ne += 1
    return ne


@numba.njit(cache=True, nogil=True, inline="always")
def _word_weight(word, heavy_word, ecap, base):  # pragma: no cover - compiled
    """Weight of the edges in one 64-bit word of a bitset (edges ``base`` .. ``base + 63``): their number
    plus the extra capped weight of the heavy ones among them."""
    total = _popcount(word)
    h = word & heavy_word
    while h:
        low = h & (~h + np.uint64(1))
        total += ecap[base + _bit_index(low)] - 1
        h ^= low
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _weight_and(x, y, heavy, ecap):  # pragma: no cover - compiled
    """Weight of the edges in both bitsets ``x`` and ``y``: their number (popcount) plus the extra weight
    of the heavy ones among them (capped weights, see :func:`_enumerate_minimal`)."""
    total = 0
    for wi in range(x.shape[0]):
        total += _word_weight(x[wi] & y[wi], heavy[wi], ecap, wi * 64)
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _weight_and_not(x, y, z, heavy, ecap):  # pragma: no cover - compiled
    """Weight of the edges in ``x`` and ``y`` but not ``z`` (as :func:`_weight_and`)."""
    total = 0
    for wi in range(x.shape[0]):
        total += _word_weight(x[wi] & y[wi] & ~z[wi], heavy[wi], ecap, wi * 64)
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _push(buf, nbuf, value):  # pragma: no cover - compiled
    """``buf`` with ``value`` written at ``nbuf``, doubled first when full (the caller counts ``nbuf``)."""
    if nbuf == buf.shape[0]:
        bigger = np.empty(buf.shape[0] * 2, dtype=buf.dtype)
        bigger[:nbuf] = buf
        buf = bigger
    buf[nbuf] = value
    return buf


WORD_TIERS = (4, 8)
"""Edge bitset lengths (64-bit words) the enumeration is compiled for as constants (:func:`_enumerate_fixed`),
shortest first. :func:`_enumerate_minimal` names each tier in its dispatch (numba needs a literal per call), so a
tier added here needs its line there."""


@numba.njit(cache=True, nogil=True)
def _enumerate_minimal(emask, eweight, ne, q, b, max_size, buf, nbuf):  # pragma: no cover - compiled
    """:func:`_search_minimal` with bitsets of the shortest tier of ``WORD_TIERS`` that holds ``ne`` edges,
    or, above the last tier, of exactly the words they need.

    Why tiers: with the bitsets' length a compile-time constant, LLVM unrolls the word loops of a search
    step (a handful of words on the sample: 200 edges per row on average) into straight code. On the sample
    at k = 3 the enumeration took 1.38-1.41 CPU s instead of 1.67-1.72 s (one copy for each length from 1 to
    6 words and 8: 1.34-1.37 s). Each copy adds 4-6 s to the kernels' first compile (27 s in all with two
    tiers, 13 s before; numba caches the result), hence two. The words past the edges stay zero, so the
    sets found are the same.
    """
    words = (ne + 63) // 64
    if words <= WORD_TIERS[0]:
        return _enumerate_fixed(emask, eweight, ne, q, b, max_size, buf, nbuf, WORD_TIERS[0])
    if words <= WORD_TIERS[1]:
        return _enumerate_fixed(emask, eweight, ne, q, b, max_size, buf, nbuf, WORD_TIERS[1])
    return _search_minimal(emask, eweight, ne, q, b, max_size, buf, nbuf, words)


@numba.njit(cache=True, nogil=True)
def _enumerate_fixed(emask, eweight, ne, q, b, max_size, buf, nbuf, nw):  # pragma: no cover - compiled
    """:func:`_search_minimal` compiled for the literal ``nw`` (one copy per value; at least (ne + 63) // 64)."""
    literally(nw)
    return _search_minimal(emask, eweight, ne, q, b, max_size, buf, nbuf, nw)


@numba.njit(cache=True, nogil=True)
def _search_minimal(emask, eweight, ne, q, b, max_size, buf, nbuf, nw):  # pragma: no cover - compiled
    """All minimal sets S of QIs whose disjoint edges weigh <= b, appended to ``buf`` from ``nbuf``; the edge
    bitsets have ``nw`` 64-bit words (at least (ne + 63) // 64; the words past the edges stay zero).

    A depth-first search in the style of MMCS (Murakami & Uno, 2014) generalised to a weight budget:
    pick an unhit edge F with few candidate positions; branch on each candidate v of F (add v; the
    candidates before v stay available, the ones after do not, so each S is generated once) and, when
    the budget allows, on leaving F unhit (all of F leaves the candidates). A position whose critical
    edges (edges hit by it alone) vanish can never be needed again: the branch is pruned. Returns
    (buffer, new length, complete) where complete is False when ``max_size`` cut the search.

    State per depth, as bitsets over the edges: the unhit edges and the edges hit exactly once. The
    critical edges of a chosen v are then ``once & pos[v]`` (``pos[v]``: the edges containing v), so a
    step costs a few word operations per chosen QI instead of copying a critical set per QI. Weights are
    capped at b + 1 (every comparison is with b, and a sum with a capped term exceeds b exactly when the
    true sum does), so a set's weight is its popcount plus the extra weight of its few heavy edges; at
    b = 1 (k = 3, a unique record) every light edge weighs one. A set reached with weight exactly b is
    minimal as soon as every chosen QI keeps a critical edge (each weighs at least one), which the
    pruning guarantees: only sets with weight below b are checked QI by QI. A child that would be a leaf
    (about half the nodes) is decided from its parent's bitsets without being pushed.
    """
    pos = np.zeros((q, nw), dtype=np.uint64)
    heavy = np.zeros(nw, dtype=np.uint64)
    ecap = np.empty(ne, dtype=np.int64)
    union = np.uint64(0)
    total = 0
    for e in range(ne):
        m = emask[e]
        union |= m
        ecap[e] = min(eweight[e], b + 1)
        total += ecap[e]
        bit = np.uint64(1) << np.uint64(e & 63)
        if ecap[e] > 1:
            heavy[e >> 6] |= bit
        x = m
        while x:
            low = x & (~x + np.uint64(1))
            pos[_bit_index(low), e >> 6] |= bit
            x ^= low
    depth_cap = q + 2
    S = np.zeros(depth_cap, dtype=np.uint64)
    CAND = np.zeros(depth_cap, dtype=np.uint64)
    BASE = np.zeros(depth_cap, dtype=np.uint64)
    BR = np.zeros(depth_cap, dtype=np.uint64)  # the branching edge's candidates
    REM = np.zeros(depth_cap, dtype=np.uint64)  # those not yet tried
    SKIP = np.zeros(depth_cap, dtype=np.bool_)  # the leave-unhit branch is still to be tried
    U = np.zeros(depth_cap, dtype=np.int64)
    uncov = np.zeros((depth_cap, nw), dtype=np.uint64)
    once = np.zeros((depth_cap, nw), dtype=np.uint64)
    complete = True
    for e in range(ne):
        uncov[0, e >> 6] |= np.uint64(1) << np.uint64(e & 63)
    CAND[0] = union
    U[0] = total
    d = 0
    entering = True
    while d >= 0:
        if entering:
            entering = False
            REM[d] = 0
            SKIP[d] = False
            if U[d] <= b:
                ok = True
                if U[d] < b:  # (at U = b every chosen QI keeps a critical edge of weight >= 1)
                    s = S[d]
                    while s:
                        low = s & (~s + np.uint64(1))
                        w = _bit_index(low)
                        extra = _weight_and(once[d], pos[w], heavy, ecap)
                        if U[d] + extra <= b:
                            ok = False
                            break
                        s ^= low
                if ok:
                    buf = _push(buf, nbuf, S[d])
                    nbuf += 1
                d -= 1
                continue
            if _popcount(S[d]) >= max_size:
                complete = False
                d -= 1
                continue
            best = -1
            best_c = q + 1
            forced = 0
            cand = CAND[d]
            for wi in range(nw):
                x = uncov[d, wi]
                while x:
                    low = x & (~x + np.uint64(1))
                    e = wi * 64 + _bit_index(low)
                    x ^= low
                    c = _popcount(emask[e] & cand)
                    if c == 0:
                        forced += ecap[e]
                        if forced > b:
                            break
                    elif c < best_c:
                        best_c = c
                        best = e
                        if b == 0 and c == 1:
                            break
                if forced > b or (b == 0 and best_c == 1):
                    break
            if forced > b or best < 0:
                d -= 1
                continue
            C = emask[best] & cand
            BR[d] = C
            REM[d] = C
            BASE[d] = cand & ~C
            SKIP[d] = forced + ecap[best] <= b
        c1 = d + 1
        if REM[d] == 0:
            if not SKIP[d]:
                d -= 1
                continue
            SKIP[d] = False
            S[c1] = S[d]
            CAND[c1] = BASE[d]
            U[c1] = U[d]
            for wi in range(nw):
                uncov[c1, wi] = uncov[d, wi]
                once[c1, wi] = once[d, wi]
            d = c1
            entering = True
            continue
        rem = REM[d]
        vbit = rem & (~rem + np.uint64(1))
        REM[d] = rem ^ vbit
        v = _bit_index(vbit)
        # a child whose unhit weight drops to b or less is a leaf: decided here, without descending (its
        # critical edges are once & pos[w] & ~pos[v]; v's own, the edges it newly hits, weigh more than
        # U - b, since the parent was no leaf)
        if b == 0:
            anyu = np.uint64(0)
            for wi in range(nw):
                anyu |= uncov[d, wi] & ~pos[v, wi]
            uc = 0 if anyu == 0 else 1
        else:
            uc = U[d] - _weight_and(uncov[d], pos[v], heavy, ecap)
        if uc <= b:
            ok = True
            s = S[d]
            while s:
                low = s & (~s + np.uint64(1))
                w = _bit_index(low)
                if uc < b:
                    if uc + _weight_and_not(once[d], pos[w], pos[v], heavy, ecap) <= b:
                        ok = False
                        break
                else:
                    anyc = np.uint64(0)
                    for wi in range(nw):
                        anyc |= once[d, wi] & pos[w, wi] & ~pos[v, wi]
                    if anyc == 0:
                        ok = False
                        break
                s ^= low
            if ok:
                buf = _push(buf, nbuf, S[d] | vbit)
                nbuf += 1
            continue
        # the child's edges hit once: those of S not hit by v, and the newly hit ones
        for wi in range(nw):
            p = pos[v, wi]
            once[c1, wi] = (once[d, wi] & ~p) | (uncov[d, wi] & p)
            uncov[c1, wi] = uncov[d, wi] & ~p
        # a chosen QI left with no critical edge can never be needed again: prune
        ok = True
        s = S[d]
        while s:
            low = s & (~s + np.uint64(1))
            w = _bit_index(low)
            anyc = np.uint64(0)
            for wi in range(nw):
                anyc |= once[c1, wi] & pos[w, wi]
            if anyc == 0:
                ok = False
                break
            s ^= low
        if not ok:
            continue
        S[c1] = S[d] | vbit
        CAND[c1] = BASE[d] | (BR[d] & (vbit - np.uint64(1)))
        U[c1] = uc
        d = c1
        entering = True
    return buf, nbuf, complete


@numba.njit(cache=True, nogil=True)
def _relabel_rare_first(emask, ne, q, freq, new_bit, bit_of):  # pragma: no cover - compiled
    """Relabel the QIs of one row's edges ``emask[:ne]`` (in place) so that the QIs in the fewest edges take the
    lowest bits; ``bit_of[t]`` receives the original bit of new label t (for :func:`_restore_labels`), and
    ``new_bit[j]`` the new bit of QI j.

    Why: the enumeration branches on an edge's candidate QIs lowest bit first, each child keeping the candidates
    before its own, so the labels shape the search tree (not its leaves' sets). With the rarest QIs first the
    sample's k = 3 search makes 14.2M nodes instead of 14.8M and its enumeration takes 1.74-1.79 CPU s instead of
    1.97-2.00 (the rarest last: 2.36-2.39). Relabeling is a bijection of the QI sets that keeps containment and
    every edge's weight, so the minimal unsafe sets found are exactly the relabeled MINUCs, and mapping them
    back gives the same MINUCs; only the order in which a row's MINUCs are listed changes. Ties keep the QIs'
    order (a stable sort), so the labels, and that order, are the same on every run.
    """
    for j in range(q):
        freq[j] = 0
    for e in range(ne):
        x = emask[e]
        while x:
            low = x & (~x + np.uint64(1))
            freq[_bit_index(low)] += 1
            x ^= low
    order = np.argsort(freq[:q], kind="mergesort")
    for t in range(q):
        new_bit[order[t]] = np.uint64(1) << np.uint64(t)
        bit_of[t] = np.uint64(1) << np.uint64(order[t])
    _map_bits(emask, 0, ne, new_bit)


@numba.njit(cache=True, nogil=True, inline="always")
def _map_bits(buf, lo, hi, bit_table):  # pragma: no cover - compiled
    """``buf[lo:hi]`` with each set bit j replaced by ``bit_table[j]`` (the relabeling of a row's edges)."""
    for s in range(lo, hi):
        x = np.uint64(buf[s])
        y = np.uint64(0)
        while x:
            low = x & (~x + np.uint64(1))
            y |= bit_table[_bit_index(low)]
            x ^= low
        buf[s] = y


LABEL_CHUNK_BITS = 7
"""QIs mapped per table lookup by :func:`_restore_labels` (a table of 128 sets per seven QIs)."""


@numba.njit(cache=True, nogil=True, inline="always")
def _restore_labels(buf, lo, hi, bit_of, table):  # pragma: no cover - compiled
    """``buf[lo:hi]`` (sets in the labels of :func:`_relabel_rare_first`) mapped back to the original QIs.

    By table: ``table[c, x]`` is the original set of the labels 7c .. 7c + 6 in the 7-bit value x, filled for
    this row (128 entries per seven QIs, each from an entry with one bit fewer), so that a set maps with one
    lookup per seven QIs instead of a step per QI it holds: the sample's 15.3M MINUCs at k = 3 took about
    0.15 CPU s less in the kernel on one thread (median of six runs 3.14 s against 3.29 s). ``table`` is a
    work array of ceil(q / 7) rows of 128.
    """
    q = bit_of.shape[0]
    n_chunks = (q + LABEL_CHUNK_BITS - 1) // LABEL_CHUNK_BITS
    width = 1 << LABEL_CHUNK_BITS
    for c in range(n_chunks):
        table[c, 0] = 0
        for x in range(1, width):
            low = x & -x
            j = LABEL_CHUNK_BITS * c + _bit_index(low)
            table[c, x] = table[c, x ^ low] | (bit_of[j] if j < q else np.uint64(0))
    chunk = np.uint64(width - 1)
    for s in range(lo, hi):
        x = np.uint64(buf[s])
        y = np.uint64(0)
        for c in range(n_chunks):
            y |= table[c, (x >> np.uint64(LABEL_CHUNK_BITS * c)) & chunk]
        buf[s] = y


SPREAD_BITS = 7
"""QIs counted per word of the tally: one byte each, seven bytes of a 64-bit word (see :func:`_tally`)."""


@numba.njit(cache=True, nogil=True)
def _spread_table(q):  # pragma: no cover - compiled
    """``out[c, x]``: the bits of the 7-bit value x (QIs 7c .. 7c + 6 of a mask) spread one per byte of a
    word, bit j to the lowest bit of byte j, so that adding such words counts each QI in its own byte."""
    n_words = (q + SPREAD_BITS - 1) // SPREAD_BITS
    out = np.zeros((n_words, 1 << SPREAD_BITS), dtype=np.uint64)
    for c in range(n_words):
        for x in range(1 << SPREAD_BITS):
            w = np.uint64(0)
            for j in range(SPREAD_BITS):
                if (x >> j) & 1:
                    w |= np.uint64(1) << np.uint64(8 * j)
            out[c, x] = w
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _tally(buf, lo, hi, sizes, qis, marks, spread, acc):  # pragma: no cover - compiled
    """Count the masks ``buf[lo:hi]`` (one row's MINUCs, still in cache) by size and by QI they contain,
    and flag each mask in ``marks`` (a byte per possible mask; empty when there are too many QIs).

    The count by QI adds, per mask, one word of :func:`_spread_table` per seven QIs into ``acc`` (a byte
    per QI), emptied into ``qis`` every 255 masks, before a byte can overflow: a few adds per mask where
    incrementing ``qis`` bit by bit chained each increment to the last one's store (about 5 % of the
    sample's search at k = 3)."""
    flag = marks.shape[0] > 0
    n_words = spread.shape[0]
    q = qis.shape[0]
    low7 = np.uint64((1 << SPREAD_BITS) - 1)
    t = lo
    while t < hi:
        stop = min(hi, t + 255)
        for c in range(n_words):
            acc[c] = 0
        for s in range(t, stop):
            m = np.uint64(buf[s])
            if flag:
                marks[m] = 1
            sizes[_popcount(m) - 1] += 1
            for c in range(n_words):
                acc[c] += spread[c, (m >> np.uint64(SPREAD_BITS * c)) & low7]
        for c in range(n_words):
            a = acc[c]
            for j in range(SPREAD_BITS):
                v = SPREAD_BITS * c + j
                if v < q:
                    qis[v] += np.int64((a >> np.uint64(8 * j)) & np.uint64(255))
        t = stop


@numba.njit(cache=True, nogil=True)
def minucs_of_rows(cols, mult, fk, k, category, max_size, which, bitvals, keep):  # pragma: no cover - compiled
    """MINUCs of the collapsed rows listed in ``which`` (threshold k), as bit masks, and their tallies.

    ``fk`` is each row's class size on all its QIs (= m0 below): rows with fk >= k are safe on every
    subset and are skipped without looking at the other rows. Returns (counts per row, masks
    concatenated in row order in the type of ``bitvals``, complete flag per row, MINUCs per row by size
    (column s = size s + 1), MINUCs per row containing each QI, the distinct masks found, ascending, when
    q <= STAMP_MAX_BITS, else an empty array). The tallies are taken row by row while
    the row's masks are in cache, on the worker's thread; with ``keep`` False the masks are then dropped
    (the buffer holds one row's at a time and the second array returned is empty): every count the
    pages and the report show comes from the tallies, without writing and re-reading 4 bytes per MINUC.
    The rows are searched in the order of their codes (:func:`_similar_rows_first`), each row's masks made
    from the last one's (:func:`_redo_disagreements`); what is returned is in the order of ``which``.
    """
    q, n = cols.shape
    use_table = q <= STAMP_MAX_BITS and k - 1 <= 255  # capped weights fit a byte
    seen = np.zeros((1 << q) if use_table else 0, dtype=np.uint8)
    d = np.empty(n, dtype=bitvals.dtype)
    dmask = np.empty(n, dtype=np.uint64)
    dweight = np.empty(n, dtype=np.int64)
    emask = np.empty(n, dtype=np.uint64)
    eweight = np.empty(n, dtype=np.int64)
    must = np.empty(n + MUST_LANES, dtype=bitvals.dtype)  # the edge family's must masks (see _contains_any)
    counts = np.zeros(which.shape[0], dtype=np.int64)
    complete = np.ones(which.shape[0], dtype=np.bool_)
    sizes = np.zeros((which.shape[0], q), dtype=np.int64)
    qis = np.zeros((which.shape[0], q), dtype=np.int64)
    marks = np.zeros((1 << q) if q <= STAMP_MAX_BITS else 0, dtype=np.uint8)
    spread = _spread_table(q)
    acc = np.zeros(spread.shape[0], dtype=np.uint64)  # the tally's bytes per QI
    buf = np.empty(1 << 12, dtype=bitvals.dtype)  # uint32 up to 32 QIs: half the memory traffic
    nbuf = 0
    freq = np.zeros(q, dtype=np.int64)  # the relabeling's work space (see _relabel_rare_first)
    new_bit = np.zeros(q, dtype=np.uint64)
    bit_of = np.zeros(q, dtype=np.uint64)
    label_table = np.zeros(((q + LABEL_CHUNK_BITS - 1) // LABEL_CHUNK_BITS, 1 << LABEL_CHUNK_BITS), dtype=np.uint64)
    start = np.zeros(which.shape[0] if keep else 0, dtype=np.int64)  # each row's first mask in ``buf``
    prev = -1  # the last row whose masks ``d`` holds
    for i in _similar_rows_first(cols, which):
        u = which[i]
        if fk[u] >= k:
            continue
        if prev < 0:
            _disagreements(cols[:, u], cols, category, d, bitvals)
        else:
            _redo_disagreements(cols[:, u], cols[:, prev], cols, category, d, bitvals)
        prev = u
        nd, m0 = _distinct_masks(d, mult, k - 1, seen, dmask, dweight)
        if m0 >= k:
            continue
        b = k - 1 - m0
        ne = _reduce_family(dmask, dweight, nd, q, b, emask, eweight, must)
        _relabel_rare_first(emask, ne, q, freq, new_bit, bit_of)
        before = nbuf
        buf, nbuf, comp = _enumerate_minimal(emask, eweight, ne, q, b, max_size, buf, nbuf)
        _restore_labels(buf, before, nbuf, bit_of, label_table)
        counts[i] = nbuf - before
        complete[i] = comp
        _tally(buf, before, nbuf, sizes[i], qis[i], marks, spread, acc)
        if keep:
            start[i] = before
        else:
            nbuf = 0
    # the masks in the order of ``which`` (the rows were searched in the order of their codes)
    masks = np.empty(nbuf, dtype=buf.dtype)
    at = 0
    for i in range(which.shape[0] if keep else 0):
        masks[at:at + counts[i]] = buf[start[i]:start[i] + counts[i]]
        at += counts[i]
    return counts, masks, complete, sizes, qis, np.flatnonzero(marks).astype(np.uint64)
