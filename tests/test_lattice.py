"""The lattice search against brute force on small random tables, and on Adult with ARX's hierarchies.

The reference below generalizes records by looking labels up in the hierarchy rows, counts classes by
comparing records pairwise (wildcard or category semantics) and computes each metric from its definition,
so it shares no code with :mod:`kanon_core.treat.lattice` or :mod:`kanon_core.treat.metrics`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import Cancelled, InfeasibleError, InputError
from kanon_core.io import load_dataset
from kanon_core.progress import Progress
from kanon_core.treat.hierarchy import Hierarchy, load_hierarchies
from kanon_core.treat.lattice import (
    NodeEvaluator,
    build_problem,
    datafly,
    exhaustive_search,
    pareto_front,
    resolve_criteria,
    search_optimal,
    suppression_limit,
    tradeoff,
)
from kanon_core.treat.metrics import BANDED

METRICS = ("prec", "dm", "aecs", "entropy")
ADULT = Path(__file__).resolve().parent.parent / "sample_data" / "adult"
ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


# -- random small problems ---------------------------------------------------------------------------------------
@dataclass
class Case:
    frame: pd.DataFrame
    rows: dict[str, tuple[tuple[str, ...], ...]]
    missing: str
    k: int

    @property
    def qis(self) -> tuple[str, ...]:
        return tuple(self.rows)

    @property
    def heights(self) -> tuple[int, ...]:
        return tuple(len(self.rows[q][0]) for q in self.qis)

    def dataset(self) -> Dataset:
        return Dataset(self.frame, roles=Roles(qis=self.qis), missing=self.missing)

    def problem(self):
        return build_problem(self.dataset(), {q: Hierarchy(r, q) for q, r in self.rows.items()})


@st.composite
def cases(draw, max_nodes: int = 96) -> Case:
    q = draw(st.integers(2, 4))
    heights = draw(st.lists(st.integers(2, 4), min_size=q, max_size=q).filter(lambda h: math.prod(h) <= max_nodes))
    allow_missing = draw(st.booleans())
    n = draw(st.integers(1, 24))
    rows, cols = {}, {}
    for j, h in enumerate(heights):
        m = draw(st.integers(1, 4))
        groups = list(range(m))
        table = [[f"v{i}"] for i in range(m)]
        for lv in range(1, h - 1):  # each level maps the groups of the one below: nested by construction
            n_prev = max(groups) + 1
            f = draw(st.lists(st.integers(0, n_prev - 1), min_size=n_prev, max_size=n_prev))
            groups = [f[g] for g in groups]
            for i in range(m):
                table[i].append(f"L{lv}g{groups[i]}")
        rows[f"q{j}"] = tuple(tuple(r) + ("*",) for r in table)
        codes = draw(st.lists(st.integers(-1 if allow_missing else 0, m - 1), min_size=n, max_size=n))
        cols[f"q{j}"] = [None if c < 0 else f"v{c}" for c in codes]
    missing = draw(st.sampled_from(["wildcard", "category"]))
    return Case(pd.DataFrame(cols, dtype=object), rows, missing, draw(st.integers(1, 5)))


# -- the brute-force reference -----------------------------------------------------------------------------------
def generalize(case: Case, levels) -> list[tuple]:
    maps = [{r[0]: r[lv] for r in case.rows[q]} for q, lv in zip(case.qis, levels)]
    return [tuple(None if pd.isna(v) else m[v] for m, v in zip(maps, rec))
            for rec in case.frame[list(case.qis)].itertuples(index=False)]


def class_sizes(records: list[tuple], missing: str) -> list[int]:
    def match(a, b):
        if missing == "category":
            return a == b
        return all(x == y or x is None or y is None for x, y in zip(a, b))

    return [sum(match(a, b) for b in records) for a in records]


def reference_node(case: Case, levels) -> dict:
    """Records to suppress and every metric at one node, from the definitions."""
    recs = generalize(case, levels)
    fk = class_sizes(recs, case.missing)
    n = len(recs)
    small = [f < case.k for f in fk]
    n_small = sum(small)
    tops = [h - 1 for h in case.heights]
    # Prec over the observed input cells only (a missing cell has nothing to lose); 0 without any
    obs = [[not pd.isna(v) for v in case.frame[c]] for c in case.qis]
    n_obs = sum(map(sum, obs))
    prec = sum((1.0 if s else lv / t) for j, (lv, t) in enumerate(zip(levels, tops))
               for s, o in zip(small, obs[j]) if o) / n_obs if n_obs else 0.0
    dm = sum(f for f, s in zip(fk, small) if not s) + n_small * n
    aecs = n / (len({r for r, s in zip(recs, small) if not s}) + (1 if n_small else 0))
    entropy = 0.0
    for j, qname in enumerate(case.qis):
        col = [v for v in case.frame[qname] if not pd.isna(v)]
        count = {v: col.count(v) for v in set(col)}
        lab = {r[0]: r for r in case.rows[qname]}
        for v, s in zip(case.frame[qname], small):
            if pd.isna(v):
                continue
            lv = tops[j] if s else levels[j]
            gen = sum(c for u, c in count.items() if lab[u][lv] == lab[v][lv])
            entropy += math.log2(gen / count[v])
    return {"n_small": n_small, "small": small, "records": recs, "fk": fk,
            "prec": prec, "dm": float(dm), "aecs": aecs, "entropy": entropy}


def all_nodes(case: Case) -> dict[tuple, dict]:
    return {lv: reference_node(case, lv) for lv in itertools.product(*(range(h) for h in case.heights))}


def releasable(node: dict, limit: int, k: int) -> bool:
    """Within the limit, and no record blanked or at least k of them: the blanked records are one class of the
    release (blank on every QI, consistent with every person), so fewer than k would single their people out."""
    return node["n_small"] <= limit and (node["n_small"] == 0 or node["n_small"] >= k)


def below(a, b) -> bool:
    return a != b and all(x <= y for x, y in zip(a, b))


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# -- the chosen release, from the intruder's side ---------------------------------------------------------------
def consistent_records(person: tuple, release: list[tuple]) -> int:
    """Released records an intruder who knows ``person``'s generalized values cannot rule out: each QI blank
    (suppressed, or missing) or equal."""
    return sum(all(r is None or r == p for p, r in zip(person, rec)) for rec in release)


def searched_release(case: Case, data) -> tuple | None:
    """The optimal search on ``case`` at a drawn limit and metric, and its release as its recipe step writes it
    (records as tuples, None where blank); None when no node is feasible."""
    n = len(case.frame)
    limit = data.draw(st.integers(0, n))
    try:
        res = search_optimal(case.problem(), case.k, limit / n, data.draw(st.sampled_from(METRICS)))
    except InfeasibleError:
        return None
    released = res.step().apply(case.dataset()).frame[list(case.qis)]
    return res, [tuple(None if pd.isna(v) else v for v in rec) for rec in released.itertuples(index=False)]


@given(cases(), st.data())
def test_nobody_is_findable_among_fewer_than_k_records_of_the_chosen_release(case, data):
    """The search's release, as its recipe step writes it (generalized, the failing records blanked), leaves
    every person of a file without missing values consistent with at least k released records: the blanked
    records are consistent with everyone, so they must be none or at least k (one blanked unique record would
    be its person's only candidate, with every other variable shown)."""
    frame = case.frame.fillna("v0")  # every value known: intruder and release agree on what a value is
    case = Case(frame, case.rows, case.missing, case.k)
    found = searched_release(case, data)
    if found is None:
        return
    res, release = found
    people = generalize(case, res.level_tuple)
    assert min(consistent_records(p, release) for p in people) >= case.k
    assert sum(all(v is None for v in rec) for rec in release) == res.n_suppressed_records


# -- exact search = exhaustive search = brute force ------------------------------------------------------------
@given(cases(), st.data())
def test_optimal_search_matches_brute_force(case, data):
    ref = all_nodes(case)
    n = len(case.frame)
    problem = case.problem()
    assert problem.n_nodes == len(ref)
    for s in (0, data.draw(st.integers(1, n))):
        frac = s / n
        feasible = {lv for lv, r in ref.items() if r["n_small"] <= s}  # within the limit (monotonic)
        kmin = {lv for lv in feasible if not any(below(o, lv) for o in feasible)}
        ok = {lv for lv in feasible if releasable(ref[lv], s, case.k)}  # the releases that may be chosen
        for metric in METRICS:
            if not ok:
                with pytest.raises(InfeasibleError):
                    search_optimal(problem, case.k, frac, metric)
                continue
            res = search_optimal(problem, case.k, frac, metric, k_minimal=True)
            best = min(ref[lv][metric] for lv in ok)
            assert close(res.loss, best)
            chosen = res.level_tuple
            assert chosen in ok and close(ref[chosen][metric], best)
            assert res.n_suppressed_records == ref[chosen]["n_small"]
            assert res.n_anonymous == len(feasible) and res.nodes_evaluated <= len(ref)
            assert {tuple(int(x) for x in r) for r in res.k_minimal[list(case.qis)].itertuples(index=False)} == kmin
            # classifying only the nodes that could still win: the same node, the tie rule included
            quick = search_optimal(problem, case.k, frac, metric)
            assert (quick.level_tuple, quick.n_suppressed_records) == (chosen, res.n_suppressed_records)
            assert close(quick.loss, best) and quick.nodes_evaluated <= len(ref)
            # listed unless some nodes may have been left unclassified (metrics with a bound from the levels
            # or from the class tables below, BANDED, and discernibility under wildcard semantics, with its bound
            # from the pairs of input classes) or some counts of discernibility's exact sizes cut short
            # (wildcard semantics too): on request there
            evaluator = NodeEvaluator(problem, resolve_criteria(problem, case.k, None), s, need_fk=True)
            cut_short = metric == "dm" and evaluator.sizes_can_wait
            listed = metric not in BANDED and not (metric == "dm" and evaluator.wildcard)
            assert (quick.k_minimal is not None, quick.n_anonymous is not None) == (listed and not cut_short,
                                                                                    listed)
            ex = exhaustive_search(problem, case.k, frac, metric)
            assert len(ex) == len(ref) > 0
            for row in ex.itertuples(index=False):
                lv = tuple(int(x) for x in row[: len(case.qis)])
                assert row.anonymous == (lv in ok) and row.n_suppressed == ref[lv]["n_small"]
                assert close(row.loss, ref[lv][metric])
            assert close(ex.loc[ex.anonymous, "loss"].min(), res.loss)


@given(cases(), st.data())
def test_applied_result_is_k_anonymous_after_suppressing_the_reported_records(case, data):
    n = len(case.frame)
    s = data.draw(st.integers(0, n))
    metric = data.draw(st.sampled_from(METRICS))
    try:
        res = search_optimal(case.problem(), case.k, s / n, metric)
    except InfeasibleError:
        return
    ref = reference_node(case, res.level_tuple)
    out = res.step().apply(case.dataset()).frame
    released = [tuple(None if pd.isna(v) else v for v in rec) for rec in out[list(case.qis)].itertuples(index=False)]
    assert len(released) == len(ref["records"]) == len(ref["small"]) > 0
    for rec, gen, small in zip(released, ref["records"], ref["small"], strict=True):
        assert rec == ((None,) * len(case.qis) if small else gen)
    assert sum(ref["small"]) == res.n_suppressed_records <= s
    fk = class_sizes(released, case.missing)
    assert all(f >= case.k for f, small in zip(fk, ref["small"]) if not small)
    # the columns not among the QIs are untouched
    assert set(out.columns) == set(case.frame.columns)


_NOT_MONOTONE = Case(frame=pd.DataFrame({"q0": ["v0"] * 11 + ["v1"], "q1": ["v0"] * 10 + [None, "v0"]}),
                     rows={"q0": (("v0", "*"), ("v1", "*")), "q1": (("v0", "*"),)}, missing="category", k=2)


def test_datafly_stops_below_a_top_that_is_not_releasable():
    """Releasability is not monotone (the blanked records must be none or at least k): here 2 records fail at
    the bottom, a group of k = 2 once blanked, and 1 at the top. Datafly's answer is the bottom."""
    case = _NOT_MONOTONE
    assert not releasable(reference_node(case, (1, 1)), case.k, case.k)
    res = datafly(case.problem(), case.k, None, "dm")
    assert res.level_tuple == (0, 0) and res.n_suppressed_records == 2
    assert releasable(reference_node(case, res.level_tuple), case.k, case.k)


@given(cases(), st.data())
def test_datafly_result_is_k_anonymous_within_the_limit(case, data):
    n = len(case.frame)
    s = data.draw(st.one_of(st.none(), st.integers(0, n)))
    limit = case.k if s is None else s
    top = reference_node(case, tuple(h - 1 for h in case.heights))
    problem = case.problem()
    try:
        res = datafly(problem, case.k, None if s is None else s / n, "dm")
    except InfeasibleError:
        # it gives up only at the top levels; a lower node may still be releasable when the top is not (the
        # blanked records must be none or at least k: 2 records failing below the top, 1 at the top)
        assert not releasable(top, limit, case.k)
        return
    ref = reference_node(case, res.level_tuple)
    assert releasable(ref, limit, case.k) and res.n_suppressed_records == ref["n_small"]
    assert close(res.loss, ref["dm"])
    # Datafly only ever generalizes: each step adds one level to one QI
    steps = [tuple(int(x) for x in r[: len(case.qis)]) for r in res.evaluated.itertuples(index=False)]
    assert steps[0] == (0,) * len(case.qis)
    assert all(sum(b) - sum(a) == 1 and all(y >= x for x, y in zip(a, b)) for a, b in zip(steps, steps[1:]))


@given(cases(max_nodes=48))
def test_tradeoff_gives_the_optimum_for_each_limit(case):
    ref = all_nodes(case)
    n = len(case.frame)
    limits = (0.0, 0.25, 0.5)
    table = tradeoff(case.problem(), case.k, limits, "prec")
    assert list(table.max_suppression) == list(limits)
    losses = []
    for lim, row in zip(limits, table.itertuples(index=False)):
        feasible = [r["prec"] for r in ref.values() if releasable(r, math.floor(lim * n + 1e-9), case.k)]
        assert row.feasible == bool(feasible)
        if feasible:
            assert close(row.loss, min(feasible))
            losses.append(row.loss)
    assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:]))


