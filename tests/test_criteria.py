"""Privacy criteria: parsing, the monotonicity each one claims (brute force on small lattices, and
counterexamples where it claims none), and the lattice search under every combination of criteria
against a brute force over all nodes (tests/reference/lattice_criteria.py), under both missing semantics.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.classtable import ClassTable
from kanon_core.criteria import (
    CRITERIA,
    Evaluation,
    KAnonymity,
    LDiversity,
    MaxIndividualRisk,
    TCloseness,
    parse_criteria,
    parse_criterion,
)
from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InfeasibleError, InputError
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.lattice import build_problem, exhaustive_search, search_optimal
from tests.reference import lattice_criteria as ref

# -- parsing -----------------------------------------------------------------------------------------------------
SPECS = ["k=5", "k=5:alpha=0.5", "l=3:occupation", "l=entropy:2.5:occupation", "l=recursive:3,2:occupation",
         "t=0.2:income", "t=0.2:income:equal", "t=0.15:income:ordered", "risk=0.05", "risk=0.05:exact"]


@pytest.mark.parametrize("spec", SPECS)
def test_specs_round_trip(spec):
    c = parse_criterion(spec)
    assert c.spec == spec and parse_criterion(c.spec) == c


def test_parsed_objects():
    assert parse_criterion(" K = 3 ") == KAnonymity(3)
    assert parse_criterion("l=recursive:3,2:S") == LDiversity(2, "S", "recursive", 3.0)
    assert parse_criterion("t=0.2:S") == TCloseness(0.2, "S")
    assert parse_criterion("risk=0.1") == MaxIndividualRisk(0.1)
    assert [c.spec for c in parse_criteria(["k=2", "k=2", "l=2:S"])] == ["k=2", "l=2:S"]
    assert set(CRITERIA) >= {"k", "l", "t", "risk"}


@pytest.mark.parametrize("bad", ["k", "k=0", "k=2.5", "k=5:beta=1", "k=5:alpha=2", "x=3", "l=3", "l=0:S",
                                 "l=entropy:3", "l=recursive:3:S", "l=recursive:0,2:S", "l=foo:3:S", "t=2:S",
                                 "t=0.2", "t=0.2:S:manhattan", "risk=0", "risk=1", "risk=abc", "risk=0.1:fast"])
def test_bad_specs_are_one_line_input_errors(bad):
    with pytest.raises(InputError) as exc:
        parse_criterion(bad)
    assert "\n" not in str(exc.value)


NAME_TEXT = st.text(st.sampled_from(list('ab :;",= ')), min_size=1, max_size=8).filter(lambda t: t.strip())


@given(NAME_TEXT, st.sampled_from(["l=3:{}", "l=entropy:2:{}", "l=recursive:3,2:{}", "t=0.2:{}", "t=0.2:{}:equal"]))
@settings(max_examples=200)
def test_a_spec_names_exactly_its_variable_whatever_the_name_holds(name, form):
    """A name holding ':' or ';' (or a quote, or spaces around it) is written quoted and read back exactly, and
    the field of several criteria splits only between criteria: a recipe storing the spec replays."""
    from kanon_core.criteria.base import quote_name, split_criteria

    criterion = parse_criterion(form.format(quote_name(name)))
    assert criterion.sensitive == (name,)
    assert parse_criterion(criterion.spec) == criterion
    field = f"k=2; {criterion.spec} ;risk=0.05"
    assert [c.spec for c in parse_criteria(split_criteria(field))] == ["k=2", criterion.spec, "risk=0.05"]


def test_quoted_names_as_written():
    assert parse_criterion('l=3:"Q1: occupation"').sensitive == ("Q1: occupation",)
    assert parse_criterion('t=0.2:"say ""no"""').sensitive == ('say "no"',)
    assert parse_criterion('l=3:"a"""').sensitive == ('a"',)
    assert parse_criterion('l=3:" padded "').spec == 'l=3:" padded "'
    assert parse_criterion("l=3: occupation ").spec == "l=3:occupation"  # unquoted: spaces are not the name's


@pytest.mark.parametrize("bad", ['l=3:"open', 'l=3:a"b', 'l=3:"a"b', 't=0.2:"a"":equal', 'l=3:"a""', 'l=3:""""b'])
def test_a_badly_quoted_name_is_a_one_line_input_error(bad):
    with pytest.raises(InputError) as exc:
        parse_criterion(bad)
    assert "\n" not in str(exc.value)


