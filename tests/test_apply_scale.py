"""``kanon apply --engine duckdb|polars``: the recipe replayed on the class rows and the release written by the
engine equal the in-memory ``kanon apply`` (values, record order, labels sidecar, k counted on the release).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.cli.apply_scale import SCALE_STEPS, small_classes
from kanon_core.dataset import Dataset, Roles
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.io import load_dataset
from kanon_core.recipe import Recipe
from kanon_core.risk.restore import NOT_COUNTED_AT_SCALE
from kanon_core.steps import (
    STEP_TYPES,
    DeclareMissingCodes,
    DropVariables,
    SetMissing,
    SetRoles,
    _ensure_registered,
)
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.recode import GeneralizeStep, RecodeStep, suppress_small_classes
from kanon_core.treat.suppress import SuppressStep
from kanon_core.value_labels import SetValueLabels

ENGINES = ("duckdb", "polars")
AGES = [str(a) for a in range(15, 80)]
AGE_H = Hierarchy(tuple((a, f"{int(a) // 10 * 10}-{int(a) // 10 * 10 + 9}", "*") for a in AGES), "age")


def write_data(folder: Path, n: int = 300, seed: int = 1, empty: bool = True) -> Path:
    """A survey-like CSV with empty cells (unless ``empty`` is False), a labels sidecar declaring a missing
    code, and text that a recipe declares missing; the same data as Parquet (typed as the in-memory reader
    types it)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "id": np.arange(n).astype(str),
        "age": rng.integers(15, 80, n).astype(str),
        "sex": rng.choice(["1", "2", ""], n, p=[0.48, 0.48, 0.04]),
        "job": rng.choice(["1", "2", "3", "4", "5", "6", "-9"], n),
        "region": rng.choice(["N", "S", "E", "W", "NA"], n),
        "score": np.round(rng.normal(50, 10, n), 1).astype(str),
    })
    df.loc[rng.random(n) < 0.05, "age"] = ""
    if not empty:
        df = df.replace({"sex": {"": "1"}, "age": {"": "40"}})
    path = folder / "survey.csv"
    df.to_csv(path, index=False)
    labels = {"job": {"label": "Job", "value_labels": {"1": "Farmer", "2": "Clerk", "-9": "Refused"},
                      "missing_codes": ["-9"]},
              "sex": {"value_labels": {"1": "Male", "2": "Female"}}}
    (folder / "survey.labels.json").write_text(json.dumps(labels), encoding="utf-8")
    ds = load_dataset(path)
    ds.frame.to_parquet(folder / "survey.parquet", index=False)  # survey.labels.json serves both files
    return path


QIS = ("age", "sex", "job", "region")


def full_recipe(suppress_k: int = 3) -> Recipe:
    """Roles, declared missing text, two recodes of one variable (composed), labels, a drop and a
    generalization blanking the classes still smaller than k."""
    return Recipe(steps=(
        SetRoles(qis=QIS, outcomes=("score",), direct_ids=("id",)),
        DeclareMissingValues((("region", ("NA",)),)),
        RecodeStep("job", merge=(5, 6)),
        RecodeStep("job", merge=(1, 5), into=1),
        SetValueLabels((("region", (("N", "North"), ("S", "South"))),), (("score", "Test score"),)),
        DropVariables(("score",)),
        GeneralizeStep.build({"age": 1}, {"age": AGE_H}, suppress_k=suppress_k, qis=QIS),
    ), roles=Roles(), extra={"k": 3})


def apply(folder: Path, recipe: Recipe | Path, data: Path, out: Path, engine: str, *extra: str,
          capsys=None) -> tuple[int, dict | None]:
    rpath = recipe if isinstance(recipe, Path) else folder / "recipe.json"
    if not isinstance(recipe, Path):
        recipe.save(rpath)
    js = out.with_suffix(".json")
    code = main(["apply", str(rpath), str(data), "-o", str(out), "--engine", engine, "--json", str(js), *extra])
    return code, json.loads(js.read_text()) if code == 0 else None


def assert_same_release(ref: Path, got: Path) -> None:
    """Read back as kanon reads files: same values, types and order; the same labels sidecar."""
    a, b = load_dataset(ref), load_dataset(got)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert a.meta == b.meta
    side_a, side_b = ref.with_name(ref.stem + ".labels.json"), got.with_name(got.stem + ".labels.json")
    assert side_a.exists() == side_b.exists()
    if side_a.exists():
        assert json.loads(side_a.read_text()) == json.loads(side_b.read_text())


