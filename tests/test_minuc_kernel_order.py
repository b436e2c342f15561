"""The MINUC kernel searches a chunk's rows in the order of their codes, each row's disagreement masks made from
the last one's: the masks must be those made from scratch, and what the kernel returns must not depend on that
order (each row's MINUCs where the caller's order puts them)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.risk._minuc_kernel import (
    _disagreements,
    _redo_disagreements,
    _similar_rows_first,
    minucs_of_rows,
)
from kanon_core.risk.minucs import kernel_inputs


@st.composite
def code_rows(draw, max_rows: int = 14, max_qis: int = 6):
    """Rows of small codes with missing cells (-1), few enough values that rows share codes."""
    n = draw(st.integers(1, max_rows))
    q = draw(st.integers(1, max_qis))
    flat = draw(st.lists(st.integers(-1, 2), min_size=n * q, max_size=n * q))
    return np.array(flat, dtype=np.int32).reshape(n, q)


@settings(max_examples=150, deadline=None)
@given(rows=code_rows(), category=st.booleans(), data=st.data())
def test_masks_redone_from_another_rows_equal_masks_made_afresh(rows, category, data):
    cols, bitvals = kernel_inputs(rows)
    n = rows.shape[0]
    prev = data.draw(st.integers(0, n - 1))
    u = data.draw(st.integers(0, n - 1))
    fresh = np.empty(n, dtype=bitvals.dtype)
    _disagreements(cols[:, u], cols, category, fresh, bitvals)
    redone = np.empty(n, dtype=bitvals.dtype)
    _disagreements(cols[:, prev], cols, category, redone, bitvals)
    _redo_disagreements(cols[:, u], cols[:, prev], cols, category, redone, bitvals)
    assert redone.tolist() == fresh.tolist()
    # and against the definition, pair by pair
    for w in range(n):
        expected = 0
        for v in range(rows.shape[1]):
            x, y = int(rows[u, v]), int(rows[w, v])
            differ = x != y if category else (x >= 0 and y >= 0 and x != y)
            expected |= differ << v
        assert int(redone[w]) == expected


@settings(max_examples=100, deadline=None)
@given(rows=code_rows(max_rows=30), data=st.data())
def test_rows_are_searched_in_the_order_of_their_codes(rows, data):
    cols, _ = kernel_inputs(rows)
    n = rows.shape[0]
    which = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=0, max_size=2 * n)), dtype=np.int64)
    order = _similar_rows_first(cols, which)
    assert sorted(order.tolist()) == list(range(len(which)))
    picked = [tuple(rows[u].tolist()) for u in which[order]]
    assert picked == sorted(picked)


@settings(max_examples=80, deadline=None)
@given(rows=code_rows(max_rows=12, max_qis=5), category=st.booleans(), k=st.integers(2, 4), data=st.data())
def test_a_chunks_results_are_those_of_its_rows_searched_one_by_one(rows, category, k, data):
    cols, bitvals = kernel_inputs(rows)
    n, q = rows.shape
    mult = np.ones(n, dtype=np.int64)
    fk = np.zeros(n, dtype=np.int64)  # every row searched (a row with fk >= k would be skipped)
    which = np.array(data.draw(st.permutations(list(range(n)))), dtype=np.int64)
    counts, masks, complete, sizes, qis, flags = minucs_of_rows(cols, mult, fk, k, category, q, which, bitvals, True)
    at = 0
    seen: set[int] = set()
    for i, u in enumerate(which.tolist()):
        one = minucs_of_rows(cols, mult, fk, k, category, q, np.array([u], dtype=np.int64), bitvals, True)
        assert counts[i] == one[0][0]
        assert masks[at:at + counts[i]].tolist() == one[1].tolist()
        assert complete[i] == one[2][0]
        assert sizes[i].tolist() == one[3][0].tolist() and qis[i].tolist() == one[4][0].tolist()
        seen.update(one[5].tolist())
        at += counts[i]
    assert at == len(masks)
    assert sorted(flags.tolist()) == sorted(seen)