def test_pareto_front_keeps_only_undominated_nodes():
    ev = pd.DataFrame({"n_suppressed": [0, 0, 2, 3, 5, 5], "loss": [0.9, 0.8, 0.8, 0.5, 0.6, 0.4]})
    front = pareto_front(ev)
    assert list(zip(front.n_suppressed, front.loss)) == [(0, 0.8), (3, 0.5), (5, 0.4)]


def test_search_reports_progress_and_infeasibility():
    frame = pd.DataFrame({"a": ["x", "y", "z"], "b": ["u", "u", "v"]})
    hs = {"a": Hierarchy((("x", "*"), ("y", "*"), ("z", "*"))), "b": Hierarchy((("u", "*"), ("v", "*")))}
    problem = build_problem(Dataset(frame, roles=Roles(qis=("a", "b"))), hs)
    seen = []
    res = search_optimal(problem, 3, 0.0, "prec", progress=Progress(lambda f, msg: seen.append(f)))
    assert res.level_tuple == (1, 1) and seen and seen[-1] == 1.0
    stop = Progress()
    stop.cancel()
    with pytest.raises(Cancelled):
        search_optimal(problem, 2, 0.0, "prec", progress=stop)
    with pytest.raises(InfeasibleError, match="^The file has 3 records, so no record can be in a group of k=4.$"):
        search_optimal(problem, 4, 0.9)  # at any level and limit (the suppressed records form a group too)
    with pytest.raises(InfeasibleError, match="^The file has 3 records"):
        datafly(problem, 4)
    same = build_problem(Dataset(frame.assign(s=1), roles=Roles(qis=("a", "b"))), hs, sensitive=("s",))
    with pytest.raises(InfeasibleError, match="Even"):  # k fits the file; one sensitive value cannot be 2-diverse
        search_optimal(same, 3, 0.0, criteria=["l=2:s"])
    with pytest.raises(InputError, match="fraction"):
        search_optimal(problem, 2, 5.0)
    with pytest.raises(InputError, match="No hierarchy for b"):
        build_problem(Dataset(frame, roles=Roles(qis=("a", "b"))), {"a": hs["a"]})


