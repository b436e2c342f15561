"""The near pairs of the greedy strict classes: exactly the pairs of rows differing on at most m positions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.treat.suppress_near import near_pairs


def _brute(X: np.ndarray, rows: np.ndarray, m: int) -> set[tuple[int, int, int]]:
    out = set()
    for a in rows.tolist():
        for b in rows.tolist():
            if a == b:
                continue
            d = sum(1 << j for j in range(X.shape[1]) if X[a, j] != X[b, j])
            if bin(d).count("1") <= m:
                out.add((a, b, d))
    return out


@given(st.integers(2, 40), st.integers(1, 9), st.integers(1, 4), st.integers(0, 3), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_near_pairs_equal_comparing_every_pair(n, q, card, m, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, card, size=(n, q)).astype(np.int32)
    X[rng.random(n) < 0.3] = X[0]
    rows = np.flatnonzero(rng.random(n) < 0.7)
    got = near_pairs(X, rows, m)
    if m >= q:
        assert got is None
        return
    listed = {(a, int(b), int(d)) for a in range(n)
              for b, d in zip(got.to[got.off[a]:got.off[a + 1]], got.mask[got.off[a]:got.off[a + 1]], strict=True)}
    assert len(listed) == len(got.to)  # each pair listed once per direction
    assert listed == _brute(X, rows, m)
    assert got.m == m and len(got.off) == n + 1


def test_near_pairs_give_up_beyond_their_budget():
    X = np.zeros((50, 6), dtype=np.int32)  # all alike: 1,225 pairs to compare in any design
    assert near_pairs(X, np.arange(50), 2, budget=1_000) is None
    assert len(near_pairs(X, np.arange(50), 2).to) == 50 * 49