# -- random small problems with a sensitive variable and weights --------------------------------------------------
@st.composite
def problems(draw, max_nodes: int = 48):
    q = draw(st.integers(1, 3))
    heights = draw(st.lists(st.integers(2, 4), min_size=q, max_size=q).filter(lambda h: math.prod(h) <= max_nodes))
    n = draw(st.integers(1, 16))
    allow_missing = draw(st.booleans())
    rows, cols = {}, {}
    for j, h in enumerate(heights):
        m = draw(st.integers(1, 4))
        groups = list(range(m))
        table = [[f"v{i}"] for i in range(m)]
        for lv in range(1, h - 1):
            n_prev = max(groups) + 1
            f = draw(st.lists(st.integers(0, n_prev - 1), min_size=n_prev, max_size=n_prev))
            groups = [f[g] for g in groups]
            for i in range(m):
                table[i].append(f"L{lv}g{groups[i]}")
        rows[f"q{j}"] = tuple(tuple(r) + ("*",) for r in table)
        codes = draw(st.lists(st.integers(-1 if allow_missing else 0, m - 1), min_size=n, max_size=n))
        cols[f"q{j}"] = [None if c < 0 else f"v{c}" for c in codes]
    svals = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=n, max_size=n))
    numeric = draw(st.booleans())
    cols["s"] = [None if v is None else (v if numeric else f"c{v}") for v in svals]
    cols["w"] = draw(st.lists(st.sampled_from([1.0, 1.5, 2.0, 5.0, 20.0]), min_size=n, max_size=n))
    frame = pd.DataFrame(cols)
    frame["s"] = frame["s"].astype(object if not numeric else "Float64")
    missing = draw(st.sampled_from(["wildcard", "category"]))
    return frame, rows, missing


def _dataset(frame, rows, missing):
    return Dataset(frame, roles=Roles(qis=tuple(rows), weight="w"), missing=missing)


def _inputs(frame, rows, missing):
    ds = _dataset(frame, rows, missing)
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in rows.items()}, sensitive=["s"], weighted=True)
    scodes, svalues, _ = ds._encoded("s")
    return ds, problem, ds.weights(), {"s": (scodes, tuple(svalues))}


CRITERION = st.one_of(
    st.builds(KAnonymity, st.integers(1, 4), st.sampled_from([1.0, 1.0, 0.5, 0.0])),
    st.builds(LDiversity, st.integers(1, 3), st.just("s")),
    st.builds(LDiversity, st.sampled_from([1.0, 1.5, 2.0]), st.just("s"), st.just("entropy")),
    st.builds(LDiversity, st.integers(1, 3).map(float), st.just("s"), st.just("recursive"),
              st.sampled_from([1.0, 2.0, 3.0])),
    st.builds(TCloseness, st.sampled_from([0.0, 0.1, 0.3, 0.6]), st.just("s"),
              st.sampled_from(["auto", "equal", "ordered"])),
    st.builds(MaxIndividualRisk, st.sampled_from([0.05, 0.2, 0.5, 0.9])),
)


# -- monotonicity as claimed --------------------------------------------------------------------------------------
@settings(max_examples=60)
@given(problems(), st.lists(CRITERION, min_size=1, max_size=3), st.integers(0, 4))
def test_claimed_monotonicity_holds_on_every_edge(case, criteria, limit):
    frame, rows, missing = case
    ds, problem, weights, sens = _inputs(frame, rows, missing)
    semantics = "wildcard" if missing == "wildcard" and bool((problem.codes < 0).any()) else "category"
    nodes = ref.all_nodes(frame, rows, criteria, missing, weights, sens)
    heights = [len(r[0]) for r in rows.values()]
    for c in criteria:
        if not c.monotonic_at(limit, semantics):
            continue
        for lv, r in nodes.items():
            for up in ref.successors(lv, heights):
                below, above = r["per"][c.spec], nodes[up]["per"][c.spec]
                if limit == 0:
                    assert below.any() or not above.any(), (c.spec, lv, up)
                else:  # record by record: a record failing above failed below
                    assert not (above & ~below).any(), (c.spec, lv, up)


def _failing(frame, rows, missing, levels, criterion):
    ds, problem, weights, sens = _inputs(frame, rows, missing)
    codes = ref.generalize(frame, rows, levels)
    return ref.record_failing(codes, [criterion], missing, weights, sens)[criterion.spec]


def _two_level(values_q, values_s, missing="category", weights=None):
    """One QI a, b, c, ... generalized to * at level 1."""
    rows = {"q0": tuple((v, "*") for v in sorted(set(values_q)))}
    frame = pd.DataFrame({"q0": values_q, "s": values_s, "w": weights or [1.0] * len(values_q)})
    return frame, rows, missing