SUMMARY_KEYS = ("records", "variables_released", "suppressed_cells", "k", "records_below_k", "k_achieved", "steps")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", [".csv", ".parquet"])
@pytest.mark.parametrize("suppress_k", [0, 3, 12])
def test_release_at_scale_equals_the_in_memory_release(tmp_path, engine, fmt, suppress_k, capsys):
    csv = write_data(tmp_path)
    data = csv.with_suffix(fmt)
    recipe = full_recipe(suppress_k)
    code, ref = apply(tmp_path, recipe, data, tmp_path / f"ref{fmt}", "pandas")
    assert code == 0
    code, got = apply(tmp_path, recipe, data, tmp_path / f"got{fmt}", engine)
    assert code == 0
    assert_same_release(tmp_path / f"ref{fmt}", tmp_path / f"got{fmt}")
    for key in SUMMARY_KEYS:
        assert got[key] == ref[key], key
    assert got["engine"] == engine and got["steps_verified"] == 0
    assert set(got) == set(ref) | {"engine"}
    assert NOT_COUNTED_AT_SCALE not in capsys.readouterr().err  # no cell-suppression step: nothing to count
    if suppress_k == 12:
        assert got["suppressed_cells"] > 0
    if suppress_k == 0:
        assert got["records_below_k"] > 0  # the recount sees classes still too small


@pytest.mark.parametrize("engine", ENGINES)
def test_csv_release_is_byte_identical(tmp_path, engine):
    """A CSV file released as CSV: the engine writes the bytes the in-memory writer writes."""
    data = write_data(tmp_path, n=400, seed=5)
    recipe = full_recipe(5)
    assert apply(tmp_path, recipe, data, tmp_path / "ref.csv", "pandas")[0] == 0
    assert apply(tmp_path, recipe, data, tmp_path / "got.csv", engine)[0] == 0
    assert (tmp_path / "ref.csv").read_bytes() == (tmp_path / "got.csv").read_bytes()
    assert (tmp_path / "ref.labels.json").read_bytes() == (tmp_path / "got.labels.json").read_bytes()


@pytest.mark.parametrize("engine", ENGINES)
def test_category_semantics_top_coding_and_declared_codes(tmp_path, engine):
    """Missing as a category, a top code (an integer variable becoming float), a declared missing code on a
    generalized variable and a roles change between steps."""
    data = write_data(tmp_path, n=250, seed=3)
    recipe = Recipe(steps=(
        SetMissing("category"),
        DeclareMissingCodes("age", (79,)),
        RecodeStep("age", top=70.5),
        SetRoles(qis=("sex", "job", "region"), direct_ids=("id",)),
        RecodeStep("region", merge=("E", "W")),
        GeneralizeStep.build({"age": 0}, {}, suppress_k=4),
        RecodeStep("age", bottom=20),  # after the blanking, on a variable it does not blank
    ), roles=Roles(qis=("age", "sex")), extra={"k": 2})
    code, ref = apply(tmp_path, recipe, data, tmp_path / "ref.csv", "pandas")
    assert code == 0
    code, got = apply(tmp_path, recipe, data, tmp_path / "got.csv", engine)
    assert code == 0
    assert_same_release(tmp_path / "ref.csv", tmp_path / "got.csv")
    for key in SUMMARY_KEYS:
        assert got[key] == ref[key], key


@pytest.mark.parametrize("kind", ["local_suppression"])
def test_record_level_steps_are_refused_in_one_line(tmp_path, capsys, kind):
    data = write_data(tmp_path, n=60)
    step = SuppressStep(qis=("age", "sex"), k=2, model="record")  # only the strict model runs at scale
    recipe = Recipe(steps=(RecodeStep("job", merge=(5, 6)), step), roles=Roles(qis=("age", "sex")))
    out = tmp_path / "x.csv"
    code, _ = apply(tmp_path, recipe, data, out, "duckdb")
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kanon apply: error: Step 2 ({kind}) has no version at scale")
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_every_step_kind_has_a_version_at_scale_or_a_refusal():
    _ensure_registered()
    assert set(SCALE_STEPS) == set(STEP_TYPES)
    refused = {k for k, h in SCALE_STEPS.items() if h.refused}
    assert refused == set()


