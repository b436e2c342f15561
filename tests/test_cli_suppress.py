"""``kanon suppress`` end to end: the written file is k-anonymous, the JSON agrees with the file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.io import load_dataset
from kanon_core.risk.classes import brute_force_class_sizes


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


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_output_is_k_anonymous_and_summary_matches(small_csv, tmp_path, method):
    path, frame = small_csv
    out, js = tmp_path / "out.csv", tmp_path / "s.json"
    qis = ["sex", "age", "région", "edu"]
    rc = main(["suppress", str(path), "--qi", ",".join(qis), "--k", "3", "--importance", "age=2",
               "--protect", "sex", "--method", method, "-o", str(out), "--json", str(js)])
    assert rc == 0
    summary = json.loads(js.read_text())
    treated = load_dataset(out)
    codes = treated.qi_matrix(qis).codes
    fk, _ = brute_force_class_sizes(codes, "wildcard")
    assert (fk >= 3).all() and summary["violations_after"] == 0
    suppressed = {q: int(treated.frame[q].isna().sum()) for q in qis}
    assert suppressed["sex"] == 0
    assert {q: v["suppressed"] for q, v in summary["per_variable"].items()} == suppressed
    assert summary["n_suppressed"] == sum(suppressed.values())
    assert summary["cost"] == pytest.approx(sum(suppressed.values()) + suppressed["age"])
    for key in ("optimal", "lower_bound", "seconds"):
        assert key in summary
    assert summary["optimal"] == (method == "exact")
    # unsuppressed cells keep their values
    keep = treated.frame["edu"].notna()
    assert (treated.frame.loc[keep, "edu"] == frame.loc[keep, "edu"]).all()


def test_bad_input_exits_2_with_one_line(small_csv, tmp_path, capsys):
    path, _ = small_csv
    out = str(tmp_path / "o.csv")
    assert main(["suppress", str(path), "--qi", "sex,age", "--k", "3", "--protect", "sex,age", "-o", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "protected" in err[0]
    assert main(["suppress", str(path), "--qi", "sex", "--k", "3", "--importance", "sex=abc", "-o", out]) == 2
    assert main(["suppress", str(path), "--qi", "sex", "--k", "1", "-o", out]) == 2
