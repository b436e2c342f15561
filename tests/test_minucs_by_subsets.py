"""MINUCs of a class table by counting every QI subset: brute force, the pairwise search, and the choice."""

from __future__ import annotations

import threading
from itertools import combinations
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.classtable import ClassTable
from kanon_core.errors import Cancelled, InputError
from kanon_core.progress import Progress
from kanon_core.risk import minucs_by_subsets as by_subsets
from kanon_core.risk.minucs import summarize_minucs_of_table
from kanon_core.risk.minucs_by_subsets import (
    choose_method,
    n_searched,
    subset_plan,
    summarize_minucs_by_subsets,
    visit_count,
)
from tests.reference.brute_force import brute_force_minucs

CODES = arrays(np.int32, st.tuples(st.integers(2, 40), st.integers(1, 6)), elements=st.integers(-1, 2))


def _table(codes: np.ndarray) -> ClassTable:
    return ClassTable.from_codes(codes)


@settings(max_examples=150, deadline=None)
@given(CODES, st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.sampled_from([None, 1, 2, 3]),
       st.sampled_from([64, 6, 0]), st.sampled_from([1, 2]))
def test_every_record_gets_its_brute_force_minucs(codes, k, missing, max_size, key_bits, workers):
    """Per record (through its class): the MINUCs by size and by QI, and the QI sets that are some record's
    MINUC, equal those found by counting every subset for every record (tests/reference). ``key_bits``
    forces tables held as codes (0), packed keys (64) or codes first and keys further down (6); the
    subtrees run on one or two threads."""
    if len(codes) < k:
        return
    table = _table(codes)
    with patch.object(by_subsets, "KEY_BITS", key_bits):
        got = summarize_minucs_by_subsets(table, k, missing, max_size, workers=workers)
    brute = brute_force_minucs(codes, k, missing, max_size)
    q = codes.shape[1]
    for r, masks in enumerate(brute):
        cls = table.record_class[r]
        sizes = np.bincount([bin(m).count("1") - 1 for m in masks], minlength=q)[:q]
        qis = np.array([sum((m >> j) & 1 for m in masks) for j in range(q)])
        np.testing.assert_array_equal(got.row_sizes[cls], sizes)
        np.testing.assert_array_equal(got.row_qis[cls], qis)
    assert got.total == sum(len(m) for m in brute)
    np.testing.assert_array_equal(got.combinations, np.array(sorted(set().union(*brute)), dtype=np.uint64))


@settings(max_examples=80, deadline=None)
@given(CODES, st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.integers(1, 3))
def test_complete_is_never_claimed_when_a_larger_minuc_exists(codes, k, missing, max_size):
    """``complete`` is a promise: True only when no record has a MINUC above the maximum size."""
    if len(codes) < k:
        return
    got = summarize_minucs_by_subsets(_table(codes), k, missing, max_size)
    larger = any(bin(m).count("1") > max_size for masks in brute_force_minucs(codes, k, missing) for m in masks)
    assert not (got.complete and larger)
    if max_size >= codes.shape[1]:
        assert got.complete


@settings(max_examples=60, deadline=None)
@given(CODES, st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.sampled_from([None, 2]))
def test_subsets_and_pairs_give_the_same_counts(codes, k, missing, max_size):
    """The two methods of ``summarize_minucs_of_table``: the same tallies per class, the same QI sets."""
    if len(codes) < k:
        return
    table = _table(codes)
    pairs = summarize_minucs_of_table(table, k, missing, max_size, method="pairs")
    subsets = summarize_minucs_of_table(table, k, missing, max_size, method="subsets")
    np.testing.assert_array_equal(subsets.row_sizes, pairs.row_sizes)
    np.testing.assert_array_equal(subsets.row_qis, pairs.row_qis)
    np.testing.assert_array_equal(subsets.combinations, pairs.combinations)
    assert subsets.max_size == pairs.max_size and subsets.n_records == pairs.n_records
    if pairs.complete is False:  # the subset search looks at no fewer sets at the limit
        assert subsets.complete is False


def _tree(q: int, limit: int) -> list[int]:
    """The masks the depth-first roll-up makes, by following its rule literally (the full set first)."""
    made: list[int] = []

    def visit(mask: int, m: int, rest: int) -> None:
        made.append(mask)
        if bin(mask).count("1") == 1:
            return
        for j in range(m - 1, -1, -1):
            if m - 1 - j + rest > limit:
                break
            visit(mask & ~(1 << j), j, m - 1 - j + rest)

    visit((1 << q) - 1, q, 0)
    return made