@pytest.mark.parametrize("extra, what", [(("--report", "r.html"), "--report"), (("--csv-code",), "--csv-code")])
def test_what_needs_the_records_is_refused_at_scale(tmp_path, capsys, extra, what):
    data = write_data(tmp_path, n=60)
    extra = tuple(str(tmp_path / e) if e.endswith(".html") else e for e in extra)
    code, _ = apply(tmp_path, full_recipe(), data, tmp_path / "x.csv", "duckdb", *extra)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and what in err[0] and "--engine pandas" in err[0]
    code, _ = apply(tmp_path, full_recipe(), data, tmp_path / "x.sav", "polars")
    assert code == 2 and ".csv or .parquet" in capsys.readouterr().err


def test_auto_on_a_small_file_runs_in_memory(tmp_path):
    data = write_data(tmp_path, n=60)
    code, summary = apply(tmp_path, full_recipe(), data, tmp_path / "x.csv", "auto")
    assert code == 0 and "engine" not in summary


def test_outputs_never_overwrite_inputs(tmp_path, capsys):
    data = write_data(tmp_path, n=60)
    before = data.read_bytes(), (tmp_path / "survey.labels.json").read_bytes()
    recipe = full_recipe()
    recipe.save(tmp_path / "recipe.json")
    for out in (data, tmp_path / "survey.labels.json", tmp_path / "recipe.json"):
        code = main(["apply", str(tmp_path / "recipe.json"), str(data), "-o", str(out), "--engine", "duckdb"])
        assert code == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    # a release whose sidecar would replace the input's sidecar
    other = tmp_path / "survey.parquet"
    code = main(["apply", str(tmp_path / "recipe.json"), str(other), "-o", str(tmp_path / "survey.csv"),
                 "--engine", "polars"])
    assert code == 2
    assert (data.read_bytes(), (tmp_path / "survey.labels.json").read_bytes()) == before


def test_mismatch_names_the_step(tmp_path, capsys):
    data = write_data(tmp_path, n=60)
    recipe = Recipe(steps=(RecodeStep("job", merge=(5, 6)), RecodeStep("nojob", merge=(1, 2))),
                    roles=Roles(qis=("age",)))
    code, _ = apply(tmp_path, recipe, data, tmp_path / "x.csv", "duckdb")
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("kanon apply: error: Step 2 (Recode nojob: merge 2 categories) cannot be applied: it uses "
                       "unknown variable(s), not in the data: nojob.")
    recipe = Recipe(steps=(RecodeStep("job", merge=(7, 8)),), roles=Roles(qis=("age",)))
    assert apply(tmp_path, recipe, data, tmp_path / "x.csv", "duckdb")[0] == 2
    assert "none of the 2 categories to merge occur in job" in capsys.readouterr().err
    # a warning (one category absent): a note, and an error with --strict, as in memory
    recipe = Recipe(steps=(RecodeStep("job", merge=(6, 8)),), roles=Roles(qis=("age",)))
    code, got = apply(tmp_path, recipe, data, tmp_path / "x.csv", "duckdb")
    assert code == 0 and len(got["warnings"]) == 1 and "1 of the 2 categories" in got["warnings"][0]
    assert apply(tmp_path, recipe, data, tmp_path / "x.csv", "duckdb", "--strict")[0] == 2


def test_blanking_then_merging_what_was_blanked_apart_is_refused(tmp_path, capsys):
    """A class blanked by a generalization whose values a later recode merges with a class that was not
    blanked: the engine's list of classes cannot tell them apart, so the recipe is refused (in memory it runs)."""
    rows = ["age,sex"] + ["20,M"] + ["20,F"] * 5 + ["30,M"] * 5
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    recipe = Recipe(steps=(GeneralizeStep.build({"age": 0}, {}, suppress_k=3, qis=("age", "sex")),
                           RecodeStep("age", merge=(20, 30), into=30)), roles=Roles(qis=("age", "sex")))
    assert apply(tmp_path, recipe, data, tmp_path / "ref.csv", "pandas")[0] == 0
    code, _ = apply(tmp_path, recipe, data, tmp_path / "x.csv", "duckdb")
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "blanks small classes and then recodes" in err[-1]
    assert not (tmp_path / "x.csv").exists()


