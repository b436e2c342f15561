"""``kanon suppress --max-risk`` at scale: whole classes blanked on the engine's class table.

The release each engine writes (CSV and Parquet, weighted or not, both missing semantics, a declared
missing code) read back equals the in-memory release cell for cell and in order, the JSON's counts equal
the in-memory ones, and the risks recounted on the file read back are at most the limit for every record
with a cell left to lose.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.dataset import Roles
from kanon_core.io import load_dataset
from kanon_core.risk.classes import compute_class_sizes
from kanon_core.risk.individual import individual_risk

QIS = ["region", "age", "sex", "edu"]
COUNTED = ("n_suppressed", "records_touched", "records_above_before", "records_above_after", "per_variable",
           "cost", "passes", "max_risk", "missing", "alpha", "risk_weighted", "protected")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("risk_scale")
    rng = np.random.default_rng(5)
    n = 800
    df = pd.DataFrame({
        "region": rng.choice(["north", "south", "east", "west", "centre"], n, p=[.3, .3, .2, .12, .08]),
        "age": rng.choice([20, 30, 40, 50, 60, 70], n).astype(object),
        "sex": rng.choice(["f", "m"], n),
        "edu": rng.choice([1.5, 2.5, 3.5, 4.5], n, p=[.4, .3, .2, .1]),
        "w": np.round(rng.uniform(1, 40, n), 2),
    })
    df.loc[rng.random(n) < 0.04, "region"] = ""
    df.loc[rng.random(n) < 0.03, "age"] = 99  # the declared missing code
    df.loc[rng.random(n) < 0.03, "age"] = None
    df.loc[rng.random(n) < 0.03, "edu"] = np.nan
    csv, parquet = d / "s.csv", d / "s.parquet"
    df.to_csv(csv, index=False)
    df.assign(region=df["region"].replace("", None), age=df["age"].astype("Int64")).to_parquet(parquet, index=False)
    return {"csv": csv, "parquet": parquet}


def _cells(frame: pd.DataFrame) -> list[list]:
    def norm(v):
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            return None
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return int(v)
        return v.item() if hasattr(v, "item") else v
    return [[norm(v) for v in row] for row in frame.astype(object).itertuples(index=False)]


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("missing", ["wildcard", "category"])
@pytest.mark.parametrize("weighted", [True, False])
def test_release_at_scale_equals_the_in_memory_release(files, tmp_path, engine, fmt, missing, weighted, capsys):
    path = files[fmt]
    limit = "0.05" if weighted else "0.34"  # without weights the risk is 1 / fk: classes below 3 records
    common = ["suppress", str(path), "--qi", ",".join(QIS), "--max-risk", limit, "--missing", missing,
              "--missing-codes", "age=99", "--importance", "sex=3", "--protect", "region",
              *(["--weight", "w"] if weighted else [])]
    assert main([*common, "--engine", "pandas", "-o", str(tmp_path / "m.csv"), "--json", str(tmp_path / "m.json")]) == 0
    out = tmp_path / f"s.{fmt}"
    assert main([*common, "--engine", engine, "-o", str(out), "--json", str(tmp_path / "s.json")]) == 0
    ref = json.loads((tmp_path / "m.json").read_text())
    got = json.loads((tmp_path / "s.json").read_text())
    for key in COUNTED:
        assert got[key] == pytest.approx(ref[key]), key
    assert got["engine"] == engine and got["n_records"] == 800 and got["n_suppressed"] > 0
    mine = load_dataset(tmp_path / "m.csv", missing_codes={"age": ("99",)})  # the code the in-memory CSV writes
    back = load_dataset(out, missing_codes={"age": ("99",)})
    assert list(back.frame.columns) == list(mine.frame.columns)
    roles = Roles(qis=tuple(QIS))
    blank_mine = np.column_stack([np.asarray(mine.missing_mask(q)) for q in QIS])
    blank_back = np.column_stack([np.asarray(back.missing_mask(q)) for q in QIS])
    np.testing.assert_array_equal(blank_back, blank_mine)  # the same cells missing, in the same order
    if fmt == "csv":  # the same release, byte for byte: the code in suppressed cells, declared in the sidecar
        assert out.read_bytes() == (tmp_path / "m.csv").read_bytes()
        assert (tmp_path / "s.labels.json").read_bytes() == (tmp_path / "m.labels.json").read_bytes()
    assert _cells(back.frame.drop(columns=QIS)) == _cells(mine.frame.drop(columns=QIS))
    # recounted on the release read back: every record above the limit has no free cell left
    src = load_dataset(path, roles=roles, missing_codes={"age": ("99",)})
    codes = src.qi_matrix(QIS).codes
    released = np.where(blank_back, -1, codes)
    w = back.frame["w"].to_numpy(dtype=float) if weighted else None
    sizes = compute_class_sizes(released, missing, w)
    risk = individual_risk(sizes.fk, sizes.Fk if weighted else None)
    above = risk > float(limit)
    assert int(above.sum()) == got["records_above_after"]
    assert not (above[:, None] & (released >= 0) & (np.array(QIS) != "region")[None, :]).any()
    assert (blank_back & ~(codes < 0))[:, QIS.index("region")].sum() == 0  # protected
    err = capsys.readouterr().err
    assert "after an independent recount" in err
    assert f"kanon suppress: {engine}: counting classes" not in err  # progress only on a terminal, as in memory


def test_refused_in_one_line_at_scale(files, tmp_path, capsys):
    out = tmp_path / "o.csv"
    for extra in (["--k", "3"], ["--by", "sex"], ["--model", "record"]):
        assert main(["suppress", str(files["csv"]), "--qi", ",".join(QIS), "--max-risk", "0.1", "--engine",
                     "duckdb", "-o", str(out), *extra]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
        assert not out.exists()
