"""Local suppression, record-wise model (Wilson et al.) against brute force; tables, steps and types.

The protection models against each other and against brute force are in test_suppress_models.py."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InfeasibleError, InputError
from kanon_core.steps import step_from_dict
from kanon_core.treat.suppress import SuppressStep, apply_mask, suppress
from tests.reference.brute_force import brute_force_minucs
from tests.reference.protection import strict_counts


@st.composite
def problems(draw, max_n=14, max_q=5, max_card=3):
    n = draw(st.integers(3, max_n))
    q = draw(st.integers(1, max_q))
    codes = draw(arrays(np.int32, (n, q), elements=st.integers(-1, max_card - 1)))
    costs = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=q, max_size=q))
    protected = draw(st.lists(st.booleans(), min_size=q, max_size=q))
    k = draw(st.integers(2, min(5, n)))
    return codes, np.array(costs), np.array(protected), k


def count_input(codes: np.ndarray, r: int, keep: list[int]) -> int:
    if not keep:
        return len(codes)
    a, x = codes[:, keep], codes[r, keep]
    return int(((a == x) | (a < 0)).all(axis=1).sum())


def record_wise_optimum(codes, costs, protected, k):
    """Wilson et al.'s record-wise model by brute force: per record the cheapest cells whose removal leaves a retained
    set occurring >= k times in the input (wildcard matching); None when some record cannot be fixed."""
    n, q = codes.shape
    total = 0.0
    for r in range(n):
        own = [j for j in range(q) if codes[r, j] >= 0]
        free = [j for j in own if not protected[j]]
        best = None
        for size in range(len(free) + 1):
            for t in combinations(free, size):
                keep = [j for j in own if j not in t]
                if count_input(codes, r, keep) >= k:
                    c = float(sum(costs[j] for j in t))
                    best = c if best is None else min(best, c)
        if best is None:
            return None
        total += best
    return total


def names(q):
    return [f"v{j}" for j in range(q)]


def kwargs(costs, protected):
    q = len(costs)
    return dict(qis=names(q), importance={f"v{j}": float(costs[j]) for j in range(q)},
                protected=[f"v{j}" for j in range(q) if protected[j]])


@given(problems(), st.sampled_from(["direct", "minucs"]))
def test_exact_is_the_record_wise_optimum_and_k_anonymous(problem, engine):
    codes, costs, protected, k = problem
    opt = record_wise_optimum(codes, costs, protected, k)
    if opt is None:
        with pytest.raises(InfeasibleError):
            suppress(codes, k, model="record", engine=engine, **kwargs(costs, protected))
        return
    res = suppress(codes, k, model="record", engine=engine, **kwargs(costs, protected))
    assert res.cost == pytest.approx(opt)
    assert res.optimal and res.lower_bound == pytest.approx(opt)
    assert res.violations_after == 0 and res.model == "record"
    assert not res.mask[:, protected].any()
    assert res.cost == pytest.approx(float((res.mask * costs[None, :]).sum()))
    assert not (res.mask & (codes < 0)).any()  # only observed cells are suppressed


@given(problems(max_n=10, max_q=4))
def test_given_minucs_and_lazy_truncated_minucs_give_the_same_optimum(problem):
    codes, costs, protected, k = problem
    opt = record_wise_optimum(codes, costs, protected, k)
    if opt is None:
        return

    class Minucs:  # built by brute force, independent of the MINUC engine
        def __init__(self, max_size=None):
            found = brute_force_minucs(codes, k, "wildcard", max_size=max_size)
            self.record = np.array([r for r, ms in enumerate(found) for _ in ms], dtype=np.int64)
            self.mask = np.array([m for ms in found for m in ms], dtype=np.uint64)
            self.k, self.missing, self.n_records, self.max_size = k, "wildcard", len(codes), max_size

    full = suppress(codes, k, model="record", engine="minucs", minucs=Minucs(), **kwargs(costs, protected))
    lazy = suppress(codes, k, model="record", engine="minucs", minucs=Minucs(max_size=1), **kwargs(costs, protected))
    assert full.cost == pytest.approx(opt) == lazy.cost
    assert lazy.optimal


def hard_table(seed=0, n=30, q=16):
    """Binary random records over many QIs: masks of similar cost defeat the node-limited searches."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, size=(n, q)).astype(np.int32)


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_integer_programme_path_gives_the_same_optimum(solver):
    codes = hard_table(n=14)
    # k = 4: three other records per row (two are found exactly by pairs, without node-limited search)
    ref = suppress(codes, 4, model="record")
    assert ref.stats["hard_instances"] == 0 and ref.optimal
    forced = suppress(codes, 4, model="record", node_limit=1, solver=solver)
    assert forced.stats["hard_instances"] > 0
    assert forced.cost == pytest.approx(ref.cost)
    assert forced.optimal and forced.violations_after == 0


