"""The MINUC estimate within a time budget (``budget_seconds``): a page waits for it, and with 40 QIs the sampled
search alone can take minutes. Within the budget it is the estimate made without one, figure for figure; when
the budget runs out it says only what it knows: unknown (infinite) figures and lower bounds of them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.errors import InputError
from kanon_core.risk.minucs import estimate_cost, estimate_cost_of_table, find_minucs, minuc_rows

NO_LIMIT = 3600.0  # a budget no test table comes near
SAME = ("n_records", "n_distinct_rows", "sampled_rows", "minucs", "memory_bytes", "method")


@st.composite
def tables(draw, max_n=40, max_q=8, max_card=4):
    n = draw(st.integers(2, max_n))
    q = draw(st.integers(1, max_q))
    card = draw(st.integers(1, max_card))
    return draw(arrays(np.int32, (n, q), elements=st.integers(-1, card - 1)))


def _same(a, b) -> None:
    for name in SAME:
        assert getattr(a, name) == getattr(b, name), name
    assert a.at_least is None and b.at_least is None
    assert math.isfinite(a.seconds) and a.seconds >= 0


@settings(max_examples=60, deadline=None)
@given(tables(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.sampled_from([None, 1, 2]),
       st.sampled_from([5, 200]), st.booleans())
def test_within_its_budget_the_estimate_is_the_one_made_without(codes, k, missing, max_size, sample, keep):
    """The sample searched in parts (the first row size by size, then doubling numbers of rows) gives every
    figure of the single search: the same MINUCs, memory and rows sampled (the seconds are timed)."""
    if len(codes) < k:
        return
    whole = estimate_cost(codes, k, missing, max_size, sample=sample, keep=keep)
    within = estimate_cost(codes, k, missing, max_size, sample=sample, keep=keep, budget_seconds=NO_LIMIT)
    _same(within, whole)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forty_qis_within_the_budget_give_the_same_estimate(seed):
    """Above 32 QIs (64-bit masks) and with rows below k after rows at or above it, on a few random files."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 2, size=(40, 40)).astype(np.int32)
    codes[::3] = codes[0]  # a class of 14 identical records: safe rows among the sampled ones
    for k in (2, 3):
        whole = estimate_cost(codes, k, sample=30)
        _same(estimate_cost(codes, k, sample=30, budget_seconds=NO_LIMIT), whole)


def test_the_estimate_of_a_class_table_within_its_budget_is_the_same():
    from kanon_core.classtable import ClassTable

    rng = np.random.default_rng(7)
    table = ClassTable.from_codes(rng.integers(0, 4, size=(300, 5)).astype(np.int32))
    whole = estimate_cost_of_table(table, 3, "wildcard", sample=50)
    _same(estimate_cost_of_table(table, 3, "wildcard", sample=50, budget_seconds=NO_LIMIT), whole)


def _first_row_below_k(codes: np.ndarray, k: int, missing: str) -> tuple[int, int]:
    """The first distinct row (in order of first appearance) whose class is smaller than k: its first record
    and its number of records."""
    rows = minuc_rows(codes, missing)
    j = int(np.flatnonzero(rows.fk < k)[0])
    return int(np.flatnonzero(rows.col.row_of_record == j)[0]), int(rows.col.mult[j])


@settings(max_examples=60, deadline=None)
@given(tables(max_n=30, max_q=6), st.integers(2, 3), st.sampled_from(["wildcard", "category"]))
def test_a_spent_budget_gives_lower_bounds_of_the_estimate(codes, k, missing):
    """With no time at all, only the first sampled row below k is searched, for MINUCs of size 1: every row
    is sampled, so the bound on the MINUCs is exactly that row's MINUCs of size 1 times its records, and no
    bound exceeds the estimate made without a budget. The figures that depend on the search are unknown."""
    if len(codes) < k:
        return
    whole = estimate_cost(codes, k, missing, sample=len(codes))
    cut = estimate_cost(codes, k, missing, sample=len(codes), budget_seconds=0)
    assert cut.sampled_rows == whole.sampled_rows == whole.n_distinct_rows  # every distinct row
    if cut.at_least is None:  # the first search was the whole sample (e.g. every row at or above k)
        _same(cut, whole)
        return
    bound = cut.at_least
    assert math.isinf(cut.seconds) and math.isinf(cut.minucs) and math.isinf(cut.memory_bytes)
    assert bound.budget_seconds == 0 and bound.rows_searched < cut.sampled_rows
    record, mult = _first_row_below_k(codes, k, missing)
    size_one = int(find_minucs(codes, k, missing, max_size=1).per_record_counts[record])
    assert bound.minucs == size_one * mult
    assert bound.minucs <= whole.minucs and bound.memory_bytes <= whole.memory_bytes
    assert math.isfinite(bound.seconds) and bound.seconds >= 0


def test_a_spent_budget_keeps_what_does_not_depend_on_the_search():
    """A search that drops the masks holds a memory known without the sample: it stays an estimate."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, size=(200, 12)).astype(np.int32)
    whole = estimate_cost(codes, 3, keep=False)
    cut = estimate_cost(codes, 3, keep=False, budget_seconds=0)
    assert cut.at_least is not None and math.isinf(cut.minucs) and math.isinf(cut.seconds)
    assert cut.memory_bytes == cut.at_least.memory_bytes == whole.memory_bytes


@pytest.mark.parametrize("budget", [-1.0, float("nan")])
def test_a_budget_below_zero_is_refused(budget):
    codes = np.array([[0, 1], [1, 0], [1, 1]], dtype=np.int32)
    with pytest.raises(InputError, match="time budget"):
        estimate_cost(codes, budget_seconds=budget)
