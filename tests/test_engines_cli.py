"""``kanon risk --engine``: the out-of-core engines give the in-memory path's JSON and per-record file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.cli.scale import engine_settings
from kanon_core.engines import EngineSettings

QIS = "a,b,c"


@pytest.fixture()
def data(tmp_path):
    rng = np.random.default_rng(4)
    n = 3000
    df = pd.DataFrame({
        "a": rng.choice(["NA", "x", "02138", ""], n, p=[0.2, 0.5, 0.25, 0.05]),
        "b": rng.choice(["1", "2", "3", "10", ""], n),
        "c": rng.choice(["1.5", "2.0", "", "7.25"], n, p=[0.4, 0.4, 0.02, 0.18]),
        "w": np.round(rng.uniform(1, 5, n), 2).astype(str),
    })
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    return path


def run_risk(path, tmp_path, engine, *extra):
    out, per = tmp_path / f"{engine}.json", tmp_path / f"{engine}.csv"
    code = main(["risk", str(path), "--qi", QIS, "--weight", "w", "--k", "3", "--engine", engine,
                 "-o", str(out), "--per-record", str(per), *extra])
    assert code == 0
    return json.loads(out.read_text()), pd.read_csv(per)


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_risk_json_and_per_record_equal_the_in_memory_path(data, tmp_path, engine, missing, capsys):
    ref, ref_rec = run_risk(data, tmp_path, "pandas", "--missing", missing, "--alpha", "0.5")
    got, got_rec = run_risk(data, tmp_path, engine, "--missing", missing, "--alpha", "0.5")
    assert got["engine"] == engine
    shared = [k for k in got if k in ref and k != "seconds"]
    assert {"n_violating", "violations_by_k", "size_distribution", "per_qi", "wildcard_dependent"} <= set(shared)
    for key in shared:
        if isinstance(ref[key], float):  # risk totals: weights are summed in another order by each engine
            assert got[key] == pytest.approx(ref[key], rel=1e-9), key
        else:
            assert got[key] == ref[key], key
    np.testing.assert_allclose(got_rec["fk"], ref_rec["fk"])
    np.testing.assert_allclose(got_rec["Fk"], ref_rec["Fk"], rtol=1e-9)
    np.testing.assert_array_equal(got_rec["wildcard_dependent"], ref_rec["wildcard_dependent"])
    assert got["fk_summary"]["min"] == ref_rec["fk"].min()
    assert got["fk_summary"]["median"] == float(np.sort(ref_rec["fk"])[(len(ref_rec) - 1) // 2])
    assert "notice" in capsys.readouterr().err  # the "NA" text is reported, as in memory


def test_engine_errors_are_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_bytes("a,b\n1,2\n".encode("utf-16"))
    assert main(["risk", str(bad), "--qi", "a", "--engine", "duckdb"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "UTF-8" in err[0]
    xlsx = tmp_path / "d.xlsx"
    pd.DataFrame({"a": [1]}).to_excel(xlsx, index=False)
    assert main(["risk", str(xlsx), "--qi", "a", "--engine", "duckdb"]) == 2
    assert "--engine pandas" in capsys.readouterr().err
    assert main(["risk", str(xlsx), "--qi", "a", "--engine", "duckdb", "--memory-limit", "lots"]) == 2


def test_memory_limit_option(data):
    import argparse

    s = engine_settings(argparse.Namespace(memory_limit="1GiB", spark_master=None), "risk")
    assert s.memory_limit == 1 << 30 and s.spark_master == "local[2]"
    assert engine_settings(argparse.Namespace(memory_limit=None), "risk").memory_limit == EngineSettings().memory_limit


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_generalize_at_scale_equals_in_memory(tmp_path, engine):
    """The search on the class table finds the in-memory node and writes the same release, suppressions
    of classes still smaller than k included."""
    from pathlib import Path

    adult = Path(__file__).resolve().parent.parent / "sample_data" / "adult"
    qis = "sex,age,race,native-country,education,occupation"
    outs = {}
    for e in ("pandas", engine):
        js, data = tmp_path / f"{e}.json", tmp_path / f"{e}.csv"
        assert main(["generalize", str(adult / "adult.csv"), "--qi", qis, "--hierarchies", str(adult), "--k", "3",
                     "--max-suppression", "0.05", "--engine", e, "--json", str(js), "-o", str(data)]) == 0
        outs[e] = (json.loads(js.read_text()), pd.read_csv(data, dtype=str, keep_default_na=False))
    ref, got = outs["pandas"], outs[engine]
    assert ref[0]["n_suppressed_records"] > 0
    for key in ("levels", "n_suppressed_records", "metric_value", "nodes_evaluated"):
        assert got[0][key] == ref[0][key], key
    pd.testing.assert_frame_equal(got[1], ref[1])


@pytest.mark.parametrize("command", [["suppress", "{f}", "--qi", "a", "--k", "2", "-o", "{o}", "--model", "record"]])
def test_options_that_need_the_records_refuse_an_out_of_core_engine(data, tmp_path, capsys, command):
    argv = [a.format(f=data, o=tmp_path / "o.csv", r=tmp_path / "r.json") for a in command]
    assert main([*argv, "--engine", "duckdb"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--engine pandas" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_risk_beyond_k_at_scale_equals_the_in_memory_measures(data, tmp_path, missing):
    """Individual risk, l-diversity and t-closeness from the engine's class table equal the in-memory ones."""
    df = pd.read_csv(data, dtype=str, keep_default_na=False)
    rng = np.random.default_rng(9)
    df["s"] = rng.choice(["p", "q", "r", ""], len(df), p=[0.6, 0.3, 0.08, 0.02])
    df["y"] = rng.choice(["1", "5", "9", "20"], len(df))
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    extra = ("--missing", missing, "--sensitive", "s", "--sensitive", "y", "--max-risk", "0.2")
    ref, ref_rec = run_risk(path, tmp_path, "pandas", *extra)
    got, got_rec = run_risk(path, tmp_path, "duckdb", *extra)
    for key in ("expected_reidentifications", "global_risk", "highest_individual_risk"):
        assert got[key] == pytest.approx(ref[key], rel=1e-9), key
    assert got["records_above_max_risk"] == ref["records_above_max_risk"]
    assert got["l_diversity"] == ref["l_diversity"]
    for s in ("s", "y"):
        assert got["t_closeness"][s]["t"] == pytest.approx(ref["t_closeness"][s]["t"], abs=1e-12)
        assert got["t_closeness"][s]["records_at_worst"] == ref["t_closeness"][s]["records_at_worst"]
    np.testing.assert_allclose(got_rec["individual_risk"], ref_rec["individual_risk"], rtol=1e-9)
    np.testing.assert_array_equal(got_rec["l_distinct_s"], ref_rec["l_distinct_s"])
    np.testing.assert_array_equal(got_rec["l_distinct_y"], ref_rec["l_distinct_y"])


