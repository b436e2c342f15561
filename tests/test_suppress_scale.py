"""``kanon suppress`` at scale: the strict model on a class table, written by the engines.

* the class-level solve against brute force (tiny files), against the in-memory solve (equal costs when
  both are proven optimal), with a valid bound, and recounted record by record by pure-python code;
* the greedy classes built on a reduced copy file are valid for the full file;
* the intruder's count with multiplicities equals the count on the expanded records;
* the releases DuckDB and Polars write (CSV and Parquet), read back by the in-memory reader, equal the
  in-memory release of the same assignment, cell for cell and in order, and meet k when recounted;
* the command line: JSON keys of the in-memory command, refused options in one line, inputs never
  overwritten.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.classtable import ClassTable
from kanon_core.cli import main
from kanon_core.dataset import Roles
from kanon_core.engines import get_engine
from kanon_core.engines.local_suppression import ranked_plan
from kanon_core.engines.source import open_source
from kanon_core.engines.table import aggregate_table
from kanon_core.errors import InfeasibleError
from kanon_core.io import load_dataset
from kanon_core.risk.intruder import findable_below_k, released_codes
from kanon_core.risk.keys import group_ids
from kanon_core.risk.restore import NOT_COUNTED_AT_SCALE
from kanon_core.treat.strict import solve_strict
from kanon_core.treat.strict.classes import check_release, rank_ranges, suppress_classes
from kanon_core.treat.strict.mip import Assignment
from kanon_core.treat.strict.solve import _to_mask, solve_strict_classes
from kanon_core.treat.suppress import apply_mask
from tests.reference.protection import COUNTS, brute_force_optimum, findable

ENGINES = ["duckdb", "polars"]


def record_mask(table: ClassTable, assign: Assignment, codes: np.ndarray) -> np.ndarray:
    """The per-record mask of a class-level assignment: each class's records in input order."""
    n, q = codes.shape
    return _to_mask(assign, table.record_class, n, q) & (codes >= 0)


def check_valid(codes, table, res, k, missing, costs):
    """Recount record by record with the pure-python reference (shares nothing with the solver)."""
    mask = record_mask(table, res.assignment, codes)
    assert not (mask & (codes < 0)).any()
    assert min(COUNTS["strict"](codes, mask, missing, 1.0)) >= k
    assert findable(codes, mask, k, missing) == 0 == res.check.findable_below_k
    assert res.check.violations == 0
    assert res.cost == pytest.approx(float((mask * costs[None, :]).sum()))
    assert res.lower_bound <= res.cost + 1e-9
    assert res.optimal == (res.lower_bound >= res.cost - 1e-9)
    return mask


@st.composite
def tiny(draw):
    """Tables small enough to try every subset of cells (at most 12 suppressible cells)."""
    q = draw(st.integers(1, 3))
    n = draw(st.integers(2, 12 // q))
    codes = draw(arrays(np.int32, (n, q), elements=st.integers(-1, 2)))
    costs = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=q, max_size=q)))
    protected = np.array(draw(st.lists(st.booleans(), min_size=q, max_size=q)))
    k = draw(st.integers(2, min(4, n)))
    return codes, costs, protected, k


def solve(codes, costs, protected, k, missing):
    table = ClassTable.from_codes(codes)
    return table, suppress_classes(table.codes, table.count, k, costs, protected, missing)


@settings(max_examples=60, deadline=None)
@given(tiny(), st.sampled_from(["category", "wildcard"]))
def test_class_level_solve_against_every_cell_subset(problem, missing):
    codes, costs, protected, k = problem
    best = brute_force_optimum("strict", codes, costs, protected, k, missing)
    try:
        table, res = solve(codes, costs, protected, k, missing)
    except InfeasibleError:
        assert best is None  # exactly when nothing is feasible (wildcard: rows no class holds are placed)
        return
    assert best is not None
    check_valid(codes, table, res, k, missing, costs)
    assert res.lower_bound <= best + 1e-9 <= res.cost + 1e-9
    if res.optimal:
        assert res.cost == pytest.approx(best)
    if missing == "category" or not (codes < 0).any():
        assert res.optimal and res.cost == pytest.approx(best)  # exact where the model is a partition


