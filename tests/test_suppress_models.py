"""Protection models of local suppression against brute force (all cell subsets) and against each other.

For every model: the exact method equals the brute-force optimum of that model where it claims to, the
lower bound never exceeds the optimum, exact is never worse than greedy, the output meets the model when
recounted by pure-python code, and ``findable_below_k`` equals a brute-force count of the intruder's view.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.errors import InfeasibleError, InputError
from kanon_core.risk.intruder import findable_below_k, released_codes
from kanon_core.treat.protection import MODELS
from kanon_core.treat.strict.solve import (
    BOUND_CLASSES,
    BOUND_RECORD_WISE,
    BOUND_RECORDS_BELOW_K,
    UNPROVEN_WILDCARD,
)
from kanon_core.treat.suppress import SuppressStep, suppress
from tests.reference.protection import COUNTS, brute_force_optimum, findable


@st.composite
def tiny(draw, missing_cells=True):
    """Tables small enough to try every subset of cells (at most 12 suppressible cells)."""
    q = draw(st.integers(1, 3))
    n = draw(st.integers(2, 12 // q))
    low = -1 if missing_cells else 0
    codes = draw(arrays(np.int32, (n, q), elements=st.integers(low, 2)))
    costs = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=q, max_size=q)))
    protected = np.array(draw(st.lists(st.booleans(), min_size=q, max_size=q)))
    k = draw(st.integers(2, min(4, n)))
    return codes, costs, protected, k


def run(codes, costs, protected, k, **kw):
    q = codes.shape[1]
    names = [f"v{j}" for j in range(q)]
    return suppress(codes, k, qis=names, importance={names[j]: float(costs[j]) for j in range(q)},
                    protected=[names[j] for j in range(q) if protected[j]], **kw)


def check_output(res, codes, protected, k, missing, alpha=1.0):
    counts = COUNTS[res.model](codes, res.mask, missing, alpha)
    assert min(counts) >= k - 1e-9
    assert not res.mask[:, protected].any() and not (res.mask & (codes < 0)).any()
    assert res.findable_below_k == findable(codes, res.mask, k, missing)
    assert res.lower_bound <= res.cost + 1e-9
    assert res.optimal == (res.lower_bound >= res.cost - 1e-9)


@settings(max_examples=60)
@given(tiny(), st.sampled_from(["category", "wildcard"]))
def test_strict_exact_against_every_cell_subset(problem, missing):
    codes, costs, protected, k = problem
    best = brute_force_optimum("strict", codes, costs, protected, k, missing)
    if best is None:
        with pytest.raises(InfeasibleError):
            run(codes, costs, protected, k, missing=missing)
        return
    res = run(codes, costs, protected, k, missing=missing)
    check_output(res, codes, protected, k, missing)
    assert res.findable_below_k == 0  # strict: nobody has fewer than k candidates
    assert res.lower_bound <= best + 1e-9 <= res.cost + 1e-9
    if missing == "category" or not (codes < 0).any():
        assert res.optimal and res.cost == pytest.approx(best)  # exact where the model is a partition
    greedy = run(codes, costs, protected, k, missing=missing, method="greedy")
    check_output(greedy, codes, protected, k, missing)
    assert res.cost <= greedy.cost + 1e-9 and greedy.lower_bound <= best + 1e-9


@settings(max_examples=60)
@given(tiny(), st.sampled_from([1.0, 0.5, 0.0]))
def test_release_greedy_meets_sdcmicros_rule_with_a_valid_bound(problem, alpha):
    codes, costs, protected, k = problem
    best = brute_force_optimum("release", codes, costs, protected, k, "wildcard", alpha)
    if best is None:
        return
    res = run(codes, costs, protected, k, model="release", method="greedy", alpha=alpha)
    check_output(res, codes, protected, k, "wildcard", alpha)
    assert res.lower_bound <= best + 1e-9 <= res.cost + 1e-9


@settings(max_examples=60)
@given(tiny())
def test_record_exact_against_every_cell_subset(problem):
    codes, costs, protected, k = problem
    best = brute_force_optimum("record", codes, costs, protected, k, "wildcard")
    if best is None:
        with pytest.raises(InfeasibleError):
            run(codes, costs, protected, k, model="record")
        return
    res = run(codes, costs, protected, k, model="record")
    check_output(res, codes, protected, k, "wildcard")
    assert res.optimal and res.cost == pytest.approx(best)


@settings(max_examples=80)
@given(arrays(np.int32, st.tuples(st.integers(1, 9), st.integers(1, 4)), elements=st.integers(-1, 2)),
       st.data(), st.sampled_from(["category", "wildcard"]), st.sampled_from([1.0, 0.4]))
def test_checkers_and_findable_equal_brute_force(codes, data, missing, alpha):
    mask = data.draw(arrays(np.bool_, codes.shape)) & (codes >= 0)
    for name, model in MODELS.items():
        got = model.counts(codes, mask, missing, alpha)
        want = COUNTS[name](codes, mask, missing, alpha)
        assert np.allclose(got, want), name
    k = data.draw(st.integers(1, 4))
    assert findable_below_k(codes, released_codes(codes, mask), k, missing) == findable(codes, mask, k, missing)


def test_blanking_k_minus_1_records_meets_the_release_criterion_but_not_strict():
    """The degenerate optimum of sdcMicro's criterion: every record unique, two fully blank records.

    Even the intruder's candidate count is met (the blanks are candidates for everyone), which is why the
    default is the strict model: it counts classes, in which the blank records only protect each other."""
    codes = np.arange(30, dtype=np.int32).reshape(10, 3) % 7
    mask = np.zeros(codes.shape, dtype=bool)
    mask[:2] = True  # k - 1 = 2 records blanked entirely
    assert min(MODELS["release"].counts(codes, mask, "wildcard")) >= 3
    assert min(MODELS["strict"].counts(codes, mask, "wildcard")) < 3
    assert findable(codes, mask, 3, "wildcard") == 0
    one = np.zeros_like(mask)
    one[0, 0] = True
    assert findable(codes, one, 3, "wildcard") == 10  # a single blank cell protects nobody


def test_models_and_methods_named_and_refused_clearly():
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [0, 0]], dtype=np.int32)
    with pytest.raises(InputError, match="degenerate"):
        suppress(codes, 2, model="release", method="exact")
    with pytest.raises(InputError, match="record"):
        suppress(codes, 2, model="record", method="greedy")
    with pytest.raises(InputError, match="protection model"):
        suppress(codes, 2, model="loose")
    res = suppress(codes, 2)
    assert res.model == "strict" and res.summary()["model"] == "strict"
    assert res.summary()["findable_below_k"] == 0


def test_strict_is_deterministic_and_replays_identically():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, size=(120, 4)).astype(np.int32)
    a = suppress(codes, 3)
    b = suppress(codes, 3)
    assert np.array_equal(a.mask, b.mask) and a.cost == b.cost
    step = SuppressStep(k=3)
    assert step.model == "strict" and "strict model" in step.describe()


def test_strict_on_wildcard_missing_values_reports_an_honest_bound():
    """Missing input cells read as wildcards: the class search treats them as values, so its own bound does
    not hold; the bound is the better of two that do (each record below k loses a value; Wilson et al.'s
    record-wise optimum) and the gap is reported."""
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 4, size=(120, 5)).astype(np.int32)
    codes[rng.random(codes.shape) < 0.1] = -1
    res = suppress(codes, 3)
    unsafe = int((MODELS["strict"].counts(codes, np.zeros_like(codes, dtype=bool), "wildcard") < 3).sum())
    assert unsafe > 0  # (a file with every record safe would make the test say nothing)
    record_wise = suppress(codes, 3, model="record").cost  # Wilson et al.'s optimum bounds strict too
    assert res.lower_bound == pytest.approx(max(unsafe, record_wise)) and res.findable_below_k == 0
    assert not res.optimal or res.cost == pytest.approx(unsafe)
    # the officer is told which bound holds and why the optimum is not proven
    said = res.optimality()
    assert said.bound == (BOUND_RECORD_WISE if record_wise > unsafe else BOUND_RECORDS_BELOW_K)
    assert said.why_not_proven == ("" if res.optimal else UNPROVEN_WILDCARD)


def test_a_programme_too_large_to_attempt_reports_a_positive_gap(monkeypatch):
    """When the class programme is not attempted, the result is the best release found, with a bound
    strictly below its cost and no optimality claim."""
    import kanon_core.treat.strict.solve as strict_solve

    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, size=(150, 4)).astype(np.int32)
    full = suppress(codes, 3)
    assert full.optimal  # small enough to prove
    monkeypatch.setattr(strict_solve, "MIP_MAX_VARIABLES", 0)
    monkeypatch.setattr(strict_solve, "FIRST_MAX_VARIABLES", 0)
    capped = suppress(codes, 3)
    assert capped.violations_after == 0 and capped.findable_below_k == 0
    assert capped.lower_bound <= full.cost <= capped.cost
    assert capped.gap > 0 and not capped.optimal and "unproven" in capped.stats
    assert "too large to attempt" in capped.optimality().sentence()
    assert full.optimality().sentence().startswith("Proven optimal") and full.optimality().bound == BOUND_CLASSES


def test_a_programme_stopped_by_its_time_limit_gives_what_was_found_before_it(monkeypatch):
    """A node limit does not bound HiGHS's time (600 records of Adult, 8 QIs, k = 5: no end after five
    minutes, the dashboard's page waiting on it). Each programme now stops at a time limit and then gives
    nothing: the release and the bound are those found before the programme, exactly those of a run that
    does not attempt it, so they do not depend on where the clock stopped it."""
    import kanon_core.treat.strict.solve as strict_solve

    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, size=(150, 4)).astype(np.int32)
    assert "mip_variables" in suppress(codes, 3).stats  # this file's programme is run
    monkeypatch.setattr(strict_solve, "MIP_SECONDS", 1e-9)
    stopped = suppress(codes, 3)
    assert "time limit" in stopped.stats["unproven"] and stopped.stats["first_timed_out"] == 1e-9
    assert stopped.violations_after == 0 and stopped.findable_below_k == 0 and not stopped.optimal
    monkeypatch.setattr(strict_solve, "MIP_SECONDS", 20.0)
    monkeypatch.setattr(strict_solve, "MIP_MAX_VARIABLES", 0)
    monkeypatch.setattr(strict_solve, "FIRST_MAX_VARIABLES", 0)
    skipped = suppress(codes, 3)
    assert np.array_equal(stopped.mask, skipped.mask)
    assert stopped.cost == skipped.cost and stopped.lower_bound == skipped.lower_bound


def test_within_groups_and_linked_variables():
    """--by: no released class mixes groups and the group is never blanked; --link: a linked variable is
    blanked exactly where its key is suppressed."""
    import pandas as pd

    from kanon_core.dataset import Dataset, Roles
    from kanon_core.steps import step_from_dict

    rng = np.random.default_rng(2)
    n = 120
    frame = pd.DataFrame({"region": rng.integers(0, 3, n), "district": rng.integers(0, 9, n),
                          "sex": rng.integers(0, 2, n), "age": rng.integers(0, 6, n), "grp": rng.integers(0, 2, n)})
    ds = Dataset(frame, roles=Roles(qis=("region", "sex", "age")))
    step = SuppressStep(k=3, by=("grp",), linked=(("region", ("district",)),))
    res = step.run(ds)
    assert res.names == ("region", "sex", "age", "grp") and not res.mask[:, 3].any()
    codes = ds.qi_matrix(list(res.names)).codes
    assert min(COUNTS["strict"](codes, res.mask, "wildcard", 1.0)) >= 3  # classes inside each group
    out = step.apply(ds)
    assert out.frame["district"].isna().to_numpy().tolist() == res.mask[:, 0].tolist()
    assert out.frame["grp"].equals(frame["grp"])
    assert step_from_dict(step.to_dict()) == step
    assert "within grp" in step.describe() and "region blanks district" in step.describe()
    with pytest.raises(InputError):
        SuppressStep(k=3, linked=(("sex", ("age",)),)).run(ds)  # a QI cannot be linked
    with pytest.raises(InputError):
        SuppressStep(k=3, by=("nope",)).run(ds)
