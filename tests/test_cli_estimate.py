"""``kanon estimate`` end to end: JSON rows against R's svymean/svyciprop and by hand; bad input exits 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.cli.estimate_cmd import CI_CHOICES
from kanon_core.cli.regress_cmd import FAMILY_CHOICES
from kanon_core.utility.regression import FAMILIES
from kanon_core.utility.survey import CI_METHODS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "r_survey"
DESIGN_A = FIXTURES / "design_a.csv"


def run_json(args: list[str], out: Path) -> list[dict]:
    assert main([*args, "--json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("ci", ["wald", "logit"])
def test_percentages_with_strata_and_psus_match_r(tmp_path, ci):
    rows = run_json(["estimate", str(DESIGN_A), "--var", "x", "--weight", "w", "--strata", "stratum", "--psu", "psu",
                     "--lonely-psu", "fail", "--ci", ci], tmp_path / "e.json")
    ref = pd.read_csv(FIXTURES / "expected_proportions.csv", dtype={"level": str})
    ref = ref[(ref["file"] == "design_a.csv") & (ref["design"] == "full") & (ref["variable"] == "x")].set_index("level")
    assert [r["level"] for r in rows] == ["a", "b", "c", "d"] == sorted(ref.index)
    for r in rows:
        assert set(r) >= {"level", "estimate", "se", "ci_low", "ci_high"}
        expected = ref.loc[r["level"]]
        assert r["estimate"] == pytest.approx(expected["estimate"], abs=1e-9)  # a proportion, not a percentage
        assert r["se"] == pytest.approx(expected["se"], abs=1e-9)
        assert r["ci_low"] == pytest.approx(expected[f"{ci}_low"], abs=1e-9)
        assert r["ci_high"] == pytest.approx(expected[f"{ci}_high"], abs=1e-9)


def test_weights_only_estimate_is_the_weighted_share(tmp_path):
    frame = pd.DataFrame({"v": ["a", "b", "a", None, "b", "b"], "w": [1.0, 2.0, 3.0, 50.0, 1.0, 1.0]})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    rows = run_json(["estimate", str(path), "--var", "v", "--weight", "w"], tmp_path / "e.json")
    got = {r["level"]: r["estimate"] for r in rows}
    # the missing record leaves the denominator: (1 + 3) / 8 and (2 + 1 + 1) / 8
    assert got == pytest.approx({"a": 0.5, "b": 0.5})
    assert all(r["ci_low"] < r["estimate"] < r["ci_high"] for r in rows)


def test_writes_to_stdout_without_json_option(capsys):
    assert main(["estimate", str(DESIGN_A), "--var", "c", "--weight", "w"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["estimate"] for r in rows) == pytest.approx(1.0)


@pytest.mark.parametrize(("args", "needle"), [
    (["--var", "nope", "--weight", "w"], "nope"),
    (["--var", "x", "--weight", "nope"], "nope"),
    (["--var", "x", "--weight", "w", "--strata", "nope"], "nope"),
    (["--var", "x", "--weight", "w", "--level", "1.5"], "level"),
    (["--var", "x", "--weight", "w", "--missing-codes", "x"], "missing-codes"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, needle):
    assert main(["estimate", str(DESIGN_A), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and err[0].startswith("kanon estimate: error:")


def test_missing_file_and_lonely_fail_exit_2(tmp_path, capsys):
    assert main(["estimate", str(tmp_path / "none.csv"), "--var", "x", "--weight", "w"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    lonely = FIXTURES / "design_lonely.csv"
    assert main(["estimate", str(lonely), "--var", "x", "--weight", "w", "--strata", "stratum", "--psu", "psu",
                 "--lonely-psu", "fail"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "single PSU" in err[0]


def test_cli_choices_repeat_the_library_constants():
    assert tuple(CI_CHOICES) == tuple(CI_METHODS)
    assert tuple(FAMILY_CHOICES) == tuple(FAMILIES)


def test_help_builds_without_loading_the_estimators():
    code = ("import sys; from kanon_core.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "heavy = [m for m in ('scipy', 'statsmodels', 'plotly', 'streamlit') if m in sys.modules]\n"
            "print('HEAVY=' + ','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "estimate" in out.stdout and "regress" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "HEAVY="


def test_estimate_help_renders(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["estimate", "--help"])
    assert exc.value.code == 0
    assert "weight" in capsys.readouterr().out


def test_numeric_codes_are_levels(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(1, 4, 40), "w": rng.uniform(1, 2, 40)})
    path = tmp_path / "n.csv"
    frame.to_csv(path, index=False)
    rows = run_json(["estimate", str(path), "--var", "a", "--weight", "w"], tmp_path / "e.json")
    assert [r["level"] for r in rows] == [1, 2, 3]
    w = frame.groupby("a")["w"].sum() / frame["w"].sum()
    assert [r["estimate"] for r in rows] == pytest.approx(w.to_list())


@pytest.mark.parametrize(("design", "args"), [
    ("full_fpc", ["--strata", "stratum", "--psu", "psu", "--fpc", "N_psu"]),
    ("full_frac", ["--strata", "stratum", "--psu", "psu", "--fpc", "f_psu"]),
    ("strata_fpc", ["--strata", "stratum", "--fpc", "N_rec"]),
    ("weights_frac", ["--fpc", "f_all"]),
])
def test_fpc_matches_r(tmp_path, design, args):
    """--fpc COL is R's svydesign(fpc = ~COL), as population sizes or as sampling fractions."""
    rows = run_json(["estimate", str(FIXTURES / "design_fpc.csv"), "--var", "x", "--weight", "w", *args,
                     "--lonely-psu", "fail"], tmp_path / "e.json")
    ref = pd.read_csv(FIXTURES / "expected_proportions.csv", dtype={"level": str})
    ref = ref[(ref["file"] == "design_fpc.csv") & (ref["design"] == design) & (ref["variable"] == "x")]
    ref = ref.set_index("level")
    assert len(rows) == len(ref) == 4
    for r in rows:
        assert r["se"] == pytest.approx(ref.loc[r["level"], "se"], abs=1e-9)
    plain = run_json(["estimate", str(FIXTURES / "design_fpc.csv"), "--var", "x", "--weight", "w",
                      *args[:-2]], tmp_path / "p.json")
    assert all(r["se"] < p["se"] for r, p in zip(rows, plain, strict=True))  # the correction narrows


@pytest.mark.parametrize(("fpc", "needle"), [("nope", "unknown variable(s) in roles: nope"), ("x", "finite population correction 'x'"),
                                             ("psu", "varies within")])
def test_bad_fpc_exits_2_with_one_line(capsys, fpc, needle):
    assert main(["estimate", str(FIXTURES / "design_fpc.csv"), "--var", "c", "--weight", "w",
                 "--strata", "stratum", "--fpc", fpc]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0].lower()
