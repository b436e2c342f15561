"""SUDA/DIS-SUDA scores (hand-computed from sdcMicro's suda2 definitions) and violating QID searches."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.errors import InputError
from kanon_core.risk.minucs import find_minucs, summarize_minucs
from kanon_core.risk.qid import minimal_qids_from_minucs, minimal_violating_qid, minimum_violating_qid
from kanon_core.risk.suda import size_weights, suda_scores, value_suda_contributions
from tests.reference.brute_force import brute_force_class_sizes, brute_force_minucs

# sdcMicro's own unit test data: a = (2,1,1), b = (0,3,0), c = (0,6,0); plus a duplicated pair.
SDC = np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0], [0, 1, 1], [0, 1, 1]], dtype=np.int32)


def test_size_weights_are_factorials_of_att_minus_size():
    w = size_weights(5)
    assert w.tolist() == [0.0, 24.0, 6.0, 2.0, 1.0, 1.0]


def test_suda_scores_and_contributions_by_hand():
    res = find_minucs(SDC, names=("a", "b", "c"), missing="category")
    suda = suda_scores(res, SDC)
    # record 0: MSU {a} -> (3-1)! = 2; record 1: {b}, {c} -> 4; record 2: {a,b}, {a,c} -> 1 + 1 = 2
    np.testing.assert_allclose(suda.score, [2, 4, 2, 0, 0])
    # sdcMicro's test expects the contributions 50, 37.5, 37.5 for a, b, c
    contrib = suda.variable_contributions.set_index("variable").contribution
    assert contrib["a"] == pytest.approx(50.0) and contrib["b"] == pytest.approx(37.5)
    assert contrib["c"] == pytest.approx(37.5)
    # per record: record 2's score 2 comes from {a,b} and {a,c}: a 100 %, b 50 %, c 50 %
    np.testing.assert_allclose(suda.contribution_percent[2], [100, 50, 50])
    np.testing.assert_allclose(suda.contribution_percent[3], [0, 0, 0])
    # DIS: U = 3 records unique on all keys, P = 2 records in a pair; f = 0.01
    assert (suda.n_unique, suda.n_pairs) == (3, 2)
    dis = 3 * 0.01 / (3 * 0.01 + 2 * 0.99)
    assert suda.dis == pytest.approx(dis)
    qexp = 1 + (8 - 3) / 20
    adj = 2 / 2**qexp + 1 / 4**qexp
    expected = [1 / (1 + (3 / dis - 3) / (s**qexp * adj)) if s else 0.0 for s in (2, 4, 2, 0, 0)]
    np.testing.assert_allclose(suda.dis_score, expected, rtol=1e-12)
    # attribute-level contributions add up to the variable contributions
    vals = value_suda_contributions(res, suda)
    by_var = vals.groupby("variable").contribution.sum()
    assert by_var["a"] == pytest.approx(50.0) and by_var["c"] == pytest.approx(37.5)
    assert vals.set_index(["variable", "code"]).contribution[("a", 1)] == pytest.approx(25.0)


def test_suda_column_order_does_not_matter():
    # sdcMicro's tests permute the columns and expect the same contributions
    res = find_minucs(SDC[:, [0, 2, 1]], names=("a", "c", "b"), missing="category")
    contrib = suda_scores(res).variable_contributions.set_index("variable").contribution
    assert (contrib["a"], contrib["b"], contrib["c"]) == pytest.approx((50.0, 37.5, 37.5))


def test_suda_needs_k2_and_a_valid_fraction():
    res = find_minucs(SDC, k=3, missing="category")
    with pytest.raises(InputError, match="k = 2"):
        suda_scores(res)
    with pytest.raises(InputError):
        suda_scores(find_minucs(SDC, missing="category"), dis_fraction=1.5)


# -- violating QIDs ---------------------------------------------------------------------------------------
@st.composite
def tables(draw):
    n = draw(st.integers(2, 18))
    q = draw(st.integers(1, 5))
    return draw(arrays(np.int32, (n, q), elements=st.integers(-1, draw(st.integers(0, 3)))))


def violates(codes, cols, k, missing):
    if not cols:
        return len(codes) < k
    fk, _ = brute_force_class_sizes(codes[:, list(cols)], missing)
    return bool((fk < k).any())


@given(tables(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_qid_searches_against_brute_force(codes, k, missing):
    if len(codes) < k:
        return
    q = codes.shape[1]
    all_sets = [c for s in range(1, q + 1) for c in combinations(range(q), s)]
    bad = [c for c in all_sets if violates(codes, c, k, missing)]
    minimal = sorted(c for c in bad if not any(violates(codes, sub, k, missing) for sub in combinations(c, len(c) - 1)))
    names = tuple(f"q{j}" for j in range(q))
    greedy = minimal_violating_qid(codes, k, missing, names=names)
    exact = minimum_violating_qid(codes, k, missing, names=names)
    if not bad:
        assert greedy.qis == () and exact.qis == ()
        return
    as_idx = lambda qis: tuple(int(n[1:]) for n in qis)  # noqa: E731
    assert as_idx(greedy.qis) in minimal
    assert len(exact.qis) == min(len(c) for c in minimal) and as_idx(exact.qis) in minimal
    from_minucs = minimal_qids_from_minucs(find_minucs(codes, k=k, missing=missing, names=names))
    assert sorted(as_idx(c) for c in from_minucs) == minimal
    # the smallest MINUC of any record has the minimum size
    smallest = min(bin(m).count("1") for ms in brute_force_minucs(codes, k, missing) for m in ms)
    assert smallest == len(exact.qis)


def test_seed_004_minimum_cover_example():
    # Yuan & Wang section 4.2: S = {a..e}, C = {c1={a,b,c}, c2={b,d}, c3={c,d}, c4={d,e}}; row i holds i in
    # column j when S[i] is in C[j], else the fresh symbol (0 here); plus the all-bottom row. The minimum
    # set of columns keeping every row distinct is {c1, c4}: a minimum cover.
    d = np.array([
        [1, 0, 0, 0],
        [2, 2, 0, 0],
        [3, 0, 3, 0],
        [0, 4, 4, 4],
        [0, 0, 0, 5],
        [0, 0, 0, 0],
    ], dtype=np.int32)
    names = ("c1", "c2", "c3", "c4")
    exact = minimum_violating_qid(d, 2, "category", names=names, criterion="identifying")
    assert exact.qis == ("c1", "c4")
    greedy = minimal_violating_qid(d, 2, "category", names=names, criterion="identifying")
    # dropping c2 then c3 keeps all rows distinct; c1 and c4 cannot go
    assert greedy.qis == ("c1", "c4")
    # under k-anonymity violation a single column already has a unique value
    assert len(minimum_violating_qid(d, 2, "category", names=names).qis) == 1


def test_exact_search_refuses_too_many_qis():
    with pytest.raises(InputError, match="exact search"):
        minimum_violating_qid(np.zeros((3, 30), np.int32), 2, max_qis=24)


def test_minimal_sets_need_a_complete_search():
    codes = np.array([[0, 1, 2], [0, 1, 3], [1, 1, 2]], dtype=np.int32)
    with pytest.raises(InputError, match="maximum size"):
        minimal_qids_from_minucs(find_minucs(codes, max_size=1, missing="category"))



@given(tables(), st.integers(2, 4), st.sampled_from(["wildcard", "category"]))
def test_minimal_sets_from_flagged_sets_equal_those_from_the_masks(codes, k, missing):
    """The minimal violating sets read off the QI sets the search flags (up to 22 QIs) are those read off
    every MINUC's mask (the path above 22 QIs), in the same order, and the counts-only search gives them too."""
    if len(codes) < k:
        return
    names = tuple(f"q{j}" for j in range(codes.shape[1]))
    res = find_minucs(codes, k=k, missing=missing, names=names)
    assert res.combinations is not None
    from_flags = minimal_qids_from_minucs(res)
    assert minimal_qids_from_minucs(replace(res, combinations=None)) == from_flags
    assert minimal_qids_from_minucs(summarize_minucs(codes, k=k, missing=missing, names=names)) == from_flags


def test_a_file_smaller_than_k_violates_with_no_quasi_identifier():
    """Two records and k = 3: every QI set violates, the empty one too; the minimum search started at one QI and
    returned one, larger than the minimal search's empty set, still called exact."""
    import numpy as np

    from kanon_core.risk.qid import minimal_violating_qid, minimum_violating_qid

    codes = np.array([[0, 1], [0, 1]], dtype=np.int32)
    assert minimal_violating_qid(codes, 3, "category").qis == ()
    found = minimum_violating_qid(codes, 3, "category")
    assert found.qis == () and found.exact
