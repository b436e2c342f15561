"""``kanon suppress`` end to end: the written file is k-anonymous, the JSON agrees with the file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.io import load_dataset
from kanon_core.treat.suppress_result import GREEDY_NOT_PROVEN, Optimality
from tests.reference.protection import COUNTS, findable


@pytest.fixture
def small_csv(tmp_path):
    rng = np.random.default_rng(5)
    n = 90
    frame = pd.DataFrame({
        "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(20, 30, n),
        "région": rng.choice(["N", "S", "E", "W"], n),
        "edu": rng.choice(["a", "b", "c"], n),
        "w": rng.uniform(1, 9, n).round(2),
    })
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False, sep=";")
    return path, frame


@pytest.mark.parametrize(("model", "method"), [("strict", "exact"), ("strict", "greedy"), ("record", "exact"),
                                               ("release", "greedy")])
def test_output_meets_its_model_and_summary_matches(small_csv, tmp_path, model, method, capsys):
    path, frame = small_csv
    out, js = tmp_path / "out.csv", tmp_path / "s.json"
    qis = ["sex", "age", "région", "edu"]
    rc = main(["suppress", str(path), "--qi", ",".join(qis), "--k", "3", "--importance", "age=2",
               "--protect", "sex", "--model", model, "--method", method, "-o", str(out), "--json", str(js)])
    assert rc == 0
    summary = json.loads(js.read_text())
    # a result not proven optimal says how its bound was proven and why, as the JSON does
    said = Optimality(summary["cost"], summary["lower_bound"], summary["optimal"], summary["bound"],
                      summary["why_not_proven"])
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("kanon suppress: note: ")]
    assert notes == ([] if said.optimal else [f"kanon suppress: note: {said.sentence()}"])
    assert summary["optimal"] or (method == "greedy") == (summary["why_not_proven"] == GREEDY_NOT_PROVEN)
    assert summary["model"] == model and summary["method"] == method
    treated = load_dataset(out)
    original = load_dataset(path).qi_matrix(qis).codes
    sup = np.column_stack([treated.missing_mask(q) for q in qis])
    counts = COUNTS[model](original, sup, "wildcard", 1.0)  # recounted from the written file
    assert min(counts) >= 3 and summary["violations_after"] == 0
    assert summary["findable_below_k"] == findable(original, sup, 3, "wildcard")
    if model == "strict":
        assert summary["findable_below_k"] == 0
    assert summary["lower_bound"] <= summary["cost"] + 1e-9
    suppressed = {q: int(treated.missing_mask(q).sum()) for q in qis}
    assert suppressed["sex"] == 0
    assert {q: v["suppressed"] for q, v in summary["per_variable"].items()} == suppressed
    assert summary["n_suppressed"] == sum(suppressed.values())
    assert summary["cost"] == pytest.approx(sum(suppressed.values()) + suppressed["age"])
    for key in ("optimal", "lower_bound", "seconds", "gap"):
        assert key in summary
    assert summary["optimal"] == (summary["lower_bound"] >= summary["cost"] - 1e-9)
    # unsuppressed cells keep their values
    keep = ~treated.missing_mask("edu")
    assert (treated.frame.loc[keep, "edu"] == frame.loc[keep, "edu"]).all()


def test_bad_input_exits_2_with_one_line(small_csv, tmp_path, capsys):
    path, _ = small_csv
    out = str(tmp_path / "o.csv")
    assert main(["suppress", str(path), "--qi", "sex,age", "--k", "3", "--protect", "sex,age", "-o", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "protected" in err[0]
    assert main(["suppress", str(path), "--qi", "sex", "--k", "3", "--importance", "sex=abc", "-o", out]) == 2
    assert main(["suppress", str(path), "--qi", "sex", "--k", "1", "-o", out]) == 2
    capsys.readouterr()
    for bad in (["--model", "release", "--method", "exact"], ["--model", "record", "--method", "greedy"],
                ["--alpha", "1.5"], ["--node-limit", "0"], ["--link", "sex"], ["--link", "sex=age"],
                ["--by", "nope"]):
        assert main(["suppress", str(path), "--qi", "sex,age", "--k", "3", *bad, "-o", out]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, bad
    assert not (tmp_path / "o.csv").exists()


def test_csv_release_tells_suppressed_cells_from_cells_missing_already(tmp_path):
    """Suppressed cells are the declared code (-99, labelled in the sidecar); missing input cells stay empty."""
    rng = np.random.default_rng(11)
    n = 60
    frame = pd.DataFrame({"sex": rng.choice(["m", "f"], n), "age": rng.integers(20, 26, n).astype(float),
                          "edu": rng.choice(["a", "b", "c"], n).astype(object)})
    frame.loc[[0, 5], "age"] = np.nan
    frame.loc[[3], "edu"] = np.nan
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    before = path.read_bytes()
    out = tmp_path / "out.csv"
    assert main(["suppress", str(path), "--qi", "sex,age,edu", "--k", "3", "-o", str(out), "--json",
                 str(tmp_path / "s.json")]) == 0
    assert path.read_bytes() == before
    sidecar = json.loads((tmp_path / "out.labels.json").read_text())
    raw = pd.read_csv(out, keep_default_na=True)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["written"] == ["out.csv", "out.labels.json"]
    for q in ("age", "edu"):
        coded = (raw[q].astype(str).isin(["-99", "-99.0"])).to_numpy()
        empty = raw[q].isna().to_numpy()
        assert (empty == frame[q].isna().to_numpy()).all()  # missing already: empty, as in the input
        assert not (coded & frame[q].isna().to_numpy()).any()
        assert int(coded.sum()) == summary["per_variable"].get(q, {}).get("suppressed", 0)
        if coded.any():
            assert sidecar[q]["missing_codes"] == ["-99"]
    treated = load_dataset(out)  # read back with the sidecar: suppressed cells count as missing
    for q in ("sex", "age", "edu"):
        assert treated.missing_mask(q).sum() == frame[q].isna().sum() + summary["per_variable"].get(q, {}).get(
            "suppressed", 0)


def test_suppressed_code_that_is_a_value_is_refused_before_writing(tmp_path, capsys):
    frame = pd.DataFrame({"a": [1, 1, 2, 3, 3, 3], "b": ["x", "x", "y", "z", "z", "z"]})
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    assert main(["suppress", str(path), "--qi", "a,b", "--k", "2", "--suppressed-code", "3", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "also a value" in err[0] and not out.exists()


@pytest.mark.parametrize("target", ["input", "dot", "sidecar", "stem"])
def test_suppress_never_writes_over_its_input(small_csv, tmp_path, capsys, monkeypatch, target):
    path, _ = small_csv
    side = path.with_name("small.labels.json")
    side.write_text('{"sex": {"label": "Sex"}}\n')
    before, side_before = path.read_bytes(), side.read_bytes()
    monkeypatch.chdir(tmp_path)
    args = {"input": ["-o", str(path)], "dot": ["-o", "./small.csv"], "sidecar": ["-o", "o.csv", "--json", str(side)],
            "stem": ["-o", "small.parquet"]}[target]
    assert main(["suppress", str(path), "--qi", "sex,age", "--k", "3", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "would write over the input" in err[0]
    assert path.read_bytes() == before and side.read_bytes() == side_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.csv", "small.labels.json"]


def test_within_groups(small_csv, tmp_path):
    path, frame = small_csv
    out, js = tmp_path / "out.csv", tmp_path / "s.json"
    assert main(["suppress", str(path), "--qi", "sex,age,edu", "--by", "région", "--k", "3", "-o", str(out),
                 "--json", str(js)]) == 0
    summary = json.loads(js.read_text())
    assert summary["by"] == ["région"] and summary["per_variable"]["région"]["suppressed"] == 0
    treated = load_dataset(out)
    qis = ["sex", "age", "edu", "région"]
    original = load_dataset(path).qi_matrix(qis).codes
    sup = np.column_stack([treated.missing_mask(q) for q in qis])
    assert min(COUNTS["strict"](original, sup, "wildcard", 1.0)) >= 3


@pytest.mark.parametrize("bad", [
    ["--solver", "cbc"],  # the strict model's class programme is HiGHS's: cbc was silently ignored
    ["--model", "strict", "--method", "greedy", "--solver", "highs"],
    ["--model", "release", "--solver", "highs"],
    ["--max-risk", "0.2", "--solver", "cbc"],
    ["--engine", "duckdb", "--solver", "cbc"],
])
def test_a_solver_that_would_not_be_used_is_refused(small_csv, tmp_path, capsys, bad):
    path, _ = small_csv
    out = tmp_path / "o.csv"
    args = ["suppress", str(path), "--qi", "sex,age", *([] if "--max-risk" in bad else ["--k", "3"]), *bad,
            "-o", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "would not be used" in err[0], err
    assert not out.exists()


@pytest.mark.parametrize(("model", "solver"), [("record", "cbc"), ("record", "highs"), ("strict", "highs")])
def test_a_solver_the_method_uses_is_accepted(small_csv, tmp_path, model, solver):
    path, _ = small_csv
    out, js = tmp_path / "o.csv", tmp_path / "s.json"
    assert main(["suppress", str(path), "--qi", "sex,age,edu", "--k", "3", "--model", model, "--solver", solver,
                 "-o", str(out), "--json", str(js)]) == 0
    assert json.loads(js.read_text())["violations_after"] == 0