# -- Adult, 8 QIs with ARX's hierarchies ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def adult():
    ds = load_dataset(ADULT / "adult.csv", roles=Roles(qis=tuple(ADULT_QIS)))
    hs = load_hierarchies(ADULT, ADULT_QIS)
    return ds, hs, build_problem(ds, hs, ADULT_QIS)


def test_a_cancelled_tradeoff_stops_inside_the_search_under_way(adult):
    """Each search of the trade-off curve reports within its share of the bar, labelled with its limit, and a
    cancel stops the search under way, not only the next one."""
    problem = adult[2]
    seen: list[tuple[float, str]] = []
    progress = Progress()

    def listen(fraction: float, message: str) -> None:
        seen.append((fraction, message))
        if len(seen) == 3:
            progress.cancel()

    progress.callback = listen
    with pytest.raises(Cancelled):
        tradeoff(problem, 5, (0.0, 0.01), "prec", progress=progress)
    assert len(seen) == 3  # the next checkpoint of the first search raised
    assert all(m.startswith("Trade-off, limit 0 %") and 0.0 <= f < 0.5 for f, m in seen)


def arx_labels(var: str, level: int) -> dict[str, str]:
    rows = [ln.split(";") for ln in (ADULT / f"adult_hierarchy_{var}.csv").read_text().splitlines() if ln.strip()]
    return {r[0]: r[level] for r in rows}


