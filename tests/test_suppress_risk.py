"""Risk-targeted local suppression: recounted by brute force, protected and missing cells untouched."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.risk.individual import individual_risk
from kanon_core.steps import step_from_dict
from kanon_core.treat.suppress_risk import RiskSuppressStep, suppress_to_risk
from tests.reference.brute_force import brute_force_class_sizes


def _ds(rows, weights=None, missing="wildcard"):
    frame = pd.DataFrame(rows, columns=["a", "b", "c"]).astype(object)
    roles = Roles(qis=("a", "b", "c"))
    if weights is not None:
        frame["w"] = weights
        roles = Roles(qis=("a", "b", "c"), weight="w")
    return Dataset(frame=frame, roles=roles, missing=missing)


def test_importance_steers_the_cell():
    # record 0 is unique only through c or through b; blanking either makes it match records 1-3
    rows = [["x", "p", "u"], ["x", "q", "v"], ["x", "q", "v"], ["x", "q", "v"]]
    rows[0] = ["x", "q", "u"]  # differs from the others on c only
    ds = _ds(rows)
    res = suppress_to_risk(ds, 0.5)
    assert res.mask[0].tolist() == [False, False, True] and res.n_suppressed == 1
    assert res.remaining.tolist() == [] and res.risk_after[0] == pytest.approx(0.25)
    # c expensive and a cheap: blanking a does not help (it still differs on c), so c is still taken
    res2 = suppress_to_risk(ds, 0.5, importance={"c": 5.0, "a": 0.1})
    assert res2.mask[0].tolist() == [False, False, True]
    # c protected: nothing can help record 0 (it differs from everyone on c); it is reported as remaining
    res3 = suppress_to_risk(ds, 0.5, protected=["c"])
    assert res3.remaining.tolist() == [0]
    assert not res3.mask[:, 2].any()


def test_nothing_to_do_and_bad_input():
    ds = _ds([["x", "y", "z"]] * 4)
    res = suppress_to_risk(ds, 0.3)
    assert res.n_suppressed == 0 and res.passes == 0 and res.summary()["records_above_after"] == 0
    with pytest.raises(InputError):
        suppress_to_risk(ds, 1.5)
    with pytest.raises(InputError):
        suppress_to_risk(ds, 0.1, method="nope")
    with pytest.raises(InputError):
        suppress_to_risk(ds, 0.1, protected=["nope"])


def test_step_roundtrip_and_apply():
    rows = [["x", "q", "u"], ["x", "q", "v"], ["x", "q", "v"], ["x", "q", "v"]]
    step = RiskSuppressStep(qis=("a", "b", "c"), max_risk=0.5)
    again = step_from_dict(step.to_dict())
    assert again == step and "individual risk <= 0.5" in step.describe()
    out = step.apply(_ds(rows))
    assert out.frame["c"].isna().tolist() == [True, False, False, False]


@st.composite
def _data(draw):
    n = draw(st.integers(2, 12))
    rows = draw(st.lists(st.lists(st.one_of(st.none(), st.sampled_from(["0", "1", "2"])), min_size=3, max_size=3),
                         min_size=n, max_size=n))
    weights = draw(st.lists(st.floats(1, 20), min_size=n, max_size=n))
    return rows, weights


@settings(max_examples=60, deadline=None)
@given(_data(), st.sampled_from(["wildcard", "category"]), st.sampled_from([0.05, 0.2, 0.5]),
       st.sampled_from([1.0, 0.5]), st.booleans(), st.sampled_from([(), ("a",)]))
def test_against_brute_force_recount(data, missing, threshold, alpha, weighted, protected):
    rows, weights = data
    ds = _ds(rows, weights if weighted else None, missing)
    res = suppress_to_risk(ds, threshold, protected=protected, alpha=alpha)
    qm = ds.qi_matrix()
    assert not (res.mask & (qm.codes < 0)).any()  # a missing cell is never "suppressed"
    for p in protected:
        assert not res.mask[:, qm.names.index(p)].any()
    released = np.where(res.mask, -1, qm.codes)
    fk, Fk = brute_force_class_sizes(released, missing, np.asarray(weights) if weighted else None, alpha=alpha)
    risk = individual_risk(fk, Fk if weighted else None)
    np.testing.assert_allclose(res.risk_after, risk, rtol=1e-9)
    # every record still above the threshold has no cell left to blank
    prot = np.isin(np.array(qm.names), protected)
    for i in res.remaining:
        assert not ((released[i] >= 0) & ~prot).any()


@settings(max_examples=80, deadline=None)
@given(_data(), st.sampled_from(["wildcard", "category"]), st.sampled_from([1.0, 1.0, 0.5, 0.0]), st.booleans(),
       st.sampled_from(["approx", "exact"]))
def test_candidate_risk_is_the_risk_after_blanking(data, missing, alpha, weighted, method):
    # what the chooser predicts for blanking QI j in every record of a class is that class's risk, counted by
    # brute force on the records, once the cell is blank
    from kanon_core.classtable import ClassTable
    from kanon_core.treat.suppress_risk import _candidate_risk, _candidate_risk_by_projection

    rows, weights = data
    ds = _ds(rows, weights if weighted else None, missing)
    codes = ds.qi_matrix().codes
    w = np.asarray(weights) if weighted else None
    table = ClassTable.from_codes(codes, weights=w)
    for j in range(codes.shape[1]):
        rows_j = np.flatnonzero(table.codes[:, j] >= 0)
        if not len(rows_j):
            continue
        got = _candidate_risk(table, rows_j, np.full(len(rows_j), j), missing, alpha, method)
        if missing == "wildcard" and alpha == 1.0:  # the count by projection gives the same, by its argument
            by_projection = _candidate_risk_by_projection(table, rows_j, j, method)
            np.testing.assert_allclose(by_projection, got, rtol=1e-12, atol=1e-15, equal_nan=True)
        for r, c in zip(got, rows_j, strict=True):
            released = codes.copy()
            members = np.flatnonzero(table.record_class == c)
            released[members, j] = -1
            fk, Fk = brute_force_class_sizes(released, missing, w, alpha=alpha)  # noqa: N806
            want = individual_risk(fk[members[:1]], Fk[members[:1]] if weighted else None, method)[0]
            np.testing.assert_allclose(r, want, rtol=1e-9, atol=1e-12, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(_data(), st.sampled_from(["wildcard", "category"]), st.sampled_from([0.05, 0.2, 0.5]), st.booleans(),
       st.randoms(use_true_random=False))
def test_records_of_a_class_alike_and_order_free(data, missing, threshold, weighted, rnd):
    rows, weights = data
    ds = _ds(rows, weights if weighted else None, missing)
    res = suppress_to_risk(ds, threshold)
    codes = ds.qi_matrix().codes
    for i in range(len(codes)):  # equal rows, equal cells (the records of a class are treated alike)
        same = np.flatnonzero((codes == codes[i]).all(axis=1))
        assert (res.mask[same] == res.mask[i]).all()
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    shuffled = _ds([rows[p] for p in perm], [weights[p] for p in perm] if weighted else None, missing)
    again = suppress_to_risk(shuffled, threshold)
    np.testing.assert_array_equal(again.mask, res.mask[perm])


def test_cli_max_risk(tmp_path, capsys):
    import json

    from kanon_core.cli import main

    rng = np.random.default_rng(5)
    n = 80
    frame = pd.DataFrame({"a": rng.choice(["1", "2", "3"], n), "b": rng.choice(["x", "y", "z", "t"], n),
                          "c": rng.integers(0, 3, n), "w": rng.uniform(1, 9, n).round(2)})
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    out, js = tmp_path / "out.csv", tmp_path / "s.json"
    rc = main(["suppress", str(src), "--qi", "a,b,c", "--weight", "w", "--max-risk", "0.1", "--protect", "a",
               "-o", str(out), "--json", str(js)])
    assert rc == 0
    summary = json.loads(js.read_text())
    assert summary["records_above_before"] > 0 and summary["n_suppressed"] > 0
    assert summary["per_variable"]["a"] == 0 and summary["optimal"] is False
    treated = pd.read_csv(out)
    suppressed = treated[["a", "b", "c"]].astype(str).eq("-99")
    assert int(suppressed.to_numpy().sum()) == summary["n_suppressed"]
    # an independent recount of the written file: risk above 0.1 only where no free cell is left
    codes = np.column_stack([pd.factorize(treated[c].where(~suppressed[c]))[0] for c in ["a", "b", "c"]])
    fk, Fk = brute_force_class_sizes(codes.astype(np.int32), "wildcard", frame["w"].to_numpy())
    risk = individual_risk(fk, Fk)
    assert int((risk > 0.1).sum()) == summary["records_above_after"]
    assert "after an independent recount" in capsys.readouterr().err
    assert main(["suppress", str(src), "--qi", "a,b", "--k", "3", "--max-risk", "0.1", "-o", str(out)]) == 2
    assert main(["suppress", str(src), "--qi", "a,b", "-o", str(out)]) == 2


def test_blanking_the_only_quasi_identifier_matches_everyone():
    from kanon_core.classtable import ClassTable
    from kanon_core.treat.suppress_risk import _candidate_risk, _candidate_risk_by_projection

    table = ClassTable.from_codes(np.array([[0], [1], [1], [-1], [2]], np.int32), weights=np.array([1., 2., 3., 4., 5.]))
    rows = np.flatnonzero(table.codes[:, 0] >= 0)
    got = _candidate_risk_by_projection(table, rows, 0, "approx")
    np.testing.assert_allclose(got, _candidate_risk(table, rows, np.zeros(len(rows), np.int64), "wildcard", 1.0,
                                                    "approx"))
    np.testing.assert_allclose(got, individual_risk(np.array([5.0]), np.array([15.0]))[0])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**31 - 1), st.sampled_from([0.05, 0.2, 0.5]))
def test_the_cell_chosen_per_class_follows_the_rule(n_rows, q, seed, threshold):
    """The choice folded one QI at a time equals sorting every candidate cell of a class by the rule's keys:
    reaching the threshold first, then cost, risk, variable order; otherwise the reduction per unit of cost,
    then cost, risk, variable order (ties and undefined risks included)."""
    from kanon_core.treat.suppress_risk import _Choice

    rng = np.random.default_rng(seed)
    current = rng.choice([0.3, 0.6, 0.9], n_rows)
    costs = rng.choice([1.0, 2.0], q)
    free = rng.random((n_rows, q)) < 0.7
    risk = rng.choice([0.01, 0.05, 0.2, 0.3, 0.6, 0.95, np.nan], (n_rows, q))
    choice = _Choice(current, threshold)
    for j in range(q):
        at = np.flatnonzero(free[:, j])
        choice.fold(at, j, float(costs[j]), risk[at, j])
    got = choice.chosen()
    for r in range(n_rows):
        cands = [j for j in range(q) if free[r, j]]
        if not cands:
            assert got[r] == -1
            continue
        inf = float("inf")
        rk = {j: inf if np.isnan(risk[r, j]) else risk[r, j] for j in cands}
        reach = [j for j in cands if rk[j] <= threshold]
        if reach:
            want = min(reach, key=lambda j: (costs[j], rk[j], j))
        else:
            keys = {}
            for j in cands:
                gain = -(current[r] - rk[j]) / costs[j]
                keys[j] = (inf if np.isnan(gain) else gain, costs[j], rk[j], j)
            want = min(cands, key=keys.__getitem__)
        assert got[r] == want