@pytest.mark.parametrize("q", [1, 2, 3, 5, 8])
def test_the_roll_up_tree_reaches_every_subset_once(q):
    for limit in range(1, q + 1):
        made = _tree(q, limit)
        assert len(made) == len(set(made)) == visit_count(q, limit)
        wanted = {sum(1 << j for j in c) for s in range(1, limit + 1) for c in combinations(range(q), s)}
        assert wanted <= set(made)
        assert all(m != 0 for m in made)


def test_the_plan_lists_every_subset_with_its_immediate_subsets():
    for q, limit in [(4, 4), (6, 2), (25, 2)]:
        plan = subset_plan(q, limit)
        assert len(plan.masks) == n_searched(q, limit) and (np.diff(plan.masks.astype(np.float64)) > 0).all()
        for i, m in enumerate(plan.masks.tolist()[:300]):
            below = sorted(plan.masks[plan.below[i][plan.below[i] >= 0]].tolist())
            expected = sorted(m & ~(1 << j) for j in range(q) if (m >> j) & 1) if bin(m).count("1") > 1 else []
            assert below == expected


def test_progress_reaches_every_table_and_cancel_stops():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 4, size=(400, 5)).astype(np.int32)
    for workers in (1, 2):
        seen: list[tuple[float, str, int]] = []
        progress = Progress(lambda f, m, seen=seen: seen.append((f, m, threading.get_ident())))
        summarize_minucs_by_subsets(_table(codes), 3, "wildcard", None, progress, workers=workers)
        assert seen[-1][0] == 1.0
        assert {t for _, _, t in seen} == {threading.get_ident()}  # told on the caller's thread only
        tables = [m for _, m, _ in seen if m.endswith(" tables")]
        assert tables[-1] == f"MINUCs by subsets: {visit_count(5, 5)} of {visit_count(5, 5)} tables"
        if workers == 1:
            assert len(tables) == visit_count(5, 5)
    progress = Progress()
    progress.cancel()
    with pytest.raises(Cancelled):
        summarize_minucs_by_subsets(_table(codes), 3, "wildcard", None, progress)
    box: list[Progress] = []  # a Cancel clicked while the subtrees run on two threads
    box.append(Progress(lambda f, m: box[0].cancel() if m.endswith(" tables") else None))
    with pytest.raises(Cancelled):
        summarize_minucs_by_subsets(_table(codes), 3, "wildcard", None, box[0], workers=2)


def test_flags_beyond_the_budget_are_refused_and_auto_falls_back(monkeypatch):
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 5, size=(300, 6)).astype(np.int32)
    table = _table(codes)
    monkeypatch.setattr(by_subsets, "BIT_BUDGET", 64)
    with pytest.raises(InputError, match="GiB of flags"):
        summarize_minucs_by_subsets(table, 2, "category")
    assert choose_method(10**7, 10**6, 6, 6) == "pairs"
    pairs = summarize_minucs_of_table(table, 2, "category", method="pairs")
    assert summarize_minucs_of_table(table, 2, "category", method="auto").total == pairs.total


def test_the_choice_follows_the_shape_of_the_table():
    # a census: millions of classes, 10 QIs -> count subsets; a survey: 16k records, 19 QIs -> pairs
    assert choose_method(3_527_855, 2_419_504, 10, 10, cores=2) == "subsets"
    assert choose_method(677_548, 593_258, 10, 2, cores=2) == "subsets"
    assert choose_method(16_197, 15_000, 19, 19, cores=2) == "pairs"
    assert choose_method(11_204, 9_000, 13, 13, cores=2) == "pairs"
    with pytest.raises(InputError, match="Unknown MINUC search method"):
        summarize_minucs_of_table(_table(np.zeros((3, 2), np.int32)), 2, method="fast")


def test_a_table_without_unsafe_classes_has_no_minucs():
    codes = np.repeat(np.array([[0, 1], [1, 0]], np.int32), 5, axis=0)
    got = summarize_minucs_by_subsets(_table(codes), 3, "wildcard")
    assert got.total == 0 and got.complete and len(got.combinations) == 0