def anonymous(frame: pd.DataFrame, levels: dict[str, int], k: int) -> bool:
    gen = pd.DataFrame({q: frame[q].astype(str).map(arx_labels(q, lv)) for q, lv in levels.items()})
    return bool(gen.groupby(list(levels)).size().min() >= k)


@pytest.mark.parametrize("max_suppression", [0.0, 0.01])
def test_adult_eight_qis_k5(adult, max_suppression):
    ds, hs, problem = adult
    assert problem.n_nodes == 6480 and problem.n_records == 30162
    res = search_optimal(problem, 5, max_suppression, "prec")
    assert res.n_nodes == 6480 and res.nodes_evaluated < 6480
    n, q = 30162, len(ADULT_QIS)
    assert res.n_suppressed_records <= math.floor(max_suppression * n)
    out = res.step().apply(ds).frame
    suppressed = out[ADULT_QIS].isna().all(axis=1)
    assert int(suppressed.sum()) == res.n_suppressed_records
    kept = out.loc[~suppressed, ADULT_QIS].astype(str)
    assert kept.groupby(ADULT_QIS).size().min() >= 5
    # the released values are the ARX labels of the originals at the chosen levels
    assert len(res.levels) == len(ADULT_QIS)
    for var, lv in res.levels.items():
        expected = ds.frame.loc[~suppressed, var].astype(str).map(arx_labels(var, lv))
        assert (kept[var] == expected).all()
    # Prec from its definition, suppressed records fully generalized
    frac = sum(lv / (hs[v].height - 1) for v, lv in res.levels.items())
    s = res.n_suppressed_records
    assert res.loss == pytest.approx(((n - s) * frac + s * q) / (n * q))
    if max_suppression == 0.0:
        # k-minimal: no direct specialization is k-anonymous
        for var, lv in res.levels.items():
            if lv:
                assert not anonymous(ds.frame, {**res.levels, var: lv - 1}, 5)


