"""The MINUC engine against a brute-force enumeration (all subsets, all records), and hand examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.errors import Cancelled, InputError
from kanon_core.progress import Progress
from kanon_core.risk.minucs import (
    MinucResult,
    collapse,
    estimate_cost,
    find_minucs,
    popcount,
    summarize_minucs,
)
from kanon_core.risk.qid import minimal_qids_from_minucs
from tests.reference.brute_force import brute_force_minucs


@st.composite
def tables(draw, max_n=22, max_q=6, max_card=4):
    n = draw(st.integers(2, max_n))
    q = draw(st.integers(1, max_q))
    card = draw(st.integers(1, max_card))
    codes = draw(arrays(np.int32, (n, q), elements=st.integers(-1, card - 1)))
    return codes


def as_sets(res, n):
    return [{int(m) for m in res.masks_of(r)} for r in range(n)]


@given(tables(), st.integers(2, 5), st.sampled_from(["wildcard", "category"]))
def test_all_minucs_equal_brute_force(codes, k, missing):
    n = len(codes)
    if n < k:
        with pytest.raises(InputError):
            find_minucs(codes, k=k, missing=missing)
        return
    res = find_minucs(codes, k=k, missing=missing)
    assert as_sets(res, n) == brute_force_minucs(codes, k, missing)
    assert res.complete and res.max_size is None


@given(tables(max_q=7), st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.integers(1, 4))
def test_max_size_gives_exactly_the_small_minucs(codes, k, missing, max_size):
    if len(codes) < k:
        return
    res = find_minucs(codes, k=k, missing=missing, max_size=max_size)
    assert as_sets(res, len(codes)) == brute_force_minucs(codes, k, missing, max_size=max_size)
    full = find_minucs(codes, k=k, missing=missing)
    if all(popcount(full.row_masks) <= max_size):
        assert as_sets(res, len(codes)) == as_sets(full, len(codes))


@given(tables(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_summaries_agree_with_the_per_record_lists(codes, k, missing):
    if len(codes) < k:
        return
    res = find_minucs(codes, k=k, missing=missing, names=[f"v{j}" for j in range(codes.shape[1])])
    ref = brute_force_minucs(codes, k, missing)
    q = codes.shape[1]
    by_size = res.counts_by_size()
    for r, masks in enumerate(ref):
        expected = np.zeros(q, np.int64)
        for m in masks:
            expected[bin(m).count("1") - 1] += 1
        np.testing.assert_array_equal(by_size[r], expected)
    assert res.total == sum(len(m) for m in ref)
    assert res.totals_by_size() == {s + 1: int(by_size[:, s].sum()) for s in range(q)}
    # expanded (record, mask) pairs are exactly the per-record lists
    pairs = sorted(zip(res.record.tolist(), res.mask.tolist()))
    assert pairs == sorted((r, m) for r, ms in enumerate(ref) for m in ms)
    np.testing.assert_array_equal(np.diff(res.offsets), [len(m) for m in ref])
    # variable contributions: MINUCs containing the variable, records concerned
    contrib = res.variable_contributions().set_index("variable")
    for j in range(q):
        assert contrib.loc[f"v{j}", "minucs"] == sum(1 for ms in ref for m in ms if (m >> j) & 1)
        assert contrib.loc[f"v{j}", "records"] == sum(1 for ms in ref if any((m >> j) & 1 for m in ms))
    # value contributions: each (variable, code) counted per MINUC holding it
    vals = res.value_contributions()
    assert len(vals) > 0 or not any(ref)  # a table row for every value in a MINUC
    for row in vals.itertuples():
        j = int(row.variable[1:])
        expected = sum(1 for r, ms in enumerate(ref) for m in ms if (m >> j) & 1 and codes[r, j] == row.code)
        assert row.minucs == expected
    assert vals.minucs.sum() == sum(bin(m).count("1") for ms in ref for m in ms)
    smallest = res.smallest_size()
    for r, ms in enumerate(ref):
        assert smallest[r] == (min(bin(m).count("1") for m in ms) if ms else 0)


def test_seed_000_definition_by_hand():
    # Three QIs. Record 0 is the only one with a = 2 (a one-dimensional MINUC). Record 1 has b = 3 and
    # c = 6 unique. Record 2 is unique only on (a, b) and (a, c); (b, c) = (0, 0) is shared with record 0.
    codes = np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0]], dtype=np.int32)
    res = find_minucs(codes, k=2, missing="category", names=("a", "b", "c"))
    assert res.combinations_of(0) == [("a",)]
    assert res.combinations_of(1) == [("b",), ("c",)]
    assert res.combinations_of(2) == [("a", "b"), ("a", "c")]
    assert res.totals_by_size() == {1: 3, 2: 2, 3: 0}


def test_wildcard_missing_values_by_hand():
    # (1, 1), (1, -), (2, 1): under wildcard the missing value of record 1 matches both others on b.
    codes = np.array([[1, 1], [1, -1], [2, 1]], dtype=np.int32)
    wild = find_minucs(codes, k=2, missing="wildcard", names=("a", "b"))
    # record 0: a=1 occurs twice (records 0, 1), b=1 three times (incl. the wildcard), (a, b) twice -> none
    assert wild.combinations_of(0) == []
    # record 1 has only a observed, shared with record 0 -> safe; record 2: a=2 unique
    assert wild.combinations_of(1) == []
    assert wild.combinations_of(2) == [("a",)]
    cat = find_minucs(codes, k=2, missing="category", names=("a", "b"))
    # as a category, record 1's missing b is unique; record 0's (a, b) = (1, 1) is unique
    assert cat.combinations_of(1) == [("b",)]
    assert cat.combinations_of(0) == [("a", "b")]


def test_k3_shares_minucs_between_records():
    codes = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1], [1, 1]], dtype=np.int32)
    res = find_minucs(codes, k=3, missing="category", names=("a", "b"))
    # (a=0) occurs 3 times; (b=0) twice -> records 0 and 1 hold MINUC {b}; record 2: (a, b) = (0, 1) once
    assert res.combinations_of(0) == [("b",)] == res.combinations_of(1)
    assert res.combinations_of(2) == [("a", "b")]
    assert res.combinations_of(3) == []
    assert res.total == 3 and res.n_distinct == 2


def test_collapse_keeps_input_order_and_multiplicities():
    codes = np.array([[1, 2], [0, 0], [1, 2], [0, 0], [5, 5]], dtype=np.int32)
    col = collapse(codes)
    np.testing.assert_array_equal(col.rows, [[1, 2], [0, 0], [5, 5]])
    np.testing.assert_array_equal(col.mult, [2, 2, 1])
    np.testing.assert_array_equal(col.rows[col.row_of_record], codes)


def test_bad_input_is_refused_clearly():
    with pytest.raises(InputError, match="at least 2"):
        find_minucs(np.zeros((3, 2), np.int32), k=1)
    with pytest.raises(InputError, match="The file has 2 records, so no record can be in a group of k=3"):
        find_minucs(np.zeros((2, 2), np.int32), k=3)
    with pytest.raises(InputError, match="quasi-identifier"):
        find_minucs(np.zeros((3, 0), np.int32))
    with pytest.raises(InputError):
        find_minucs(np.zeros((3, 2), np.int32), max_size=0)
    with pytest.raises(InputError):
        find_minucs(np.full((3, 2), -5, np.int32))


def test_progress_is_reported_and_cancel_stops_the_run():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 6, size=(3000, 8)).astype(np.int32)
    seen: list[float] = []
    find_minucs(codes, progress=Progress(lambda f, m: seen.append(f)))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen) and len(seen) > 5

    calls = []

    def cancel_soon(fraction, message):
        calls.append(fraction)
        if len(calls) == 3:
            prog.cancel()

    prog = Progress(cancel_soon)
    with pytest.raises(Cancelled):
        find_minucs(codes, progress=prog)


def test_thread_count_does_not_change_the_result():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 4, size=(1500, 7)).astype(np.int32)
    codes[rng.random(codes.shape) < 0.05] = -1
    one = find_minucs(codes, k=3, workers=1)
    two = find_minucs(codes, k=3, workers=2)
    np.testing.assert_array_equal(one.row_offsets, two.row_offsets)
    np.testing.assert_array_equal(one.row_masks, two.row_masks)


def test_many_qis_beyond_the_direct_address_table():
    # 26 QIs exceed the 2^22 table: the sorted path must give the same answer as brute force
    rng = np.random.default_rng(9)
    codes = rng.integers(0, 2, size=(14, 26)).astype(np.int32)
    codes[:, 3:] = codes[:, [0, 1, 2] * 7 + [0, 1]]  # heavy duplication of columns keeps it small
    res = find_minucs(codes, k=2, missing="category", max_size=3)
    assert as_sets(res, 14) == brute_force_minucs(codes, 2, "category", max_size=3)


@settings(max_examples=30)
@given(tables(max_q=5), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_more_than_32_qis_give_the_minucs_of_the_qis_that_vary(codes, k, missing):
    """Above 32 QIs the kernel's masks are uint64 (its edge family and search then run on that type): a table's
    columns placed at QIs 35 and above of a 40-QI table whose other QIs hold one value each (they separate no
    records, so no MINUC holds them) give exactly the brute-force MINUCs of the table, on the moved QIs."""
    n, q = codes.shape
    if n < k:
        return
    wide = np.zeros((n, 40), dtype=np.int32)
    wide[:, 35:35 + q] = codes
    res = find_minucs(wide, k=k, missing=missing)
    moved = [{m << 35 for m in row} for row in brute_force_minucs(codes, k, missing)]
    assert as_sets(res, n) == moved


def test_cost_estimate_is_in_the_right_range():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 5, size=(2000, 8)).astype(np.int32)
    est = estimate_cost(codes, sample=400)
    res = find_minucs(codes)
    assert est.n_distinct_rows == len(res.row_mult)
    assert 0.5 * res.total <= est.minucs <= 2.0 * res.total
    assert est.seconds >= 0 and est.memory_bytes > 0


def test_record_ranking_orders_by_smallest_then_count():
    codes = np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0], [0, 1, 1], [0, 1, 1]], dtype=np.int32)
    res = find_minucs(codes, names=("a", "b", "c"), missing="category")
    rank = res.record_ranking()
    assert rank.record.tolist() == [1, 0, 2]
    assert rank.minucs.tolist() == [2, 1, 2] and rank.smallest.tolist() == [1, 1, 2]


def test_brute_force_twin_is_itself_checked_against_its_definition():
    # the reference must agree with a direct reading of the definition on a table small enough to reason
    codes = np.array([[0, 0], [0, 1], [1, 1]], dtype=np.int32)
    ref = brute_force_minucs(codes, 2, "category")
    # record 0: a=0 twice, b=0 once -> {b}; record 1: a=0 twice, b=1 twice, (0,1) once -> {a,b}; record 2: {a}
    assert ref == [{0b10}, {0b11}, {0b01}]


def test_filter_and_record_view():
    codes = np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0], [0, 1, 1], [0, 1, 1]], dtype=np.int32)
    res = find_minucs(codes, names=("a", "b", "c"), missing="category")
    np.testing.assert_array_equal(res.count_containing(["a"]), [1, 0, 2, 0, 0])
    np.testing.assert_array_equal(res.count_containing(["a", "c"]), [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(res.count_containing([]), res.per_record_counts)
    with pytest.raises(InputError):
        res.count_containing(["zzz"])
    view = res.record_view(2)
    assert view.to_dict(orient="records") == [{"a": "1", "b": "0", "c": "", "size": 2},
                                              {"a": "1", "b": "", "c": "0", "size": 2}]
    assert res.record_view(3).empty



def _bit_counts():
    """The kernel's popcount and lowest-bit index, compiled once for the test below."""
    import numba

    from kanon_core.risk._minuc_kernel import _bit_index, _popcount

    if "f" not in _bit_counts.__dict__:
        _bit_counts.f = numba.njit(lambda v: (_popcount(v), _bit_index(v) if v else -1))
    return _bit_counts.f