def test_the_estimate_names_the_method_and_counts_its_flags():
    from kanon_core.risk.minucs import estimate_cost_of_table

    rng = np.random.default_rng(5)
    codes = rng.integers(0, 6, size=(2000, 5)).astype(np.int32)
    table = _table(codes)
    found = summarize_minucs_of_table(table, 3, "category", method="subsets")
    est = estimate_cost_of_table(table, 3, "category", method="subsets", sample=table.n_classes)
    assert est.method == "subsets" and est.seconds > 0 and est.minucs == found.total  # every class sampled
    n_unsafe = int((found.row_counts > 0).sum())
    assert est.memory_bytes >= table.n_classes * 5 * 16 + n_searched(5, 5) * ((n_unsafe + 63) // 64) * 8
    assert estimate_cost_of_table(table, 3, "category", method="pairs").method == "pairs"


@settings(max_examples=60, deadline=None)
@given(CODES, st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.sampled_from([None, 2]))
def test_the_records_counts_by_subsets_equal_the_pairwise_ones(codes, k, missing, max_size):
    """``summarize_minucs`` (the report's counts) on records: counting subsets on the distinct records gives
    every record the counts of the pairwise search, by size and by QI, and the same QI sets."""
    from kanon_core.risk.minucs import summarize_minucs

    if len(codes) < k:
        return
    names = [f"v{j}" for j in range(codes.shape[1])]
    pairs = summarize_minucs(codes, k, missing, max_size, names=names, method="pairs")
    subsets = summarize_minucs(codes, k, missing, max_size, names=names, method="subsets")
    assert subsets.method == "subsets" and pairs.method == "pairs" and subsets.names == pairs.names
    np.testing.assert_array_equal(subsets.counts_by_size(), pairs.counts_by_size())
    np.testing.assert_array_equal(subsets.row_qis[subsets.row_of_record], pairs.row_qis[pairs.row_of_record])
    np.testing.assert_array_equal(subsets.combinations, pairs.combinations)
    assert subsets.n_records == pairs.n_records == len(codes)
    for a, b in zip(subsets.value_counts(), pairs.value_counts(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_report_forecast_follows_the_method_it_will_run():
    """A file of many records and few QIs: the counts-only search and its forecast both count subsets."""
    from kanon_core.risk.minucs import estimate_cost, summarize_minucs

    rng = np.random.default_rng(9)
    codes = rng.integers(0, 12, size=(30_000, 6)).astype(np.int32)
    est = estimate_cost(codes, 3, "category", keep=False)
    found = summarize_minucs(codes, 3, "category")
    assert est.method == found.method == "subsets"
    assert estimate_cost(codes, 3, "category", method="pairs").method == "pairs"


@settings(max_examples=60, deadline=None)
@given(CODES, st.integers(2, 4), st.sampled_from(["wildcard", "category"]), st.sampled_from([None, 2]))
def test_every_minuc_kept_by_subsets_is_the_pairwise_one(codes, k, missing, max_size):
    """``find_minucs`` by counting subsets keeps, for every record, the very MINUCs of the pairwise search
    (as sets of QIs; ascending within a record), so the record view, the filter and SUDA read the same."""
    from kanon_core.risk.minucs import find_minucs

    if len(codes) < k:
        return
    pairs = find_minucs(codes, k, missing, max_size, method="pairs")
    subsets = find_minucs(codes, k, missing, max_size, method="subsets")
    assert subsets.method == "subsets" and subsets.n_distinct == pairs.n_distinct
    assert subsets.row_masks.dtype == pairs.row_masks.dtype
    for r in range(len(codes)):
        got = subsets.masks_of(r)
        assert (np.diff(got.astype(np.int64)) > 0).all()
        assert sorted(got.tolist()) == sorted(pairs.masks_of(r).tolist())
        assert subsets.combinations_of(r) == pairs.combinations_of(r)
    np.testing.assert_array_equal(subsets.count_containing(["q0"]), pairs.count_containing(["q0"]))
    for a, b in zip(subsets.value_tally(np.arange(codes.shape[1] + 1, dtype=np.float64)),
                    pairs.value_tally(np.arange(codes.shape[1] + 1, dtype=np.float64)), strict=True):
        np.testing.assert_allclose(a, b)