def test_small_classes_on_counted_rows_equal_the_records_rule():
    """The blanking rule on distinct rows with counts equals suppress_small_classes on the records."""
    rng = np.random.default_rng(4)
    for missing in ("wildcard", "category"):
        frame = pd.DataFrame({"a": rng.choice([1.0, 2.0, 3.0, np.nan], 200), "b": rng.choice(["x", "y", None], 200)})
        ds = Dataset(frame=frame, missing=missing)
        blanked, n = suppress_small_classes(ds, ("a", "b"), 6)
        rows = frame.astype(object).where(frame.notna(), None).value_counts(dropna=False).reset_index()
        distinct = Dataset(frame=rows[["a", "b"]].astype({"a": "float64"}), missing=missing)
        small = small_classes(distinct, ("a", "b"), rows["count"].to_numpy(), missing, 6)
        assert int(rows["count"].to_numpy()[small].sum()) == n


# -- random recodes: at scale equals in memory (exit code, data, labels, k) ------------------------------------
CATS = ("1", "2", "3", "4", "5", "-9")
TEXTS = ("x", "y", "z", "NA", "w")


@st.composite
def cases(draw):
    n = draw(st.integers(8, 60))
    seed = draw(st.integers(0, 10_000))
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        col = draw(st.sampled_from(["a", "b"]))
        pool = CATS if col == "a" else TEXTS
        merge = tuple(draw(st.lists(st.sampled_from(pool), min_size=2, max_size=4, unique=True)))
        if col == "a":
            merge = tuple(int(v) for v in merge)
        into = draw(st.sampled_from([None, merge[0], "other" if col == "b" else 9]))
        steps.append(RecodeStep(col, merge=merge, into=into))
    if draw(st.booleans()):
        steps.append(DeclareMissingValues((("b", ("NA",)),)))
    if draw(st.booleans()):
        steps.insert(draw(st.integers(0, len(steps))), GeneralizeStep.build(
            {"c": draw(st.integers(0, 2))}, {"c": C_H}, suppress_k=draw(st.sampled_from([0, 3, 6])),
            qis=("a", "b", "c")))
    missing = draw(st.sampled_from(["wildcard", "category"]))
    return n, seed, tuple(steps), missing


C_H = Hierarchy(tuple((str(v), "low" if v < 3 else "high", "*") for v in range(1, 6)), "c")


def write_random(folder: Path, n: int, seed: int, coded: bool = False) -> Path:
    """A random CSV file of the cases' three variables (codes, text, the generalized c), with empty cells; with
    ``coded``, c also holds -9, which the caller's labels file declares missing."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.choice([*CATS, ""], n), "b": rng.choice([*TEXTS, ""], n),
                       "c": rng.choice(["1", "2", "3", "4", "5", *(["-9"] if coded else []), ""], n)})
    data = folder / "d.csv"
    df.to_csv(data, index=False)
    return data


@settings(max_examples=20)
@given(cases())
def test_random_recodes_at_scale_equal_in_memory(tmp_path_factory, case):
    n, seed, steps, missing = case
    folder = tmp_path_factory.mktemp("h")
    data = write_random(folder, n, seed, coded=True)
    (folder / "d.labels.json").write_text(json.dumps({"a": {"value_labels": {"1": "one", "2": "two"},
                                                            "missing_codes": ["-9"]},
                                                      "c": {"value_labels": {"-9": "Refused", "1": "one"},
                                                            "missing_codes": ["-9"]}}), encoding="utf-8")
    recipe = Recipe(steps=steps, roles=Roles(qis=("a", "b", "c")), missing=missing, extra={"k": 2})
    assert_engines_equal_in_memory(folder, recipe, data)


def assert_engines_equal_in_memory(folder: Path, recipe: Recipe, data: Path) -> None:
    """Every engine gives the in-memory exit code and, on success, its release byte for byte and its summary;
    the one allowed difference is the one-line refusal of a blanking that a later recode merges."""
    code_ref, ref = apply(folder, recipe, data, folder / "ref.csv", "pandas")
    for engine in ENGINES:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code, got = apply(folder, recipe, data, folder / f"{engine}.csv", engine)
        if code == 2 and code_ref == 0:
            assert "blanks small classes and then recodes" in err.getvalue(), err.getvalue()
            continue
        assert code == code_ref, err.getvalue()
        if code == 0:
            assert (folder / "ref.csv").read_bytes() == (folder / f"{engine}.csv").read_bytes()
            assert_same_release(folder / "ref.csv", folder / f"{engine}.csv")
            for key in SUMMARY_KEYS:
                assert got[key] == ref[key], key


@pytest.mark.parametrize("engine", ENGINES)
def test_blanked_classes_missing_in_a_key_variable(tmp_path, engine):
    """Every blanked class is missing in one QI: the list of classes holds only missing values there and
    still joins the Parquet file's typed column."""
    frame = pd.DataFrame({"a": pd.array([1] + [2] * 5 + [3] * 5, dtype="Int64"),
                          "b": pd.array([None] + [5] * 5 + [6] * 5, dtype="Int64"),
                          "w": [0.5 + i for i in range(11)]})
    data = tmp_path / "d.parquet"
    frame.to_parquet(data, index=False)
    recipe = Recipe(steps=(GeneralizeStep.build({"a": 0}, {}, suppress_k=3, qis=("a", "b")),),
                    roles=Roles(qis=("a", "b")), missing="category")
    code, ref = apply(tmp_path, recipe, data, tmp_path / "ref.parquet", "pandas")
    assert code == 0 and ref["suppressed_cells"] == 1
    code, got = apply(tmp_path, recipe, data, tmp_path / "got.parquet", engine)
    assert code == 0 and got["suppressed_cells"] == 1
    assert_same_release(tmp_path / "ref.parquet", tmp_path / "got.parquet")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", [".csv", ".parquet"])