@st.composite
def files(draw):
    """Larger random files: a few QIs, skewed values, missing cells, sometimes a protected QI."""
    q = draw(st.integers(2, 4))
    n = draw(st.integers(10, 80))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    levels = [int(rng.integers(2, 5)) for _ in range(q)]
    codes = np.column_stack([rng.choice(lv, n, p=np.sort(rng.dirichlet(np.ones(lv)))[::-1]) for lv in levels])
    miss = rng.random((n, q)) < draw(st.sampled_from([0.0, 0.05, 0.15]))
    codes = np.where(miss, -1, codes).astype(np.int32)
    costs = rng.choice([1.0, 2.0], q)
    protected = np.zeros(q, dtype=bool)
    if draw(st.booleans()):
        protected[int(rng.integers(q))] = True
    k = draw(st.integers(2, 4))
    return codes, costs, protected, k


@settings(max_examples=40, deadline=None)
@given(files(), st.sampled_from(["category", "wildcard"]))
def test_class_level_solve_is_valid_and_agrees_with_the_in_memory_solve(problem, missing):
    codes, costs, protected, k = problem
    try:
        table, res = solve(codes, costs, protected, k, missing)
    except InfeasibleError:
        return
    check_valid(codes, table, res, k, missing, costs)
    if missing == "category" or not (codes < 0).any():
        mem = solve_strict(codes, costs, protected, k)
        assert res.lower_bound <= mem.cost + 1e-9 and mem.lower_bound <= res.cost + 1e-9
        if mem.optimal and res.optimal:
            assert res.cost == pytest.approx(mem.cost)


@pytest.mark.parametrize("missing", ["category", "wildcard"])
def test_greedy_on_reduced_copies_is_valid_for_the_full_file_and_bounds_use_full_counts(monkeypatch, missing):
    """Classes far larger than k are handed to the greedy as 2k copies; its classes stay valid on the
    full file. The programmes are switched off so that the greedy classes are the result."""
    from kanon_core.treat.strict import solve as solve_mod

    monkeypatch.setattr(solve_mod, "FIRST_MAX_FREE", 0)
    monkeypatch.setattr(solve_mod, "MIP_MAX_VARIABLES", 0)
    rng = np.random.default_rng(5)
    q, k = 4, 3
    codes = np.unique(rng.integers(0, 3, (60, q)).astype(np.int32), axis=0)
    if missing == "wildcard":
        codes = np.unique(np.where(rng.random(codes.shape) < 0.1, -1, codes), axis=0).astype(np.int32)
    mult = np.where(rng.random(len(codes)) < 0.3, rng.integers(3 * k, 400, len(codes)), rng.integers(1, 3, len(codes)))
    costs = np.array([1.0, 2.0, 1.0, 3.0])
    protected = np.zeros(q, dtype=bool)
    wild = missing == "wildcard"
    sol = solve_strict_classes(codes, mult, costs, protected, k, missing_matches=wild,
                               force=(mult < k) if wild else None)
    assert sol.stats["greedy_copies"] < mult.sum()  # the greedy did not see every record
    assert sol.cost == pytest.approx(sol.stats["greedy_cost"])  # the greedy classes are the result
    assert sol.lower_bound <= sol.cost + 1e-9
    chk = check_release(codes, mult, sol.assignment, k, missing)
    assert chk.violations == 0 and chk.findable_below_k == 0
    # and on the expanded records, by the reference count of the intruder
    rec = np.repeat(codes, mult, axis=0)
    inv = np.repeat(np.arange(len(codes)), mult)
    mask = _to_mask(sol.assignment, inv, len(rec), q) & (rec >= 0)
    assert sol.cost == pytest.approx(float((mask * costs[None, :]).sum()))
    assert findable_below_k(rec, released_codes(rec, mask), k, missing) == 0
    # the bound is that of the full file: the in-memory search on the records has the same charge bound
    mem = solve_strict(rec, costs, protected, k, missing_matches=wild, force=np.repeat(mult < k, mult) if wild else None)
    assert sol.stats["charge_bound"] == pytest.approx(mem.stats["charge_bound"])


