"""sdcMicro's alpha: wildcard matches weighed by alpha, against a pure-python count over all pairs.

The reference below is written from the rule as stated, on tuples with None for missing: record s
counts for r when they agree wherever both are non-missing; it counts 1 when it has r's exact key
(missing positions included) or is complete, and alpha when it has missing QIs and a different key.
"""

from __future__ import annotations

import json
from html import escape

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.cli import main
from kanon_core.errors import InfeasibleError, InputError
from kanon_core.risk.classes import (
    class_sizes,
    compute_class_sizes,
    wildcard_dependent,
)
from tests.reference.brute_force import brute_force_class_sizes
from tests.test_lattice import cases as lattice_cases
from tests.test_lattice import generalize as lattice_generalize

ALPHAS = [0.0, 0.3, 0.5, 1.0]


def reference(rows: list[tuple], weights: list[float], alpha: float) -> tuple[list[float], list[float]]:
    """fk and Fk by the rule, over every ordered pair of records."""
    fk, Fk = [], []
    for r in rows:
        f = F = 0.0
        for s, w in zip(rows, weights, strict=True):
            if all(a is None or b is None or a == b for a, b in zip(r, s, strict=True)):
                share = 1.0 if (s == r or None not in s) else alpha
                f += share
                F += share * w
        fk.append(f)
        Fk.append(F)
    return fk, Fk


def as_rows(codes: np.ndarray) -> list[tuple]:
    return [tuple(None if v < 0 else int(v) for v in row) for row in codes]


@st.composite
def tables(draw, max_n=22, max_q=4, max_card=3):
    n = draw(st.integers(1, max_n))
    q = draw(st.integers(1, max_q))
    codes = draw(arrays(np.int32, (n, q), elements=st.integers(-1, max_card - 1)))
    weights = draw(arrays(np.float64, n, elements=st.floats(0.5, 20.0)))
    return codes, weights


@settings(max_examples=150, deadline=None)
@given(tables(), st.sampled_from(ALPHAS), st.sampled_from(["pairs", "scan", "auto"]))
def test_alpha_counts_match_the_rule(table, alpha, method):
    codes, weights = table
    fk_ref, Fk_ref = reference(as_rows(codes), list(weights), alpha)
    res = compute_class_sizes(codes, "wildcard", weights, method=method, alpha=alpha)
    np.testing.assert_allclose(res.fk, fk_ref, rtol=0, atol=1e-9)
    # the plain count (no split) gives the same full counts
    plain = compute_class_sizes(codes, "wildcard", weights, method=method)
    assert plain.fk_wild is None
    np.testing.assert_array_equal(plain.fk_all, res.fk_all)
    np.testing.assert_allclose(plain.Fk_all, res.Fk_all, rtol=1e-12)
    np.testing.assert_allclose(res.Fk, Fk_ref, rtol=1e-12, atol=1e-9)
    # the library's own brute force agrees with the independent reference
    fk_bf, Fk_bf = brute_force_class_sizes(codes, "wildcard", weights, alpha=alpha)
    np.testing.assert_allclose(fk_bf, fk_ref, atol=1e-9)
    np.testing.assert_allclose(Fk_bf, Fk_ref, rtol=1e-12)


@settings(max_examples=100, deadline=None)
@given(tables(), st.integers(1, 6))
def test_wildcard_dependent_is_reaching_k_at_alpha_1_but_not_at_0(table, k):
    codes, _ = table
    rows = as_rows(codes)
    fk1, _ = reference(rows, [1.0] * len(rows), 1.0)
    fk0, _ = reference(rows, [1.0] * len(rows), 0.0)
    expected = [a >= k and b < k for a, b in zip(fk1, fk0, strict=True)]
    res = compute_class_sizes(codes, "wildcard", alpha=0.5)  # the flag does not depend on the alpha chosen
    np.testing.assert_array_equal(wildcard_dependent(res, k), expected)
    np.testing.assert_array_equal(res.fk_all, fk1)
    np.testing.assert_array_equal(res.fk_strict, fk0)


