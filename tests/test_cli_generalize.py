"""``kanon generalize`` end to end on Adult with ARX's hierarchy files: JSON, released file, recipe step."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.dataset import Roles
from kanon_core.errors import fewer_records_than_k
from kanon_core.io import load_dataset
from kanon_core.steps import step_from_dict
from kanon_core.treat.hierarchy import load_hierarchies
from kanon_core.treat.lattice import build_problem, exhaustive_search

ADULT = Path(__file__).resolve().parent.parent / "sample_data" / "adult"
QIS = ["sex", "age", "race", "marital-status"]


@pytest.fixture(scope="module")
def adult_problem():
    ds = load_dataset(ADULT / "adult.csv", roles=Roles(qis=tuple(QIS)))
    return ds, build_problem(ds, load_hierarchies(ADULT, QIS), QIS)


def run(tmp_path, *extra, qis=QIS, file=ADULT / "adult.csv", hierarchies=ADULT):
    out = tmp_path / "g.json"
    rc = main(["generalize", str(file), "--qi", ",".join(qis), "--hierarchies", str(hierarchies), "--json", str(out),
               *extra])
    return rc, (json.loads(out.read_text()) if rc == 0 else None)


@pytest.mark.parametrize("metric", ["prec", "dm", "aecs", "entropy"])
def test_json_reports_the_optimum(adult_problem, tmp_path, metric):
    _, problem = adult_problem
    rc, res = run(tmp_path, "--k", "5", "--max-suppression", "0.01", "--metric", metric)
    assert rc == 0
    assert set(res["levels"]) == set(QIS)
    assert all(0 <= res["levels"][q] < h for q, h in zip(QIS, problem.heights))
    assert res["metric"] == metric and res["k"] == 5 and res["algorithm"] == "optimal"
    ex = exhaustive_search(problem, 5, 0.01, metric)
    assert res["metric_value"] == pytest.approx(ex.loc[ex.anonymous, "loss"].min(), rel=1e-12)
    assert res["loss"] == res["metric_value"]
    assert 0 <= res["n_suppressed_records"] <= math.floor(0.01 * 30162)
    assert 1 <= res["nodes_evaluated"] <= res["n_nodes"] == 60
    assert res["seconds"] >= res["seconds_search"] >= 0
    assert res["n_records"] == 30162 and res["file"] == "adult.csv"
    if metric == "prec":
        assert res["precision"] == pytest.approx(1 - res["metric_value"])


def test_k_minimal_nodes_are_listed_on_request(adult_problem, tmp_path):
    """By default only the nodes that could be the optimum are classified (no list, no count of passing
    nodes); --k-minimal classifies them all: the minimal passing nodes of the exhaustive search, the same
    optimum."""
    _, problem = adult_problem
    rc, quick = run(tmp_path, "--k", "5")
    assert rc == 0 and quick["k_minimal"] is None and quick["n_anonymous_nodes"] is None
    rc, full = run(tmp_path, "--k", "5", "--k-minimal")
    assert rc == 0 and full["levels"] == quick["levels"]
    assert full["loss"] == pytest.approx(quick["loss"], rel=1e-12)
    ex = exhaustive_search(problem, 5, 0.0, "prec")
    passing = {tuple(int(r[q]) for q in QIS) for _, r in ex[ex.anonymous].iterrows()}
    minimal = {p for p in passing if not any(o != p and all(a <= b for a, b in zip(o, p)) for o in passing)}
    assert {tuple(int(r[q]) for q in QIS) for r in full["k_minimal"]} == minimal
    assert full["n_anonymous_nodes"] == len(passing)


def test_output_file_is_k_anonymous_and_the_step_replays(adult_problem, tmp_path):
    ds, _ = adult_problem
    out_csv, step_json = tmp_path / "released.csv", tmp_path / "step.json"
    rc, res = run(tmp_path, "--k", "10", "--max-suppression", "0.02", "--output", str(out_csv),
                  "--step", str(step_json))
    assert rc == 0
    released = pd.read_csv(out_csv, sep=None, engine="python", dtype=str)
    suppressed = released[QIS].isna().all(axis=1)
    assert int(suppressed.sum()) == res["n_suppressed_records"]
    assert released.loc[~suppressed, QIS].groupby(QIS).size().min() >= 10
    assert (released["salary-class"] == ds.frame["salary-class"].astype(str)).all()
    step = step_from_dict(json.loads(step_json.read_text()))
    assert dict(step.levels) == res["levels"]
    replayed = step.apply(ds).frame
    assert replayed[QIS].isna().all(axis=1).sum() == res["n_suppressed_records"]
    kept = replayed.loc[~suppressed, QIS].astype(str)
    assert (kept.to_numpy() == released.loc[~suppressed, QIS].to_numpy()).all()


def test_datafly(tmp_path):
    out_csv = tmp_path / "released.csv"
    rc, res = run(tmp_path, "--k", "5", "--algorithm", "datafly", "--output", str(out_csv))
    assert rc == 0 and res["algorithm"] == "datafly" and res["n_suppressed_records"] == 0
    released = pd.read_csv(out_csv, sep=None, engine="python", dtype=str)
    assert released[QIS].groupby(QIS, dropna=False).size().min() >= 5


def test_hierarchies_named_by_variable_in_any_folder(tmp_path):
    frame = pd.DataFrame({"zip": ["02138", "02139", "02141", "02142"] * 3, "sex": ["m", "f"] * 6})
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    hdir = tmp_path / "h"
    hdir.mkdir()
    shutil.copy(Path(__file__).parent / "data" / "hierarchies" / "zip.csv", hdir / "zip.csv")
    (hdir / "sex.csv").write_text("m;*\nf;*\n")
    rc, res = run(tmp_path, "--k", "6", qis=["zip", "sex"], file=data, hierarchies=hdir)
    # each (zip, sex) pair occurs 3 times and 0213* holds only 02138 (m) and 02139 (f): 6-anonymity needs
    # zip at 021** with sex kept (Prec loss (2/3 + 0) / 2) or 0213* with sex dropped ((1/3 + 1) / 2)
    assert rc == 0 and res["levels"] == {"zip": 2, "sex": 0}
    assert res["metric_value"] == pytest.approx(1 / 3)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kanon generalize: error:")
    return err[0]


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    def fails(*args, qis=QIS, file=ADULT / "adult.csv", hierarchies=ADULT) -> str:
        rc, _ = run(tmp_path, *args, qis=qis, file=file, hierarchies=hierarchies)
        assert rc == 2
        return one_line_error(capsys)

    assert "--k" in fails("--k", "0")
    assert "fraction" in fails("--k", "5", "--max-suppression", "1.5")
    assert "not found" in fails("--k", "5", hierarchies=tmp_path / "nowhere")
    assert "salary" in fails("--k", "5", qis=["sex", "salary"])
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(ADULT / "adult_hierarchy_sex.csv", partial)
    assert "No hierarchy file for age" in fails("--k", "5", qis=["sex", "age"], hierarchies=partial)
    # a value the hierarchy does not know: counted, never shown
    (partial / "adult_hierarchy_race.csv").write_text("White;*\nBlack;*\n")
    msg = fails("--k", "5", qis=["sex", "race"], hierarchies=partial)
    assert "3 value(s)" in msg and "Eskimo" not in msg
    # infeasible: 4 records cannot be 5-anonymous at any level or suppression limit, which is said in the words
    # every command uses (not "allow more suppression": the suppressed records would be a group of 4 too)
    tiny = tmp_path / "tiny.csv"
    pd.read_csv(ADULT / "adult.csv", sep=";").head(4).to_csv(tiny, index=False, sep=";")
    for extra in ([], ["--max-suppression", "0.9"], ["--algorithm", "datafly"]):
        assert fails("--k", "5", *extra, file=tiny).endswith(fewer_records_than_k(4, 5))
    assert "Even" in fails("--k", "4", "--criterion", "l=2:salary-class", file=tiny)  # k fits; l=2 cannot
    assert "not found" in fails("--k", "5", file=tmp_path / "missing.csv")


def test_unknown_metric_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, "--k", "5", "--metric", "bits")
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_criteria_are_searched_together_and_reported(adult_problem, tmp_path):
    ds, _ = adult_problem
    step_json = tmp_path / "step.json"
    rc, res = run(tmp_path, "--criterion", "k=5", "--criterion", "l=2:salary-class", "--criterion", "risk=0.3",
                  "--max-suppression", "0.01", "--step", str(step_json))
    assert rc == 0
    specs = [c["spec"] for c in res["criteria"]]
    assert specs == ["k=5", "l=2:salary-class", "risk=0.3"]
    assert all(c["holds"] for c in res["criteria"]) and res["k"] == 5
    assert [c["monotonic"] for c in res["criteria"]] == [True, True, False]
    assert all(c["records_failing"] <= res["n_suppressed_records"] for c in res["criteria"])
    # the optimum equals the exhaustive evaluation under the same criteria
    problem = build_problem(ds, load_hierarchies(ADULT, QIS), QIS, sensitive=["salary-class"], weighted=True)
    crit = ["k=5", "l=2:salary-class", "risk=0.3"]
    ex = exhaustive_search(problem, None, 0.01, "prec", criteria=crit)
    assert res["loss"] == pytest.approx(ex.loc[ex.anonymous, "loss"].min(), rel=1e-12)
    step = step_from_dict(json.loads(step_json.read_text()))
    if res["n_suppressed_records"]:
        assert step.criteria == tuple(crit)
    out = step.apply(ds).frame
    assert int(out[QIS].isna().all(axis=1).sum()) == res["n_suppressed_records"]


def test_a_sensitive_variable_named_with_a_colon_is_searched_and_its_step_replays(adult_problem, tmp_path):
    """A name holding ':' is written quoted in the spec; the JSON and the recipe step keep the spec, which
    parses back to the same variable, and the step replays to the release the search made."""
    ds, _ = adult_problem
    named = tmp_path / "adult.csv"
    frame = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)
    frame.rename(columns={"salary-class": "salary: class"}).to_csv(named, sep=";", index=False)
    step_json = tmp_path / "step.json"
    rc, res = run(tmp_path, "--criterion", "k=5", "--criterion", 'l=2:"salary: class"', "--max-suppression", "0.01",
                  "--step", str(step_json), file=named)
    assert rc == 0
    assert [c["spec"] for c in res["criteria"]] == ["k=5", 'l=2:"salary: class"']
    assert all(c["holds"] for c in res["criteria"])
    # the same optimum as the variable under its plain name
    _, plain = run(tmp_path, "--criterion", "k=5", "--criterion", "l=2:salary-class", "--max-suppression", "0.01")
    assert res["levels"] == plain["levels"] and res["loss"] == plain["loss"]
    step = step_from_dict(json.loads(step_json.read_text()))
    renamed = load_dataset(named, roles=Roles(qis=tuple(QIS)))
    out = step.apply(renamed).frame
    assert int(out[QIS].isna().all(axis=1).sum()) == res["n_suppressed_records"]


@pytest.mark.parametrize("extra, message", [
    (["--criterion", "q=3"], "Unknown criterion"),
    (["--criterion", "l=3"], "l-diversity"),
    ([], "--criterion"),
    (["--k", "5", "--criterion", "k=3"], "not both"),
    (["--criterion", "k=3", "--alpha", "0.5"], "k=5:alpha=0.5"),
    (["--criterion", "l=2:nope"], "not a variable"),
])
def test_bad_criteria_exit_2_with_one_line(tmp_path, capsys, extra, message):
    rc, _ = run(tmp_path, *extra)
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "polars"])
def test_the_weight_as_a_quasi_identifier_is_refused_by_every_engine(tmp_path, capsys, engine):
    """The engines read --weight and --qi without the in-memory roles check: the command checks it itself."""
    from tests.stderr_lines import without_progress

    data = tmp_path / "g.csv"
    data.write_text("v,w\na,1\nb,2\na,2\nb,1\n", encoding="utf-8")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "v.csv").write_text("a;*\nb;*\n", encoding="utf-8")
    (tmp_path / "h" / "w.csv").write_text("1;*\n2;*\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    assert main(["generalize", str(data), "--qi", "v,w", "--weight", "w", "--hierarchies", str(tmp_path / "h"),
                 "--k", "2", "--engine", engine, "-o", str(out)]) == 2
    assert without_progress(capsys.readouterr().err) == [
        "kanon generalize: error: The weight cannot also be a quasi-identifier."]
    assert not out.exists()


def _ages_with_a_declared_code(folder: Path) -> tuple[Path, Path]:
    """Ages with the declared missing code -9 on three records (a wildcard), and hierarchies of age and sex."""
    data = folder / "d.csv"
    data.write_text("id,age,sex\n" + "".join(f"{i},{a},{s}\n" for i, (a, s) in enumerate(
        [("-9", "m")] * 3 + [("34", "m")] + [("35", "f")] * 3 + [("52", "m")] * 3)), encoding="utf-8")
    hier = folder / "h"
    hier.mkdir()
    (hier / "age.csv").write_text("34;30-39;*\n35;30-39;*\n52;50-59;*\n", encoding="utf-8")
    (hier / "sex.csv").write_text("m;*\nf;*\n", encoding="utf-8")
    return data, hier


@pytest.mark.parametrize("engine, ext", [("pandas", "csv"), ("pandas", "parquet"), ("pandas", "sav"),
                                         ("pandas", "dta"), ("duckdb", "csv"), ("polars", "parquet")])
def test_a_declared_missing_code_the_search_relied_on_stays_missing_in_the_release(tmp_path, engine, ext):
    """Record 4 (34, m) reaches k = 3 only through the three records whose age is the declared code -9 (missing,
    a wildcard). The release was written by a plain table writer that dropped the declaration: -9 became an
    ordinary age, and the written file, read back, had k = 1. Now it is written as every release is (the labels
    sidecar, SPSS's user-missing values, Stata's missing values), and the file read back has the k found."""
    data, hier = _ages_with_a_declared_code(tmp_path)
    out = tmp_path / f"release.{ext}"
    rc, found = run(tmp_path, "--k", "3", "--max-suppression", "0", "--missing-codes", "age=-9", "--engine", engine,
                    "-o", str(out), qis=["age", "sex"], file=data, hierarchies=hier)
    assert rc == 0 and found["levels"] == {"age": 0, "sex": 0}
    if ext in ("csv", "parquet"):
        assert json.loads((tmp_path / "release.labels.json").read_text())["age"]["missing_codes"] == ["-9"]
    back = load_dataset(out, roles=Roles(qis=("age", "sex")))
    assert int(back.missing_mask("age").sum()) == 3
    from kanon_core.risk.classes import class_sizes

    assert class_sizes(back.qi_matrix(["age", "sex"]).codes, "wildcard").min() == 3


def test_recode_writes_no_workbook(tmp_path, capsys):
    """A workbook is no release format: a text cell beginning with '=' was written as a live formula. Refused
    before any work, as every command refuses a format it does not release in."""
    data = tmp_path / "d.csv"
    data.write_text("age,note\n20,=cmd\n30,x\n", encoding="utf-8")
    assert main(["recode", str(data), "--column", "age", "--top", "25", "-o", str(tmp_path / "r.xlsx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["kanon recode: error: Cannot export '.xlsx'. Use one of: .csv, .parquet, .dta, .sav."]
    assert not (tmp_path / "r.xlsx").exists()


def test_a_declared_missing_code_of_a_generalized_qi_keeps_its_code_in_every_engine_s_release(tmp_path):
    """Age generalized to its level 1: a cell holding the declared code -9 ("refused") is missing before and
    after, and the release keeps the code, declared missing, so a refusal still reads apart from a suppressed or
    empty cell (it was blanked). Every engine writes the same bytes and the same labels file, and the release
    read back has its three missing ages and k = 5 under wildcard semantics."""
    data, hier = _ages_with_a_declared_code(tmp_path)
    written, sidecars = {}, {}
    for engine in ("pandas", "duckdb", "polars"):
        out = tmp_path / f"{engine}.csv"
        rc, found = run(tmp_path, "--k", "5", "--max-suppression", "0", "--missing-codes", "age=-9", "--engine",
                        engine, "-o", str(out), qis=["age"], file=data, hierarchies=hier)
        assert rc == 0 and found["levels"] == {"age": 1}
        written[engine] = out.read_bytes()
        sidecars[engine] = json.loads((tmp_path / f"{engine}.labels.json").read_text())
        back = load_dataset(out, roles=Roles(qis=("age",)))
        assert int(back.missing_mask("age").sum()) == 3
    assert written["pandas"].decode().splitlines()[1:4] == ["0,-9,m", "1,-9,m", "2,-9,m"]
    assert written["duckdb"] == written["pandas"] == written["polars"]
    assert sidecars["pandas"]["age"]["missing_codes"] == ["-9"]
    assert sidecars["duckdb"] == sidecars["pandas"] == sidecars["polars"]


def _codes_in_small_classes(folder: Path, sidecar: bool) -> tuple[Path, Path, list[str]]:
    """Ages and sexes where the declared code -9 (on both) makes classes of its own under category semantics:
    records h and i (age -9) and j (sex -9) are each alone at every level, so a 2-anonymous release blanks them.
    The codes are given on the command line, or declared with a label in the file's labels sidecar."""
    data = folder / "d.csv"
    rows = [("20", "1", "a"), ("21", "1", "b"), ("22", "1", "c"), ("23", "2", "d"), ("30", "2", "e"),
            ("31", "2", "f"), ("32", "2", "g"), ("-9", "1", "h"), ("-9", "2", "i"), ("35", "-9", "j")]
    data.write_text("age,sex,x\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    if sidecar:
        (folder / "d.labels.json").write_text(json.dumps({"age": {"label": "Age", "value_labels": {"-9": "Refused"},
                                                                  "missing_codes": ["-9"]},
                                                          "sex": {"missing_codes": ["-9"]}}), encoding="utf-8")
    hier = folder / "h"
    hier.mkdir()
    (hier / "age.csv").write_text("".join(f"{a};{a[0]}0-{a[0]}9;*\n" for a, _, _ in rows if a != "-9"),
                                  encoding="utf-8")
    (hier / "sex.csv").write_text("1;*\n2;*\n", encoding="utf-8")
    return data, hier, ([] if sidecar else ["--missing-codes", "age=-9,sex=-9"])


@pytest.mark.parametrize("sidecar", [False, True])
def test_the_engines_blank_a_small_class_written_with_a_declared_code(tmp_path, sidecar):
    """The engines keyed the classes to blank on their values with missing as empty, so a record whose missing
    value is a declared code escaped its blanking: record j (35, sex -9), alone in its class, was released as
    it was (k = 1), where the in-memory release blanks it. With the codes declared in the labels sidecar instead
    of on the command line the engines refused the release ("the recoding of 'age' does not cover all of its
    values"). Every engine now writes the in-memory release's bytes and labels, and the release read back is
    2-anonymous."""
    data, hier, codes = _codes_in_small_classes(tmp_path, sidecar)
    written, sidecars = {}, {}
    for engine in ("pandas", "duckdb", "polars"):
        out = tmp_path / f"{engine}.csv"
        rc, found = run(tmp_path, "--k", "2", "--max-suppression", "0.5", "--missing", "category", *codes,
                        "--engine", engine, "-o", str(out), qis=["age", "sex"], file=data, hierarchies=hier)
        assert rc == 0 and found["levels"] == {"age": 1, "sex": 0}
        written[engine] = out.read_bytes()
        sidecars[engine] = json.loads((tmp_path / f"{engine}.labels.json").read_text())
        back = load_dataset(out, roles=Roles(qis=("age", "sex")))
        from kanon_core.risk.classes import class_sizes

        assert class_sizes(back.qi_matrix(["age", "sex"]).codes, "category").min() >= 2
    lines = written["pandas"].decode().splitlines()
    assert lines[8:] == [",,h", ",,i", ",,j"] and lines[1] == "20-29,1,a"
    assert written["duckdb"] == written["pandas"] == written["polars"]
    assert sidecars["duckdb"] == sidecars["pandas"] == sidecars["polars"]
    if sidecar:
        assert sidecars["pandas"]["age"] == {"label": "Age", "value_labels": {"-9": "Refused"}, "missing_codes": ["-9"]}


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "polars"])
def test_a_hierarchy_label_written_as_a_declared_code_is_refused_by_every_engine(tmp_path, engine, capsys):
    """Ages 20-23 generalized to the label "-9", the declared code of age: the release would declare their
    records missing. Refused in one line naming the variable, with no release written."""
    data, hier, codes = _codes_in_small_classes(tmp_path, False)
    (hier / "age.csv").write_text((hier / "age.csv").read_text().replace("20-29", "-9"), encoding="utf-8")
    out = tmp_path / "r.csv"
    rc, _ = run(tmp_path, "--k", "2", "--max-suppression", "0.5", "--missing", "category", *codes,
                "--engine", engine, "-o", str(out), qis=["age", "sex"], file=data, hierarchies=hier)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["kanon generalize: error: A label of the hierarchy of 'age' is written as one of its "
                               "declared missing codes: its records would read as missing. Rename the label."]
    assert not out.exists() and not (tmp_path / "r.labels.json").exists()


