"""The fast paths of local suppression give exactly what the plain ones give.

* the vectorised scan of the record-wise solver (``scan_row_fast``) against the row-by-row scan;
* the greedy classes remembered within a run (``GreedyMemo``) against a fresh build;
* the greedy's pattern loop with the near-record lists against the loop without them and its numpy twin;
* strict suppression under wildcard missing values with many QIs, where the candidate classes are not
  listed, still recounts every class at k and keeps its bound below the cost.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.treat.suppress import GreedyMemo, suppress
from kanon_core.treat.suppress_bits import mask_cost
from kanon_core.treat.suppress_category import category_suppress
from kanon_core.treat.suppress_direct import (
    SCAN_NEAR,
    code_columns,
    scan_row,
    scan_row_fast,
    solve_pairs,
    solve_sos,
)
from tests.reference.protection import strict_counts


@st.composite
def tables(draw, min_n=2, max_n=3 * SCAN_NEAR + 10, max_q=6, max_card=3):
    n = draw(st.integers(min_n, max_n))
    q = draw(st.integers(1, max_q))
    codes = draw(arrays(np.int32, (n, q), elements=st.integers(-1, max_card - 1)))
    costs = np.array(draw(st.lists(st.sampled_from([0.1, 0.5, 1.0, 2.0, 3.0]), min_size=q, max_size=q)))
    protected = draw(st.lists(st.booleans(), min_size=q, max_size=q))
    k = draw(st.integers(2, 6))
    return codes, costs, np.array(protected), k


@given(tables())
def test_fast_scan_equals_row_by_row_scan(case):
    codes, costs, protected, k = case
    _assert_scans_agree(codes, costs, protected, k)


def _assert_scans_agree(codes, costs, protected, k, rows=None):
    """The row-by-row and the fast scan give the same candidates for every distinct row (or ``rows`` of them,
    spread evenly)."""
    uniq, mult = np.unique(codes, axis=0, return_counts=True)
    uniq = np.ascontiguousarray(uniq, dtype=np.int32)
    mult = mult.astype(np.int64)
    n = len(uniq)
    prot = np.uint64(sum(1 << v for v in np.flatnonzero(protected).tolist()))
    cols, bitvals = code_columns(uniq)
    for u in range(0, n, 1 if rows is None else max(1, n // rows)):
        a = [np.empty(n, np.uint64), np.empty(n), np.empty(n, np.int64)]
        b = [np.empty(n, np.uint64), np.empty(n), np.empty(n, np.int64)]
        got_a = scan_row(u, uniq, mult, costs, prot, k, *a)
        got_b = scan_row_fast(u, uniq, cols, mult, costs, prot, k, *b, np.empty(n, bitvals.dtype), bitvals)
        assert got_a == got_b
        nc = got_a[0]
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x[:nc], y[:nc])


@given(tables(min_n=3, max_n=30))
def test_greedy_memo_equals_fresh_build(case):
    codes, costs, _protected, k = case
    k = min(k, len(codes))  # feasible: nothing protected and at least k records
    X = np.where(codes < 0, 3, codes).astype(np.int32)
    protected = np.zeros(X.shape[1], dtype=bool)
    memo = GreedyMemo()
    fresh = category_suppress(X, costs, protected, k)
    for _ in range(2):  # the second call is a lookup
        got = memo(X, costs, protected, k, np.ones(X.shape, dtype=bool))
        assert np.array_equal(got[0], fresh[0]) and got[1] == fresh[1]
    force = np.zeros(len(X), dtype=bool)
    force[::2] = True
    assert np.array_equal(memo(X, costs, protected, k, None, force)[0],
                          category_suppress(X, costs, protected, k, None, force)[0])


@given(st.integers(0, 2**31 - 1), st.integers(2, 4))
def test_strict_wildcard_many_qis_recounts_at_k(seed, k):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, size=(60, 8)).astype(np.int32)
    codes[rng.random(codes.shape) < 0.1] = -1
    res = suppress(codes, k, model="strict", method="exact", missing="wildcard")
    assert min(strict_counts(codes, res.mask, "wildcard")) >= k
    assert res.lower_bound <= res.cost + 1e-9
    assert res.optimal == (res.lower_bound >= res.cost - 1e-9)
    greedy = suppress(codes, k, model="strict", method="greedy", missing="wildcard")
    assert res.cost <= greedy.cost + 1e-9


@st.composite
def candidate_masks(draw):
    q = draw(st.integers(1, 10))
    nc = draw(st.integers(1, 25))
    cd = draw(st.lists(st.integers(1, 2**q - 1), min_size=nc, max_size=nc))
    cm = draw(st.lists(st.integers(1, 3), min_size=nc, max_size=nc))
    costs = np.array(draw(st.lists(st.sampled_from([0.1, 0.3, 0.5, 1.0, 2.0, 3.0]), min_size=q, max_size=q)))
    return np.array(cd, dtype=np.uint64), np.array(cm, dtype=np.int64), costs


@given(candidate_masks())
def test_pairs_equal_the_subset_table_for_two_records(case):
    cd, cm, costs = case
    cd, idx = np.unique(cd, return_index=True)  # merged candidates: distinct masks
    cm = cm[idx]
    cc = np.array([mask_cost(x, costs) for x in cd])
    if cm.sum() < 2:
        return
    assert solve_pairs(cd, cc, cm, len(cd), costs) == solve_sos(cd, cm, len(cd), 2, costs)


def _placed_by_projection(X, placed, obs, patterns, k):
    """The pattern loop of the greedy classes written plainly with numpy (the compiled one's twin)."""
    from kanon_core.risk.keys import pack_rows

    X = X.copy()
    placed = placed.copy()
    for cols in patterns:
        if not (~placed).any():
            break
        cols = list(cols)
        todo = np.flatnonzero(~placed & obs[:, cols].all(axis=1))
        if len(todo) == 0:
            continue
        proj = X[todo].copy()
        proj[:, cols] = -1
        cand = np.flatnonzero(placed & (X[:, cols] < 0).all(axis=1))
        _, inv = np.unique(pack_rows(np.concatenate([proj, X[cand]])), return_inverse=True)
        inv = inv.reshape(-1)
        ok = np.bincount(inv)[inv[: len(todo)]] >= k
        X[todo[ok]] = proj[ok]
        placed[todo[ok]] = True
    return X, placed


@given(tables(min_n=2, max_n=40, max_q=7), st.integers(0, 2**31 - 1))
def test_compiled_pattern_loop_equals_numpy_twin(case, seed):
    from kanon_core.treat.suppress_category import _patterns, place_patterns

    codes, costs, protected, k = case
    rng = np.random.default_rng(seed)
    X = np.where(codes < 0, 3, codes).astype(np.int32)
    X[rng.random(X.shape) < 0.15] = -1  # cells suppressed by an earlier step
    placed = rng.random(len(X)) < 0.4
    obs = rng.random(X.shape) < 0.85
    free = [v for v in range(X.shape[1]) if not protected[v]]
    patterns = _patterns(free, costs)
    want_X, want_placed = _placed_by_projection(X, placed, obs, patterns, k)
    got_X, got_placed = X.copy(), placed.copy()
    bits = (obs * (1 << np.arange(X.shape[1]))).sum(axis=1).astype(np.uint64)
    masks = np.array([sum(1 << v for v in p) for p in patterns], dtype=np.uint64)
    place_patterns(got_X, got_placed, bits, masks, k)
    assert np.array_equal(got_X, want_X) and np.array_equal(got_placed, want_placed)


@given(tables(min_n=2, max_n=60, max_q=7), st.integers(0, 2**31 - 1))
def test_pattern_loop_with_near_lists_equals_loop_without(case, seed):
    """Without suppressed cells in the input (the greedy's own calls), the patterns of up to three positions
    group only records with k - 1 near records inside them: the classes, so the result, are the same."""
    from kanon_core.treat.suppress_category import _patterns, place_patterns
    from kanon_core.treat.suppress_near import near_pairs

    codes, costs, protected, k = case
    rng = np.random.default_rng(seed)
    X = np.where(codes < 0, 2, codes).astype(np.int32)
    X[rng.random(len(X)) < 0.3] = X[0]  # some records alike, so that classes form
    placed = rng.random(len(X)) < 0.3
    obs = rng.random(X.shape) < 0.9
    free = [v for v in range(X.shape[1]) if not protected[v]]
    patterns = _patterns(free, costs)
    if not patterns:
        return
    masks = np.array([sum(1 << v for v in p) for p in patterns], dtype=np.uint64)
    bits = (obs * (1 << np.arange(X.shape[1]))).sum(axis=1).astype(np.uint64)
    want_X, want_placed = _placed_by_projection(X, placed, obs, patterns, k)
    for near in (False, True):
        got_X, got_placed = X.copy(), placed.copy()
        place_patterns(got_X, got_placed, bits, masks, k, near=near)
        assert np.array_equal(got_X, want_X) and np.array_equal(got_placed, want_placed)
    if X.shape[1] > 1:  # the lists were made (the path under test was taken)
        assert near_pairs(X, np.flatnonzero(~placed), min(3, X.shape[1] - 1)) is not None


@given(st.integers(SCAN_NEAR * 3, 400), st.integers(2, 10), st.integers(2, 5), st.integers(2, 6),
       st.integers(0, 2**31 - 1))
@settings(max_examples=40, deadline=None)
def test_fast_scan_equals_row_by_row_scan_far_from_the_row(n, q, card, k, seed):
    """Most rows lie beyond the near ones scanned one by one: the bound from the masks' sizes and the
    branch-free pass that keeps the rows under it give the row-by-row scan's candidates."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(-1, card, size=(n, q)).astype(np.int32)
    costs = rng.choice([0.1, 0.5, 1.0, 2.0, 3.0], size=q)
    protected = rng.random(q) < 0.15
    _assert_scans_agree(codes, costs, protected, k, rows=25)
