"""Weighted percentages and means against R's survey package (reference values in fixtures/r_survey).

The stored references were produced by tests/r/make_reference.R (svymean, confint, svyciprop) on the
stored data; the test marked ``r`` re-runs that script when R is installed, and fails if that run fails.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kanon_core.errors import InputError
from kanon_core.utility.design import SurveyDesign
from kanon_core.utility.survey import mean, proportions

ROOT = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures" / "r_survey"
SCRIPT = ROOT / "r" / "make_reference.R"
TOL = 1e-6
DESIGNS = {"full": ("stratum", "psu", None), "strata": ("stratum", None, None), "cluster": (None, "psu_global", None),
           "weights": (None, None, None),
           # finite population corrections (R's fpc = ~COL): population sizes (N_*) or sampling fractions (f_*)
           "full_fpc": ("stratum", "psu", "N_psu"), "full_frac": ("stratum", "psu", "f_psu"),
           "full_fpc1": ("stratum", "psu", "N_psu1"), "strata_fpc": ("stratum", None, "N_rec"),
           "cluster_fpc": (None, "psu_global", "N_clu"), "weights_frac": (None, None, "f_all")}


def design_for(data: pd.DataFrame, kind: str, lonely: str) -> SurveyDesign:
    strata, psu, fpc = DESIGNS[kind]
    return SurveyDesign.from_arrays(data["w"], None if strata is None else data[strata],
                                    None if psu is None else data[psu], lonely_psu=lonely,
                                    fpc=None if fpc is None else data[fpc], fpc_name=fpc)


def max_proportion_difference(expected_dir: Path) -> float:
    exp = pd.read_csv(expected_dir / "expected_proportions.csv", dtype={"level": str})
    worst = 0.0
    assert len(exp) > 0
    for (file, kind, lonely), g in exp.groupby(["file", "design", "lonely"]):
        data = pd.read_csv(FIXTURES / file)
        design = design_for(data, kind, lonely)
        for var, gv in g.groupby("variable"):
            ref = gv.set_index("level")
            for ci in ("wald", "logit"):
                est = proportions(data[var], design, ci=ci)
                assert est.df == int(ref["degf"].iloc[0])
                got = est.table.set_index("label")
                assert sorted(got.index) == sorted(ref.index)
                pairs = [("estimate", "estimate"), ("se", "se"), ("ci_low", f"{ci}_low"), ("ci_high", f"{ci}_high")]
                for ours, theirs in pairs:
                    worst = max(worst, float(np.max(np.abs(got.loc[ref.index, ours].to_numpy()
                                                           - ref[theirs].to_numpy()))))
    return worst


def max_mean_difference(expected_dir: Path) -> float:
    exp = pd.read_csv(expected_dir / "expected_means.csv")
    worst = 0.0
    for row in exp.itertuples(index=False):
        data = pd.read_csv(FIXTURES / row.file)
        m = mean(data[row.variable], design_for(data, row.design, row.lonely))
        worst = max(worst, abs(m.estimate - row.estimate), abs(m.se - row.se))
    return worst


def test_proportions_match_stored_r_references():
    assert max_proportion_difference(FIXTURES) < TOL


def test_means_match_stored_r_references():
    assert max_mean_difference(FIXTURES) < TOL


def test_references_cover_every_lonely_option_and_design():
    exp = pd.read_csv(FIXTURES / "expected_proportions.csv")
    assert set(exp["design"]) == set(DESIGNS)
    assert set(exp["lonely"]) == {"fail", "adjust", "remove", "certainty", "average"}
    # the options must actually differ on the lonely design, or the comparison proves little
    lonely = exp[exp["file"] == "design_lonely.csv"].groupby("lonely")["se"].sum()
    assert lonely["adjust"] != lonely["remove"] != lonely["average"]


def test_fail_matches_r_refusing_the_lonely_design():
    assert (FIXTURES / "expected_fail.txt").read_text().strip() == "fail: error"
    data = pd.read_csv(FIXTURES / "design_lonely.csv")
    with pytest.raises(InputError, match="single PSU"):
        mean(data["y"], design_for(data, "full", "fail"))


def run_r(args: list[str]) -> None:
    """Run an R script; skip only when R is not installed at all, fail on any error of an installed R.

    An installed ``Rscript`` whose run fails (the survey package missing, a script error) is a failure:
    a silently skipped cross-check would let kanon drift from R unnoticed.
    """
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed (scripts/system_deps.sh installs R and its survey package)")
    run = subprocess.run(["Rscript", *args], capture_output=True, timeout=600)
    if run.returncode != 0:
        pytest.fail(f"Rscript {' '.join(args)} failed:\n{run.stderr.decode(errors='replace')}")


@pytest.fixture(scope="session")
def fresh_r_references(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("r_survey")
    run_r([str(SCRIPT), str(FIXTURES), str(out)])
    return out


@pytest.mark.r
def test_proportions_and_means_match_freshly_computed_r(fresh_r_references):
    assert max_proportion_difference(fresh_r_references) < TOL
    assert max_mean_difference(fresh_r_references) < TOL