def test_hand_example():
    # r0 = (1, 1) complete; r1 = (1, -) ; r2 = (1, -) ; r3 = (-, 1) ; r4 = (2, 2)
    codes = np.array([[1, 1], [1, -1], [1, -1], [-1, 1], [2, 2]], dtype=np.int32)
    w = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    # r0: itself 1, r1 and r2 (missing, other key) alpha each, r3 alpha  -> 1 + 3a
    # r1: itself and r2 (same key) 1 each, r0 complete 1, r3 (missing, other key) alpha -> 3 + a
    # r3: itself 1, r0 complete 1, r1 and r2 alpha each -> 2 + 2a
    # r4: matches nobody else -> 1
    fk = class_sizes(codes, "wildcard", alpha=0.5)
    np.testing.assert_allclose(fk, [2.5, 3.5, 3.5, 3.0, 1.0])
    assert fk.dtype == np.float64
    Fk = class_sizes(codes, "wildcard", weights=w, alpha=0.5)
    np.testing.assert_allclose(Fk, [1 + 0.5 * (2 + 4 + 8), 1 + 2 + 4 + 0.5 * 8, 1 + 2 + 4 + 0.5 * 8,
                                    8 + 1 + 0.5 * (2 + 4), 16])
    at1 = class_sizes(codes, "wildcard")
    assert at1.dtype == np.int64
    np.testing.assert_array_equal(at1, [4, 4, 4, 4, 1])
    np.testing.assert_array_equal(class_sizes(codes, "wildcard", alpha=0.0), [1, 3, 3, 2, 1])
    res = compute_class_sizes(codes, "wildcard", wildcard_split=True)
    # at k = 3: r0 (4 vs 1) and r3 (4 vs 2) reach k only through wildcard matches; r1, r2 do not need them
    np.testing.assert_array_equal(wildcard_dependent(res, 3), [True, False, False, True, False])


def test_sdcmicro_freqcalc_example_at_alpha_1_and_by_hand_at_one_half():
    # sdcMicro's test "numeric values with missing values (weighted)" (tests/testthat/test_freqCalc.R)
    a = [2, 3, 2, 2, 3, 3, 1, 2]
    b = [3, 3, 3, 3, 3, 3, 4, 3]
    c = [1, 3, None, 2, 1, 1, None, 1]
    w = np.array([18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51])
    codes = np.array([[x, y, -1 if z is None else z] for x, y, z in zip(a, b, c, strict=True)], dtype=np.int32)
    res = compute_class_sizes(codes, "wildcard", w)
    np.testing.assert_array_equal(res.fk, [3, 1, 4, 2, 2, 2, 1, 3])
    np.testing.assert_allclose(res.Fk, [108.0, 45.5, 125.0, 56.0, 100.0, 100.0, 123.5, 108.0])
    # record 2 = (2, 3, NA) matches (2,3,1) x2 and (2,3,2): complete, so they count 1 for it; it counts
    # alpha for each of them. Record 6 = (1, 4, NA) matches nobody.
    half = compute_class_sizes(codes, "wildcard", w, alpha=0.5)
    np.testing.assert_allclose(half.fk, [2.5, 1, 4, 1.5, 2, 2, 1, 2.5])
    np.testing.assert_allclose(half.Fk, [69 + 19.5, 45.5, 125.0, 17 + 19.5, 100.0, 100.0, 123.5, 69 + 19.5])


def test_fully_blank_record_is_a_wildcard_at_alpha_1_and_wildcard_dependent_exposes_it():
    # four distinct complete records and two blank ones: at alpha 1 everyone reaches k = 3
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [-1, -1], [-1, -1]], dtype=np.int32)
    res = compute_class_sizes(codes, "wildcard", wildcard_split=True)
    np.testing.assert_array_equal(res.fk, [3, 3, 3, 3, 6, 6])
    np.testing.assert_array_equal(res.fk_strict, [1, 1, 1, 1, 6, 6])
    assert wildcard_dependent(res, 3).tolist() == [True] * 4 + [False] * 2
    np.testing.assert_allclose(res.at_alpha(0.25).fk, [1.5, 1.5, 1.5, 1.5, 6, 6])


def test_rounding_keeps_exact_decimal_sums():
    # one complete record (0, 0) and 100 records (0, NA) at alpha 0.29: exactly 1 + 29
    codes = np.vstack([np.zeros((1, 2), np.int32), np.tile(np.array([[0, -1]], np.int32), (100, 1))])
    fk = class_sizes(codes, "wildcard", alpha=0.29)
    assert fk[0] == 30.0 and fk[1] == 101.0


def test_category_semantics_ignores_alpha_but_returns_floats():
    codes = np.array([[0, -1], [0, -1], [0, 1]], dtype=np.int32)
    fk = class_sizes(codes, "category", alpha=0.3)
    assert fk.dtype == np.float64
    np.testing.assert_array_equal(fk, [2, 2, 1])


