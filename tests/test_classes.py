"""Class sizes fk/Fk against a brute-force count, under both missing semantics and both exact methods."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.risk.classes import class_sizes, compute_class_sizes
from kanon_core.risk.keys import group_ids, pack_rows
from tests.reference.brute_force import brute_force_class_sizes


@st.composite
def code_tables(draw, max_n=25, max_q=5, max_card=4):
    n = draw(st.integers(1, max_n))
    q = draw(st.integers(1, max_q))
    codes = draw(arrays(np.int32, (n, q), elements=st.integers(-1, max_card - 1)))
    weights = draw(arrays(np.float64, n, elements=st.floats(0.1, 50.0)))
    return codes, weights


@given(code_tables(), st.sampled_from(["wildcard", "category"]), st.sampled_from(["pairs", "scan", "auto"]))
def test_matches_brute_force(table, missing, method):
    codes, weights = table
    fk_ref, Fk_ref = brute_force_class_sizes(codes, missing, weights)
    res = compute_class_sizes(codes, missing, weights, method=method)
    np.testing.assert_array_equal(res.fk, fk_ref)
    np.testing.assert_allclose(res.Fk, Fk_ref, rtol=1e-12)


def test_hand_example_wildcard_vs_category():
    # rows: (1,1) (1,-) (2,1) (1,1)
    codes = np.array([[1, 1], [1, -1], [2, 1], [1, 1]], dtype=np.int32)
    # wildcard: (1,1) matches itself, the other (1,1) and (1,-) -> 3; (1,-) matches 3 records (incl. itself)
    np.testing.assert_array_equal(class_sizes(codes, "wildcard"), [3, 3, 1, 3])
    np.testing.assert_array_equal(class_sizes(codes, "category"), [2, 1, 1, 2])
    np.testing.assert_allclose(class_sizes(codes, "wildcard", weights=np.array([1.0, 2.0, 4.0, 8.0])), [11, 11, 4, 11])


def test_all_missing_column_matches_everything_under_wildcard():
    codes = np.array([[0, -1], [1, -1], [0, -1]], dtype=np.int32)
    np.testing.assert_array_equal(class_sizes(codes, "wildcard"), [2, 1, 2])
    np.testing.assert_array_equal(class_sizes(codes, "category"), [2, 1, 2])


def test_pack_rows_exact_beyond_64_bits():
    rng = np.random.default_rng(0)
    codes = rng.integers(-1, 5000, size=(3000, 12)).astype(np.int32)  # radix product far above 2^63
    codes[1500:] = codes[:1500]  # force duplicates
    gid, counts = group_ids(codes)
    _, ref_inv, ref_counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    assert len(counts) == len(ref_counts)
    # same partition: each of our groups maps to exactly one reference group
    pairs = {(a, b) for a, b in zip(gid, ref_inv.reshape(-1))}
    assert len(pairs) == len(counts)
    assert pack_rows(codes[:0]).shape == (0,)


def test_input_order_is_kept():
    codes = np.array([[3], [1], [3], [2], [3]], dtype=np.int32)
    np.testing.assert_array_equal(class_sizes(codes, "category"), [3, 1, 3, 1, 3])


def test_rejects_bad_semantics():
    from kanon_core.errors import InputError

    with pytest.raises(InputError):
        compute_class_sizes(np.zeros((2, 1), np.int32), "nonsense")  # type: ignore[arg-type]


def test_both_methods_agree_on_the_wildcard_split_of_a_larger_table():
    """Thousands of rows, many missing patterns, multi-threaded scan: the split parts agree exactly."""
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, size=(4000, 6)).astype(np.int32)
    codes[rng.random(codes.shape) < 0.2] = -1
    w = rng.uniform(1, 9, 4000)
    a = compute_class_sizes(codes, "wildcard", w, method="pairs", wildcard_split=True)
    b = compute_class_sizes(codes, "wildcard", w, method="scan", wildcard_split=True)
    np.testing.assert_array_equal(a.fk_all, b.fk_all)
    np.testing.assert_array_equal(a.fk_wild, b.fk_wild)
    np.testing.assert_allclose(a.Fk_wild, b.Fk_wild, rtol=1e-12)
    assert (a.fk_wild > 0).any() and (a.fk_strict > 0).all()
    np.testing.assert_allclose(a.at_alpha(0.3).fk, b.at_alpha(0.3).fk)
    # a sample of records against the brute-force rule
    sub = codes[:300]
    fk_ref, Fk_ref = brute_force_class_sizes(sub, "wildcard", w[:300], alpha=0.3)
    res = compute_class_sizes(sub, "wildcard", w[:300], method="scan", alpha=0.3)
    np.testing.assert_allclose(res.fk, fk_ref, atol=1e-9)
    np.testing.assert_allclose(res.Fk, Fk_ref, rtol=1e-12)


@given(code_tables(max_n=40, max_q=6, max_card=5), st.booleans(), st.integers(0, 3))
def test_packed_pattern_joins_equal_the_row_joins_exactly(table, split, widen):
    """The pattern joins on 64-bit packed keys give the very sums of the joins on the rows (integers equal,
    weights bit for bit: the same additions in the same order), for codes that fit in 64 bits; wider codes
    take the row joins."""
    import kanon_core.risk.classes as classes

    codes, weights = table
    codes = codes.copy()
    if widen:  # large codes in some columns: fields up to 31 bits wide, sometimes more than 64 in all
        big = codes[:, :widen] >= 0
        codes[:, :widen][big] += np.int32(2**30 - 8)
    miss = codes < 0
    mult = np.arange(1, len(codes) + 1, dtype=np.int64)
    fields = classes.packed_fields(codes)
    if widen == 0:
        assert fields is not None  # six fields of at most 3 bits
    if widen == 3 and codes.shape[1] >= 3 and (codes[:, :3] >= 0).any(axis=0).all():
        assert fields is None  # three fields of 31 bits
    got = classes._wildcard_by_pattern_pairs(codes, miss, mult, weights, split)
    real = classes.packed_fields
    try:
        classes.packed_fields = lambda _: None
        want = classes._wildcard_by_pattern_pairs(codes, miss, mult, weights, split)
    finally:
        classes.packed_fields = real
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    grouped = classes._grouped_by_pattern(codes, mult, weights)  # the compiled grouping: the same sums again
    assert (grouped is None) == (fields is None)
    if grouped is not None:
        for g, w in zip(classes.join_pattern_groups(grouped, mult, weights, split), got, strict=True):
            np.testing.assert_array_equal(g, w)
    uniq_rows = len(np.unique(codes, axis=0)) == len(codes)
    if uniq_rows:  # the joins count distinct rows: a brute force on the rows with their multiplicities
        expanded = np.repeat(codes, mult, axis=0)
        fk_ref, _ = brute_force_class_sizes(expanded, "wildcard", np.ones(len(expanded)))
        np.testing.assert_array_equal(got[0], fk_ref[np.cumsum(mult) - 1])