def test_class_level_optimum_equals_the_in_memory_optimum_with_large_classes():
    """Full multiplicities in the bound and the programme: the optimum of the whole file, proven."""
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, (40, 3)).astype(np.int32)
    codes = np.vstack([codes, np.repeat(codes[:3], 300, axis=0)])
    table = ClassTable.from_codes(codes)
    costs = np.array([1.0, 2.0, 1.0])
    protected = np.zeros(3, dtype=bool)
    res = suppress_classes(table.codes, table.count, 3, costs, protected, "category")
    mem = solve_strict(codes, costs, protected, 3)
    assert res.optimal and mem.optimal and res.cost == pytest.approx(mem.cost)
    assert res.stats["greedy_copies"] < len(codes)


@settings(max_examples=50, deadline=None)
@given(arrays(np.int32, st.tuples(st.integers(1, 12), st.just(3)), elements=st.integers(-1, 2)),
       st.data(), st.sampled_from(["category", "wildcard"]))
def test_findable_with_multiplicities_equals_the_expanded_count(codes, data, missing):
    mask = data.draw(arrays(np.bool_, codes.shape)) & (codes >= 0)
    released = released_codes(codes, mask)
    k = data.draw(st.integers(1, 5))
    om = np.array(data.draw(st.lists(st.integers(1, 4), min_size=len(codes), max_size=len(codes))))
    rm = np.array(data.draw(st.lists(st.integers(1, 4), min_size=len(codes), max_size=len(codes))))
    # people: row i of the original stands for om[i] people; released row i for rm[i] released records
    expanded = findable_below_k(np.repeat(codes, om, axis=0), np.repeat(released, rm, axis=0), k, missing)
    assert findable_below_k(codes, released, k, missing, original_mult=om, released_mult=rm) == expanded
    assert findable_below_k(codes, released, k, missing) == findable(codes, mask, k, missing)


def test_rank_ranges_follow_the_assignment_order():
    a = Assignment(np.array([2, 0, 2, 2]), np.array([1, 2, 3, 0]), np.array([2, 1, 1, 3]))
    row, lo, hi, pat = rank_ranges(a, 3)
    assert lo.tolist() == [0, 0, 2, 3] and hi.tolist() == [2, 1, 3, 6] and pat.tolist() == [1, 2, 3, 0]


# -- releases written by the engines -------------------------------------------------------------------

@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """A file with text, integer and float QIs, missing cells, a declared missing code, and classes
    below k, as CSV and Parquet."""
    d = tmp_path_factory.mktemp("scale")
    rng = np.random.default_rng(21)
    n = 1500
    df = pd.DataFrame({
        "id": np.arange(n),
        "region": rng.choice(["north", "south", "east", "west", "centre"], n, p=[.3, .3, .2, .12, .08]),
        "age": rng.choice([20, 30, 40, 50, 60, 70], n, p=[.2, .2, .2, .15, .15, .1]),
        "sex": rng.choice(["f", "m"], n),
        "edu": rng.choice([1.5, 2.5, 3.5], n, p=[.5, .3, .2]),
        "income": np.round(rng.uniform(0, 100, n), 1),
    })
    # at most one missing QI per record (empty, NaN or the declared code 99), so that every missing
    # pattern has records enough to reach k under category semantics
    which = rng.choice(["", "region", "age", "edu"], n, p=[.85, .05, .05, .05])
    df.loc[which == "region", "region"] = ""
    df.loc[which == "age", "age"] = 99
    df["age"] = df["age"].astype(object)
    df.loc[(which == "age") & (rng.random(n) < 0.5), "age"] = None  # empty and the declared 99: one class
    df.loc[which == "edu", "edu"] = np.nan
    csv, parquet = d / "survey.csv", d / "survey.parquet"
    df.to_csv(csv, index=False)
    df.assign(region=df["region"].replace("", None), age=df["age"].astype("Int64")).to_parquet(parquet, index=False)
    return {"csv": csv, "parquet": parquet}


QIS = ["region", "age", "sex", "edu"]


def class_of_records(ds_codes: np.ndarray, table_codes: np.ndarray) -> np.ndarray:
    gid, _ = group_ids(np.vstack([table_codes, ds_codes]))
    of = np.full(int(gid.max()) + 1, -1, np.int64)
    of[gid[: len(table_codes)]] = np.arange(len(table_codes))
    out = of[gid[len(table_codes):]]
    assert (out >= 0).all()
    return out