@given(st.integers(0, 2**64 - 1))
def test_kernel_bit_counts_match_python(x):
    """The kernel's popcount and lowest-bit index (CPU instructions) agree with Python's integers."""
    count, low = _bit_counts()(np.uint64(x))
    assert count == bin(x).count("1")
    assert low == ((x & -x).bit_length() - 1 if x else -1)


def _minimal_unsafe_by_definition(emask: list[int], eweight: list[int], q: int, b: int,
                                  max_size: int) -> set[int]:
    """Every set S of at most ``max_size`` QIs whose disjoint edges weigh <= b while each S minus one QI's
    disjoint edges weigh more: the definition, over all 2^q sets."""
    def unhit(s: int) -> int:
        return sum(w for m, w in zip(emask, eweight) if m & s == 0)

    out = set()
    for s in range(1 << q):
        if bin(s).count("1") > max_size or unhit(s) > b:
            continue
        if all(unhit(s & ~(1 << j)) > b for j in range(q) if (s >> j) & 1):
            out.add(s)
    return out


@given(st.integers(1, 8), st.integers(0, 3), st.data())
def test_enumeration_equals_the_definition_on_any_weighted_family(q, b, data):
    """The compiled depth-first search on arbitrary edge families (any order, subsets and supersets,
    repeats, weights above the budget), up to 200 edges so the edge bitsets span several 64-bit words:
    each minimal set once, and exactly those of the definition; with a size limit, exactly the small ones."""
    from kanon_core.risk._minuc_kernel import _enumerate_minimal

    ne = data.draw(st.integers(1, 200))
    emask = data.draw(st.lists(st.integers(1, (1 << q) - 1), min_size=ne, max_size=ne))
    eweight = data.draw(st.lists(st.integers(1, b + 2), min_size=ne, max_size=ne))
    max_size = data.draw(st.integers(1, q))
    buf = np.zeros(2, dtype=np.uint32)  # small: the kernel must grow it
    out, nbuf, complete = _enumerate_minimal(np.array(emask, np.uint64), np.array(eweight, np.int64), ne, q, b,
                                             max_size, buf, 0)
    found = [int(m) for m in out[:nbuf]]
    assert len(found) == len(set(found))
    assert set(found) == _minimal_unsafe_by_definition(emask, eweight, q, b, max_size)
    if complete:
        assert set(found) == _minimal_unsafe_by_definition(emask, eweight, q, b, q)


