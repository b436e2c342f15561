"""The compiled wildcard k-anonymity scan of the lattice search against a brute-force count of matches."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.risk.classes import alpha_count
from kanon_core.treat._lattice_kernel import node_marginals, wildcard_fk, wildcard_small
from kanon_core.treat.lattice import NodeEvaluator, _Marginals
from tests.test_lattice import cases


@st.composite
def tables(draw):
    q = draw(st.integers(1, 4))
    n_values = draw(st.integers(1, 4))
    rows = draw(st.lists(st.tuples(*[st.integers(-1, n_values - 1)] * q), min_size=1, max_size=40, unique=True))
    codes = np.array(rows, dtype=np.int32).reshape(len(rows), q)
    if q >= 4 and draw(st.booleans()):  # large codes: the rows do not fit one packed key, the QI loop compares
        codes[codes >= 0] += np.int32(2**20)
    count = np.array(draw(st.lists(st.integers(1, 4), min_size=len(rows), max_size=len(rows))), dtype=np.int64)
    return codes, count


def brute(codes, count):
    """Per class: records of its own and complete matching classes, and records of matching classes with a
    missing value (a missing cell matches anything)."""
    n = len(codes)
    full = count.copy()
    wild = np.zeros(n, dtype=np.int64)
    has_miss = (codes < 0).any(axis=1)
    for r in range(n):
        for s in range(n):
            if s != r and all(a == b or a < 0 or b < 0 for a, b in zip(codes[r], codes[s], strict=True)):
                if has_miss[s]:
                    wild[r] += count[s]
                else:
                    full[r] += count[s]
    return full, wild


@given(tables(), st.integers(1, 8), st.sampled_from([1.0, 0.5, 0.25]), st.integers(-1, 20), st.data())
def test_wildcard_scan_matches_brute_force(table, k, alpha, limit, data):
    codes, count = table
    lim = limit if alpha == 1.0 else -1
    full_b, wild_b = brute(codes, count)
    truly = alpha_count(full_b + wild_b, wild_b, alpha) >= k  # the rule the search applies (sdcMicro's alpha)
    # classes already known to reach k (a random subset of those that do) are not scanned
    known = np.array([bool(t) and data.draw(st.booleans()) for t in truly], dtype=np.bool_)
    reached, sure, full, wild, stopped = wildcard_small(codes, count, *node_marginals(codes, count), k, alpha, lim, known)
    assert not (reached & ~truly).any()  # a class reported as reaching k does (facts, even when stopped)
    assert not (sure & truly).any()
    failing = int(count[~truly].sum())
    if lim >= 0:
        assert stopped == (failing > lim)
    else:
        assert not stopped
    if not stopped:
        # the caller's rule: failing = not reached and (surely failing or alpha-weighted size below k)
        scanned = ~reached & ~sure
        assert (full[scanned] == full_b[scanned]).all()
        assert (wild[scanned] == wild_b[scanned]).all()
        fails = ~reached & (sure | (alpha_count(full + wild, wild, alpha) < k))
        assert (fails == ~truly).all()


@st.composite
def wide_tables(draw):
    """Tables on up to 7 QIs with up to 9 codes each, so that classes index their scans by several QIs."""
    q = draw(st.integers(1, 7))
    n_values = draw(st.integers(1, 9))
    p_missing = draw(st.sampled_from([0.0, 0.2, 0.6]))
    n = draw(st.integers(1, 80))
    codes = np.array([[-1 if draw(st.floats(0, 1)) < p_missing else draw(st.integers(0, n_values - 1))
                       for _ in range(q)] for _ in range(n)], dtype=np.int32).reshape(n, q)
    codes = np.unique(codes, axis=0)
    if draw(st.booleans()):  # large codes: the rows do not fit one packed key, the QI loop compares
        codes[codes >= 0] += np.int32(2**20)
    count = np.array(draw(st.lists(st.integers(1, 4), min_size=len(codes), max_size=len(codes))), dtype=np.int64)
    return codes, count


NEVER = np.iinfo(np.int64).max


def exact_sizes(codes, count, marginals, n_parts=1):
    """The shares of the compiled count, one after the other, never cut short."""
    running = np.zeros(n_parts, dtype=np.int64)
    shares = [wildcard_fk(codes, count, *marginals, part, n_parts, running, NEVER) for part in range(n_parts)]
    assert not any(cut for _, cut in shares)
    return sum(fk for fk, _ in shares)


@given(st.one_of(tables(), wide_tables()), st.integers(0, 400))
def test_exact_wildcard_sizes_cut_short_only_above_the_ceiling(table, ceiling):
    """Cut short at a ceiling: only when the sum of records times matches beyond each class's own records
    squared exceeds it, with every size then at most the exact one; otherwise the exact sizes."""
    codes, count = table
    full_b, wild_b = brute(codes, count)
    exact = full_b + wild_b
    beyond = int((count * exact).sum() - (count * count).sum())
    fk, cut = wildcard_fk(codes, count, *node_marginals(codes, count), 0, 1, np.zeros(1, np.int64), ceiling)
    assert cut == (beyond > ceiling)
    if cut:
        assert (fk <= exact).all() and (count * fk).sum() - (count * count).sum() > ceiling
    else:
        assert (fk == exact).all()


@given(st.one_of(tables(), wide_tables()))
def test_exact_wildcard_sizes_match_brute_force(table):
    """Discernibility's exact matches per class: own records plus those of every class agreeing wherever both
    are observed, counted in full (the scan's one-sided counts and the complete classes' share)."""
    codes, count = table
    full_b, wild_b = brute(codes, count)
    marginals = node_marginals(codes, count)
    assert (exact_sizes(codes, count, marginals) == full_b + wild_b).all()
    for n_parts in (2, 3):  # the threads' shares add up to the whole
        assert (exact_sizes(codes, count, marginals, n_parts) == full_b + wild_b).all()


def test_exact_wildcard_sizes_beyond_62_qis_and_with_more_codes_than_buckets():
    """Beyond 62 QIs a class indexes its scan by one QI; a QI with more codes than the index holds buckets is
    not indexed; a class missing every QI matches every row."""
    rng = np.random.default_rng(7)
    for q, n_values in ((64, 3), (3, 400)):
        codes = np.unique(rng.integers(-1, n_values, size=(60, q)).astype(np.int32), axis=0)
        codes[0] = -1
        count = rng.integers(1, 4, size=len(codes)).astype(np.int64)
        full_b, wild_b = brute(codes, count)
        assert (exact_sizes(codes, count, node_marginals(codes, count)) == full_b + wild_b).all()


@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.data())
def test_up_and_down_sets_are_the_boxes_of_the_grid(heights, data):
    """The box enumeration gives exactly the nodes at least (at most) as general on every QI, and tagging
    changes exactly the unknown ones among them."""
    from kanon_core.treat._lattice_kernel import box_ids, tag_box
    from kanon_core.treat.lattice import _Lattice

    lat = _Lattice(np.array(heights, dtype=np.int64))
    i = data.draw(st.integers(0, lat.n - 1))
    status = np.array(data.draw(st.lists(st.integers(0, 2), min_size=lat.n, max_size=lat.n)), dtype=np.int8)
    skip = data.draw(st.integers(-1, 2))
    v = lat.nodes[i]
    for upward, mask in ((True, (lat.nodes >= v).all(axis=1)), (False, (lat.nodes <= v).all(axis=1))):
        got = box_ids(v, lat._heights, lat.strides, upward, status, skip)
        assert got.tolist() == np.flatnonzero(mask & (status != skip)).tolist()
        tagged = status.copy()
        tag_box(v, lat._heights, lat.strides, upward, tagged, 0, 2)
        expect = status.copy()
        expect[mask & (status == 0)] = 2
        assert (tagged == expect).all()


@given(st.integers(1, 5), st.integers(1, 6), st.lists(st.booleans(), min_size=5, max_size=5), st.data())
def test_partitioned_rollup_gives_the_same_classes(q, n_values, changed_draw, data):
    """The partitioned roll-up (millions of classes) and the plain one merge exactly the same rows, with the same
    codes and counts per class (only the numbering of the classes may differ)."""
    from kanon_core.treat._lattice_kernel import rollup, rollup_partitioned

    rows = data.draw(st.lists(st.tuples(*[st.integers(-1, n_values - 1)] * q), min_size=1, max_size=60))
    codes = np.array(rows, dtype=np.int32).reshape(len(rows), q)
    count = np.array(data.draw(st.lists(st.integers(1, 9), min_size=len(rows), max_size=len(rows))), dtype=np.int64)
    n_new = data.draw(st.integers(1, n_values))
    luts = np.zeros((q, n_values + 1), dtype=np.int32)
    changed = np.array(changed_draw[:q], dtype=np.bool_)
    radix = np.empty(q, dtype=np.int64)
    for j in range(q):
        if changed[j]:
            luts[j, :n_values] = data.draw(st.lists(st.integers(0, n_new - 1), min_size=n_values, max_size=n_values))
            radix[j] = n_new + 2
        else:
            radix[j] = n_values + 2
    span = int(np.prod(radix))
    size = 16
    while size < 2 * len(rows):
        size *= 2
    slots = np.zeros(2 * size, dtype=np.int64)
    gid_a, codes_a, count_a = rollup(codes, luts, changed, radix, count, slots, 1, span)
    scratch = np.full(5 * len(rows) + data.draw(st.integers(0, 3)), -7, dtype=np.int64)  # reused, dirty
    gid_b, codes_b, count_b = rollup_partitioned(codes, luts, changed, radix, count, slots, scratch)
    assert len(count_a) == len(count_b)
    to_a = np.full(len(count_b), -1)
    to_a[gid_b] = gid_a
    assert (to_a[gid_b] == gid_a).all() and sorted(to_a) == list(range(len(count_a)))  # a bijection of classes
    assert (codes_a[to_a] == codes_b).all() and (count_a[to_a] == count_b).all()
    mapped = np.where(changed & (codes >= 0), np.take_along_axis(luts, np.maximum(codes, 0).T, axis=1).T, codes)
    assert (codes_b[gid_b] == mapped).all()  # each row's class holds its generalized codes
    # a second plain roll-up on the same slots (left by the partitioned one) is still right
    gid_c, _, _ = rollup(codes, luts, changed, radix, count, slots, 2, span)
    assert (gid_c == gid_a).all()


@given(tables(), st.integers(1, 8), st.sampled_from([1.0, 0.5]), st.integers(-1, 20), st.data())
def test_wildcard_scan_with_doomed_classes_matches_brute_force(table, k, alpha, limit, data):
    """Classes known to fail (their records fail at a more general node) are reported surely failing unscanned;
    the rest of the answer is as without them."""
    codes, count = table
    lim = limit if alpha == 1.0 else -1
    full_b, wild_b = brute(codes, count)
    truly = alpha_count(full_b + wild_b, wild_b, alpha) >= k
    doomed = np.array([not t and data.draw(st.booleans()) for t in truly], dtype=np.bool_)
    known = np.zeros(len(codes), dtype=np.bool_)
    reached, sure, full, wild, stopped = wildcard_small(codes, count, *node_marginals(codes, count), k, alpha, lim, known,
                                                        doomed)
    assert not (reached & ~truly).any() and not (sure & truly).any()
    assert (sure[doomed]).all() or stopped
    if lim >= 0:
        assert stopped == (int(count[~truly].sum()) > lim)
    if not stopped:
        fails = ~reached & (sure | (alpha_count(full + wild, wild, alpha) < k))
        assert (fails == ~truly).all()


@given(cases(max_nodes=48))
def test_marginals_per_qi_and_level_are_each_nodes_own(case):
    """The search's marginals, counted once per QI and level from the input, are those of each node's own table
    (the scan's single-QI bound reads them in place of a count per node)."""
    problem = case.problem()
    ev = NodeEvaluator(problem, [], 0)
    marginals = _Marginals(problem, ev.base)
    q = len(problem.qis)
    for levels in [(-1,) * q, *np.ndindex(*problem.heights)]:
        table = ev.base if levels[0] < 0 else ev.table(levels)
        marg, marg_m, off, miss, width = marginals.at(levels)
        own, own_m, own_off, own_miss, own_width = node_marginals(table.codes, table.count)
        ends = [*own_off[1:], own_off[-1] + (table.codes[:, -1].max(initial=-1) + 1)]
        assert (miss == own_miss).all()
        assert own_width == max(1, table.codes.max(initial=-1) + 1) <= width  # the scan's key fields hold every code
        for j, lv in enumerate(levels):
            for got, mine in ((marg, own), (marg_m, own_m)):
                want = np.zeros(problem.n_groups(j, lv), dtype=np.int64)
                part = mine[own_off[j]:ends[j]]
                want[:len(part)] = part
                assert (got[off[j]:off[j] + len(want)] == want).all()


@given(tables(), st.data())
def test_suppressed_observed_cells_and_carried_marks_equal_their_numpy_definitions(table, data):
    """The compiled helpers of the search's bookkeeping against the array expressions they replace."""
    from kanon_core.treat._lattice_kernel import carry_marks
    from kanon_core.treat.metrics import NodeStats, suppressed_observed

    codes, count = table
    n = len(codes)
    small = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    stats = NodeStats((0,) * codes.shape[1], codes, count, small)
    want = ((codes[small] >= 0) * count[small, None]).sum(axis=0)
    assert (suppressed_observed(stats) == want).all()
    n_out = data.draw(st.integers(1, n))
    gid = np.array(data.draw(st.lists(st.integers(0, n_out - 1), min_size=n, max_size=n)), dtype=np.int64)
    expect = np.zeros(n_out, dtype=np.bool_)
    expect[gid[small]] = True
    assert (carry_marks(gid, small, n_out) == expect).all()