def test_without_the_split_alpha_cannot_be_changed_afterwards():
    res = compute_class_sizes(np.array([[0, -1], [0, 1]], np.int32), "wildcard")
    with pytest.raises(ValueError, match="wildcard split"):
        res.at_alpha(0.5)
    with pytest.raises(ValueError, match="wildcard split"):
        wildcard_dependent(res, 2)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "x"])
def test_bad_alpha_is_an_input_error(bad):
    with pytest.raises(InputError, match="alpha"):
        compute_class_sizes(np.zeros((2, 1), np.int32), "wildcard", alpha=bad)


# -- the lattice search with alpha -------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(lattice_cases(), st.sampled_from([0.0, 0.3, 0.5]), st.data())
def test_lattice_anonymity_test_counts_with_alpha(case, alpha, data):
    """Every node's records to suppress match the rule; the exact search (which relies on monotonicity
    under alpha) finds the same optimum as evaluating every node."""
    from kanon_core.treat.hierarchy import Hierarchy
    from kanon_core.treat.lattice import build_problem, exhaustive_search, search_optimal

    case.missing = "wildcard"
    problem = build_problem(case.dataset(), {q: Hierarchy(r, q) for q, r in case.rows.items()}, alpha=alpha)
    n = len(case.frame)
    frac = data.draw(st.integers(0, n)) / n
    metric = data.draw(st.sampled_from(["prec", "dm", "aecs", "entropy"]))
    ex = exhaustive_search(problem, case.k, frac, metric)
    assert len(ex) > 0
    for row in ex.itertuples(index=False):
        levels = tuple(int(x) for x in row[: len(case.qis)])
        fk, _ = reference(lattice_generalize(case, levels), [1.0] * n, alpha)
        assert row.n_suppressed == sum(f < case.k - 1e-9 for f in fk)
    feasible = ex[ex.anonymous]
    if feasible.empty:
        with pytest.raises(InfeasibleError):
            search_optimal(problem, case.k, frac, metric)
        return
    res = search_optimal(problem, case.k, frac, metric, k_minimal=True)
    assert res.loss == pytest.approx(feasible["loss"].min(), rel=1e-9, abs=1e-9)
    assert res.n_anonymous == int((ex.n_suppressed <= int(frac * n + 1e-9)).sum())  # within the limit
    assert search_optimal(problem, case.k, frac, metric).level_tuple == res.level_tuple


# -- command line ------------------------------------------------------------------------------------------------
@pytest.fixture
def blank_csv(tmp_path):
    """Six distinct records, two of them blank on both QIs: every complete record rests on the blanks."""
    frame = pd.DataFrame({"a": ["x", "x", "y", "y", None, None], "b": ["1", "2", "1", "2", None, None]})
    path = tmp_path / "blank.csv"
    frame.to_csv(path, index=False)
    return path


