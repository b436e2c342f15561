"""MINUCs carried over from an earlier search of the same records (kanon_core.risk.minucs_carry).

A search that carries must give exactly what a search from scratch gives, checked against brute force; the
stability argument itself is checked on disagreement sets; and a plan that lies is caught by the search.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import QIMatrix
from kanon_core.risk.minucs import MinucSummary, find_minucs, summarize_minucs
from kanon_core.risk.minucs_carry import CarryPlan, plan_carry, stable_records
from tests.reference.brute_force import brute_force_minucs
from tests.test_minucs import tables


@st.composite
def before_after(draw, max_n=30, max_q=6, max_card=4):
    """Codes, and the same records after a change of one of the kinds an officer makes."""
    before = draw(tables(max_n=max_n, max_q=max_q, max_card=max_card).filter(lambda c: len(c) >= 4))
    n, q = before.shape
    card = max(1, int(before.max()) + 1)
    after = before.copy()
    j = draw(st.integers(0, q - 1))
    kind = draw(st.sampled_from(["merge", "renumber", "cells", "to_missing", "nothing"]))
    if kind == "merge":  # a global recode: two values become one
        a, b = draw(st.integers(0, card - 1)), draw(st.integers(0, card - 1))
        after[:, j] = np.where(after[:, j] == b, a, after[:, j])
    elif kind == "renumber":  # the same partition under other codes
        perm = np.array(draw(st.permutations(list(range(card)))), dtype=np.int32)
        col = after[:, j]
        after[:, j] = np.where(col >= 0, perm[np.maximum(col, 0)], -1)
    elif kind == "cells":  # arbitrary cells changed (a local recode)
        for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):
            after[i, j] = draw(st.integers(-1, card - 1))
    elif kind == "to_missing":  # a suppression
        for i in draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3)):
            after[i, j] = -1
    return before, after


def _row_sets(res) -> list[set[int]]:
    return [{int(m) for m in res.masks_of(r)} for r in range(res.n_records)]


def _same(a, b) -> None:
    """The two results agree on every row's MINUCs, every tally and the QI sets found."""
    assert _row_sets(a) == _row_sets(b)
    assert np.array_equal(a.row_sizes, b.row_sizes) and np.array_equal(a.row_qis, b.row_qis)
    assert np.array_equal(a.row_mult, b.row_mult) and np.array_equal(a.row_of_record, b.row_of_record)
    assert np.array_equal(a.row_offsets, b.row_offsets)
    assert (a.combinations is None) == (b.combinations is None)
    if a.combinations is not None:
        assert np.array_equal(a.combinations, b.combinations)
    assert a.complete == b.complete and a.total == b.total