@settings(max_examples=30)
@given(st.integers(1, 8), st.integers(0, 3), st.sampled_from(["padded", "tier", "general"]), st.data())
def test_enumeration_equals_the_definition_with_bitsets_of_every_length(q, b, path, data):
    """The search compiled for each constant bitset length (``_enumerate_fixed``) and for lengths above the
    last tier (``_enumerate_minimal``'s general path) finds exactly the sets of the definition: "padded" runs a
    family on more words than it needs (the words past its edges stay zero), "tier" runs families that fill the
    longest tier's last word, "general" families of more edges than the longest tier holds."""
    from kanon_core.risk._minuc_kernel import WORD_TIERS, _enumerate_fixed, _enumerate_minimal

    longest = 64 * WORD_TIERS[-1]
    low, high = {"padded": (1, 64), "tier": (longest - 63, longest), "general": (longest + 1, longest + 90)}[path]
    ne = data.draw(st.integers(low, high))
    emask = data.draw(st.lists(st.integers(1, (1 << q) - 1), min_size=ne, max_size=ne))
    eweight = data.draw(st.lists(st.integers(1, b + 2), min_size=ne, max_size=ne))
    args = (np.array(emask, np.uint64), np.array(eweight, np.int64), ne, q, b, q, np.zeros(2, dtype=np.uint32), 0)
    if path == "general":
        out, nbuf, _ = _enumerate_minimal(*args)
    else:
        out, nbuf, _ = _enumerate_fixed(*args, data.draw(st.sampled_from(WORD_TIERS)) if path == "padded"
                                        else WORD_TIERS[-1])
    found = [int(m) for m in out[:nbuf]]
    assert len(found) == len(set(found))
    assert set(found) == _minimal_unsafe_by_definition(emask, eweight, q, b, q)