def test_adult_four_qis_search_equals_exhaustive_for_every_metric(adult):
    ds, hs, _ = adult
    qis = ADULT_QIS[:4]
    problem = build_problem(ds, hs, qis)
    assert problem.n_nodes == 2 * 5 * 2 * 3
    for metric in METRICS:
        for lim in (0.0, 0.01):
            ex = exhaustive_search(problem, 5, lim, metric)
            res = search_optimal(problem, 5, lim, metric, k_minimal=True)
            assert res.loss == pytest.approx(ex.loc[ex.anonymous, "loss"].min(), rel=1e-12)
            assert res.n_anonymous == int((ex.n_suppressed <= suppression_limit(len(ds.frame), lim)).sum())
            quick = search_optimal(problem, 5, lim, metric)
            assert (quick.level_tuple, quick.loss) == (res.level_tuple, pytest.approx(res.loss, rel=1e-12))


def test_adult_datafly_is_k_anonymous(adult):
    ds, _, problem = adult
    res = datafly(problem, 5, 0.01, "prec")
    out = res.step().apply(ds).frame
    suppressed = out[ADULT_QIS].isna().all(axis=1)
    assert int(suppressed.sum()) == res.n_suppressed_records <= 301
    assert out.loc[~suppressed, ADULT_QIS].astype(str).groupby(ADULT_QIS).size().min() >= 5
    assert np.isfinite(res.loss) and res.loss >= search_optimal(problem, 5, 0.01, "prec").loss - 1e-12


