"""``kanon recode`` end to end: counts per new value, risk before and after, the written file and step."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.io import load_dataset
from kanon_core.steps import step_from_dict


@pytest.fixture
def small_csv(tmp_path):
    frame = pd.DataFrame({
        "age": [18, 25, 33, 47, 61, 75, 88, 25],
        "edu": ["a", "b", "c", "a", "b", "d", "d", "c"],
        "sex": ["m", "f", "m", "f", "m", "f", "m", "f"],
    })
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False, sep=";")
    return path, frame


def test_top_coding_json_output_and_step(small_csv, tmp_path):
    path, frame = small_csv
    js, out, step_file = tmp_path / "r.json", tmp_path / "out.csv", tmp_path / "step.json"
    rc = main(["recode", str(path), "--qi", "age,sex", "--column", "age", "--top", "60", "--k", "2",
               "--json", str(js), "--output", str(out), "--step", str(step_file)])
    assert rc == 0
    res = json.loads(js.read_text())
    assert res["qis"] == ["age", "sex"] and res["description"] == "Recode age: top-code at 60"
    counts = {r["value"]: (r["records"], r["original values"]) for r in res["counts"]}
    # 61, 75 and 88 become 60; the other ages stay
    assert counts["60 or more"] == (3, 3) and counts["25"] == (2, 1) and counts["18"] == (1, 1)
    risk = {r["measure"]: (r["before"], r["after"]) for r in res["risk"]}
    # before, (25, f) occurs twice and the other 6 records are unique; after, (60, m) holds r4 and r6 and
    # (60, f) only r5
    assert risk["Records in classes smaller than 2"] == (6, 4)
    assert risk["Sample uniques (class of 1)"] == (6, 4)
    assert risk["Distinct QI patterns"] == (7, 6)
    released = pd.read_csv(out, sep=None, engine="python")
    assert released["age"].tolist() == [18, 25, 33, 47, 60, 60, 60, 25]
    assert released["edu"].tolist() == frame["edu"].tolist()
    step = step_from_dict(json.loads(step_file.read_text()))
    assert step.apply(load_dataset(path)).frame["age"].tolist() == released["age"].tolist()


def test_merge_with_default_qis_and_stdout(small_csv, capsys):
    path, _ = small_csv
    rc = main(["recode", str(path), "--column", "edu", "--merge", "c,d", "--into", "cd", "--k", "3"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["qis"] == ["edu"]  # without --qi the risk is measured on the recoded variable alone
    counts = {r["value"]: (r["records"], r["original values"]) for r in res["counts"]}
    assert counts == {"a": (2, 1), "b": (2, 1), "cd": (4, 2)}
    risk = {r["measure"]: (r["before"], r["after"]) for r in res["risk"]}
    # before every category has 2 records; after a and b still have 2, cd has 4
    assert risk["Records in classes smaller than 3"] == (8, 4)
    assert risk["Smallest class size"] == (2, 2)


def test_bottom_coding_with_a_replacement_value(small_csv, tmp_path):
    path, _ = small_csv
    out = tmp_path / "o.csv"
    rc = main(["recode", str(path), "--column", "age", "--bottom", "25", "--bottom-value", "0", "--output", str(out),
               "--json", str(tmp_path / "j.json")])
    assert rc == 0
    assert pd.read_csv(out, sep=None, engine="python")["age"].tolist() == [0, 0, 33, 47, 61, 75, 88, 0]


@pytest.mark.parametrize("args, words", [
    (["--column", "height", "--top", "3"], "unknown variable"),
    (["--column", "age"], "needs categories"),
    (["--column", "age", "--top", "20", "--bottom", "30"], "below the top"),
    (["--column", "edu", "--top", "3"], "numeric"),
    (["--column", "edu", "--merge", "x,y"], "None of the values"),
    (["--column", "edu", "--merge", "a"], "at least two"),
    (["--qi", "nope", "--column", "age", "--top", "60"], "nope"),
])
def test_bad_input_exits_2_with_one_line(small_csv, capsys, args, words):
    path, _ = small_csv
    assert main(["recode", str(path), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kanon recode: error:") and words in err[0]