@pytest.mark.parametrize("criterion", [LDiversity(2.0, "s", "entropy"), LDiversity(2.0, "s", "recursive", 2.0),
                                       TCloseness(0.3, "s", "equal")])
def test_not_monotonic_with_suppression_counterexample(criterion):
    """A passing class {x, y} merged with a failing {x x x x x x}: the failing records grow from 12 to 14."""
    rows = {"q0": (("a", "G", "*"), ("b", "G", "*"), ("c", "H", "*"))}
    frame = pd.DataFrame({"q0": ["a", "a"] + ["b"] * 6 + ["c"] * 6, "s": ["x", "y"] + ["x"] * 6 + ["y"] * 6,
                          "w": [1.0] * 14})
    below = _failing(frame, rows, "category", (0,), criterion)
    above = _failing(frame, rows, "category", (1,), criterion)
    assert below.sum() == 12 and above.sum() == 14
    assert not criterion.monotonic_at(12, "category")  # a limit of 12 passes below and fails above
    assert criterion.monotonic_at(0, "category")


WILDCARD_CASES = {  # found by a random search with the reference; (0, 0) passes everywhere, (0, 1) does not
    "entropy": (LDiversity(2.0, "s", "entropy"), [None, "b", "a", None], ["2", "2", "1", "1"], ["y", "x", "z", "y"]),
    "recursive": (LDiversity(2.0, "s", "recursive", 2.0), [None, "b", "a", None], ["2", "2", "1", "1"],
                  ["y", "x", "z", "y"]),
    "t": (TCloseness(0.3, "s", "equal"), [None, "a", None, "b", "a", "a"], [None, "1", "1", "2", "1", "1"],
          ["x", "y", "z", "z", "x", "x"]),
}


@pytest.mark.parametrize("name", sorted(WILDCARD_CASES))
def test_not_monotonic_under_wildcard_counterexample(name):
    """Without suppression, under wildcard semantics: the records joining a class are not whole classes."""
    criterion, q0, q1, s = WILDCARD_CASES[name]
    rows = {"q0": (("a", "G"), ("b", "G")), "q1": (("1", "*"), ("2", "*"))}
    frame = pd.DataFrame({"q0": q0, "q1": q1, "s": s, "w": [1.0] * len(s)})
    assert not _failing(frame, rows, "wildcard", (0, 0), criterion).any()
    assert _failing(frame, rows, "wildcard", (0, 1), criterion).any()
    assert not criterion.monotonic_at(0, "wildcard") and criterion.monotonic_at(0, "category")


def test_risk_is_not_declared_monotonic_and_is_k_without_weights():
    c = MaxIndividualRisk(0.3)
    assert not c.monotonic_at(0) and not c.monotonic_at(5, "wildcard")
    table = ClassTable.from_codes(np.array([[0], [0], [0], [1], [1], [2]]))
    ev = Evaluation(table, "category", table.class_sizes("category"))
    # without weights the risk is 1 / fk: above 0.3 for fk 1, 2 and 3 >= 4 passes? 1/3 > 0.3 fails
    assert list(c.failing_classes(ev)) == list(KAnonymity(4).failing_classes(ev))


# -- the search against the brute force ------------------------------------------------------------------------
@settings(max_examples=80)
@given(problems(), st.lists(CRITERION, min_size=1, max_size=3), st.data())
def test_search_under_criteria_matches_brute_force(case, criteria, data):
    frame, rows, missing = case
    ds, problem, weights, sens = _inputs(frame, rows, missing)
    nodes = ref.all_nodes(frame, rows, criteria, missing, weights, sens)
    n = len(frame)
    for limit in (0, data.draw(st.integers(1, n))):
        best = ref.optimum(nodes, limit)
        if not math.isfinite(best):
            with pytest.raises(InfeasibleError):
                search_optimal(problem, None, limit / n, "prec", criteria=criteria)
            continue
        res = search_optimal(problem, None, limit / n, "prec", criteria=criteria)
        assert math.isclose(res.loss, best, rel_tol=1e-9, abs_tol=1e-12)
        chosen = ref_node = nodes[res.level_tuple]
        assert chosen["n_small"] == res.n_suppressed_records <= limit
        assert math.isclose(ref_node["prec"], best, rel_tol=1e-9, abs_tol=1e-12)
        report = {r["spec"]: r for r in res.criteria_report}
        assert set(report) == {c.spec for c in criteria}
        for c in criteria:
            assert report[c.spec]["records_failing"] == int(ref_node["per"][c.spec].sum())
            assert report[c.spec]["holds"]
        ex = exhaustive_search(problem, None, limit / n, "prec", criteria=criteria)
        for row in ex.itertuples(index=False):
            lv = tuple(int(x) for x in row[: len(rows)])
            assert row.n_suppressed == nodes[lv]["n_small"] and row.anonymous == ref.acceptable(nodes[lv], limit)