def test_cli_risk_shows_what_blank_records_prop_up(blank_csv, tmp_path):
    out = tmp_path / "r.json"
    assert main(["risk", str(blank_csv), "--qi", "a,b", "--k", "3", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert (res["k_achieved"], res["n_violating"], res["wildcard_dependent"], res["alpha"]) == (3, 0, 4, 1.0)
    assert main(["risk", str(blank_csv), "--qi", "a,b", "--k", "3", "--alpha", "0", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert (res["k_achieved"], res["n_violating"], res["wildcard_dependent"], res["alpha"]) == (1, 4, 4, 0.0)


def test_cli_minucs_accepts_alpha_1_only(blank_csv, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["minucs", str(blank_csv), "--qi", "a,b", "--k", "3", "--alpha", "1", "--json", str(out)]) == 0
    assert main(["minucs", str(blank_csv), "--qi", "a,b", "--k", "3", "--alpha", "0.5", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--alpha must be 1" in err[0]


def test_cli_generalize_with_alpha(blank_csv, tmp_path, capsys):
    hdir = tmp_path / "h"
    hdir.mkdir()
    (hdir / "a.csv").write_text("x;*\ny;*\n")
    (hdir / "b.csv").write_text("1;*\n2;*\n")
    out = tmp_path / "g.json"
    base = ["generalize", str(blank_csv), "--qi", "a,b", "--hierarchies", str(hdir), "--k", "3", "--json", str(out)]
    assert main(base) == 0
    assert json.loads(out.read_text())["levels"] == {"a": 0, "b": 0}  # the blanks make the raw data 3-anonymous
    assert main([*base, "--alpha", "0"]) == 0
    res = json.loads(out.read_text())
    # at alpha 0 a complete record needs 3 complete records with its key: (x,*) or (*,1) have 2, (*,*) has 4
    assert res["alpha"] == 0.0 and res["levels"] == {"a": 1, "b": 1}
    assert main([*base, "--alpha", "0.5", "--output", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--alpha 1" in err[-1]


def test_version_risk_counts_with_alpha(blank_csv):
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.risk.timeline import version_risk

    ds = load_dataset(blank_csv, roles=Roles(qis=("a", "b")))
    r1, r0 = version_risk(ds, ds, 3), version_risk(ds, ds, 3, 0.0)
    assert (r1.n_violating, r1.k_achieved, r1.alpha) == (0, 3, 1.0)
    assert (r0.n_violating, r0.k_achieved, r0.alpha) == (4, 1, 0.0)


def test_report_states_the_wildcard_dependent_records():
    from kanon_core.dataset import Dataset, Roles
    from kanon_core.history import History
    from kanon_core.report import ReportOptions, build_report, render_html
    from kanon_core.risk.summary import wildcard_dependent_statement

    frame = pd.DataFrame({"a": ["x", "x", "y", "y", None, None] * 2, "b": ["1", "2", "1", "2", None, None] * 2})
    # each complete key twice, plus four blank records: fk = 2 + 4 = 6 at alpha 1, 2 at alpha 0
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b")), name="blanks"))
    report = build_report(h, options=ReportOptions(k=3, utility=False, minuc_budget_seconds=0.0))
    assert report.risk_after.n_wildcard_dependent == 8
    row = report.risk_table[report.risk_table["measure"].str.startswith("Records reaching k = 3 only")]
    assert row["after"].tolist() == [8]
    assert escape(wildcard_dependent_statement(8, 3)) in render_html(report)


def test_agrees_with_sdcmicro_freqcalc():
    """fk and Fk of sdcMicro's own freqCalc (tests/fixtures/sdcmicro_alpha/make_reference.R) at four alphas."""
    from pathlib import Path

    ref = pd.read_csv(Path(__file__).parent / "fixtures" / "sdcmicro_alpha" / "freqcalc_alpha.csv")
    assert ref["table"].nunique() == 12
    for _, tab in ref.groupby("table"):
        kv = [f"k{j}" for j in range(int(tab["n_qis"].iloc[0]))]
        codes = tab[kv].fillna(-1).to_numpy(dtype=np.int32)
        for a in ALPHAS:
            res = compute_class_sizes(codes, "wildcard", tab["w"].to_numpy(), alpha=a)
            np.testing.assert_allclose(res.fk, tab[f"fk_{a:g}"], atol=1e-9)
            np.testing.assert_allclose(res.Fk, tab[f"Fk_{a:g}"], rtol=1e-9)


def test_risk_summary_with_fractional_sizes():
    from kanon_core.dataset import Dataset, Roles
    from kanon_core.risk.summary import risk_summary, size_distribution, wildcard_dependent_records

    # the hand example above: fk at alpha 0.5 is 2.5, 3.5, 3.5, 3, 2.5 (a second (2, 2) record)
    frame = pd.DataFrame({"a": ["1", "1", "1", None, "2", "2"], "b": ["1", None, None, "1", "2", "2"]})
    qm = Dataset(frame=frame, roles=Roles(qis=("a", "b"))).qi_matrix()
    s = risk_summary(qm, 3, "wildcard", alpha=0.5)
    np.testing.assert_allclose(s.sizes.fk, [2.5, 3.5, 3.5, 3.0, 2.0, 2.0])
    assert (s.k_achieved, s.n_violating, s.n_sample_uniques, s.alpha) == (2, 3, 0, 0.5)
    assert s.violations[4] == 6 and s.violations[2] == 0
    dist = dict(zip(size_distribution(s.sizes.fk)["class_size"], size_distribution(s.sizes.fk)["records"]))
    assert (dist["2"], dist["3"], dist["4"]) == (3, 3, 0)
    # at k = 3 the complete (1, 1) and (NA, 1) reach k only through wildcard matches
    assert s.wildcard_dependent.tolist() == [True, False, False, True, False, False]
    table = wildcard_dependent_records(qm, s.sizes, 3)
    assert table["record"].tolist() == [0, 3] and table["fk_alpha0"].tolist() == [1, 2]
    assert table["fk_alpha1"].tolist() == [4, 4]
    assert s.to_json()["wildcard_dependent"] == 2


@settings(max_examples=80, deadline=None)
@given(tables(), st.sampled_from(ALPHAS), st.sampled_from(["wildcard", "category"]), st.booleans(), st.integers(1, 5))
def test_risk_summary_of_sizes_counted_once_is_the_summary_counted_here(table, alpha, missing, weighted, k):
    """The report counts each file once, with weights, and hands the sizes to risk_summary: the summary is the
    one risk_summary counts itself, with or without weights, at any alpha."""
    from kanon_core.dataset import QIMatrix
    from kanon_core.risk.summary import risk_summary

    codes, weights = table
    qm = QIMatrix(names=tuple(f"q{j}" for j in range(codes.shape[1])), codes=codes,
                  values=tuple(() for _ in range(codes.shape[1])), labels=tuple(() for _ in range(codes.shape[1])))
    w = weights if weighted else None
    counted = compute_class_sizes(codes, missing, weights, wildcard_split=True)  # always with weights
    given_sizes = risk_summary(qm, k, missing, w, alpha, sizes=counted)
    here = risk_summary(qm, k, missing, w, alpha)
    np.testing.assert_array_equal(given_sizes.sizes.fk, here.sizes.fk)
    assert (given_sizes.sizes.Fk is None) == (here.sizes.Fk is None) == (not weighted)
    if weighted:
        np.testing.assert_allclose(given_sizes.sizes.Fk, here.sizes.Fk)
    assert given_sizes.violations == here.violations and given_sizes.k_achieved == here.k_achieved
    np.testing.assert_array_equal(given_sizes.wildcard_dependent, here.wildcard_dependent)
    assert given_sizes.size_distribution.equals(here.size_distribution)


def test_risk_summary_refuses_sizes_of_other_codes():
    from kanon_core.dataset import QIMatrix
    from kanon_core.risk.summary import risk_summary

    codes = np.array([[0, 1], [0, -1], [1, 1]], dtype=np.int32)
    qm = QIMatrix(names=("a", "b"), codes=codes, values=((), ()), labels=((), ()))
    with pytest.raises(ValueError):
        risk_summary(qm, 2, "wildcard", sizes=compute_class_sizes(codes[:2], "wildcard", wildcard_split=True))
    with pytest.raises(ValueError):  # counted without the split: alpha and the dependent records need it
        risk_summary(qm, 2, "wildcard", sizes=compute_class_sizes(codes, "wildcard"))
    with pytest.raises(ValueError):  # weighted sums asked for, but counted without weights
        risk_summary(qm, 2, "wildcard", np.ones(3), sizes=compute_class_sizes(codes, "wildcard", wildcard_split=True))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, "x", "y"]), st.sampled_from([1, 2])),
                min_size=1, max_size=25),
       st.sampled_from([0.0, 0.25, 1.0]), st.sampled_from(["wildcard", "category"]), st.booleans())
def test_version_risk_on_class_sizes_handed_in_equals_its_own_count(rows, alpha, missing, weighted):
    """The timeline's risk line on class sizes counted elsewhere (with the wildcard split, with or without
    weights: the Risk page's count) is the line it counts itself, at every alpha; sizes counted without
    the split, or under other semantics, are refused."""
    from kanon_core.dataset import Dataset, Roles
    from kanon_core.risk.timeline import version_risk

    frame = pd.DataFrame(rows, columns=["a", "b", "c"]).astype({"a": "Float64"})
    frame["w"] = np.linspace(1.0, 3.0, len(frame))
    ds = Dataset(frame=frame, roles=Roles(qis=("a", "b", "c"), weight="w" if weighted else None), name="d",
                 missing=missing)
    codes = ds.qi_matrix().codes
    sizes = compute_class_sizes(codes, missing, ds.weights(), wildcard_split=True)
    assert version_risk(ds, ds, 2, alpha, sizes=sizes) == version_risk(ds, ds, 2, alpha)
    with pytest.raises(ValueError):
        version_risk(ds, ds, 2, alpha, sizes=compute_class_sizes(codes, missing, wildcard_split=False))
    other = "category" if missing == "wildcard" else "wildcard"
    with pytest.raises(ValueError):
        version_risk(ds, ds, 2, alpha, sizes=compute_class_sizes(codes, other, wildcard_split=True))