def test_recipe_without_value_steps_or_qis(tmp_path, engine, fmt):
    """Only labels, declared codes and a drop, no QIs: nothing to aggregate on but the record count; the
    labels of variables no step recodes are typed from their distinct values (the sidecar's and the steps')."""
    data = write_data(tmp_path, n=80).with_suffix(fmt)
    recipe = Recipe(steps=(
        SetValueLabels((("score", (("50.5", "middle"),)), ("age", (("20", "twenty"),))), (("job", "Occupation"),)),
        DeclareMissingValues((("region", ("NA",)),)),
        DeclareMissingCodes("age", ("99",)),
        DropVariables(("id",)),
    ), roles=Roles())
    code, ref = apply(tmp_path, recipe, data, tmp_path / f"ref{fmt}", "pandas")
    assert code == 0 and ref["records_below_k"] is None
    code, got = apply(tmp_path, recipe, data, tmp_path / f"got{fmt}", engine)
    assert code == 0
    assert_same_release(tmp_path / f"ref{fmt}", tmp_path / f"got{fmt}")
    for key in SUMMARY_KEYS:
        assert got[key] == ref[key], key


def test_auto_on_a_large_file_runs_at_scale_unless_a_step_has_no_version_there(tmp_path, monkeypatch, capsys):
    """``auto`` picks the embedded engine for a large file (here: any file); a recipe with a record-level
    suppression then runs in memory, as it did before apply ran at scale, with a notice."""
    import kanon_core.cli.scale as scale

    monkeypatch.setattr(scale, "choose_engine", lambda name, path: "duckdb" if name == "auto" else name)
    data = write_data(tmp_path, n=60)
    code, summary = apply(tmp_path, full_recipe(), data, tmp_path / "x.csv", "auto")
    assert code == 0 and summary["engine"] == "duckdb"
    capsys.readouterr()
    recipe = Recipe(steps=(SuppressStep(qis=("age", "sex"), k=2, model="record"),), roles=Roles(qis=("age", "sex")))
    code, summary = apply(tmp_path, recipe, data, tmp_path / "y.csv", "auto")
    assert code == 0 and "engine" not in summary
    assert "notice: running in memory: Step 1 (local_suppression) has no version at scale" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ENGINES)
def test_parquet_to_csv_equals_in_memory_and_csv_to_parquet_says_it_keeps_text(tmp_path, engine):
    csv = write_data(tmp_path, n=120)
    recipe = full_recipe(4)
    assert apply(tmp_path, recipe, csv.with_suffix(".parquet"), tmp_path / "ref.csv", "pandas")[0] == 0
    code, got = apply(tmp_path, recipe, csv.with_suffix(".parquet"), tmp_path / "got.csv", engine)
    assert code == 0 and got["warnings"] == []
    assert_same_release(tmp_path / "ref.csv", tmp_path / "got.csv")
    code, got = apply(tmp_path, recipe, csv, tmp_path / "text.parquet", engine)
    assert code == 0 and any("keeps every variable as text" in w for w in got["warnings"])
    ref, back = load_dataset(tmp_path / "ref.csv"), load_dataset(tmp_path / "text.parquet")
    pd.testing.assert_frame_equal(ref.frame.astype(str), back.frame.astype(str))  # the same texts


