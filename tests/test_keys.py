"""Grouping identical rows: the counting fast path gives exactly the sorted-key ids of np.unique."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.risk import keys
from kanon_core.risk.keys import group_ids, pack_rows


@given(st.integers(1, 60), st.integers(1, 5), st.integers(1, 2000), st.integers(0, 2**32 - 1))
@settings(max_examples=80, deadline=None)
def test_group_ids_equal_the_sorted_unique_of_the_rows(n, q, card, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(-1, card, size=(n, q)).astype(np.int32)
    ids, counts = group_ids(codes)
    _, inverse, ref_counts = np.unique(pack_rows(codes), return_inverse=True, return_counts=True)
    assert np.array_equal(ids, inverse.reshape(-1))
    assert np.array_equal(counts, ref_counts)
    rows = [tuple(r) for r in codes]
    for i in range(n):  # equal ids exactly for equal rows
        for j in range(n):
            assert (ids[i] == ids[j]) == (rows[i] == rows[j])


def test_both_paths_are_taken(monkeypatch):
    codes = np.array([[3, 1], [0, 0], [3, 1], [-1, 2]], dtype=np.int32)
    dense = group_ids(codes)
    monkeypatch.setattr(keys, "_DENSE_KEYS", 0)  # force the sorting path
    sorted_ = group_ids(codes)
    assert np.array_equal(dense[0], sorted_[0]) and np.array_equal(dense[1], sorted_[1])
    assert dense[1].tolist() == [1, 1, 2]


@given(st.integers(0, 60), st.integers(1, 6), st.integers(1, 3000), st.integers(0, 2**32 - 1))
@settings(max_examples=80, deadline=None)
def test_unique_rows_equal_numpy_unique_by_rows(n, q, card, seed):
    """The same unique rows, first indices, inverse and counts as ``np.unique(axis=0)``, for any integer codes
    (-2: suppressed) and key ranges that need re-densifying."""
    from kanon_core.risk.keys import unique_rows

    rng = np.random.default_rng(seed)
    codes = rng.integers(-2, card, size=(n, q)).astype(np.int32)
    if n:
        codes[rng.random(n) < 0.3] = codes[0]
    want = np.unique(codes, axis=0, return_index=True, return_inverse=True, return_counts=True)
    got = unique_rows(codes, return_index=True, return_inverse=True, return_counts=True)
    for w, g in zip(want, got, strict=True):
        assert np.array_equal(np.asarray(w).reshape(-1) if w.ndim < 2 else w, g)
    assert np.array_equal(unique_rows(codes), want[0])
