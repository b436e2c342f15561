"""The search of a path's border from a guess (category semantics) against plain bisection and brute force."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import kanon_core.treat.lattice as lattice
from kanon_core.errors import InfeasibleError
from kanon_core.treat.lattice import _first_passing, search_optimal
from tests.test_lattice import METRICS, all_nodes, cases, close


@given(st.integers(1, 40), st.data())
def test_first_passing_finds_the_border_of_any_monotone_chain_from_any_guess(n, data):
    border = data.draw(st.integers(0, n))  # positions >= border pass (n: none does)
    guess = data.draw(st.none() | st.integers(-3, n + 3))
    probes = []

    def passes(t: int) -> bool:
        assert 0 <= t < n
        probes.append(t)
        return t >= border

    assert _first_passing(n, passes, guess) == border
    assert len(probes) == len(set(probes))  # no position is probed twice
    if guess is not None and 0 <= guess < n and guess in (border - 1, border):
        assert len(probes) <= 2  # a guess next to the border: the border is found in two probes


@given(cases(), st.data())
def test_search_from_guesses_equals_bisection_and_brute_force(case, data):
    """Same node, loss, suppression, passing nodes and minimal nodes with and without the guesses, and the
    brute-force optimum, for random limits (zero and positive) and every metric, both semantics."""
    ref = all_nodes(case)
    n = len(case.frame)
    problem = case.problem()
    s = data.draw(st.integers(0, n))
    feasible = {lv for lv, r in ref.items() if r["n_small"] <= s}
    metric = data.draw(st.sampled_from(METRICS))
    if not feasible:
        return
    guessed = search_optimal(problem, case.k, s / n, metric)
    original = lattice._guess_crossing
    lattice._guess_crossing = lambda *_: None
    try:
        plain = search_optimal(problem, case.k, s / n, metric)
    finally:
        lattice._guess_crossing = original
    assert (guessed.level_tuple, guessed.n_suppressed_records, guessed.n_anonymous) == (
        plain.level_tuple, plain.n_suppressed_records, plain.n_anonymous)
    assert close(guessed.loss, plain.loss) and close(guessed.loss, min(ref[lv][metric] for lv in feasible))
    assert guessed.k_minimal.round(9).equals(plain.k_minimal.round(9))
    assert guessed.n_anonymous == len(feasible)


def test_an_infeasible_search_is_still_reported_with_guesses():
    import numpy as np

    from kanon_core.treat.lattice import LatticeProblem

    codes = np.array([[0], [1]], dtype=np.int32)
    problem = LatticeProblem(qis=("a",), codes=codes, tables=(np.array([[0, 1]], dtype=np.int32),),
                             missing="category")
    try:
        search_optimal(problem, 2, 0.0)
    except InfeasibleError:
        return
    raise AssertionError("a table of two distinct records with one level cannot be 2-anonymous")
