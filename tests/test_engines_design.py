"""Weighted percentages of a file computed from the engines' aggregate equal those of the file read in
memory (typed values, declared missing codes, weights, strata, nested PSUs, fpc)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Roles
from kanon_core.engines import get_engine
from kanon_core.engines.design import design_aggregate
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