@settings(max_examples=40)
@given(problems(), st.data())
def test_k_shorthand_equals_the_k_criterion(case, data):
    frame, rows, missing = case
    _, problem, _, _ = _inputs(frame, rows, missing)
    k = data.draw(st.integers(1, 4))
    limit = data.draw(st.integers(0, len(frame))) / len(frame)
    metric = data.draw(st.sampled_from(["prec", "dm", "aecs", "entropy"]))
    try:
        a = search_optimal(problem, k, limit, metric)
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            search_optimal(problem, None, limit, metric, criteria=[f"k={k}"])
        return
    b = search_optimal(problem, None, limit, metric, criteria=[f"k={k}"])
    assert (a.level_tuple, a.loss, a.n_suppressed_records, a.k) == (b.level_tuple, b.loss, b.n_suppressed_records, k)
    assert a.criteria == (f"k={k}",)


def test_missing_sensitive_variable_is_refused():
    frame, rows, missing = _two_level(["a", "b"], ["x", "y"])
    ds = _dataset(frame, rows, missing)
    problem = build_problem(ds, {"q0": Hierarchy(rows["q0"], "q0")})
    with pytest.raises(InputError, match="sensitive"):
        search_optimal(problem, None, 0.0, criteria=["l=2:s"])
    with pytest.raises(InputError, match="not a variable"):
        build_problem(ds, {"q0": Hierarchy(rows["q0"], "q0")}, sensitive=["nope"])
    with pytest.raises(InputError, match="weighted=True"):
        search_optimal(problem, None, 0.0, criteria=["risk=0.2"])


@settings(max_examples=40)
@given(problems(), st.lists(CRITERION, min_size=1, max_size=2), st.data())
def test_the_step_replays_the_search_suppression(case, criteria, data):
    from kanon_core.steps import step_from_dict

    frame, rows, missing = case
    ds, problem, weights, sens = _inputs(frame, rows, missing)
    n = len(frame)
    limit = data.draw(st.integers(0, n))
    try:
        res = search_optimal(problem, None, limit / n, "prec", criteria=criteria)
    except InfeasibleError:
        return
    node = ref.all_nodes(frame, rows, criteria, missing, weights, sens)[res.level_tuple]
    step = step_from_dict(res.step().to_dict())
    assert step == res.step()
    out = step.apply(ds).frame
    blank = out[list(rows)].isna().all(axis=1).to_numpy()
    was_blank = frame[list(rows)].isna().all(axis=1).to_numpy()
    assert (blank | was_blank).tolist() == (node["small"] | was_blank).tolist()
    only_k = {c.spec for c in criteria} == {f"k={res.k}"}  # the search merges repeated specs
    assert ("criteria" in step.to_dict()) == (res.n_suppressed_records > 0 and not only_k)


def test_recipes_without_criteria_still_replay():
    from kanon_core.steps import step_from_dict

    frame = pd.DataFrame({"a": ["x", "x", "y"], "b": ["u", "u", "v"]})
    old = {"kind": "generalize", "levels": {"a": 0, "b": 0}, "hierarchies": {}, "suppress_k": 2, "qis": ["a", "b"]}
    step = step_from_dict(old)
    assert step.criteria == () and step.to_dict() == old
    out = step.apply(Dataset(frame, roles=Roles(qis=("a", "b")))).frame
    assert out["a"].isna().tolist() == [False, False, True]


def test_alpha_counts_complete_matches_in_full_in_the_wildcard_scan():
    """A record with a missing QI matched by one complete record reaches k = 2 even at alpha = 0."""
    frame = pd.DataFrame({"q0": ["v0"] * 10 + ["v1", "v1", None], "q1": ["v0"] * 10 + [None, "v0", "v0"]})
    rows = {"q0": (("v0", "*"), ("v1", "*")), "q1": (("v0", "*"),)}
    ds = Dataset(frame, roles=Roles(qis=("q0", "q1")), missing="wildcard")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in rows.items()}, alpha=0.0)
    ex = exhaustive_search(problem, 2, 0.0, "prec")
    # (v1, v0) has only itself in full (the others have a missing value): the one record suppressed
    assert ex.loc[(ex.q0 == 0) & (ex.q1 == 0), "n_suppressed"].item() == 1