# -- local suppression at scale: solved on the class rows, written by class and rank ----------------------------
def local_recipe(missing: str = "wildcard", k: int = 3, **step) -> Recipe:
    """Recodes and a generalization that blanks nothing, then the strict local suppression (Wilson et al.'s
    order: recode, then suppress what is still unsafe), then labels (which may follow it)."""
    return Recipe(steps=(
        SetRoles(qis=QIS, outcomes=("score",), direct_ids=("id",)),
        DeclareMissingValues((("region", ("NA",)),)),
        RecodeStep("job", merge=(5, 6)),
        GeneralizeStep.build({"age": 1}, {"age": AGE_H}, suppress_k=0, qis=QIS),
        SuppressStep(qis=QIS, k=k, **step),
        SetValueLabels((("region", (("N", "North"), ("S", "South"))),), (("score", "Test score"),)),
    ), roles=Roles(), missing=missing, extra={"k": k})


def assert_equivalent_suppression(folder: Path, recipe: Recipe, data: Path, ref: Path, got: Path,
                                  qis: tuple[str, ...], k: int, summary: dict, costs: dict[str, float]) -> None:
    """``got`` is the release of ``recipe`` with its local suppression (the last value step) solved at scale,
    ``ref`` the in-memory one. Identical when both solvers break ties alike; otherwise (another optimum) both
    are the replay before the suppression with some QI cells blanked, the same everywhere else, and ``got``
    is valid from the intruder's side (counted here by brute force) and no costlier than ``ref`` when proven
    optimal."""
    from tests.reference.protection import findable

    if ref.read_bytes() == got.read_bytes():
        return
    at = next(i for i, s in enumerate(recipe.steps) if isinstance(s, SuppressStep))
    before = Recipe(steps=recipe.steps[:at], roles=recipe.roles, missing=recipe.missing, extra=recipe.extra)
    pre_path = folder / f"pre{ref.suffix}"
    with contextlib.redirect_stderr(io.StringIO()):
        assert apply(folder, before, data, pre_path, "pandas")[0] == 0
    pre, a, b = (load_dataset(p, roles=Roles(qis=qis), missing=recipe.missing) for p in (pre_path, ref, got))
    others = [c for c in a.frame.columns if c not in qis]
    pd.testing.assert_frame_equal(a.frame[others], b.frame[others])
    codes = pre.qi_matrix(qis).codes
    cost = {}
    for name, rel in (("ref", a), ("got", b)):
        blank = rel.qi_matrix(qis).codes < 0
        kept = ~blank
        assert (rel.frame[list(qis)].astype(str).to_numpy()[kept] == pre.frame[list(qis)].astype(str).to_numpy()[kept]).all()
        cost[name] = float(((blank & (codes >= 0)) * np.array([costs.get(q, 1.0) for q in qis])).sum())
        if name == "got":
            assert findable(codes, blank & (codes >= 0), k, recipe.missing) == 0
    local = summary["local_suppression"]
    assert local["lower_bound"] <= cost["ref"] + 1e-9
    if local["optimal"]:
        assert cost["got"] <= cost["ref"] + 1e-9


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", [".csv", ".parquet"])
@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_local_suppression_at_scale_equals_the_in_memory_release(tmp_path, engine, fmt, missing, capsys):
    # missing as a category: a missing cell is a value that a suppressed cell does not match, so a record with
    # a missing pattern fewer than k records share cannot reach k; there the file's only missing cells are the
    # declared codes and text (job -9, region NA), which many records share
    data = write_data(tmp_path, n=300, empty=missing == "wildcard").with_suffix(fmt)
    recipe = local_recipe(missing, importance=(("age", 2.0),), protected=("sex",))
    code, ref = apply(tmp_path, recipe, data, tmp_path / f"ref{fmt}", "pandas")
    assert code == 0
    capsys.readouterr()
    code, got = apply(tmp_path, recipe, data, tmp_path / f"got{fmt}", engine)
    assert code == 0
    # the cells other released variables give back are counted on records only: at scale a notice says so
    assert got["restorable"] is None
    assert capsys.readouterr().err.count(f"kanon apply: notice: {NOT_COUNTED_AT_SCALE}") == 1
    assert_equivalent_suppression(tmp_path, recipe, data, tmp_path / f"ref{fmt}", tmp_path / f"got{fmt}", QIS, 3,
                                  got, {"age": 2.0})
    for key in ("records", "variables_released", "k", "records_below_k", "steps"):
        assert got[key] == ref[key], key
    local = got["local_suppression"]
    assert not got["warnings"]  # the release's own count of k agrees with the replay's
    assert local["cells"] == got["suppressed_cells"] > 0
    assert got["records_below_k"] == local["violations_after"] == 0 and local["findable_below_k"] == 0
    assert 0 <= local["lower_bound"] <= local["cost"]
    back = load_dataset(tmp_path / f"got{fmt}")
    assert back.frame["sex"].isna().sum() == load_dataset(data).frame["sex"].isna().sum()  # protected