@given(st.integers(1, 8), st.integers(0, 3), st.data())
def test_relabeling_the_qis_rarest_first_finds_the_same_minucs(q, b, data):
    """The enumeration runs on a row's edges relabeled so that the QIs in the fewest edges take the lowest bits
    (``_relabel_rare_first``), and its sets are mapped back (``_restore_labels``): the edges map back to the
    originals, the labels go by how many edges hold each QI (ties in QI order), and the minimal sets found,
    mapped back, are exactly those of the definition on the original edges."""
    from kanon_core.risk._minuc_kernel import _enumerate_minimal, _relabel_rare_first, _restore_labels

    ne = data.draw(st.integers(1, 120))
    emask = data.draw(st.lists(st.integers(1, (1 << q) - 1), min_size=ne, max_size=ne))
    eweight = data.draw(st.lists(st.integers(1, b + 2), min_size=ne, max_size=ne))
    relabeled = np.array(emask, np.uint64)
    freq, new_bit, bit_of = np.zeros(q, np.int64), np.zeros(q, np.uint64), np.zeros(q, np.uint64)
    _relabel_rare_first(relabeled, ne, q, freq, new_bit, bit_of)
    back = relabeled.copy()
    _restore_labels(back, 0, ne, bit_of, _label_table(q))
    assert back.tolist() == emask
    holding = [sum((m >> j) & 1 for m in emask) for j in range(q)]
    original = [int(bit_of[t]).bit_length() - 1 for t in range(q)]
    assert sorted(original) == list(range(q))
    assert original == sorted(range(q), key=lambda j: (holding[j], j))
    out, nbuf, _ = _enumerate_minimal(relabeled, np.array(eweight, np.int64), ne, q, b, q,
                                      np.zeros(2, dtype=np.uint32), 0)
    _restore_labels(out, 0, nbuf, bit_of, _label_table(q))
    found = [int(m) for m in out[:nbuf]]
    assert len(found) == len(set(found))
    assert set(found) == _minimal_unsafe_by_definition(emask, eweight, q, b, q)