def comparable(frame: pd.DataFrame) -> list[list]:
    """Cells as python values (missing as None, whole floats as ints), for a type-blind comparison."""
    def norm(v):
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            return None
        if isinstance(v, (np.integer,)):
            return int(v)
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return int(v)
        return v.item() if hasattr(v, "item") else v
    return [[norm(v) for v in row] for row in frame.astype(object).itertuples(index=False)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("missing", ["category", "wildcard"])
def test_release_at_scale_equals_the_in_memory_release_of_the_same_assignment(survey, tmp_path, engine, fmt,
                                                                                missing):
    path = survey[fmt]
    eng = get_engine(engine)
    codes_arg = {"age": ("99",)}
    table, keys, class_of_row, _ = aggregate_table(eng, open_source(path), QIS, None, codes_arg)
    assert len(class_of_row) > table.n_classes  # raw rows merged into classes (empty and 99 in age)
    costs, protected = np.array([1.0, 2.0, 1.0, 1.0]), np.array([False, False, True, False])
    res = suppress_classes(table.codes, table.count, 3, costs, protected, missing)
    assert res.n_suppressed > 0
    out = tmp_path / f"release.{fmt}"
    eng.release(path, out, qis=QIS, missing_codes=codes_arg, ranked=ranked_plan(keys, class_of_row,
                                                                               table.n_classes, res.assignment,
                                                                               len(QIS)))
    ds = load_dataset(path, roles=Roles(qis=tuple(QIS)), missing_codes=codes_arg)
    qm = ds.qi_matrix(QIS)
    rec_class = class_of_records(qm.codes, table.codes)
    mask = _to_mask(res.assignment, rec_class, len(rec_class), len(QIS)) & (qm.codes >= 0)
    expected = apply_mask(ds.frame, QIS, mask)
    back = load_dataset(out, missing_codes=codes_arg)
    assert list(back.frame.columns) == list(expected.columns)
    assert comparable(back.frame) == comparable(expected)  # same cells blanked, same order
    # recounted on the file read back: the blanked cells are those missing now and not before
    back_codes = back.qi_matrix(QIS)
    blank = (back_codes.codes < 0) & (qm.codes >= 0)
    np.testing.assert_array_equal(blank, mask)
    small = pd.Series(qm.codes.tolist()).map(tuple).value_counts()
    assert (small < 3).any()  # the input had classes below k
    counts = ClassTable.from_codes(np.where(blank, qm.codes.max() + 1, qm.codes)).class_sizes(missing).fk
    assert counts.min() >= 3
    assert findable_below_k(qm.codes, released_codes(qm.codes, blank), 3, missing) == 0


def test_release_at_scale_keeps_the_labels_sidecar(survey, tmp_path):
    src = tmp_path / "lab.csv"
    src.write_bytes(survey["csv"].read_bytes())
    (tmp_path / "lab.labels.json").write_text(json.dumps({"sex": {"label": "Sex", "value_labels": {"f": "female", "m": "male"}},
                                                                 "age": {"missing_codes": ["99"]}}))
    out = tmp_path / "o.csv"
    assert main(["suppress", str(src), "--qi", ",".join(QIS), "--k", "3", "--engine", "duckdb", "-o", str(out),
                 "--json", str(tmp_path / "o.json")]) == 0
    assert (tmp_path / "o.labels.json").exists()
    back, ref = load_dataset(out), load_dataset(src)
    assert back.meta["sex"].label == ref.meta["sex"].label == "Sex"
    assert {"f": "female", "m": "male"}.items() <= back.meta["sex"].value_labels.items()
    assert back.meta["age"].missing_codes[0] == ref.meta["age"].missing_codes[0] == 99
    # the code for suppressed cells is declared where cells were suppressed, as the in-memory release does
    assert main(["suppress", str(src), "--qi", ",".join(QIS), "--k", "3", "--engine", "pandas", "-o",
                 str(tmp_path / "m.csv"), "--json", str(tmp_path / "m.json")]) == 0
    assert (tmp_path / "o.labels.json").read_bytes() == (tmp_path / "m.labels.json").read_bytes()


# -- command line --------------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_cli_at_scale_reports_the_in_memory_keys_and_a_valid_release(survey, tmp_path, engine, capsys):
    path = survey["csv"]
    common = ["suppress", str(path), "--qi", ",".join(QIS), "--k", "3", "--importance", "age=2",
              "--protect", "sex", "--missing", "category"]
    assert main([*common, "--engine", "pandas", "-o", str(tmp_path / "m.csv"), "--json", str(tmp_path / "m.json")]) == 0
    assert main([*common, "--engine", engine, "-o", str(tmp_path / "s.parquet"),
                 "--json", str(tmp_path / "s.json")]) == 0
    ref = json.loads((tmp_path / "m.json").read_text())
    got = json.loads((tmp_path / "s.json").read_text())
    assert set(ref) <= set(got)
    assert got["engine"] == engine and got["findable_below_k"] == 0 and got["violations_after"] == 0
    for key in ("n_records", "qis", "k", "missing", "model", "protected"):
        assert got[key] == ref[key], key
    assert got["lower_bound"] <= got["cost"] + 1e-9 and ref["lower_bound"] <= got["cost"] + 1e-9
    assert got["lower_bound"] <= ref["cost"] + 1e-9
    if got["optimal"] and ref["optimal"]:
        assert got["cost"] == pytest.approx(ref["cost"])
    err = capsys.readouterr().err
    assert f"kanon suppress: {engine}: counting classes" not in err  # progress only on a terminal, as in memory
    # the cells other released variables give back are counted in memory only: at scale the command says so
    assert got["restorable"] is None and got["n_suppressed"] > 0
    for summary in (ref, got):  # what is proven of the cost, in both: how the bound was found, and why not optimal
        assert summary["bound"] and (summary["why_not_proven"] == "") == summary["optimal"]
    assert err.count(f"kanon suppress: notice: {NOT_COUNTED_AT_SCALE}") == 1


@pytest.mark.parametrize("extra", [["--model", "record"], ["--model", "release"],
                                   ["--by", "sex"], ["--link", "region=income"], ["--method", "greedy"],
                                   ["--alpha", "0.5"]])
def test_cli_refuses_options_that_need_the_records_in_one_line(survey, tmp_path, capsys, extra):
    out = tmp_path / "o.csv"
    assert main(["suppress", str(survey["csv"]), "--qi", ",".join(QIS), "--k", "3", "--engine", "duckdb",
                 "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--engine pandas" in err
    assert not out.exists()


def test_cli_at_scale_never_overwrites_its_input(survey, tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_bytes(survey["csv"].read_bytes())
    before = src.read_bytes()
    assert main(["suppress", str(src), "--qi", ",".join(QIS), "--k", "3", "--engine", "polars", "-o", str(src)]) == 2
    assert src.read_bytes() == before
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["suppress", str(src), "--qi", ",".join(QIS), "--k", "3", "--engine", "duckdb",
                 "-o", str(tmp_path / "in.txt")]) == 2  # a release at scale is CSV or Parquet


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(["category", "wildcard"]), st.integers(2, 4),
       st.sampled_from(ENGINES))
def test_random_files_release_at_scale_equals_in_memory(tmp_path_factory, seed, missing, k, engine):
    """Random small CSV files (text and number cells, empty cells): the engine's release of the class-level
    solution equals the in-memory release of the same solution."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    df = pd.DataFrame({
        "t": rng.choice(["a", "b", "c", "d", ""], n, p=[.4, .3, .15, .1, .05]),
        "x": rng.choice(["1", "2", "3", "10", ""], n, p=[.4, .3, .15, .1, .05]),
        "y": rng.choice(["0.5", "1.5", "2.0"], n),
        "v": rng.integers(0, 1000, n).astype(str),
    })
    path = tmp_path_factory.mktemp("rand") / "r.csv"
    df.to_csv(path, index=False)
    qis = ["t", "x", "y"]
    eng = get_engine(engine)
    table, keys, class_of_row, _ = aggregate_table(eng, open_source(path), qis)
    try:
        res = suppress_classes(table.codes, table.count, k, np.ones(3), np.zeros(3, bool), missing)
    except InfeasibleError:
        return
    out = path.with_name("out.csv")
    eng.release(path, out, qis=qis, ranked=ranked_plan(keys, class_of_row, table.n_classes, res.assignment, 3))
    ds = load_dataset(path, roles=Roles(qis=tuple(qis)))
    qm = ds.qi_matrix(qis)
    mask = _to_mask(res.assignment, class_of_records(qm.codes, table.codes), n, 3) & (qm.codes >= 0)
    assert comparable(load_dataset(out).frame) == comparable(apply_mask(ds.frame, qis, mask))
    assert findable(qm.codes, mask, k, missing) == 0


@settings(max_examples=60, deadline=None)
@given(arrays(np.int32, st.tuples(st.integers(2, 14), st.integers(1, 3)), elements=st.integers(-1, 2)),
       st.data(), st.sampled_from(["category", "wildcard"]), st.integers(2, 4))
def test_the_independent_check_equals_the_reference_on_any_assignment(codes, data, missing, k):
    """Random assignments, valid or not: the class-level recount gives the records in released classes
    below k and the people findable below k that the pure-python reference counts on the records."""
    table = ClassTable.from_codes(codes)
    q = codes.shape[1]
    rows, pats, copies = [], [], []
    left = table.count.copy()
    for _ in range(data.draw(st.integers(0, 6))):
        r = data.draw(st.integers(0, table.n_classes - 1))
        if left[r] == 0:
            continue
        c = data.draw(st.integers(1, int(left[r])))
        left[r] -= c
        rows.append(r)
        pats.append(data.draw(st.integers(0, 2**q - 1)))
        copies.append(c)
    assign = Assignment(np.array(rows, np.int64), np.array(pats, np.int64), np.array(copies, np.int64))
    chk = check_release(table.codes, table.count, assign, k, missing)
    mask = _to_mask(assign, table.record_class, len(codes), q) & (codes >= 0)
    counts = np.array(COUNTS["strict"](codes, mask, missing, 1.0))
    assert chk.violations == int((counts < k).sum())
    assert chk.min_class == counts.min()
    assert chk.findable_below_k == findable(codes, mask, k, missing)


def test_a_failed_check_stops_the_run_and_writes_nothing(survey, tmp_path, monkeypatch, capsys):
    """A solver that claims a release it did not make (here: nothing suppressed) is caught by the recount."""
    from kanon_core.treat.strict import classes as classes_mod
    from kanon_core.treat.strict.solve import StrictClasses

    def nothing(codes, mult, *a, **kw):
        e = np.zeros(0, np.int64)
        return StrictClasses(Assignment(e, e.copy(), e.copy()), 0.0, 0.0, True, {})

    monkeypatch.setattr(classes_mod, "solve_strict_classes", nothing)
    out = tmp_path / "o.csv"
    assert main(["suppress", str(survey["csv"]), "--qi", ",".join(QIS), "--k", "3", "--engine", "duckdb",
                 "--missing", "category", "-o", str(out), "--json", str(tmp_path / "o.json")]) == 2
    assert "unexpected RuntimeError" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "o.json").exists()
    assert list(tmp_path.iterdir()) == []


@given(arrays(np.int64, st.integers(0, 50), elements=st.integers(0, 2**62)))
def test_popcount_of_patterns_counts_their_bits(patterns):
    from kanon_core.treat.strict.classes import _popcount

    assert _popcount(patterns).tolist() == [bin(int(p)).count("1") for p in patterns]


@given(arrays(np.int32, st.tuples(st.integers(1, 30), st.integers(1, 4)), elements=st.integers(-1, 3)),
       st.randoms(use_true_random=False))
def test_canonical_order_is_the_same_for_any_order_of_the_groups(codes, rnd):
    """The engine's groups in any order give the same class table and the same class per raw row."""
    from kanon_core.engines.local_suppression import canonical_order

    gid, _ = group_ids(codes)
    uniq = np.zeros((int(gid.max()) + 1, codes.shape[1]), np.int32)
    uniq[gid] = codes
    count = np.bincount(gid).astype(np.int64)
    perm = list(range(len(uniq)))
    rnd.shuffle(perm)
    perm = np.array(perm)
    a = ClassTable(("a", "b", "c", "d")[:codes.shape[1]], uniq, count, None, (), (), {}, None)
    b = ClassTable(a.qis, uniq[perm], count[perm], None, (), (), {}, None)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    ta, ca = canonical_order(a, gid)
    tb, cb = canonical_order(b, inv[gid])
    assert (ta.codes == tb.codes).all() and (ta.count == tb.count).all() and (ca == cb).all()
    assert (ta.codes[ca] == codes).all()  # each raw row still finds its own class
