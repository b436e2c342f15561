"""Discernibility's bound from the levels (:mod:`kanon_core.treat.discernibility_bound`) against brute force.

The reference counts, at every node of small random lattices, the ordered pairs of records that match (the
discernibility without suppression) from generalized labels (:func:`tests.test_lattice.generalize`), sharing
no code with the pair count. The bound must never exceed it, must equal it with three QIs or fewer (every pair
then differs on at most three; two when the pairs differing on three are not counted), and must grow up the
lattice; the levels at which codes join, tabulated or walked, give the same bound.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.treat.discernibility_bound import discernibility_bound
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.lattice import build_problem, search_optimal
from tests.test_lattice import Case, cases, class_sizes, generalize


def exact_dm(case: Case, levels) -> int:
    """The records each record matches, summed: the matching ordered pairs, a record with itself included."""
    return sum(class_sizes(generalize(case, levels), case.missing))


def bound_of(case: Case, workers: int | None = None) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every node of the case's lattice and the bound at each."""
    problem = case.problem()
    nodes = list(itertools.product(*(range(h) for h in case.heights)))
    b = discernibility_bound(problem.class_table(), problem.tables, category=case.missing == "category",
                             workers=workers)
    assert b is not None
    return nodes, b.at(np.array(nodes))


@st.composite
def wider_cases(draw) -> Case:
    """Up to five QIs (pairs that differ on three or more exist), each with its own hierarchy."""
    base = draw(cases(max_nodes=96))
    extra = draw(st.integers(0, 1))
    if not extra:
        return base
    n = len(base.frame)
    m = draw(st.integers(1, 3))
    rows = {**base.rows, "q9": tuple((f"v{i}", f"g{i % 2}", "*") for i in range(m))}
    codes = draw(st.lists(st.integers(-1, m - 1), min_size=n, max_size=n))
    frame = base.frame.assign(q9=pd.Series([None if c < 0 else f"v{c}" for c in codes], dtype=object))
    return Case(frame, rows, base.missing, base.k)


@settings(max_examples=150, deadline=None)
@given(wider_cases(), st.booleans(), st.booleans())
def test_the_bound_never_exceeds_the_discernibility_and_grows_up_the_lattice(case, triples, tabulated):
    """With or without the pairs differing on three QIs (``TRIPLE_CELLS``), and with the levels at which codes
    join tabulated or walked (``MERGED_CODES``: the walked bound must be the tabulated one)."""
    from kanon_core.treat import discernibility_bound as module

    saved = module.TRIPLE_CELLS, module.MERGED_CODES
    module.TRIPLE_CELLS = saved[0] if triples else 0
    try:
        nodes, got = bound_of(case)
        module.MERGED_CODES = 0
        _, walked = bound_of(case)
    finally:
        module.TRIPLE_CELLS, module.MERGED_CODES = saved
    assert np.array_equal(got, walked)
    exact = {lv: exact_dm(case, lv) for lv in nodes}
    at = dict(zip(nodes, got, strict=True))
    for lv in nodes:
        assert at[lv] <= exact[lv] + 1e-9
        if len(case.qis) <= (3 if triples else 2):
            assert at[lv] == exact[lv]
        for j in range(len(lv)):  # one level up on one QI: never lower
            if lv[j] + 1 < case.heights[j]:
                up = lv[:j] + (lv[j] + 1,) + lv[j + 1:]
                assert at[up] >= at[lv]


@settings(max_examples=100, deadline=None)
@given(cases(max_nodes=64))
def test_with_two_qis_the_bound_is_the_discernibility_and_the_threads_shares_add_up(case):
    case = Case(case.frame[list(case.qis[:2])], {q: case.rows[q] for q in case.qis[:2]}, case.missing, case.k)
    nodes, one_thread = bound_of(case, workers=1)
    _, two_threads = bound_of(case, workers=2)
    assert np.array_equal(one_thread, np.array([exact_dm(case, lv) for lv in nodes], dtype=float))
    assert np.array_equal(one_thread, two_threads)


def test_the_pairs_differing_on_three_qis_are_left_out_beyond_their_budgets(monkeypatch):
    """Past the tallies or the lookups allowed (many QIs, many levels, a large lattice), the bound is the one from the
    pairs differing on two QIs or fewer: lower on a table where pairs differ on three QIs, never above the count."""
    from kanon_core.treat import discernibility_bound as module

    frame = pd.DataFrame({"q0": ["a", "b", "a"], "q1": ["x", "y", "x"], "q2": ["u", "w", "w"]}, dtype=object)
    rows = {q: ((v0, "*"), (v1, "*")) for q, (v0, v1) in zip(frame.columns, [("a", "b"), ("x", "y"), ("u", "w")])}
    case = Case(frame, rows, "wildcard", 2)
    nodes, full = bound_of(case)
    assert full[-1] == exact_dm(case, nodes[-1]) == 9  # every pair joined at the top, records 0 and 1 three QIs apart
    for name in ("TRIPLE_CELLS", "TRIPLE_LOOKUPS"):
        monkeypatch.setattr(module, name, 0)
        _, pairs_only = bound_of(case)
        monkeypatch.undo()
        assert pairs_only[-1] == 7 and (pairs_only <= full).all()


