"""``kanon minucs`` end to end on a small file, checked against the brute-force enumeration."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from tests.reference.brute_force import brute_force_minucs


@pytest.fixture
def small_csv(tmp_path):
    rng = np.random.default_rng(11)
    n = 80
    frame = pd.DataFrame({
        "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(20, 26, n).astype(float),
        "région": rng.choice(["N", "S", "E", "W"], n),
        "edu": rng.choice(["a", "b", "c"], n),
    })
    frame.loc[rng.random(n) < 0.1, "age"] = np.nan
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False, sep=";")
    return path, frame


def codes_of(frame, cols):
    out = []
    for c in cols:
        codes, _ = pd.factorize(frame[c], sort=True)
        out.append(codes)
    return np.column_stack(out).astype(np.int32)


@pytest.mark.parametrize("missing,k", [("wildcard", 2), ("category", 3)])
def test_minucs_json_and_per_record(small_csv, tmp_path, missing, k):
    path, frame = small_csv
    cols = ["sex", "age", "région", "edu"]
    out, per, lst = tmp_path / "m.json", tmp_path / "per.csv", tmp_path / "list.csv"
    rc = main(["minucs", str(path), "--qi", ",".join(cols), "--k", str(k), "--missing", missing,
               "--json", str(out), "--per-record", str(per), "--list", str(lst)])
    assert rc == 0
    result = json.loads(out.read_text())
    ref = brute_force_minucs(codes_of(frame, cols), k, missing)
    assert result["total"] == sum(len(m) for m in ref)
    assert result["by_size"] == {str(s): sum(1 for ms in ref for m in ms if bin(m).count("1") == s)
                                 for s in range(1, 5)}
    assert result["seconds"] >= 0 and set(result["variable_contributions"]) == set(cols)
    table = pd.read_csv(per)
    assert list(table.columns[:4]) == ["size1", "size2", "size3", "size4"]
    assert len(table) == len(frame)
    for r, ms in enumerate(ref):
        assert table.iloc[r, :4].sum() == len(ms)
    if k == 2:
        assert "suda" in result and "dis_suda" in table.columns
        assert (table.suda > 0).sum() == sum(1 for ms in ref if ms)
    listing = pd.read_csv(lst)
    assert len(listing) == result["total"]
    assert listing["size"].tolist() == [v.count("|") + 1 for v in listing.variables]


def test_bad_input_exits_2_with_one_line(small_csv, tmp_path, capsys):
    path, _ = small_csv
    assert main(["minucs", str(path), "--qi", "sex,nope", "--json", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope" in err[0]
    assert main(["minucs", str(path), "--qi", "sex", "--k", "1"]) == 2