@given(cases(max_nodes=64), st.data())
def test_a_small_table_cache_changes_nothing(case, data):
    """With a cache of a few hundred bytes, tables are evicted, slots compacted and roll-ups start from the
    input's table or a hub again: the search must give the same node, loss and evaluations' results."""
    import kanon_core.treat.lattice as lattice_module

    n = len(case.frame)
    frac = data.draw(st.integers(0, n)) / n
    metric = data.draw(st.sampled_from(METRICS))
    listing = data.draw(st.booleans())
    try:
        big = search_optimal(case.problem(), case.k, frac, metric, k_minimal=listing)
    except InfeasibleError:
        big = None
    old, old_slots = lattice_module.CACHE_BYTES, lattice_module.NodeEvaluator.INITIAL_SLOTS
    lattice_module.CACHE_BYTES = data.draw(st.sampled_from([64, 400, 2000]))
    lattice_module.NodeEvaluator.INITIAL_SLOTS = 2
    try:
        if big is None:
            with pytest.raises(InfeasibleError):
                search_optimal(case.problem(), case.k, frac, metric)
            return
        small = search_optimal(case.problem(), case.k, frac, metric, k_minimal=listing)
    finally:
        lattice_module.CACHE_BYTES, lattice_module.NodeEvaluator.INITIAL_SLOTS = old, old_slots
    assert (small.level_tuple, small.n_suppressed_records, small.n_anonymous) == (
        big.level_tuple, big.n_suppressed_records, big.n_anonymous)
    assert close(small.loss, big.loss)


@given(cases(), st.data())
def test_a_search_that_skips_a_node_that_could_win_is_caught(case, data):
    """The run-time check of the partial classification: with the band's ceiling made too low, every path
    start after the top is skipped, so nodes whose bound lies below the top's loss stay unclassified (every
    other node: Prec bounds grow up the lattice, and average class size's bounds below the top are only
    raised by the class tables computed below them, none), and the search raises instead of returning a
    node it cannot vouch for. Where the nodes it did classify already prove the optimum (the bottom node
    evaluated and optimal, every other bound above its loss), it may return that optimum: never another
    node. :func:`test_a_skipped_node_that_could_win_raises` is a case that must raise."""
    import kanon_core.treat.lattice as lattice_module

    n = len(case.frame)
    frac = data.draw(st.integers(0, n)) / n
    metric = data.draw(st.sampled_from(["prec", "aecs"]))
    try:
        res = search_optimal(case.problem(), case.k, frac, metric)
    except InfeasibleError:
        return
    if res.n_nodes == 1:
        return
    real = lattice_module._band_ceiling
    lattice_module._band_ceiling = lambda key: -math.inf if key is not None else math.inf
    try:
        broken = search_optimal(case.problem(), case.k, frac, metric)
    except RuntimeError as err:
        assert "could beat the optimum" in str(err)
    else:
        assert broken.level_tuple == res.level_tuple and close(broken.loss, res.loss)
    finally:
        lattice_module._band_ceiling = real