def test_the_pairs_by_where_they_differ_on_a_hand_counted_table():
    """Four records on four QIs (wildcard): 0 and 1 are (a, x, u, s), 2 is (b, y, w, t), 3 is (missing, x, u, s).
    Records 0, 1 and 3 differ nowhere (3 is missing q0); 2 differs from 3 on q1, q2 and q3, from 0 and 1 on all
    four."""
    frame = pd.DataFrame({"q0": ["a", "a", "b", None], "q1": ["x", "x", "y", "x"], "q2": ["u", "u", "w", "u"],
                          "q3": ["s", "s", "t", "s"]}, dtype=object)
    rows = {"q0": (("a", "ab", "*"), ("b", "ab", "*")), "q1": (("x", "*"), ("y", "*")),
            "q2": (("u", "*"), ("w", "*")), "q3": (("s", "*"), ("t", "*"))}
    case = Case(frame, rows, "wildcard", 2)
    nodes, got = bound_of(case)
    at = dict(zip(nodes, got, strict=True))
    # level 0 everywhere: records 0, 1, 3 match one another (9 ordered pairs) and record 2 itself
    assert at[(0, 0, 0, 0)] == exact_dm(case, (0, 0, 0, 0)) == 10
    # q1, q2 and q3 joined: the pair (2, 3), three QIs apart, matches and is counted
    assert at[(0, 1, 1, 1)] == exact_dm(case, (0, 1, 1, 1)) == 12
    # q1 and q2 joined, not q3: (2, 3) still differs
    assert at[(0, 1, 1, 0)] == exact_dm(case, (0, 1, 1, 0)) == 10
    # everything joined: every pair matches, but the four ordered pairs of 2 with 0 or 1 differ on four QIs
    assert at[(2, 1, 1, 1)] == exact_dm(case, (2, 1, 1, 1)) - 4 == 12


def test_the_search_with_the_bound_finds_the_optimum_it_finds_without_and_counts_fewer_nodes(monkeypatch):
    """A file with missing values (wildcard), large enough for the band to leave nodes unclassified: the same
    node and loss as the exhaustive search and as the search without the bound (a table above the classes
    for which it is counted), with fewer nodes evaluated, at 0 and 5 % suppression."""
    from kanon_core.treat import discernibility_bound as module
    from kanon_core.treat.lattice import exhaustive_search

    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame({f"q{j}": pd.Series(rng.integers(0, 4, n).astype(str), dtype=object) for j in range(4)})
    frame = frame.mask(rng.random(frame.shape) < 0.05)
    rows = {f"q{j}": tuple((str(v), f"g{v // 2}", "*") for v in range(4)) for j in range(4)}
    ds = Dataset(frame, roles=Roles(qis=tuple(rows)), missing="wildcard")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in rows.items()})
    for frac in (0.0, 0.05):
        ex = exhaustive_search(problem, 3, frac, "dm")
        with_bound = search_optimal(problem, 3, frac, "dm")
        monkeypatch.setattr(module, "PAIR_BOUND_CLASSES", 0)
        without = search_optimal(problem, 3, frac, "dm")
        monkeypatch.undo()
        assert np.isclose(with_bound.loss, ex.loc[ex.anonymous, "loss"].min())
        assert (with_bound.levels, with_bound.loss) == (without.levels, without.loss)
        assert with_bound.nodes_evaluated < without.nodes_evaluated


def test_a_bound_above_a_count_stops_the_search(monkeypatch):
    """The run-time check: a bound above the exact count of a node the search counts is an internal error, not
    a silently wrong optimum."""
    from kanon_core.treat.discernibility_bound import DiscernibilityBound

    honest = DiscernibilityBound.at
    monkeypatch.setattr(DiscernibilityBound, "at", lambda self, nodes: honest(self, nodes) + 1_000.0)
    frame = pd.DataFrame({"q0": ["a", "a", "b", "b", None], "q1": ["x", "y", "x", "y", "x"]}, dtype=object)
    rows = {"q0": (("a", "*"), ("b", "*")), "q1": (("x", "*"), ("y", "*"))}
    ds = Dataset(frame, roles=Roles(qis=("q0", "q1")), missing="wildcard")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in rows.items()})
    with pytest.raises(RuntimeError, match="discernibility bound"):
        search_optimal(problem, 2, 0.0, "dm")


def test_k_above_the_records_every_record_suppressed():
    """k above the number of records: every record fails at every node and no failing record has a floor to
    divide the room under the ceiling by (n - k + 1 <= 0). Suppressing all three leaves three blank records,
    fewer than k: no node is a release, and the search says so (as the exhaustive one finds); at k = 3 the three
    blanked records protect each other."""
    from kanon_core.errors import InfeasibleError
    from kanon_core.treat.lattice import exhaustive_search

    frame = pd.DataFrame({"q0": ["a", None, "b"], "q1": ["x", "y", None]}, dtype=object)
    rows = {"q0": (("a", "*"), ("b", "*")), "q1": (("x", "*"), ("y", "*"))}
    ds = Dataset(frame, roles=Roles(qis=("q0", "q1")), missing="wildcard")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in rows.items()})
    for k in (4, 5):
        ex = exhaustive_search(problem, k, 1.0, "dm")
        assert (ex.n_suppressed == 3).all() and not ex.anonymous.any()
        with pytest.raises(InfeasibleError):
            search_optimal(problem, k, 1.0, "dm")
    ex = exhaustive_search(problem, 3, 1.0, "dm")
    got = search_optimal(problem, 3, 1.0, "dm")
    assert np.isclose(got.loss, ex.loc[ex.anonymous, "loss"].min())
