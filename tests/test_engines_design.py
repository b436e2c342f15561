"""Weighted percentages of a file computed from the engines' aggregate equal those of the file read in
memory (typed values, declared missing codes, weights, strata, nested PSUs, fpc)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Roles
from kanon_core.engines import get_engine
from kanon_core.engines.design import compare_at_scale, design_aggregate
from kanon_core.engines.source import open_source
from kanon_core.errors import InputError
from kanon_core.io import load_dataset
from kanon_core.utility.design import SurveyDesign
from kanon_core.utility.survey import estimate_proportions
from kanon_core.utility.survey_aggregate import proportions_of_aggregate

ENGINES = ("duckdb", "polars")


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 900
    strata = rng.choice(["north", "south", "east"], n)
    df = pd.DataFrame({
        "region": strata,
        "psu": rng.integers(1, 7, n).astype(str),
        "pop": pd.Series(strata).map({"north": "40", "south": "55", "east": "30"}),
        "edu": rng.choice(["1", "2", "3", "9", ""], n, p=[.3, .3, .25, .1, .05]),
        "sex": rng.choice(["M", "F", "NA"], n),
        "w": np.round(rng.uniform(1, 80, n), 2).astype(str),
    })
    folder = tmp_path_factory.mktemp("design")
    csv = folder / "s.csv"
    df.to_csv(csv, index=False)
    (folder / "s.labels.json").write_text(json.dumps({"edu": {"value_labels": {"1": "Primary"},
                                                              "missing_codes": ["9"]}}), encoding="utf-8")
    parquet = folder / "s.parquet"
    load_dataset(csv).frame.to_parquet(parquet, index=False)
    return {"csv": csv, "parquet": parquet}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("design", [{}, {"weight": "w"}, {"weight": "w", "strata": "region"},
                                    {"weight": "w", "strata": "region", "psu": "psu"},
                                    {"weight": "w", "strata": "region", "psu": "psu", "fpc": "pop"}])
@pytest.mark.parametrize("variable", ["edu", "sex"])
def test_percentages_from_the_engine_equal_the_records(survey, engine, fmt, design, variable):
    path = survey[fmt]
    ds = load_dataset(path, roles=Roles(weight=design.get("weight"), strata=design.get("strata"),
                                        psu=design.get("psu"), fpc=design.get("fpc")))
    ref = estimate_proportions(ds, variable, SurveyDesign.from_dataset(ds), ci="logit")
    agg = design_aggregate(get_engine(engine), open_source(path), variable, **design)
    got = proportions_of_aggregate(agg, variable, dict(ds.meta_of(variable).value_labels), ci="logit")
    assert list(got.table["value"]) == list(ref.table["value"])
    assert list(got.table["label"]) == list(ref.table["label"])
    assert list(got.table["n"]) == list(ref.table["n"])
    for col in ("estimate", "se", "ci_low", "ci_high"):
        np.testing.assert_allclose(got.table[col], ref.table[col], rtol=1e-9, err_msg=col)
    assert (got.n_domain, got.n_missing, got.df) == (ref.n_domain, ref.n_missing, ref.df)
    if variable == "edu":
        assert 9 not in list(got.table["value"]) and got.n_missing > 0  # the declared code is missing


@pytest.mark.parametrize("engine", ENGINES)
def test_a_missing_stratum_is_refused_as_in_memory(tmp_path, engine):
    path = tmp_path / "m.csv"
    pd.DataFrame({"s": ["a", "", "b", "b"], "x": ["1", "2", "1", "2"]}).to_csv(path, index=False)
    with pytest.raises(InputError, match="Design variable 's' is missing for 1 record"):
        SurveyDesign.from_dataset(load_dataset(path), strata="s")
    with pytest.raises(InputError, match="Design variable 's' is missing for 1 record"):
        design_aggregate(get_engine(engine), open_source(path), "x", strata="s")


def _pairs_mapping(before: pd.DataFrame, after: pd.DataFrame, v: str) -> dict:
    """The recoding seen on records with a value in both files (what the in-memory comparison reads)."""
    both = before[v].notna() & after[v].notna()
    return dict(zip(before.loc[both, v], after.loc[both, v], strict=True))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_comparison_at_scale_equals_the_in_memory_comparison(survey, tmp_path, engine, fmt):
    """A release written by kanon (edu's codes 2 and 3 merged, the records of classes below k blanked on the
    QIs): the before-and-after table from the engines' aggregates, given the recoding, equals the one
    computed on the two files in memory (statuses, percentages, intervals, overlap, summary)."""
    from kanon_core.cli import main
    from kanon_core.recipe import Recipe
    from kanon_core.treat.recode import GeneralizeStep, RecodeStep
    from kanon_core.utility.compare import compare_distributions

    path = survey[fmt]
    recipe = tmp_path / "r.json"
    Recipe(steps=(RecodeStep("edu", merge=(2, 3)), GeneralizeStep.build({}, {}, suppress_k=5)),
           roles=Roles(qis=("region", "edu", "sex", "psu"), weight="w")).save(recipe)
    out = tmp_path / f"release.{fmt}"
    assert main(["apply", str(recipe), str(path), "-o", str(out), "--engine", engine]) == 0
    before, after = load_dataset(path, roles=Roles(weight="w")), load_dataset(out, roles=Roles(weight="w"))
    assert int(after.frame["sex"].isna().sum()) > 0  # some classes were blanked
    variables = ["region", "edu", "sex"]
    ref = compare_distributions(before, after, variables, ci="logit")
    recodes = {"edu": _pairs_mapping(before.frame, after.frame, "edu")}
    got = compare_at_scale(get_engine(engine), open_source(path), open_source(out), variables, recodes,
                           weight="w", ci="logit")
    pd.testing.assert_frame_equal(got.table, ref.table, check_exact=False, rtol=1e-9)
    from dataclasses import asdict

    for key, value in asdict(ref.summary).items():
        assert asdict(got.summary)[key] == (pytest.approx(value, abs=1e-9) if isinstance(value, float) else value), key
    assert ref.summary.n_categories > 0 and (got.table["recoded"] == (got.table["variable"] == "edu")).all()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_variable_blanked_in_full_at_scale_reads_as_in_memory(tmp_path, engine):
    """A release with every value of one variable blanked: its categories are completely suppressed, as in
    memory, and the other variable is compared (the comparison failed on the blanked variable)."""
    from kanon_core.utility.compare import compare_distributions

    before, after = tmp_path / "o.csv", tmp_path / "t.csv"
    before.write_text("v,u,w\na,x,1\na,y,1\nb,x,1\nb,y,1\nc,x,10\nc,y,10\n")
    after.write_text("v,u,w\n,x,1\n,y,1\n,,1\n,y,1\n,x,10\n,y,10\n")
    ref = compare_distributions(load_dataset(before, roles=Roles(weight="w")),
                                load_dataset(after, roles=Roles(weight="w")), ["v", "u"])
    got = compare_at_scale(get_engine(engine), open_source(before), open_source(after), ["v", "u"], weight="w")
    pd.testing.assert_frame_equal(got.table, ref.table, check_exact=False, rtol=1e-9)
    assert got.summary.n_completely_suppressed == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_without_the_weight_is_refused_not_compared_unweighted(tmp_path, engine):
    """Equal weights in the release against a weighted original would show a change of weighting as the
    treatment's effect (c: 83 % -> 40 % for one blanked cell); in memory the records take the original's
    weights, at scale the records are not paired, so the comparison is refused, naming the weight."""
    before, after = tmp_path / "o.csv", tmp_path / "t.csv"
    before.write_text("v,w\na,1\na,1\nb,1\nb,1\nc,10\nc,10\n")
    after.write_text("v,u\n,x\na,x\nb,x\nb,x\nc,x\nc,x\n")
    with pytest.raises(InputError, match="The release has no weight variable 'w'"):
        compare_at_scale(get_engine(engine), open_source(before), open_source(after), ["v"], weight="w")


@pytest.mark.parametrize("engine", ENGINES)
def test_kanon_estimate_at_scale_prints_the_in_memory_estimates(survey, tmp_path, engine):
    from kanon_core.cli import main

    path = survey["csv"]
    opts = ["--var", "edu", "--weight", "w", "--strata", "region", "--psu", "psu", "--ci", "logit"]
    assert main(["estimate", str(path), *opts, "--engine", "pandas", "-o", str(tmp_path / "ref.json")]) == 0
    assert main(["estimate", str(path), *opts, "--engine", engine, "-o", str(tmp_path / "got.json")]) == 0
    ref, got = (json.loads((tmp_path / f).read_text()) for f in ("ref.json", "got.json"))
    assert [r["level"] for r in got] == [r["level"] for r in ref] and len(ref) == 3
    for a, b in zip(got, ref, strict=True):
        for key, value in b.items():
            assert a[key] == (pytest.approx(value, rel=1e-9) if isinstance(value, float) else value), key


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_a_weight_total_that_overflows_is_refused_naming_the_weight(tmp_path, engine):
    """As the in-memory design refuses it (dataset.check_weight_total): the estimate and the comparison alike."""
    path = tmp_path / "d.csv"
    pd.DataFrame({"v": ["a", "b", "a"], "wt": [1e308, 1e308, 1.0]}).to_csv(path, index=False)
    source = open_source(path)
    with pytest.raises(InputError, match="Weight 'wt': the weights' total is too large to compute"):
        design_aggregate(get_engine(engine), source, "v", "wt")
    with pytest.raises(InputError, match="Weight 'wt': the weights' total is too large to compute"):
        compare_at_scale(get_engine(engine), source, source, ["v"], weight="wt")


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "polars"])
def test_a_declared_missing_code_on_the_weight_is_a_missing_weight(tmp_path, capsys, engine):
    """Every reader refuses a weight cell holding a declared missing code as a missing weight (never a weight
    of that value); a declared code no cell holds changes nothing."""
    from kanon_core.cli import main
    from tests.stderr_lines import without_progress

    path = tmp_path / "d.csv"
    path.write_text("v,w\na,1\nb,7.86\na,2\n", encoding="utf-8")
    base = ["estimate", str(path), "--var", "v", "--weight", "w", "--engine", engine]
    assert main([*base, "--missing-codes", "w=7.86"]) == 2
    assert without_progress(capsys.readouterr().err) == [
        "kanon estimate: error: Weight 'w' is missing for 1 record(s); every record needs a weight."]
    assert main([*base, "--missing-codes", "w=9"]) == 0
