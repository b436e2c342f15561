"""``kanon regress`` end to end: JSON coefficients against R's svyglm; bad input exits 2 with one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "r_survey"
DESIGN_A = FIXTURES / "design_a.csv"
DESIGN = ["--weight", "w", "--strata", "stratum", "--psu", "psu", "--lonely-psu", "fail"]


def r_term(term: str) -> str:
    m = re.fullmatch(r"(.+)\[(.+)\]", term)
    return f"factor({m.group(1)}){m.group(2)}" if m else term


@pytest.mark.parametrize(("model", "formula"), [("linear", "y ~ C(a) + b + c"), ("logistic", "yb ~ C(a) + b + c")])
def test_coefficients_match_svyglm(tmp_path, model, formula):
    out = tmp_path / "r.json"
    assert main(["regress", str(DESIGN_A), "--formula", formula, *DESIGN, "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    ref = pd.read_csv(FIXTURES / "expected_coefficients.csv")
    ref = ref[(ref["file"] == "design_a.csv") & (ref["design"] == "full") & (ref["model"] == model)].set_index("term")
    assert [r_term(r["term"]) for r in rows] == list(ref.index)
    assert len(rows) > 0
    for r in rows:
        assert set(r) == {"term", "estimate", "se", "p_value", "note"} and r["note"] is None
        expected = ref.loc[r_term(r["term"])]
        assert r["estimate"] == pytest.approx(expected["estimate"], abs=1e-6)
        assert r["se"] == pytest.approx(expected["se"], abs=1e-6)
        assert r["p_value"] == pytest.approx(expected["p"], abs=1e-6)


def test_family_option_and_unweighted_ols(tmp_path):
    rng = np.random.default_rng(3)
    n = 50
    frame = pd.DataFrame({"x": rng.normal(size=n), "g": rng.choice(["u", "v"], n), "w": np.ones(n)})
    frame["y"] = 2 - frame["x"] + (frame["g"] == "v") + rng.normal(scale=0.3, size=n)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "r.json"
    assert main(["regress", str(path), "--formula", "y ~ x + g", "--weight", "w", "--family", "gaussian",
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    x = np.column_stack([np.ones(n), frame["x"], frame["g"] == "v"]).astype(float)
    beta = np.linalg.lstsq(x, frame["y"].to_numpy(), rcond=None)[0]
    assert [r["term"] for r in rows] == ["(Intercept)", "x", "g[v]"]
    assert [r["estimate"] for r in rows] == pytest.approx(beta.tolist(), abs=1e-9)


def test_aliased_coefficient_is_null_in_json(tmp_path):
    frame = pd.read_csv(DESIGN_A).assign(b2=lambda d: 2 * d["b"])
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "r.json"
    assert main(["regress", str(path), "--formula", "y ~ b + b2", *DESIGN, "--json", str(out)]) == 0
    rows = {r["term"]: r for r in json.loads(out.read_text())}
    assert rows["b2"]["estimate"] is None and rows["b"]["estimate"] is not None
    assert rows["b2"]["note"].startswith("aliased") and rows["b"]["note"] is None


@pytest.mark.parametrize(("formula", "extra", "needle"), [
    ("y ~ nope", [], "nope"),
    ("y ~ a * b", [], "Interactions"),
    ("y b", [], "'~'"),
    ("c ~ b", [], "neither numeric nor binary"),
    ("y ~ b", ["--family", "binomial"], "two values"),
    ("y ~ c", ["--strata", "nope"], "nope"),
])
def test_bad_input_exits_2_with_one_line(capsys, formula, extra, needle):
    assert main(["regress", str(DESIGN_A), "--formula", formula, "--weight", "w", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and err[0].startswith("kanon regress: error:")


def test_numeric_column_with_a_stray_text_cell_is_named_with_its_count_not_a_factor(tmp_path, capsys):
    """One stray cell in a numeric column: an error naming the variable and the count, never the value; with
    C(n) the six distinct values are six levels on six records, refused as before."""
    frame = pd.DataFrame({"y": [1.0, 2, 3, 4, 5, 6], "n": ["1", "2", "zz9", "4", "5", "6"], "w": [1.0] * 6})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "r.json"
    assert main(["regress", str(path), "--formula", "y ~ n", "--weight", "w", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'n'" in err[0] and "1 of its 6 non-missing cells are not numbers" in err[0]
    assert "zz9" not in err[0]
    assert main(["regress", str(path), "--formula", "y ~ C(n)", "--weight", "w", "--json", str(out)]) == 2
    assert "complete record" in capsys.readouterr().err
    # declared as a missing code, the cell leaves the model and the column is a number
    assert main(["regress", str(path), "--formula", "y ~ n", "--weight", "w", "--missing-codes", "n=zz9",
                 "--json", str(out)]) == 0
    assert [r["term"] for r in json.loads(out.read_text())] == ["(Intercept)", "n"]


@pytest.mark.parametrize(("design", "args"), [
    ("full_fpc", ["--strata", "stratum", "--psu", "psu", "--fpc", "N_psu"]),
    ("full_frac", ["--strata", "stratum", "--psu", "psu", "--fpc", "f_psu"]),
    ("cluster_fpc", ["--psu", "psu_global", "--fpc", "N_clu"]),
])
@pytest.mark.parametrize(("model", "formula"), [("linear", "y ~ C(a) + b + c"), ("logistic", "yb ~ C(a) + b + c")])
def test_fpc_coefficients_match_svyglm(tmp_path, design, args, model, formula):
    out = tmp_path / "r.json"
    assert main(["regress", str(FIXTURES / "design_fpc.csv"), "--formula", formula, "--weight", "w", *args,
                 "--lonely-psu", "fail", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    ref = pd.read_csv(FIXTURES / "expected_coefficients.csv")
    ref = ref[(ref["file"] == "design_fpc.csv") & (ref["design"] == design) & (ref["model"] == model)]
    ref = ref.set_index("term")
    assert [r_term(r["term"]) for r in rows] == list(ref.index)
    for r in rows:
        assert r["se"] == pytest.approx(ref.loc[r_term(r["term"]), "se"], abs=1e-6)


def test_separated_category_has_a_note_in_json(tmp_path):
    """A category of two records that both have the outcome: R's beta ~ 20, p ~ 0; the JSON says why."""
    frame = pd.read_csv(DESIGN_A)
    frame.loc[frame.index[:2], "c"] = "rare"
    frame.loc[frame.index[:2], "yb"] = 1
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "r.json"
    assert main(["regress", str(path), "--formula", "yb ~ b + c", "--weight", "w", "--json", str(out)]) == 0
    rows = {r["term"]: r for r in json.loads(out.read_text())}
    assert "separation" in rows["c[rare]"]["note"] and "all 2 record(s) of this category" in rows["c[rare]"]["note"]
    assert all(r["note"] is None for t, r in rows.items() if t != "c[rare]")


def test_constant_outcome_exits_2(tmp_path, capsys):
    frame = pd.read_csv(DESIGN_A).assign(one=1)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    for family in ("auto", "binomial", "gaussian"):
        assert main(["regress", str(path), "--formula", "one ~ b", "--weight", "w", "--family", family]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "single value" in err[0]
