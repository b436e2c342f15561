"""``kanon risk`` end to end on small files, checked against a brute-force count."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from tests.reference.brute_force import brute_force_class_sizes


@pytest.fixture
def small_csv(tmp_path):
    rng = np.random.default_rng(7)
    n = 60
    frame = pd.DataFrame({
        "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(20, 24, n).astype(float),
        "region": rng.choice(["N", "S", "E"], n),
        "w": rng.uniform(1, 5, n).round(3),
    })
    frame.loc[rng.random(n) < 0.15, "age"] = np.nan
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False, sep=";")
    return path, frame


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_risk_json_and_per_record(small_csv, tmp_path, missing):
    path, frame = small_csv
    out, per = tmp_path / "r.json", tmp_path / "per.csv"
    rc = main(["risk", str(path), "--qi", "sex,age,region", "--k", "3", "--weight", "w", "--missing", missing,
               "--json", str(out), "--per-record", str(per)])
    assert rc == 0
    result = json.loads(out.read_text())
    codes = np.column_stack([pd.factorize(frame[c])[0] for c in ["sex", "age", "region"]]).astype(np.int32)
    fk, Fk = brute_force_class_sizes(codes, missing, frame["w"].to_numpy())
    assert result["n_records"] == len(frame)
    assert result["k_achieved"] == fk.min()
    assert result["n_violating"] == int((fk < 3).sum())
    assert result["n_sample_uniques"] == int((fk == 1).sum())
    assert result["n_classes"] == len({tuple(r) for r in codes})
    per_record = pd.read_csv(per)
    np.testing.assert_array_equal(per_record["fk"], fk)
    np.testing.assert_allclose(per_record["Fk"], Fk)


@pytest.mark.parametrize("alpha", [0.0, 0.4, 1.0])
def test_risk_alpha_and_wildcard_dependent(small_csv, tmp_path, alpha):
    path, frame = small_csv
    out, per = tmp_path / "r.json", tmp_path / "per.csv"
    rc = main(["risk", str(path), "--qi", "sex,age,region", "--k", "3", "--weight", "w", "--alpha", str(alpha),
               "--json", str(out), "--per-record", str(per)])
    assert rc == 0
    result = json.loads(out.read_text())
    codes = np.column_stack([pd.factorize(frame[c])[0] for c in ["sex", "age", "region"]]).astype(np.int32)
    fk, Fk = brute_force_class_sizes(codes, "wildcard", frame["w"].to_numpy(), alpha=alpha)
    fk1, _ = brute_force_class_sizes(codes, "wildcard")
    fk0, _ = brute_force_class_sizes(codes, "wildcard", alpha=0.0)
    dependent = (fk1 >= 3) & (fk0 < 3)
    assert dependent.any()  # the fixture has records made safe by blank ages
    assert result["alpha"] == alpha
    assert result["wildcard_dependent"] == int(dependent.sum())
    assert result["n_violating"] == int((fk < 3).sum())
    assert result["k_achieved"] == int(np.floor(fk.min()))
    per_record = pd.read_csv(per)
    np.testing.assert_allclose(per_record["fk"], fk, atol=1e-9)
    np.testing.assert_allclose(per_record["Fk"], Fk)
    np.testing.assert_array_equal(per_record["wildcard_dependent"], dependent.astype(int))


@pytest.mark.parametrize(
    "args,message",
    [
        (["--qi", "sex,nope"], "Unknown variable"),
        (["--qi", "sex", "--weight", "region"], "non-numeric"),
        (["--qi", "sex", "--k", "0"], "at least 1"),
        (["--qi", "sex", "--alpha", "1.5"], "alpha must be between 0 and 1"),
        (["--qi", "sex", "--alpha", "-0.2"], "alpha must be between 0 and 1"),
    ],
)
def test_bad_input_exits_2_with_one_line(small_csv, capsys, args, message):
    path, _ = small_csv
    rc = main(["risk", str(path), *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1


def test_wrong_file_type(tmp_path, capsys):
    p = tmp_path / "x.docx"
    p.write_bytes(b"PK\x03\x04")
    assert main(["risk", str(p), "--qi", "a"]) == 2
    assert "Unsupported file type" in capsys.readouterr().err


# -- measures beyond k (issue 13) -------------------------------------------------------------------------
@pytest.fixture
def household_csv(tmp_path):
    rng = np.random.default_rng(11)
    n = 40
    frame = pd.DataFrame({
        "hid": np.repeat(np.arange(16), [3, 2, 4, 1, 2, 3, 2, 2, 3, 4, 1, 3, 2, 3, 3, 2]),
        "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(20, 23, n).astype(float),
        "occ": rng.choice(["a", "b", "c"], n).astype(object),
        "inc": rng.choice([10, 20, 35, 50], n),
        "w": rng.uniform(1, 9, n).round(2),
    })
    frame.loc[rng.random(n) < 0.15, "age"] = np.nan
    frame.loc[rng.random(n) < 0.1, "occ"] = None
    path = tmp_path / "hh.csv"
    frame.to_csv(path, index=False)
    return path, frame


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_measures_json_and_per_record(household_csv, tmp_path, missing):
    from kanon_core.risk.household import household_risk
    from kanon_core.risk.individual import individual_risk
    from tests.reference.diversity import brute_l_diversity, brute_t_closeness

    path, frame = household_csv
    out, per = tmp_path / "r.json", tmp_path / "per.csv"
    rc = main(["risk", str(path), "--qi", "sex,age", "--weight", "w", "--missing", missing, "--household", "hid",
               "--sensitive", "occ", "--sensitive", "inc", "--max-risk", "0.05", "--json", str(out),
               "--per-record", str(per)])
    assert rc == 0
    result = json.loads(out.read_text())
    per_record = pd.read_csv(per)
    codes = np.column_stack([pd.factorize(frame[c])[0] for c in ["sex", "age"]]).astype(np.int32)
    fk, Fk = brute_force_class_sizes(codes, missing, frame["w"].to_numpy())
    rk = individual_risk(fk, Fk)
    np.testing.assert_allclose(per_record["individual_risk"], rk, rtol=1e-12)
    assert result["expected_reidentifications"] == pytest.approx(rk.sum())
    assert result["global_risk"] == pytest.approx(rk.mean())
    assert result["records_above_max_risk"] == int((rk > 0.05).sum()) and result["max_risk"] == 0.05
    hh = household_risk(rk, frame["hid"].to_numpy())
    np.testing.assert_allclose(per_record["household_risk"], hh, rtol=1e-12)
    assert result["household"]["release_unchanged"] is False and "hid" in result["household"]["warning"]
    assert result["household"]["households"] == 16
    occ = [None if pd.isna(v) else v for v in frame["occ"]]
    inc = frame["inc"].tolist()
    l_occ = brute_l_diversity(codes, occ, missing, "distinct")
    np.testing.assert_array_equal(per_record["l_distinct_occ"], l_occ)
    np.testing.assert_array_equal(per_record["l_distinct_inc"], brute_l_diversity(codes, inc, missing, "distinct"))
    assert result["l_diversity"]["occ"]["l_diversity"] == l_occ.min()
    assert result["l_diversity"]["occ"]["entropy_l"] == pytest.approx(
        brute_l_diversity(codes, occ, missing, "entropy").min())
    assert result["l_diversity"]["inc"]["recursive_l"] == brute_l_diversity(codes, inc, missing, "recursive").min()
    assert result["t_closeness"]["inc"]["distance"] == "ordered"
    assert result["t_closeness"]["occ"]["distance"] == "equal"
    assert result["t_closeness"]["inc"]["t"] == pytest.approx(brute_t_closeness(codes, inc, missing, "ordered").max())
    assert "t_closeness" in result["readings"] and "household_risk" in result["readings"]


def test_one_sensitive_gives_l_distinct_and_no_weight_gives_one_over_fk(household_csv, tmp_path):
    path, _ = household_csv
    per = tmp_path / "per.csv"
    assert main(["risk", str(path), "--qi", "sex,age", "--sensitive", "occ", "--json", str(tmp_path / "r.json"),
                 "--per-record", str(per)]) == 0
    table = pd.read_csv(per)
    assert "l_distinct" in table.columns and "household_risk" not in table.columns
    np.testing.assert_allclose(table["individual_risk"], 1 / table["fk"])


@pytest.mark.parametrize("args,message", [
    (["--sensitive", "sex"], "also a quasi-identifier"),
    (["--sensitive", "nope"], "not a variable"),
    (["--household", "nope"], "not a variable"),
    (["--household", "age"], "cannot also be a quasi-identifier"),
    (["--max-risk", "1.5"], "between 0 and 1"),
])
def test_measure_options_bad_input(household_csv, capsys, args, message):
    path, _ = household_csv
    rc = main(["risk", str(path), "--qi", "sex,age", *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1
