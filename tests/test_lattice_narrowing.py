"""The narrower suppression limit of the discernibility search, against brute force.

Once a ceiling is known, the search classifies a node with the failing records it may have for it or a node below
it to win (``_Lattice.narrowed_limit``), and the union of the failing records of passing nodes above tells with that
limit too. Here the limit is compared with its definition on random lattices (the least bound over the unclassified
nodes of the node's own down-set), and every node the search gives up on that way, with its whole down-set, is
checked against the exhaustive search: each fails the user's limit or loses to the optimum.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import kanon_core.treat.lattice as lattice_module
from kanon_core.treat.lattice import exhaustive_search, search_optimal, suppression_limit
from tests.test_lattice import larger_wildcard_case


@st.composite
def lattices(draw):
    """A lattice with random statuses (node ``i`` unclassified), bounds, ceiling and limit."""
    heights = np.array(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)), dtype=np.int64)
    lat = lattice_module._Lattice(heights)
    lat.status[:] = draw(st.lists(st.sampled_from([lat.UNKNOWN, lat.ANON, lat.NOT]), min_size=lat.n,
                                  max_size=lat.n))
    i = draw(st.integers(0, lat.n - 1))
    lat.status[i] = lat.UNKNOWN
    bounds = np.array(draw(st.lists(st.integers(0, 100), min_size=lat.n, max_size=lat.n)), dtype=np.float64)
    return lat, i, bounds, float(draw(st.integers(0, 120))), float(draw(st.integers(1, 30))), draw(st.integers(0, 8))


@given(lattices())
def test_the_narrowed_limit_is_its_definition(case):
    lat, i, bounds, ceiling, per_record, limit = case
    v = lat.nodes[i]
    below = np.flatnonzero((lat.nodes <= v).all(axis=1) & (lat.status == lat.UNKNOWN))
    least = bounds[below].min()  # the down-set's own: an unclassified node elsewhere may hold a lower bound
    most = math.floor((ceiling - least) / per_record) if ceiling >= least else -1
    got = lat.narrowed_limit(i, bounds, ceiling, per_record, limit)
    if most >= limit:
        assert got == (limit, math.inf)
    else:
        assert got[0] == max(0, most)
        claimed = least + (most + 1) * per_record
        assert got[1] == claimed and claimed > ceiling  # a node with more failing records loses


def test_nodes_given_up_by_the_narrower_limit_fail_or_lose_below_them():
    """On wildcard tables of 30 to 120 records at positive limits, each node the search tagged failing by the
    narrower limit (classified with it, or told by the union of the failing records above) and every node below
    it fail the user's limit or lose to the exhaustive optimum; the search returns that optimum; and both ways
    of giving up occur."""
    given_up: list[tuple[tuple[int, ...], str]] = []
    user_limit = [0]
    real_classify = lattice_module.NodeEvaluator.classify
    real_tell = lattice_module._FailingUnion.tell

    def classify(self, levels, doomed=None, limit=None):
        e = real_classify(self, levels, doomed, limit)
        if limit is not None and limit < user_limit[0]:
            if e.mono_small is None or int(e.table.count[e.mono_small].sum()) > limit:
                given_up.append((tuple(int(x) for x in levels), "classified"))
        return e

    def tell(self, levels, want_ids, limit=None):
        told, ids = real_tell(self, levels, want_ids, limit)
        if told and limit is not None and limit < user_limit[0]:
            given_up.append((tuple(int(x) for x in levels), "told"))
        return told, ids

    lattice_module.NodeEvaluator.classify = classify
    lattice_module._FailingUnion.tell = tell
    ways: set[str] = set()
    try:
        for seed in range(60):
            case = larger_wildcard_case(seed)
            problem = case.problem()
            for frac in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5):
                ex = exhaustive_search(problem, case.k, frac, "dm")
                feasible = ex.loc[ex.anonymous]
                if feasible.empty:
                    continue
                best = float(feasible["loss"].min())
                user_limit[0] = suppression_limit(problem.n_records, frac)
                given_up.clear()
                res = search_optimal(problem, case.k, frac, "dm")
                assert math.isclose(res.loss, best, rel_tol=1e-9)
                levels = ex[list(problem.qis)].to_numpy()
                for node, how in given_up:
                    ways.add(how)
                    rows = ex.loc[(levels <= np.array(node)).all(axis=1)]
                    assert (~rows.anonymous | (rows["loss"] > best * (1 + 1e-9))).all(), (seed, frac, node, how)
    finally:
        lattice_module.NodeEvaluator.classify = real_classify
        lattice_module._FailingUnion.tell = real_tell
    assert ways == {"classified", "told"}