@settings(max_examples=15, deadline=None)
@given(cases(), st.integers(2, 4))
def test_random_recipes_ending_in_local_suppression_at_scale_equal_in_memory(tmp_path_factory, case, k):
    """Random recodes (and a generalization), then the strict local suppression: the engines' releases are
    the in-memory replay's (or another optimum, checked as such), or both refuse (k beyond the file), or the
    engine refuses a blanking of small classes before the suppression in one line."""
    n, seed, steps, missing = case
    folder = tmp_path_factory.mktemp("l")
    data = write_random(folder, n, seed)
    recipe = Recipe(steps=(*steps, SuppressStep(qis=("a", "b", "c"), k=k)), roles=Roles(qis=("a", "b", "c")),
                    missing=missing, extra={"k": k})
    code_ref, ref = apply(folder, recipe, data, folder / "ref.csv", "pandas")
    blanks_first = any(isinstance(s, GeneralizeStep) and s.suppress_k > 1 for s in steps)
    for engine in ENGINES:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code, got = apply(folder, recipe, data, folder / f"{engine}.csv", engine)
        if code == 2 and code_ref == 0:
            assert blanks_first or "blanks small classes and then recodes" in err.getvalue(), err.getvalue()
            continue
        assert code == code_ref
        if code == 0:
            assert_equivalent_suppression(folder, recipe, data, folder / "ref.csv", folder / f"{engine}.csv",
                                          ("a", "b", "c"), k, got, {})
            for key in ("records", "variables_released", "k", "records_below_k", "steps"):
                assert got[key] == ref[key], key
            assert got["local_suppression"]["findable_below_k"] == 0
            assert not any("differs" in w for w in got["warnings"])  # the replay's k is the release's


@pytest.mark.parametrize(("steps", "says"), [
    ((GeneralizeStep.build({"age": 1}, {"age": AGE_H}, suppress_k=3, qis=QIS), SuppressStep(qis=QIS, k=2)),
     "after a step that blanked small classes"),
    ((SuppressStep(qis=QIS, k=2), RecodeStep("job", merge=(5, 6))), "after a local suppression"),
    ((SuppressStep(qis=QIS, k=2), SuppressStep(qis=QIS, k=3)), "after a local suppression"),
    ((SuppressStep(qis=QIS, k=2, method="greedy"),), "only the exact method"),
])
def test_local_suppression_at_scale_refuses_what_it_cannot_replay(tmp_path, capsys, steps, says):
    data = write_data(tmp_path, n=120)
    recipe = Recipe(steps=(SetRoles(qis=QIS, direct_ids=("id",)), *steps), roles=Roles())
    out = tmp_path / "x.csv"
    code, _ = apply(tmp_path, recipe, data, out, "duckdb")
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("kanon apply: error: ") and says in err[-1] and "--engine pandas" in err[-1], err
    if "blanked small classes" not in says:  # known from the recipe alone: refused before the file is read
        assert len(err) == 1
    assert not out.exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_local_suppression_of_a_class_written_in_two_ways(tmp_path, engine):
    """Text declared missing ("NA") and an empty cell are one class for the suppression but are written
    differently (the code stays, with the sidecar declaring it): both ways are listed, so every record the
    solution ranks is blanked (hypothesis found a file where one was not)."""
    data = write_random(tmp_path, 50, 1902)
    steps = (GeneralizeStep.build({"c": 1}, {"c": C_H}, suppress_k=0, qis=("a", "b", "c")),
             RecodeStep("b", merge=("NA", "z"), into="NA"), RecodeStep("a", merge=(4, 1)),
             DeclareMissingValues((("b", ("NA",)),)), SuppressStep(qis=("a", "b", "c"), k=3))
    recipe = Recipe(steps=steps, roles=Roles(qis=("a", "b", "c")), missing="wildcard", extra={"k": 3})
    code_ref, ref = apply(tmp_path, recipe, data, tmp_path / "ref.csv", "pandas")
    code, got = apply(tmp_path, recipe, data, tmp_path / "got.csv", engine)
    assert code_ref == code == 0
    assert not got["warnings"] and got["records_below_k"] == ref["records_below_k"] == 0
    assert_equivalent_suppression(tmp_path, recipe, data, tmp_path / "ref.csv", tmp_path / "got.csv",
                                  ("a", "b", "c"), 3, got, {})