@st.composite
def _coded_files(draw):
    """Small files of two coded QIs and a text column, where -9 and -8 are declared missing (on the command line
    or in the labels file, with a label) and some cells are empty; a k and the missing semantics."""
    n = draw(st.integers(4, 30))
    a = draw(st.lists(st.sampled_from(["1", "2", "3", "4", "-9", "-8", ""]), min_size=n, max_size=n))
    b = draw(st.lists(st.sampled_from(["x", "y", "z", "-9", ""]), min_size=n, max_size=n))
    return (a, b, draw(st.sampled_from(["cli", "sidecar"])), draw(st.integers(2, 4)),
            draw(st.sampled_from(["wildcard", "category"])), draw(st.sampled_from([0.2, 0.5, 1.0])))


@settings(max_examples=25, deadline=None)
@given(_coded_files())
@example((["-9"] * 4, ["x"] * 4, "cli", 2, "wildcard", 0.2))  # a QI missing in every record (no lookup): a crash
def test_engines_write_the_in_memory_release_of_files_with_declared_codes(tmp_path_factory, case):
    """On random files with declared missing codes, every engine writes the in-memory release byte for byte, with
    its labels file, and the release read back (codes declared by its labels file) is k-anonymous under the
    search's semantics."""
    a, b, where, k, missing, limit = case
    folder = tmp_path_factory.mktemp("coded")
    data = folder / "d.csv"
    data.write_text("a,b,t\n" + "".join(f"{x},{y},r{i}\n" for i, (x, y) in enumerate(zip(a, b, strict=True))),
                    encoding="utf-8")
    codes = ["--missing-codes", "a=-9|-8,b=-9"] if where == "cli" else []
    if where == "sidecar":
        (folder / "d.labels.json").write_text(json.dumps({
            "a": {"label": "A", "value_labels": {"-9": "Refused", "1": "one"}, "missing_codes": ["-9", "-8"]},
            "b": {"missing_codes": ["-9"]}}), encoding="utf-8")
    hier = folder / "h"
    hier.mkdir()
    (hier / "a.csv").write_text("1;low;*\n2;low;*\n3;high;*\n4;high;*\n", encoding="utf-8")
    (hier / "b.csv").write_text("x;xy;*\ny;xy;*\nz;z;*\n", encoding="utf-8")
    results = {}
    for engine in ("pandas", "duckdb", "polars"):
        out = folder / f"{engine}.csv"
        js = folder / f"{engine}.json"
        rc = main(["generalize", str(data), "--qi", "a,b", "--hierarchies", str(hier), "--k", str(k),
                   "--max-suppression", str(limit), "--missing", missing, *codes, "--engine", engine,
                   "-o", str(out), "--json", str(js)])
        side = folder / f"{engine}.labels.json"
        results[engine] = (rc, out.read_bytes() if rc == 0 else None,
                           side.read_text() if rc == 0 and side.exists() else None,
                           json.loads(js.read_text())["levels"] if rc == 0 else None)
    assert results["duckdb"] == results["pandas"] == results["polars"]
    if results["pandas"][0] == 0:
        back = load_dataset(folder / "pandas.csv", roles=Roles(qis=("a", "b")), missing=missing)
        from kanon_core.risk.classes import class_sizes

        assert (class_sizes(back.qi_matrix(["a", "b"]).codes, missing) >= k).all()
