"""Failing nodes told by the union of passing nodes' failing records, checked edge by edge on random lattices.

The search tags a node failing without evaluating it when the records failing at passing nodes above it are,
together, more than the suppression limit (``lattice._FailingUnion``). That rests on the record-by-record
promise of the monotonic criteria at a positive limit; here the failing input classes the evaluator reports
are compared with a brute-force count of failing records (``tests.reference``), the promise is checked on
every edge of the lattice, and the rule's conclusion on every node. The search with the rule (and with the
partitioned roll-up everywhere) must return exactly what it returns without them.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kanon_core.treat._lattice_kernel as kernel_module
import kanon_core.treat.lattice as lattice_module
from kanon_core.errors import InfeasibleError
from kanon_core.treat.lattice import NodeEvaluator, resolve_criteria, search_optimal, suppression_limit
from tests.reference import lattice_criteria as ref
from tests.test_criteria import CRITERION, _inputs, problems


def ev_semantics(problem) -> str:
    """The semantics the search evaluates under (wildcard only where a QI has a missing value)."""
    return NodeEvaluator(problem, [], 0).semantics


def _tracked(problem, criteria, limit: int) -> NodeEvaluator:
    old = lattice_module.TRACK_CLASSES
    lattice_module.TRACK_CLASSES = 0
    try:
        return NodeEvaluator(problem, resolve_criteria(problem, None, criteria), limit)
    finally:
        lattice_module.TRACK_CLASSES = old


@settings(max_examples=60)
@given(problems(), st.lists(CRITERION, min_size=1, max_size=3), st.data())
def test_failing_input_classes_shrink_on_every_edge_and_the_union_rule_holds(case, criteria, data):
    frame, rows, missing = case
    ds, problem, weights, sens = _inputs(frame, rows, missing)
    n = len(frame)
    limit = data.draw(st.integers(1, n))
    ev = _tracked(problem, criteria, limit)
    if not ev.mono:
        return
    assert ev.track_base
    record_class = problem.class_table().record_class
    base_count = problem.class_table().count
    nodes = ref.all_nodes(frame, rows, ev.mono, missing, weights, sens)
    heights = [len(r[0]) for r in rows.values()]
    failing: dict[tuple[int, ...], set[int]] = {}
    for lv in itertools.product(*(range(h) for h in heights)):
        e = ev.evaluate(lv)
        ids = ev.failing_base(e)
        assert ids is not None
        # the input classes reported are exactly those of the records failing a monotonic criterion
        truth = nodes[lv]["small"] if ev.semantics == missing else None
        if truth is not None:
            assert set(ids.tolist()) == set(np.unique(record_class[truth]).tolist())
        failing[lv] = set(ids.tolist())
    for lv, fail in failing.items():
        for up in ref.successors(lv, heights):  # edge by edge: a record failing above failed below
            assert failing[up] <= fail, (lv, up)

    def records(s: set[int]) -> int:
        return int(base_count[list(s)].sum()) if s else 0

    passing = {lv for lv, s in failing.items() if records(s) <= limit}
    for lv in failing:  # the rule: the union of the passing nodes above, past the limit, means failing
        union = set().union(*(failing[z] for z in passing if z != lv and all(a >= b for a, b in zip(z, lv))))
        if records(union) > limit:
            assert lv not in passing


@settings(max_examples=80)
@given(problems(), st.lists(CRITERION, min_size=1, max_size=3), st.data())
def test_search_with_the_union_rule_and_partitioned_rollups_returns_the_same(case, criteria, data):
    frame, rows, missing = case
    _, problem, _, _ = _inputs(frame, rows, missing)
    n = len(frame)
    frac = data.draw(st.integers(0, n)) / n
    metric = data.draw(st.sampled_from(["prec", "dm", "aecs", "entropy"]))
    listing = data.draw(st.booleans())  # all nodes classified (k-minimal nodes listed), or those that may win

    def run(track: int, partition: int):
        old = lattice_module.TRACK_CLASSES, kernel_module.PARTITION_ROWS
        lattice_module.TRACK_CLASSES, kernel_module.PARTITION_ROWS = track, partition
        try:
            return search_optimal(problem, None, frac, metric, criteria=criteria, k_minimal=listing)
        except InfeasibleError:
            return None
        finally:
            lattice_module.TRACK_CLASSES, kernel_module.PARTITION_ROWS = old

    plain = run(10**12, 10**12)
    ruled = run(0, 0)
    if plain is None:
        assert ruled is None
        return
    assert (ruled.level_tuple, ruled.n_suppressed_records, ruled.n_anonymous) == (
        plain.level_tuple, plain.n_suppressed_records, plain.n_anonymous)
    assert math.isclose(ruled.loss, plain.loss, rel_tol=1e-9, abs_tol=1e-12)
    assert (ruled.k_minimal is None) == (plain.k_minimal is None)
    if ruled.k_minimal is not None:
        assert ruled.k_minimal.round(9).equals(plain.k_minimal.round(9))
    assert ruled.criteria_report == plain.criteria_report
    # the same nodes are visited: each node told by the rule is one evaluation fewer (under wildcard semantics
    # the evaluator tracks input classes whatever TRACK_CLASSES says, so the plain run may tell nodes too)
    assert ruled.nodes_evaluated + ruled.nodes_inferred == plain.nodes_evaluated + plain.nodes_inferred
    if ev_semantics(problem) == "category":
        assert plain.nodes_inferred == 0
    if suppression_limit(n, frac) == 0:
        assert ruled.nodes_inferred == 0  # at limit 0 the promise is per node, not per record: no union


def test_the_rule_tells_failing_nodes_on_a_fixed_case():
    """A small table (14 records, 4 QIs, k = 2, 3 records may be suppressed) on which the binary search of a
    path meets a failing node below passing ones whose failing records add up past the limit: the search
    tells it without evaluating it, and returns what it returns without the rule."""
    import pandas as pd

    from kanon_core.dataset import Dataset, Roles
    from kanon_core.treat.hierarchy import Hierarchy
    from kanon_core.treat.lattice import build_problem

    cols = {"q0": "2 2 1 1 0 1 2 1 2 2 0 2 2 2", "q1": "0 0 0 0 0 0 0 0 2 1 2 0 0 0",
            "q2": "0 3 1 1 1 3 3 0 1 3 0 0 0 3", "q3": "1 1 0 1 1 0 1 1 0 0 1 1 0 1"}
    frame = pd.DataFrame({q: [f"v{c}" for c in v.split()] for q, v in cols.items()})
    three = (("v0", "g0", "*"), ("v1", "g0", "*"), ("v2", "g1", "*"))
    rows = {"q0": three, "q1": three, "q2": three + (("v3", "g1", "*"),), "q3": (("v0", "*"), ("v1", "*"))}
    ds = Dataset(frame, roles=Roles(qis=tuple(rows)), missing="category")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in rows.items()})
    old = lattice_module.TRACK_CLASSES
    lattice_module.TRACK_CLASSES = 0
    try:
        res = search_optimal(problem, 2, 3 / 14, "prec", k_minimal=True)
    finally:
        lattice_module.TRACK_CLASSES = old
    plain = search_optimal(problem, 2, 3 / 14, "prec", k_minimal=True)
    assert (res.level_tuple, res.loss, res.n_suppressed_records) == (plain.level_tuple, plain.loss,
                                                                     plain.n_suppressed_records)
    assert res.n_anonymous == plain.n_anonymous
    assert res.k_minimal.equals(plain.k_minimal)
    assert res.nodes_inferred >= 1 and plain.nodes_inferred == 0
    assert res.nodes_evaluated < plain.nodes_evaluated


@pytest.mark.parametrize("limit", [0, 5])
def test_no_union_without_the_record_level_promise(limit):
    """At limit 0 the criteria promise monotonicity per node only; the evaluator then keeps no input-class map."""
    import pandas as pd

    from kanon_core.dataset import Dataset, Roles
    from kanon_core.treat.hierarchy import Hierarchy
    from kanon_core.treat.lattice import build_problem

    frame = pd.DataFrame({"a": ["x", "y"] * 4, "b": ["u", "v", "v", "u"] * 2})
    rows = {"a": (("x", "*"), ("y", "*")), "b": (("u", "*"), ("v", "*"))}
    ds = Dataset(frame, roles=Roles(qis=("a", "b")), missing="category")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in rows.items()})
    ev = _tracked(problem, ["k=3"], limit)
    assert ev.track_base == (limit > 0)