@settings(max_examples=300, deadline=None)
@given(before_after(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_a_carrying_search_equals_brute_force_and_a_fresh_search(pair, k, missing):
    before, after = pair
    prior = find_minucs(before, k=k, missing=missing)
    plan = plan_carry(prior, before, after, k, missing, None)
    assert plan is not None
    res = find_minucs(after, k=k, missing=missing, carry=plan)
    assert _row_sets(res) == brute_force_minucs(after, k, missing)
    _same(res, find_minucs(after, k=k, missing=missing))
    if np.array_equal(before, after):
        assert plan.records_searched == 0 and res.rows_carried == len(res.row_mult)


def _disagreements(codes: np.ndarray, u: int, missing: str) -> list[tuple[bool, ...]]:
    """D(u, w) for every w, as the module defines it (brute force)."""
    out = []
    for w in range(len(codes)):
        if missing == "category":
            out.append(tuple(bool(x != y) for x, y in zip(codes[u], codes[w])))
        else:
            out.append(tuple(bool(x >= 0 and y >= 0 and x != y) for x, y in zip(codes[u], codes[w])))
    return out


@settings(max_examples=300, deadline=None)
@given(before_after(), st.sampled_from(["wildcard", "category"]))
def test_a_stable_record_keeps_every_disagreement_set(pair, missing):
    before, after = pair
    stable = stable_records(before, after, missing)
    for u in np.flatnonzero(stable):
        assert _disagreements(before, u, missing) == _disagreements(after, u, missing)
        if missing == "wildcard":  # its missing QIs, never in its combinations, are the same too
            assert np.array_equal(before[u] < 0, after[u] < 0)


def test_a_merge_searches_only_the_records_it_touched():
    before = np.array([[0, 0], [1, 0], [2, 1], [3, 1], [0, 1], [1, 1]], dtype=np.int32)
    after = before.copy()
    after[:, 0] = np.where(after[:, 0] == 3, 2, after[:, 0])  # 2 and 3 merged
    assert stable_records(before, after, "category").tolist() == [True, True, False, False, True, True]
    renumbered = before.copy()
    renumbered[:, 0] = 3 - renumbered[:, 0]
    assert stable_records(before, renumbered, "wildcard").all()


def test_a_new_missing_value_under_wildcard_searches_everything():
    before = np.array([[0, 0], [1, 0], [2, 1], [3, 1]], dtype=np.int32)
    after = before.copy()
    after[3, 0] = -1
    assert not stable_records(before, after, "wildcard").any()
    # under category semantics missing is a value: record 3 is alone in its block before and after
    assert stable_records(before, after, "category").all()
    after[2, 0] = -1  # now 2 and 3 share the missing block
    assert stable_records(before, after, "category").tolist() == [True, True, False, False]


def test_a_prior_for_another_question_is_not_used():
    codes = np.array([[0, 0], [1, 0], [2, 1], [3, 1], [0, 1]], dtype=np.int32)
    prior = find_minucs(codes, k=2)
    assert plan_carry(prior, codes, codes, 3, "wildcard", None) is None  # another k
    assert plan_carry(prior, codes, codes, 2, "category", None) is None  # other semantics
    assert plan_carry(prior, codes, codes, 2, "wildcard", 1) is None  # a size limit
    assert plan_carry(prior, codes, codes[:4], 2, "wildcard", None) is None  # other records
    qm = QIMatrix(names=("a", "b"), codes=codes, values=((0, 1, 2, 3), (0, 1)), labels=(("0", "1", "2", "3"), ("0", "1")))
    assert plan_carry(prior, codes, qm, 2, "wildcard", None) is None  # other QI names
    cut = find_minucs(codes, k=2, max_size=1)
    assert not cut.complete and plan_carry(cut, codes, codes, 2, "wildcard", 1) is None
    # a plan handed to a search of another k is ignored, not trusted
    plan = plan_carry(prior, codes, codes, 2, "wildcard", None)
    res = find_minucs(codes, k=3, carry=plan)
    assert res.rows_carried == 0 and _row_sets(res) == brute_force_minucs(codes, 3, "wildcard")


@settings(max_examples=200, deadline=None)
@given(before_after(max_n=14), st.integers(2, 3), st.sampled_from(["wildcard", "category"]))
def test_a_plan_that_lies_is_caught(pair, k, missing):
    """Every record said stable although the codes changed: the search's spot check re-searches the carried
    rows (all of them in a file this small) and, on any difference, searches every row."""
    before, after = pair
    prior = find_minucs(before, k=k, missing=missing)
    lie = CarryPlan(prior=prior, prior_row=prior.row_of_record.copy())
    res = find_minucs(after, k=k, missing=missing, carry=lie)
    assert _row_sets(res) == brute_force_minucs(after, k, missing)
    _same(res, find_minucs(after, k=k, missing=missing))


def test_carrying_on_many_qis_keeps_the_masks_exact():
    """Above the flag table's QIs (no combinations flagged) and with 64-bit masks."""
    rng = np.random.default_rng(3)
    before = rng.integers(0, 3, size=(40, 34)).astype(np.int32)
    after = before.copy()
    after[:, 7] = np.where(after[:, 7] == 2, 1, after[:, 7])
    prior = find_minucs(before, k=2)
    plan = plan_carry(prior, before, after, 2, "wildcard", None)
    assert plan is not None and 0 < plan.records_searched < len(before)
    res = find_minucs(after, k=2, carry=plan)
    assert res.combinations is None and res.rows_carried > 0
    _same(res, find_minucs(after, k=2))


@settings(max_examples=150, deadline=None)
@given(before_after(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_carried_counts_equal_counts_from_scratch(pair, k, missing):
    """The counts-only search (the report's) carries the tallies and the QI sets found."""
    before, after = pair
    plan = plan_carry(find_minucs(before, k=k, missing=missing), before, after, k, missing, None)
    got = summarize_minucs(after, k=k, missing=missing, carry=plan)
    ref = summarize_minucs(after, k=k, missing=missing)
    assert np.array_equal(got.row_sizes, ref.row_sizes) and np.array_equal(got.row_qis, ref.row_qis)
    assert np.array_equal(got.combinations, ref.combinations) and got.complete == ref.complete
    counts = find_minucs(before, k=k, missing=missing).counts_only()
    assert type(counts) is MinucSummary and counts.total == find_minucs(before, k=k, missing=missing).total


@settings(max_examples=150, deadline=None)
@given(before_after(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_the_estimate_with_a_carry_samples_the_rows_searched_and_counts_the_carried(pair, k, missing):
    """With a sample as large as the rows searched again, the estimate's MINUCs are exact: the searched rows'
    counted by the sample, the carried rows' taken as they were; it samples only the rows the search searches,
    and forecasts no time when there are none. Its MINUCs and memory are those of the estimate without a
    carry."""
    from kanon_core.risk.minucs import estimate_cost

    before, after = pair
    prior = find_minucs(before, k=k, missing=missing)
    plan = plan_carry(prior, before, after, k, missing, None)
    est = estimate_cost(after, k=k, missing=missing, carry=plan, sample=10_000)
    carried = find_minucs(after, k=k, missing=missing, carry=plan)
    assert est.minucs == carried.total
    assert est.sampled_rows == len(carried.row_mult) - carried.rows_carried  # the rows the search searched
    whole = estimate_cost(after, k=k, missing=missing, sample=10_000)
    assert whole.minucs == est.minucs and whole.memory_bytes == est.memory_bytes
    if plan.records_searched == 0:
        assert est.sampled_rows == 0 and est.seconds == 0


@settings(max_examples=150, deadline=None)
@given(before_after(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_prepared_rows_are_used_only_for_the_codes_they_were_made_from(pair, k, missing):
    """A search handed the distinct rows and class sizes made already gives what it finds without them; rows
    made from other codes or under the other semantics are not used (the result is still exact)."""
    from kanon_core.risk.minucs import minuc_rows

    before, after = pair
    fresh = find_minucs(after, k=k, missing=missing)
    _same(find_minucs(after, k=k, missing=missing, rows=minuc_rows(after, missing)), fresh)
    other = "category" if missing == "wildcard" else "wildcard"
    _same(find_minucs(after, k=k, missing=missing, rows=minuc_rows(before, missing)), fresh)
    _same(find_minucs(after, k=k, missing=missing, rows=minuc_rows(after, other)), fresh)
    counts = summarize_minucs(after, k=k, missing=missing, rows=minuc_rows(after, missing))
    assert counts.total == fresh.total and np.array_equal(counts.row_sizes, fresh.row_sizes)
    rows = minuc_rows(after, missing)
    assert rows.fits(after, missing) and rows.fits(after.copy(), missing) and not rows.fits(after, other)