def test_household_risk_at_scale_is_refused_in_one_line(data, tmp_path, capsys):
    code = main(["risk", str(data), "--qi", QIS, "--k", "3", "--engine", "duckdb", "--household", "a",
                 "-o", str(tmp_path / "h.json")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--household" in err[0]


def run_minucs(path, tmp_path, engine, *extra):
    out, per = tmp_path / f"m_{engine}.json", tmp_path / f"m_{engine}.csv"
    assert main(["minucs", str(path), "--qi", "a,b,c,w", "--k", "3", "--engine", engine, "-o", str(out),
                 "--per-record", str(per), *extra]) == 0
    return json.loads(out.read_text()), pd.read_csv(per)


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
@pytest.mark.parametrize("method", ["pairs", "subsets", "auto"])
@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_minucs_at_scale_equal_the_in_memory_search(data, tmp_path, engine, method, missing):
    """``kanon minucs --engine``: the class table's counts (by either method) and the per-record counts
    written by the engine equal the in-memory search's, the weight used as a fourth QI (many classes)."""
    ref, ref_rec = run_minucs(data, tmp_path, "pandas", "--missing", missing, "--method", "pairs")
    got, got_rec = run_minucs(data, tmp_path, engine, "--missing", missing, "--method", method)
    assert got["engine"] == engine and ref["method"] == "pairs"
    assert got["method"] == method or (method == "auto" and got["method"] in ("pairs", "subsets"))
    assert ref["total"] > 0
    for key in ("total", "by_size", "records_with_minucs", "variable_contributions", "complete", "n_records",
                "minimal_violating_qids", "top_values"):
        assert got[key] == ref[key], key
    pd.testing.assert_frame_equal(got_rec, ref_rec)


def test_minucs_options_that_need_every_minuc_stay_in_memory(data, tmp_path, capsys):
    assert main(["minucs", str(data), "--qi", "a,b", "--k", "3", "--engine", "duckdb", "--list",
                 str(tmp_path / "l.csv")]) == 2
    assert "--engine pandas" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["minucs", str(data), "--qi", "a,b", "--k", "3", "--method", "fast"])
    assert stop.value.code == 2 and "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["pairs", "subsets"])
def test_minucs_in_memory_by_either_method_writes_the_same_list(data, tmp_path, method):
    """In memory both methods keep every MINUC: the JSON counts, the per-record file and the list agree."""
    outs = {}
    for m in ("pairs", method):
        js, per, lst = (tmp_path / f"{m}.{x}" for x in ("json", "csv", "list.csv"))
        assert main(["minucs", str(data), "--qi", "a,b,c,w", "--k", "2", "--method", m, "-o", str(js),
                     "--per-record", str(per), "--list", str(lst)]) == 0
        listed = pd.read_csv(lst)
        listed["variables"] = listed["variables"].map(lambda v: "|".join(sorted(v.split("|"))))
        outs[m] = (json.loads(js.read_text()), pd.read_csv(per),
                   listed.sort_values(["record", "size", "variables"], ignore_index=True))
    ref, got = outs["pairs"], outs[method]
    assert got[0]["method"] == method and ref[0]["total"] > 0
    assert {k: v for k, v in got[0].items() if k not in ("seconds", "method")} == \
        {k: v for k, v in ref[0].items() if k not in ("seconds", "method")}
    pd.testing.assert_frame_equal(got[1], ref[1])
    pd.testing.assert_frame_equal(got[2], ref[2])