def test_infeasible_requests_are_refused_clearly():
    codes = np.array([[0, 0], [1, 1], [2, 2]], dtype=np.int32)
    with pytest.raises(InfeasibleError, match="every quasi-identifier is protected"):
        suppress(codes, 2, qis=["a", "b"], protected=["a", "b"])
    with pytest.raises(InfeasibleError, match="no record can be in a group"):
        suppress(codes, 4)
    with pytest.raises(InfeasibleError, match="protected variable"):
        suppress(codes, 2, qis=["a", "b"], protected=["a"])
    with pytest.raises(InputError):
        suppress(codes, 2, qis=["a", "b"], importance={"a": -1})
    with pytest.raises(InputError):
        suppress(codes, 2, qis=["a", "b"], importance={"zzz": 2})
    with pytest.raises(InputError):
        suppress(codes, 2, method="magic")


def test_wilson_tables_from_a_result():
    codes = np.array([[0, 0], [0, 0], [1, 0], [1, 1], [2, 1], [2, 1]], dtype=np.int32)
    res = suppress(codes, 2, qis=["sex", "region"])
    assert res.n_suppressed > 0
    per_var = res.per_variable().set_index("variable")
    assert per_var.suppressed.sum() == res.n_suppressed
    assert per_var.percent.tolist() == [round(100 * c / 6, 2) for c in per_var.suppressed]
    top = res.most_suppressed()
    assert len(top) > 0
    for row in top.itertuples():
        j = ["sex", "region"].index(row.variable)
        vals = codes[res.mask[:, j], j]
        assert row.suppressed == np.bincount(vals).max()
    gone = res.completely_suppressed()
    for row in gone.itertuples():
        j = ["sex", "region"].index(row.variable)
        code = int(row.value)
        assert not ((codes[:, j] == code) & ~res.mask[:, j]).any()
    summary = res.summary()
    assert summary["violations_after"] == 0 and summary["n_suppressed"] == res.n_suppressed


def test_step_makes_a_new_version_and_replays_identically():
    frame = pd.DataFrame({"sex": [1, 1, 2, 2, 1, 2, 1], "age": [30, 30, 31, 40, 41, 40, 30],
                          "region": ["N", "S", "N", "S", "N", "S", "N"], "w": [1.0] * 7})
    ds = Dataset(frame, roles=Roles(qis=("sex", "age", "region"), weight="w"))
    before = frame.copy()
    step = SuppressStep(qis=("sex", "age", "region"), k=2, importance=(("age", 2.0),), protected=("sex",))
    out = step.apply(ds)
    pd.testing.assert_frame_equal(ds.frame, before)  # original untouched
    assert out is not ds and out.frame["sex"].equals(frame["sex"])
    assert str(out.frame["age"].dtype) == "Int64"  # nullable integer keeps the other values' type
    sup = out.frame[["sex", "age", "region"]].isna().to_numpy() & ds.frame[["sex", "age", "region"]].notna().to_numpy()
    assert min(strict_counts(ds.qi_matrix().codes, sup, "wildcard")) >= 2  # the default, strict model
    again = step_from_dict(step.to_dict())
    assert again == step
    pd.testing.assert_frame_equal(again.apply(ds).frame, out.frame)


def test_apply_mask_keeps_types():
    frame = pd.DataFrame({"i": np.array([1, 2, 3], dtype=np.int32), "f": [1.5, 2.5, 3.5], "s": ["a", "b", "c"],
                          "b": [True, False, True]})
    mask = np.array([[True, False, True, False], [False, True, False, True], [False, False, False, False]])
    out = apply_mask(frame, ["i", "f", "s", "b"], mask)
    assert out["i"].isna().tolist() == [True, False, False] and str(out["i"].dtype) == "Int32"
    assert out["f"].isna().tolist() == [False, True, False]
    assert out["s"].isna().tolist() == [True, False, False]
    assert out["b"].isna().tolist() == [False, True, False]
    assert frame.notna().all().all()


def test_a_quasi_identifier_listed_twice_is_refused():
    """A recipe may list a QI twice; counted twice, it changed which cells the optimum suppressed."""
    from kanon_core.dataset import Dataset, Roles
    from kanon_core.errors import InputError
    from kanon_core.treat.suppress import SuppressStep

    ds = Dataset(pd.DataFrame({"a": [1, 1, 2, 3, 2, 5, 5], "b": [1, 2, 2, 3, 3, 1, 1]}), roles=Roles(qis=("a", "b")))
    with pytest.raises(InputError, match=r"Quasi-identifier\(s\) listed twice: a\."):
        SuppressStep(k=2, qis=("a", "a", "b")).apply(ds)
    with pytest.raises(InputError, match="listed twice"):
        ds.qi_matrix(["b", "a", "b"])