def test_a_skipped_node_that_could_win_raises():
    """A case where the broken band leaves a node unclassified whose bound is below the top's loss."""
    import kanon_core.treat.lattice as lattice_module

    frame = pd.DataFrame({"q0": ["v0", "v0", "v1", "v1", "v2", "v2"], "q1": ["v0", "v1", "v0", "v1", "v0", "v1"]},
                         dtype=object)
    rows = {"q0": (("v0", "a", "*"), ("v1", "a", "*"), ("v2", "b", "*")), "q1": (("v0", "*"), ("v1", "*"))}
    case = Case(frame, rows, "category", 2)
    assert search_optimal(case.problem(), 2, 0.0, "prec").level_tuple != (2, 1)
    real = lattice_module._band_ceiling
    lattice_module._band_ceiling = lambda key: -math.inf if key is not None else math.inf
    try:
        with pytest.raises(RuntimeError, match="could beat the optimum"):
            search_optimal(case.problem(), 2, 0.0, "prec")
    finally:
        lattice_module._band_ceiling = real


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_average_class_size_search_classifies_only_what_its_class_bounds_leave(missing):
    """Average class size: a path start whose bound (records / classes of its own table, read first under
    wildcard semantics, or of one classified below it) is above the least loss found is not classified. On
    tables of 30 to 120 records the quick search returns the node that every node classified returns, and
    classifies fewer nodes in all under wildcard semantics (no more under category semantics, where the
    start's own table is not read first and these tables leave no start to skip)."""
    quick_evals = full_evals = 0
    for seed in range(30):
        case = larger_wildcard_case(seed)
        case = Case(case.frame, case.rows, missing, case.k)
        problem = case.problem()
        for frac in (0.0, 0.1):
            try:
                full = search_optimal(problem, case.k, frac, "aecs", k_minimal=True)
            except InfeasibleError:
                continue
            quick = search_optimal(problem, case.k, frac, "aecs")
            assert (quick.level_tuple, quick.n_suppressed_records) == (full.level_tuple, full.n_suppressed_records)
            assert close(quick.loss, full.loss)
            quick_evals += quick.nodes_evaluated
            full_evals += full.nodes_evaluated
    assert quick_evals < full_evals if missing == "wildcard" else quick_evals <= full_evals


@given(cases(max_nodes=48), st.data())
def test_discernibility_floor_of_a_passing_node_bounds_every_node_below(case, data):
    """Discernibility under wildcard semantics leaves a passing node without its exact sizes until it could win:
    its failing records add at least n - k + 1 each below it. At every node below, the brute-force loss is
    at least that node's loss without suppression plus the floor (the bound the search gives it)."""
    frame = case.frame.copy()
    frame.iloc[0, 0] = None  # a missing value, read under wildcard semantics
    case = Case(frame, case.rows, "wildcard", case.k)
    problem = case.problem()
    n = len(case.frame)
    limit = data.draw(st.integers(1, max(1, n)))
    ev = NodeEvaluator(problem, resolve_criteria(problem, case.k, None), limit, need_fk=True)
    assert ev.sizes_can_wait
    ref = all_nodes(case)
    for lv in ref:
        e = ev.classify(lv)
        if e.mono_small is None:
            continue
        floor = ev.suppression_floor(e)
        assert floor == ref[lv]["n_small"] * (n - case.k + 1)
        for other, r in ref.items():
            if below(other, lv):
                assert r["dm"] >= sum(r["fk"]) + floor - 1e-9


def larger_wildcard_case(seed: int) -> Case:
    """A wildcard table larger than the brute-force cases (30 to 120 records, 2 or 3 QIs, nested levels as
    cases() draws them), from a seed."""
    rng = np.random.default_rng(seed)
    q = int(rng.integers(2, 4))
    n = int(rng.integers(30, 121))
    rows, cols = {}, {}
    for j in range(q):
        m = int(rng.integers(2, 6))
        groups = list(range(m))
        table = [[f"v{i}"] for i in range(m)]
        for lv in range(1, int(rng.integers(2, 5)) - 1):
            f = rng.integers(0, max(groups) + 1, size=max(groups) + 1)
            groups = [int(f[g]) for g in groups]
            for i in range(m):
                table[i].append(f"L{lv}g{groups[i]}")
        rows[f"q{j}"] = tuple(tuple(r) + ("*",) for r in table)
        codes = rng.integers(0, m, size=n)
        gaps = rng.random(n) < rng.uniform(0.05, 0.4)
        cols[f"q{j}"] = [None if g else f"v{c}" for c, g in zip(codes, gaps, strict=True)]
    return Case(pd.DataFrame(cols, dtype=object), rows, "wildcard", int(rng.integers(2, 5)))


def least_dm(problem, k: int, frac: float) -> float | None:
    """The least discernibility of every node evaluated exactly (None when no node passes)."""
    ex = exhaustive_search(problem, k, frac, "dm")
    feasible = ex.loc[ex.anonymous]
    return None if feasible.empty else float(feasible["loss"].min())