def _label_table(q: int) -> np.ndarray:
    """``_restore_labels``' work array as the kernel allocates it (filled with ones: the function fills it)."""
    from kanon_core.risk._minuc_kernel import LABEL_CHUNK_BITS

    return np.full((-(-q // LABEL_CHUNK_BITS), 1 << LABEL_CHUNK_BITS), 2**64 - 1, dtype=np.uint64)


@given(st.integers(1, 64), st.randoms(use_true_random=False), st.data())
def test_restoring_the_labels_by_table_inverts_any_relabeling(q, rnd, data):
    """Any permutation of up to 64 QIs (``bit_of[t]``: the original bit of label t), any sets of labels, in
    uint32 or uint64 buffers as the kernel has them: each set maps to the set of the original bits, through
    every seven-QI chunk of the table; the entries outside [lo, hi) stay as they were."""
    from kanon_core.risk._minuc_kernel import _restore_labels

    order = list(range(q))
    rnd.shuffle(order)
    bit_of = np.array([1 << j for j in order], dtype=np.uint64)
    dtype = np.uint32 if q <= 32 and data.draw(st.booleans()) else np.uint64
    sets = data.draw(st.lists(st.integers(0, (1 << q) - 1), min_size=2, max_size=40))
    lo = data.draw(st.integers(0, 1))
    buf = np.array(sets, dtype=dtype)
    _restore_labels(buf, lo, len(sets), bit_of, _label_table(q))
    expected = [m if i < lo else sum(1 << order[t] for t in range(q) if m >> t & 1) for i, m in enumerate(sets)]
    assert [int(m) for m in buf] == expected


def _must_work(nd: int, wide: bool) -> np.ndarray:
    """The must masks' work array as the kernel allocates it, its slots past the list zero: a zero mask is
    contained in every mask, so a lane past the list that is not masked off makes every mask look implied."""
    from kanon_core.risk._minuc_kernel import MUST_LANES

    return np.zeros(nd + MUST_LANES, dtype=np.uint64 if wide else np.uint32)


def _spread_bits(mask: int, wide: bool) -> int:
    """QI j of a small mask moved to bit 9j mod 64 (wide: QIs beyond the 32 a uint32 holds), else kept."""
    if not wide:
        return mask
    return sum(1 << (9 * j % 64) for j in range(mask.bit_length()) if mask >> j & 1)


@given(st.integers(1, 7), st.integers(0, 3), st.booleans(), st.data())
def test_the_reduced_edge_family_decides_every_set_as_the_whole_family(q, b, wide, data):
    """The family the enumeration works on (``_reduce_family``: masks implied by a must mask dropped, and
    must masks implied by their light subsets not kept as edges) leaves unsafe exactly the sets the distinct
    masks leave unsafe, over all 2^q sets; and a must mask with two light subsets (b = 1) is no edge. Up to
    60 masks, so the must list runs past one vector test's lanes; ``wide`` puts the QIs on bits up to 63,
    as a table of more than 32 QIs has them, with uint64 must masks."""
    from kanon_core.risk._minuc_kernel import _reduce_family

    small = data.draw(st.lists(st.integers(1, (1 << q) - 1), min_size=1, max_size=60, unique=True))
    nd = len(small)
    weights = data.draw(st.lists(st.integers(1, b + 2), min_size=nd, max_size=nd))
    emask = np.zeros(nd, dtype=np.uint64)
    eweight = np.zeros(nd, dtype=np.int64)
    spread = np.array([_spread_bits(m, wide) for m in small], np.uint64)
    ne = _reduce_family(spread, np.array(weights, np.int64), nd, 64 if wide else q, b, emask, eweight,
                        _must_work(nd, wide))
    back = {_spread_bits(m, wide): m for m in small}
    assert all(int(m) in back for m in emask[:ne])
    masks = small
    kept = [back[int(m)] for m in emask[:ne]]
    assert set(kept) <= set(masks) and len(kept) == len(set(kept))
    assert [bin(m).count("1") for m in kept] == sorted(bin(m).count("1") for m in kept)
    assert all(int(w) == weights[masks.index(m)] for m, w in zip(kept, eweight[:ne]))

    if b == 0:  # the inclusion-minimal masks, exactly
        assert set(kept) == {m for m in masks if not any(o != m and o & m == o for o in masks)}

    def unhit(family, weight_of, s: int) -> int:
        return sum(weight_of[i] for i, m in enumerate(family) if m & s == 0)

    for s in range(1 << q):
        assert (unhit(masks, weights, s) <= b) == (unhit(kept, [int(w) for w in eweight[:ne]], s) <= b)


@pytest.mark.parametrize("wide", [False, True])
def test_a_mask_is_dropped_whichever_lane_of_the_must_list_holds_its_subset(wide):
    """40 pairs of 20 QIs (must masks at b = 0, more than one vector test's lanes: {i, i + 1} and {i, i + 2}
    around a circle) and all 1,140 triples: the family kept is exactly the inclusion-minimal masks. Each pair,
    in whichever lane of whichever block it sits, is the only pair in the list inside some triple ({i, i + 1, j}
    with j three or more QIs away from both), so skipping a lane keeps such a triple."""
    from itertools import combinations

    from kanon_core.risk._minuc_kernel import _reduce_family

    q = 20
    pairs = [1 << i | 1 << (i + step) % q for step in (1, 2) for i in range(q)]
    triples = [a | b | c for a, b, c in combinations([1 << j for j in range(q)], 3)]
    masks = pairs + triples
    nd = len(masks)
    emask = np.zeros(nd, dtype=np.uint64)
    eweight = np.zeros(nd, dtype=np.int64)
    spread = np.array([_spread_bits(m, wide) for m in masks], np.uint64)
    ne = _reduce_family(spread, np.ones(nd, np.int64), nd, 64 if wide else q, 0, emask, eweight,
                        _must_work(nd, wide))
    expected = set(pairs) | {t for t in triples if not any(p & t == p for p in pairs)}
    assert 0 < len(expected - set(pairs)) < len(triples)
    assert {int(m) for m in emask[:ne]} == {_spread_bits(m, wide) for m in expected}


def test_a_must_mask_implied_by_its_light_subsets_is_no_edge():
    """b = 1 (k = 3, a unique record): {0} and {1} weigh 1 each (light); {0, 1} contains both, so an S
    leaving it unhit leaves weight 2 unhit without it. It is no edge, and {0, 1, 2} above it is dropped.
    {2} weighs 2 (a must mask, an edge), {2, 3} contains it (dropped), {3} is light (an edge)."""
    from kanon_core.risk._minuc_kernel import _reduce_family

    masks = np.array([0b11, 0b1, 0b10, 0b111, 0b100, 0b1000, 0b1100], np.uint64)
    weights = np.array([1, 1, 1, 1, 2, 1, 1], np.int64)
    emask = np.zeros(7, dtype=np.uint64)
    eweight = np.zeros(7, dtype=np.int64)
    ne = _reduce_family(masks, weights, 7, 4, 1, emask, eweight, _must_work(7, False))
    assert sorted(int(m) for m in emask[:ne]) == [0b1, 0b10, 0b100, 0b1000]


@settings(max_examples=25)
@given(tables(max_n=90, max_q=7, max_card=3), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_larger_tables_with_repeats_equal_brute_force(codes, k, missing):
    """Tables of up to 90 records over few values: many repeated rows (edges weighing more than the
    budget), rows safe on all QIs, and edge families of dozens of masks."""
    if len(codes) < k:
        return
    res = find_minucs(codes, k=k, missing=missing)
    assert as_sets(res, len(codes)) == brute_force_minucs(codes, k, missing)


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_k_above_the_byte_weights_uses_exact_counts(missing):
    """Weights are capped at k - 1 in a byte-wide table up to k = 256; above it the masks are sorted and
    counted exactly. Both sides of the switch agree with brute force."""
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 2, size=(700, 3)).astype(np.int32)
    codes[rng.random(codes.shape) < 0.1] = -1
    for k in (2, 3, 255, 256, 257, 300):
        res = find_minucs(codes, k=k, missing=missing)
        assert as_sets(res, len(codes)) == brute_force_minucs(codes, k, missing), k


def _tallies_from_lists(lists: list[set[int]], q: int) -> tuple[np.ndarray, np.ndarray]:
    """Per record: MINUCs by size and MINUCs containing each QI, counted from the lists themselves."""
    sizes = np.zeros((len(lists), q), np.int64)
    per_qi = np.zeros((len(lists), q), np.int64)
    for r, masks in enumerate(lists):
        for m in masks:
            sizes[r, bin(m).count("1") - 1] += 1
            for j in range(q):
                per_qi[r, j] += (m >> j) & 1
    return sizes, per_qi


@settings(max_examples=60)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=9), st.sampled_from([np.uint32, np.uint64]),
       st.integers(0, 3))
def test_the_chunks_masks_are_joined_in_order(lengths, dtype, parallel_from):
    """The join of the chunks' masks on two threads (from ``parallel_from`` masks on) is the concatenation:
    every chunk in its place, empty chunks included, in the masks' type."""
    from kanon_core.risk.minucs import join_masks

    rng = np.random.default_rng(len(lengths))
    parts = [rng.integers(1, 2**31, size=n).astype(dtype) for n in lengths]
    got = join_masks(parts, parallel_from=parallel_from)
    want = np.concatenate(parts)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("q", [3, 7, 8, 19, 22, 23, 40, 64])
def test_the_kernels_tally_counts_every_mask_by_size_and_qi(q):
    """The kernel's tally of one row's masks (bytes per QI, emptied every 255 masks) against a count bit by
    bit: runs of the full mask longer than 255 would overflow a byte, and masks of 64 QIs use every word."""
    from kanon_core.risk._minuc_kernel import STAMP_MAX_BITS, _spread_table, _tally

    rng = np.random.default_rng(q)
    dtype = np.uint32 if q <= 32 else np.uint64
    full = (1 << q) - 1
    random = [int(x) & full for x in rng.integers(0, 2**63, size=900)]
    random += [1 << 63 | int(x) for x in rng.integers(0, 2**63, size=50)] if q == 64 else []  # the top bit
    masks = [full] * 600 + [m for m in random if m] + [1 << (q - 1)] * 300
    buf = np.array([0, 0, *masks, full], dtype=dtype)  # the row's masks are buf[2:-1]
    sizes = np.zeros(q, np.int64)
    qis = np.zeros(q, np.int64)
    marks = np.zeros(1 << q if q <= STAMP_MAX_BITS else 0, dtype=np.uint8)
    spread = _spread_table(q)
    _tally(buf, 2, len(buf) - 1, sizes, qis, marks, spread, np.zeros(len(spread), np.uint64))
    want_sizes = np.bincount([bin(m).count("1") - 1 for m in masks], minlength=q)
    want_qis = np.array([sum((m >> j) & 1 for m in masks) for j in range(q)])
    np.testing.assert_array_equal(sizes, want_sizes)
    np.testing.assert_array_equal(qis, want_qis)
    if len(marks):
        assert set(np.flatnonzero(marks).tolist()) == set(masks)


@settings(max_examples=60)
@given(tables(max_n=40, max_q=7), st.integers(2, 4), st.sampled_from(["wildcard", "category"]),
       st.one_of(st.none(), st.integers(1, 4)))
def test_summary_only_search_counts_the_brute_force_minucs(codes, k, missing, max_size):
    """The summary-only search (masks dropped row by row) counts exactly the MINUCs of the definition:
    by size and by QI per record, and so totals, records, smallest sizes and per-value counts."""
    if len(codes) < k:
        return
    q = codes.shape[1]
    summ = summarize_minucs(codes, k=k, missing=missing, max_size=max_size)
    assert not isinstance(summ, MinucResult) and not hasattr(summ, "row_masks")
    ref = brute_force_minucs(codes, k, missing, max_size=max_size)
    sizes, per_qi = _tallies_from_lists(ref, q)
    np.testing.assert_array_equal(summ.counts_by_size(), sizes)
    np.testing.assert_array_equal(summ.row_qis[summ.row_of_record], per_qi)
    np.testing.assert_array_equal(summ.per_record_counts, [len(m) for m in ref])
    assert summ.total == sum(len(m) for m in ref)
    assert summ.records_with_minucs() == sum(1 for m in ref if m)
    assert summ.smallest_size().tolist() == [min((bin(m).count("1") for m in ms), default=0) for ms in ref]
    values = summ.value_counts()
    for j in range(q):
        for c in range(-1, int(codes[:, j].max()) + 1):
            expected = sum(per_qi[r, j] for r in range(len(codes)) if codes[r, j] == c)
            got = values[j][c + 1] if c + 1 < len(values[j]) else 0
            assert got == expected


@settings(max_examples=60)
@given(tables(max_n=40, max_q=7), st.integers(2, 4), st.sampled_from(["wildcard", "category"]),
       st.one_of(st.none(), st.integers(1, 4)))
def test_summary_only_equals_the_full_enumerations_summaries(codes, k, missing, max_size):
    """Every summary the MINUCs page and the report show is the same from both searches, and the full
    search's tallies (taken in the kernel) are those of its own masks."""
    if len(codes) < k:
        return
    names = [f"v{j}" for j in range(codes.shape[1])]
    full = find_minucs(codes, k=k, missing=missing, max_size=max_size, names=names)
    summ = summarize_minucs(codes, k=k, missing=missing, max_size=max_size, names=names)
    lists = [{int(m) for m in full.masks_of(r)} for r in range(len(codes))]
    sizes, per_qi = _tallies_from_lists(lists, codes.shape[1])
    np.testing.assert_array_equal(full.counts_by_size(), sizes)
    np.testing.assert_array_equal(full.row_qis[full.row_of_record], per_qi)
    np.testing.assert_array_equal(full.row_counts, np.diff(full.row_offsets))
    for a, b in ((full.row_sizes, summ.row_sizes), (full.row_qis, summ.row_qis)):
        np.testing.assert_array_equal(a, b)
    assert (full.total, full.records_with_minucs(), full.totals_by_size(), full.complete, full.max_size) == (
        summ.total, summ.records_with_minucs(), summ.totals_by_size(), summ.complete, summ.max_size)
    pd.testing.assert_frame_equal(full.variable_contributions(), summ.variable_contributions())
    pd.testing.assert_frame_equal(full.value_contributions(), summ.value_contributions())
    pd.testing.assert_frame_equal(full.record_ranking(), summ.record_ranking())
    np.testing.assert_array_equal(full.smallest_size(), summ.smallest_size())
    ones = full.value_tally(np.ones(codes.shape[1] + 1))  # the mask-by-mask tally agrees with the kernel's
    for a, b in zip(ones, summ.value_counts()):
        np.testing.assert_array_equal(a, b)
    # the distinct QI sets that are some record's MINUC, flagged by the kernel, are those of the masks
    distinct = np.unique(full.row_masks.astype(np.uint64))
    np.testing.assert_array_equal(full.combinations, distinct)
    np.testing.assert_array_equal(summ.combinations, distinct)
    if full.complete:
        assert minimal_qids_from_minucs(summ) == minimal_qids_from_minucs(full)
    fj, sj = full.to_json(), summ.to_json()
    fj.pop("distinct"), fj.pop("seconds"), sj.pop("seconds")
    assert fj == sj


def test_beyond_the_flag_table_the_sets_come_from_the_masks():
    """Above 22 QIs the search flags no QI sets (a table of 2^q bytes would be too large): the counts are
    still tallied and the minimal violating sets are read off the masks."""
    rng = np.random.default_rng(9)
    codes = rng.integers(0, 2, size=(14, 26)).astype(np.int32)
    codes[:, 3:] = codes[:, [0, 1, 2] * 7 + [0, 1]]
    res = find_minucs(codes, k=2, missing="category", max_size=3)
    assert res.combinations is None
    summ = summarize_minucs(codes, k=2, missing="category", max_size=3)
    assert summ.combinations is None and summ.totals_by_size() == res.totals_by_size()
    np.testing.assert_array_equal(summ.counts_by_size(), _tallies_from_lists(as_sets(res, 14), 26)[0])
    full = find_minucs(codes, k=2, missing="category")
    sets = minimal_qids_from_minucs(full)
    assert full.combinations is None and sets  # some set violates k = 2
    brute = brute_force_minucs(codes[:, :3], 2, "category")  # columns 3.. repeat columns 0..2
    assert min(len(s) for s in sets) == min(bin(m).count("1") for ms in brute for m in ms)


@settings(max_examples=60, deadline=None)
@given(arrays(np.int32, st.tuples(st.integers(2, 40), st.integers(1, 5)), elements=st.integers(-1, 2)),
       st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.sampled_from([None, 2]))
def test_minucs_of_a_class_table_are_those_of_its_records(codes, k, missing, max_size):
    """A class table (a file aggregated by an engine) gives the records' counts: totals, by size, records
    concerned, per QI and per value, and the QI sets that are some record's MINUC."""
    from kanon_core.classtable import ClassTable
    from kanon_core.errors import InputError
    from kanon_core.risk.minucs import estimate_cost_of_table, summarize_minucs, summarize_minucs_of_table

    try:
        ref = summarize_minucs(codes, k, missing, max_size)
    except InputError:
        return
    table = ClassTable.from_codes(codes)
    got = summarize_minucs_of_table(table, k, missing, max_size)
    assert got.n_records == ref.n_records == len(codes)
    assert got.total == ref.total and got.totals_by_size() == ref.totals_by_size()
    assert got.records_with_minucs() == ref.records_with_minucs()
    pd.testing.assert_frame_equal(got.variable_contributions(), ref.variable_contributions())
    # per QI, the MINUC counts of its values (the table may number a QI's values its own way)
    assert sorted((j, v) for j, _, _, v in got.value_rows(got.value_counts(), None)) == \
        sorted((j, v) for j, _, _, v in ref.value_rows(ref.value_counts(), None))
    assert np.array_equal(got.combinations, ref.combinations)
    assert got.complete == ref.complete
    est = estimate_cost_of_table(table, k, missing, max_size, sample=len(codes))  # every class: exact count
    assert est.minucs == ref.total and est.n_records == len(codes) and est.n_distinct_rows == table.n_classes


def test_the_memory_forecast_is_what_the_search_keeps():
    """With every distinct row sampled, the forecast memory is the bytes the full search holds: masks at 4
    bytes each (up to 32 QIs), offsets, tallies, rows and each record's row."""
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, size=(400, 8)).astype(np.int32)
    est = estimate_cost(codes, 2, "category", sample=400, method="pairs")
    res = find_minucs(codes, 2, "category", method="pairs")
    kept = sum(a.nbytes for a in (res.row_masks, res.row_offsets, res.row_sizes, res.row_qis, res.rows,
                                  res.row_of_record))
    assert res.row_masks.itemsize == 4 and len(res.row_masks) > 100
    assert 0.95 * kept <= est.memory_bytes <= 1.05 * kept