# -- suppression to a limit on individual risk: whole classes, so at scale it is the in-memory release --------
@settings(max_examples=20, deadline=None)
@given(cases(), st.sampled_from([0.1, 0.34, 0.6]), st.booleans(), st.integers(0, 4),
       st.sampled_from([(), ("b",)]))
def test_random_recipes_with_risk_suppression_at_scale_equal_in_memory(tmp_path_factory, case, limit, weighted,
                                                                        where, protected):
    """Random recodes and generalizations with a suppression to individual risk anywhere among them (weighted
    or not): every engine's release is the in-memory release byte for byte, with the same summary."""
    from kanon_core.treat.suppress_risk import RiskSuppressStep

    n, seed, steps, missing = case
    folder = tmp_path_factory.mktemp("r")
    data = write_random(folder, n, seed)
    if weighted:
        frame = pd.read_csv(data, dtype=str, keep_default_na=False)
        frame["w"] = np.round(np.random.default_rng(seed).uniform(1, 30, n), 2).astype(str)
        frame.to_csv(data, index=False)
    risk = RiskSuppressStep(qis=("a", "b", "c"), max_risk=limit, protected=protected, importance=(("a", 2.0),))
    steps = (*steps[:where], risk, *steps[where:])
    recipe = Recipe(steps=steps, roles=Roles(qis=("a", "b", "c"), weight="w" if weighted else None),
                    missing=missing, extra={"k": 2})
    assert_engines_equal_in_memory(folder, recipe, data)


JOB_H = Hierarchy(tuple((str(v), "manual" if v < 4 else "office", "*") for v in range(1, 7)), "job")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", [".csv", ".parquet"])
@pytest.mark.parametrize("suppress_k", [0, 12])
def test_a_generalized_variable_keeps_its_declared_code_at_scale(tmp_path, engine, fmt, suppress_k):
    """job's -9 (declared missing in the labels file, labelled "Refused") survives job's generalization as the
    code, declared missing, with its label, in memory and at scale alike; with classes blanked (k = 12) the
    records written with the code are blanked with the others of their class."""
    csv = write_data(tmp_path)
    data = csv.with_suffix(fmt)
    recipe = Recipe(steps=(SetRoles(qis=QIS), GeneralizeStep.build({"age": 1, "job": 1}, {"age": AGE_H, "job": JOB_H},
                                                                   suppress_k=suppress_k, qis=QIS)),
                    roles=Roles(), extra={"k": 3})
    assert apply(tmp_path, recipe, data, tmp_path / f"ref{fmt}", "pandas")[0] == 0
    code, got = apply(tmp_path, recipe, data, tmp_path / f"got{fmt}", engine)
    assert code == 0
    assert_same_release(tmp_path / f"ref{fmt}", tmp_path / f"got{fmt}")
    back = load_dataset(tmp_path / f"got{fmt}")
    assert back.meta_of("job").missing_codes == ("-9",) and back.meta_of("job").value_labels == {"-9": "Refused"}
    jobs = set(back.frame["job"].dropna())
    assert "-9" in jobs and jobs <= {"-9", "manual", "office"}
    original = load_dataset(csv)
    kept = back.frame["job"].eq("-9").to_numpy()
    assert (original.frame["job"].to_numpy()[kept] == -9).all()