@given(st.integers(0, 2**32 - 1))
def test_discernibility_search_with_counts_cut_short_equals_every_node_evaluated(seed):
    """Where the search cuts the counts of nodes that cannot win short and passes their partial bounds up, the
    least loss equals that of every node evaluated exactly (the evaluations themselves are checked against
    brute force above)."""
    case = larger_wildcard_case(seed)
    problem = case.problem()
    for frac in (0.0, 0.05, 0.1, 0.2, 0.3):
        least = least_dm(problem, case.k, frac)
        if least is not None:
            assert close(search_optimal(problem, case.k, frac, "dm").loss, least)


@pytest.mark.parametrize("frac", [0.0, 0.1])
def test_a_search_that_cuts_a_count_that_could_win_is_caught(frac):
    """The run-time check of the nodes left without their count: with the cap made too low (every count after
    the first node's cut at once, and at a positive limit every node scanned for its failing records left by
    their floor), the search raises instead of returning a node it cannot vouch for, or returns the optimum
    all the same."""
    import kanon_core.treat.lattice as lattice_module

    real = lattice_module._cut_cap
    lattice_module._cut_cap = lambda least: -1.0
    raised = 0
    try:
        for seed in range(40):
            case = larger_wildcard_case(seed)
            problem = case.problem()
            least = least_dm(problem, case.k, frac)
            if least is None:
                continue
            try:
                res = search_optimal(problem, case.k, frac, "dm")
            except RuntimeError as exc:
                assert "could beat the optimum" in str(exc)
                raised += 1
            else:
                assert close(res.loss, least)
    finally:
        lattice_module._cut_cap = real
    assert raised > 0


def test_nodes_left_by_the_floor_of_their_failing_records_lose_at_least_their_bound():
    """At a positive limit, a node tagged passing but never classified is scanned for its failing records and
    left without its exact count when the bound it inherits plus their floor is above the best loss. Every
    such bound is at most the node's loss evaluated exactly (brute force), the search's optimum is the
    exhaustive one, and the path is taken on these tables."""
    import kanon_core.treat.lattice as lattice_module

    real = lattice_module._check_left
    seen: list[dict[int, float]] = []

    def spy(left, best, why):
        if "floor" in why:
            seen.append(dict(left))
        real(left, best, why)

    lattice_module._check_left = spy
    left_by_floor = 0
    try:
        for seed in range(60):
            case = larger_wildcard_case(seed)
            problem = case.problem()
            lat = lattice_module._Lattice(problem.heights)
            for frac in (0.05, 0.1, 0.2, 0.3):
                ex = exhaustive_search(problem, case.k, frac, "dm")
                feasible = ex.loc[ex.anonymous]
                if feasible.empty:
                    continue
                seen.clear()
                res = search_optimal(problem, case.k, frac, "dm")
                assert close(res.loss, float(feasible["loss"].min()))
                loss_at = {tuple(int(x) for x in row[list(problem.qis)]): float(row["loss"])
                           for _, row in ex.iterrows()}
                for node, bound in seen[0].items():
                    left_by_floor += 1
                    assert bound <= loss_at[tuple(int(x) for x in lat.levels[node])] * (1 + 1e-9)
    finally:
        lattice_module._check_left = real
    assert left_by_floor > 0


@given(st.integers(0, 2**32 - 1))
def test_discernibility_on_tables_beyond_the_kernels_size_uses_the_general_count(seed):
    """Beyond KERNEL_FK_MAX_CLASSES classes a node's exact sizes come from the general count (never stopped):
    the same optimum as every node evaluated exactly."""
    import kanon_core.treat.lattice as lattice_module

    case = larger_wildcard_case(seed)
    problem = case.problem()
    real = lattice_module.KERNEL_FK_MAX_CLASSES
    lattice_module.KERNEL_FK_MAX_CLASSES = 0
    try:
        for frac in (0.0, 0.1):
            least = least_dm(problem, case.k, frac)
            if least is not None:
                assert close(search_optimal(problem, case.k, frac, "dm").loss, least)
    finally:
        lattice_module.KERNEL_FK_MAX_CLASSES = real
