"""Recipes: readable JSON, replay identical to the session, mismatches named by step and reason, warnings,
progress and cancel, replay on a new wave, grafting a replay into a session."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import Cancelled, InputError
from kanon_core.history import History
from kanon_core.progress import Progress
from kanon_core.recipe import Recipe, check_step, graft, pretty_json, step_columns
from kanon_core.risk.classes import class_sizes
from kanon_core.steps import DropVariables, SetMissing, SetRoles, version_fingerprint
from kanon_core.treat.hierarchy import interval_hierarchy
from kanon_core.treat.recode import GeneralizeStep, RecodeStep
from kanon_core.treat.suppress import SuppressStep

QIS = ("age", "sex", "region", "job")


def _frame(seed: int = 0, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(n),
        "age": rng.integers(18, 80, n),
        "sex": rng.integers(1, 3, n),
        "region": rng.choice(["North", "South", "East", "West"], n),
        "job": rng.integers(1, 9, n),
        "score": np.round(rng.normal(50, 10, n), 2),
        "w": np.round(rng.uniform(1, 5, n), 3),
    })


def _ds(seed: int = 0, n: int = 300) -> Dataset:
    frame = _frame(seed, n)
    meta = {"job": VariableMeta(label="Occupation", value_labels={i: f"job {i}" for i in range(1, 9)})}
    return Dataset(frame=frame, meta=meta, roles=Roles(qis=QIS, weight="w", direct_ids=("id",)), name="survey")


def _session(ds: Dataset) -> History:
    h = History.start(ds)
    h.apply(SetRoles(qis=QIS, weight="w", outcomes=("score",), direct_ids=("id",)))
    h.apply(RecodeStep("job", merge=(6, 7, 8), into=6))
    hier = interval_hierarchy(ds.frame["age"], (10, 20), name="age")
    h.apply(GeneralizeStep.build({"age": 1}, {"age": hier}))
    h.apply(SuppressStep(qis=QIS, k=3, importance=(("sex", 3.0),)))
    return h


@pytest.fixture(scope="module")
def session() -> History:
    return _session(_ds())


def test_json_is_readable_and_replays_identically(session):
    recipe = Recipe.from_history(session, input_path="survey.csv", notes="Scenario: neighbours.", extra={"k": 3})
    text = recipe.to_json()
    d = json.loads(text)
    assert [s["description"] for s in d["steps"]] == [s.describe() for s in session.steps()]
    assert d["input"]["fingerprint"] == session.original.dataset.fingerprint
    assert d["input"]["records"] == 300 and d["initial"]["roles"]["qis"] == list(QIS)
    assert d["kanon_version"] and d["extra"] == {"k": 3} and d["notes"] == "Scenario: neighbours."
    again = Recipe.from_json(text)
    assert again.steps == recipe.steps and again.roles == recipe.roles
    replay = again.replay_checked(_ds())
    assert replay.warnings == ()
    for a, b in zip(replay.history.lineage(), session.lineage(), strict=True):
        pd.testing.assert_frame_equal(a.dataset.frame, b.dataset.frame)
        assert a.dataset.roles == b.dataset.roles and a.label == b.label
    # the replayed session's recipe is the same text: recipes are stable under replay
    assert Recipe.from_history(replay.history, input_path="survey.csv", notes="Scenario: neighbours.",
                               extra={"k": 3}).to_json() == text


def test_step_columns_name_what_each_step_uses(session):
    steps = session.steps()
    assert step_columns(steps[0]) == ["age", "sex", "region", "job", "score", "id", "w"]
    assert step_columns(steps[1]) == ["job"]
    assert step_columns(steps[2]) == ["age"]
    assert step_columns(steps[3]) == list(QIS)
    assert step_columns(DropVariables(("a", "b"))) == ["a", "b"]


def _recipe(*steps, roles: Roles | None = None) -> Recipe:
    """A recipe made on ``_ds()`` (its fingerprint recorded)."""
    return Recipe(steps=tuple(steps), roles=Roles(qis=("age", "sex")) if roles is None else roles,
                  input_fingerprint=_ds().fingerprint)


def test_missing_variable_names_step_number_description_and_variable():
    ds = _ds()
    r = _recipe(SetMissing("wildcard"), RecodeStep("jobcode", merge=(1, 2), into=1))
    with pytest.raises(InputError, match=r"^Step 2 \(Recode jobcode: merge 2 categories\) cannot be applied: "
                                         r"it uses unknown variable\(s\), not in the data: jobcode\.$"):
        r.replay(ds)


def test_role_naming_a_missing_column():
    ds = _ds()
    with pytest.raises(InputError, match="initial roles name variable\\(s\\) not in this file: income"):
        _recipe(roles=Roles(qis=("age", "income"))).replay(ds)
    r = _recipe(SetRoles(qis=("age",), weight="weight_new"))
    with pytest.raises(InputError, match=r"^Step 1 \(Roles: 1 quasi-identifier\(s\), weight weight_new\) cannot be "
                                         r"applied: role\(s\) name unknown variable\(s\), not in the data: weight_new"):
        r.replay(ds)
    with pytest.raises(InputError, match="Step 1 .*both quasi-identifier and direct identifier"):
        _recipe(SetRoles(qis=("age",), direct_ids=("age",))).replay(ds)


def test_unknown_category_in_a_generalization_names_the_step():
    ds = _ds()
    hier = interval_hierarchy(ds.frame["age"], (10, 20), name="age")
    r = _recipe(GeneralizeStep.build({"age": 1}, {"age": hier}))
    wave2 = ds.frame.copy()
    wave2.loc[[3, 7], "age"] = [95, 99]  # ages the hierarchy (built on wave 1) has no row for
    with pytest.raises(InputError, match=r"^Step 1 \(Generalize age to level 1\) cannot be applied: 2 value\(s\) of "
                                         r"variable 'age' are not in its hierarchy") as exc:
        r.replay(Dataset(frame=wave2))
    assert "95" not in str(exc.value) and "99" not in str(exc.value)


def test_recode_categories_absent_warn_or_fail():
    ds = _ds()
    frame = ds.frame.copy()
    frame["job"] = frame["job"].where(frame["job"] != 8, 7)  # the new wave has no job 8
    wave2 = Dataset(frame=frame)
    r = _recipe(RecodeStep("job", merge=(6, 7, 8), into=6))
    replay = r.replay_checked(wave2)
    assert replay.warnings[0].startswith("The input file differs")
    assert replay.warnings[1] == ("Step 1 (Recode job: merge 3 categories): 1 of the 3 categories to merge "
                                  "does not occur in job; the others are merged.")
    assert not replay.release.dataset.frame["job"].isin([7, 8]).any()
    with pytest.raises(InputError, match=r"^Step 1 \(Recode job.*\): 1 of the 3 categories .*\(strict replay\)$"):
        r.replay_checked(wave2, strict=True)
    none = _recipe(SetMissing("wildcard"), RecodeStep("job", merge=(11, 12), into=11))
    with pytest.raises(InputError, match=r"^Step 2 \(Recode job: merge 2 categories\) cannot be applied: "
                                         r"none of the 2 categories to merge occur in job\.$"):
        none.replay(ds)


def test_messages_never_contain_cell_values():
    frame = pd.DataFrame({"a": ["SECRET1", "x", "x"], "b": [1, 2, 2]})
    ds = Dataset(frame=frame)
    hier = interval_hierarchy([2, 3], (2,), name="b")
    for r in (_recipe(GeneralizeStep.build({"b": 1}, {"b": hier}), roles=Roles()),
              _recipe(RecodeStep("a", merge=("y", "z")), roles=Roles()),
              _recipe(SetRoles(qis=("a", "zz")), roles=Roles())):
        with pytest.raises(InputError) as exc:
            r.replay(ds)
        assert "SECRET1" not in str(exc.value)
    # nor a category the recipe lists (a value of the file it was made on), nor the one merged into
    assert check_step(RecodeStep("a", merge=("x", "q")), ds)[1] == [
        "1 of the 2 categories to merge does not occur in a; the others are merged."]
    merged = _recipe(RecodeStep("a", merge=("x", "SECRET2"), into="x"), roles=Roles())
    with pytest.raises(InputError) as exc:
        merged.replay_checked(ds, strict=True)
    assert "SECRET2" not in str(exc.value) and "'x'" not in str(exc.value) and "into" not in str(exc.value)


def test_next_wave_replays_and_is_k_anonymous(session):
    recipe = Recipe.from_history(session)
    replay = recipe.replay_checked(_ds(seed=7, n=250))
    assert replay.warnings == ("The input file differs from the one the recipe was made on (replaying on new data; "
                               "the steps' recorded results are not checked).",)
    assert replay.verified_steps == 0
    ds = replay.release.dataset
    assert ds.n_records == 250
    assert class_sizes(ds.qi_matrix(QIS).codes, ds.missing).min() >= 3


def test_progress_reaches_one_and_cancel_stops(session):
    recipe = Recipe.from_history(session)
    seen: list[float] = []
    recipe.replay_checked(_ds(), Progress(lambda f, m: seen.append(f)))
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > len(recipe.steps)

    def cancel_in_suppression(fraction: float, message: str) -> None:
        if "step 4" in message:
            progress.cancel()

    progress = Progress(cancel_in_suppression)
    with pytest.raises(Cancelled):
        recipe.replay_checked(_ds(), progress)


def test_graft_adds_a_branch_and_keeps_the_work_done(session):
    recipe = Recipe.from_history(session)
    mine = History.start(_ds().with_roles(Roles(qis=("sex",))))
    mine.apply(DropVariables(("score",)))
    before = set(mine.versions)
    replay = recipe.replay_checked(mine.original.dataset)
    added = graft(mine, replay, 0)
    assert before < set(mine.versions)
    # the recipe's initial roles differ from this session's: one SetRoles version first
    assert isinstance(added[0].step, SetRoles) and added[0].parent == 0
    assert [v.step for v in added[1:]] == list(recipe.steps)
    pd.testing.assert_frame_equal(mine.current.dataset.frame, session.current.dataset.frame)
    assert mine.current.dataset.roles == session.current.dataset.roles
    other = Dataset(frame=_frame(1, 10))
    with pytest.raises(InputError, match="not the data of this session"):
        graft(History.start(other), replay, 0)


def test_input_path_is_resolved_against_the_recipe(tmp_path):
    r = Recipe(steps=(), roles=Roles(), input_path="data/wave1.csv")
    p = tmp_path / "r" / "x.recipe.json"
    assert r.resolve_input(p) == (tmp_path / "r" / "data" / "wave1.csv").resolve()
    assert Recipe(steps=(), roles=Roles(), input_path="data/../w.csv").resolve_input(p) == (tmp_path / "r" / "w.csv")
    with pytest.raises(InputError, match="does not record its input"):
        Recipe(steps=(), roles=Roles()).resolve_input(p)


@pytest.mark.parametrize("recorded", ["../wave1.csv", "data/../../wave1.csv", "/etc/passwd", "link/wave1.csv"])
def test_input_path_may_not_leave_the_recipe_folder(tmp_path, recorded):
    (tmp_path / "r").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "r" / "link").symlink_to(tmp_path / "elsewhere")
    r = Recipe(steps=(), roles=Roles(), input_path=recorded)
    with pytest.raises(InputError, match=r"^The recipe's input path leads outside the recipe's folder; give the "
                                         r"data file on the command line\.$"):
        r.resolve_input(tmp_path / "r" / "x.recipe.json")


# -- replays prove themselves --------------------------------------------------------------------------------
def test_recipe_records_a_fingerprint_per_step_and_the_replay_checks_them(session):
    recipe = Recipe.from_history(session, input_path="survey.csv")
    d = json.loads(recipe.to_json())
    fps = [s["output_fingerprint"] for s in d["steps"]]
    assert fps == [version_fingerprint(v.dataset) for v in session.lineage()[1:]]
    assert len(set(fps)) == 4 and all(len(f) == 16 for f in fps)  # each step changed something
    assert d["input"]["start_fingerprint"] == version_fingerprint(session.original.dataset)
    again = Recipe.from_json(recipe.to_json())
    assert again.step_fingerprints == tuple(fps)
    replay = again.replay_checked(_ds())
    assert replay.verified_steps == 4 and replay.warnings == ()


def _tampered(session, index: int, change) -> Recipe:
    d = json.loads(Recipe.from_history(session, input_path="survey.csv").to_json())
    change(d["steps"][index])
    return Recipe.from_dict(d)


def test_a_step_that_gives_another_result_stops_the_replay_there(session):
    def other_into(step):
        step["into"] = 7  # same recorded fingerprint, different result

    r = _tampered(session, 1, other_into)
    seen: list[str] = []
    with pytest.raises(InputError, match=r"^Step 2 \(recode\) does not reproduce the result recorded in the recipe "
                                         r"on this file; the replay stops there\.$"):
        r.replay_checked(_ds(), Progress(lambda f, m: seen.append(m)))
    assert not any("step 3" in m for m in seen)  # nothing after the first difference runs

    def other_record(step):
        step["output_fingerprint"] = "0" * 16

    with pytest.raises(InputError, match=r"^Step 4 \(local_suppression\) does not reproduce"):
        _tampered(session, 3, other_record).replay_checked(_ds())


def test_steps_are_not_checked_on_another_file_or_other_labels(session):
    def other_into(step):
        step["into"] = 7

    r = _tampered(session, 1, other_into)
    replay = r.replay_checked(_ds(seed=3))  # the next wave: nothing recorded to compare with
    assert replay.verified_steps == 0 and "recorded results are not checked" in replay.warnings[0]
    relabelled = Dataset(frame=_ds().frame, meta={"job": VariableMeta(label="Job")}, roles=_ds().roles)
    replay = r.replay_checked(relabelled)  # same cells, other labels: the outputs cannot match the records
    assert replay.verified_steps == 0
    assert replay.warnings == ("The input's labels or missing codes differ from those the recipe was made with "
                               "(the steps' recorded results are not checked).",)
    old = Recipe.from_dict({k: v for k, v in json.loads(r.to_json()).items()} | {
        "steps": [{k: v for k, v in s.items() if k != "output_fingerprint"} for s in json.loads(r.to_json())["steps"]]})
    replay = old.replay_checked(_ds())  # a recipe from before fingerprints still replays, and says so
    assert replay.verified_steps == 0 and replay.warnings == (
        "The recipe records no results of its steps (it was written before kanon recorded them), so they are not "
        "checked.",)


small_frames = st.integers(1, 6).flatmap(lambda n: st.fixed_dictionaries({
    "a": st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n),
    "b": st.lists(st.sampled_from(["x", "y", None]), min_size=n, max_size=n),
    "float_a": st.booleans(),
    "qis": st.sampled_from([("a",), ("a", "b")]),
    "missing": st.sampled_from(["wildcard", "category"]),
    "label": st.sampled_from([None, "A"]),
}))


def _small_ds(spec: dict) -> Dataset:
    frame = pd.DataFrame({"a": spec["a"], "b": spec["b"]})
    if spec["float_a"]:
        frame["a"] = frame["a"].astype(float)
    meta = {"a": VariableMeta(label=spec["label"])} if spec["label"] else {}
    return Dataset(frame=frame, meta=meta, roles=Roles(qis=spec["qis"]), missing=spec["missing"])


def _same_content(x: Dataset, y: Dataset) -> bool:
    """The brute-force twin: equal cells, dtypes, roles, semantics and metadata."""
    return (x.frame.shape == y.frame.shape and list(x.frame.dtypes) == list(y.frame.dtypes)
            and x.frame.equals(y.frame) and x.roles == y.roles and x.missing == y.missing and dict(x.meta) == dict(y.meta))


@given(small_frames, small_frames)
def test_fingerprints_are_equal_exactly_when_the_versions_are(spec_x, spec_y):
    x, y = _small_ds(spec_x), _small_ds(spec_y)
    assert (version_fingerprint(x) == version_fingerprint(y)) == _same_content(x, y)
    assert version_fingerprint(x) == version_fingerprint(_small_ds(spec_x))


def test_fingerprint_of_the_sample_is_a_short_hex_digest_that_changes_with_one_cell():
    """The fingerprint's cost is measured in benchmarks/bench_recipe.py, never timed here."""
    from pathlib import Path

    from kanon_core.io import load_dataset

    ds = load_dataset(Path(__file__).resolve().parent.parent / "sample_data" / "els_like.csv")
    fp = version_fingerprint(ds)
    assert all(ch in "0123456789abcdef" for ch in fp) and 8 <= len(fp) <= 64
    frame = ds.frame.copy()
    col = frame.columns[1]
    frame.loc[0, col] = frame[col].iloc[1] if frame[col].iloc[0] != frame[col].iloc[1] else frame[col].iloc[2]
    assert frame[col].iloc[0] != ds.frame[col].iloc[0]
    assert version_fingerprint(ds.with_frame(frame)) != fp


# -- recipe files from outside -------------------------------------------------------------------------------
def _with_step(**params) -> str:
    step = {"kind": "recode", "column": "job", "merge": [1, 2], "into": 1} | params
    return json.dumps({"format": "kanon-recipe", "steps": [step]})


@pytest.mark.parametrize("text,message", [
    ('{"format": "kanon-recipe", "notes": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"format": "kanon-recipe", "notes": ' + "[" * 40 + "]" * 40 + "}", "nested too deeply"),
    (_with_step(into=10**30), "number that is not finite or is beyond 10\\^15"),
    (_with_step(into=1e300), "number that is not finite"),
    (_with_step().replace('"into": 1', '"into": 1e999'), "number that is not finite"),
    (_with_step().replace('"into": 1', '"into": NaN'), "number that is not finite"),
    (_with_step().replace('"into": 1', '"into": -Infinity'), "number that is not finite"),
    (_with_step().replace('"into": 1', '"into": ' + "7" * 5000), "number that is not finite"),
    (_with_step(merge="SECRET"), r"Step 1 \(recode of job\) of the recipe is not valid: its parameter 'merge' should "
     r"be a list\.$"),
    (_with_step(merge=[{"SECRET": 1}, 2]), "parameter 'merge' should be a list"),
    (_with_step(into=["SECRET"]), "parameter 'into' should be a plain value"),
    (_with_step(top="SECRET"), "parameter 'top' should be a number or null"),
    (_with_step(kind="SECRET"), r"its kind is not one kanon knows \(.*local_suppression, recode, "),
    (_with_step(kind=["SECRET"]), "its kind is not one kanon knows"),
    (json.dumps({"format": "kanon-recipe", "steps": [{"kind": "local_suppression", "k": "SECRET"}]}),
     "parameter 'k' should be a whole number"),
    (json.dumps({"format": "kanon-recipe", "steps": [{"kind": "local_suppression", "k": True}]}),
     "parameter 'k' should be a whole number"),
    (json.dumps({"format": "kanon-recipe", "steps": [{"kind": "local_suppression", "importance": [["a", "SECRET"]]}]}),
     "parameter 'importance' should be a list"),
    (json.dumps({"format": "kanon-recipe", "steps": [{"kind": "generalize", "levels": {"age": "SECRET"}}]}),
     "parameter 'levels' should be an object"),
    (json.dumps({"format": "kanon-recipe", "steps": [{"kind": "set_roles", "qis": "SECRET"}]}),
     "parameter 'qis' should be a list"),
    (json.dumps({"format": "kanon-recipe", "initial": {"roles": {"qis": "SECRET"}}}),
     "The recipe's initial roles field 'qis' should be a list"),
    (json.dumps({"format": "kanon-recipe", "initial": {"roles": {"weight": ["SECRET"]}}}),
     "field 'weight' should be text or null"),
    (json.dumps({"format": "kanon-recipe", "initial": {"roles": {"fpc": 5}}}), "field 'fpc' should be text or null"),
    (json.dumps({"format": "kanon-recipe", "initial": {"missing": "SECRET"}}), "semantics is not one kanon knows"),
    (json.dumps({"format": "kanon-recipe", "initial": "SECRET"}), "'initial' part has the wrong shape"),
    (json.dumps({"format": "kanon-recipe", "input": {"path": ["SECRET"]}}), "field 'path' should be text or null"),
    (json.dumps({"format": "kanon-recipe", "input": {"columns": "SECRET"}}), "field 'columns' should be a list"),
    (json.dumps({"format": "kanon-recipe", "input": {"records": "SECRET"}}), "field 'records' should be a whole"),
    (json.dumps({"format": "kanon-recipe", "notes": ["SECRET"]}), "field 'notes' should be text"),
    (json.dumps({"format": "kanon-recipe", "extra": {"k": "SECRET"}}), "'extra.k' is not a whole number"),
    (json.dumps({"format": "kanon-recipe", "extra": ["SECRET"]}), "'extra' part has the wrong shape"),
    (json.dumps({"format": "kanon-recipe", "steps": [{"kind": "recode", "column": "a", "merge": [1, 2],
                                                      "output_fingerprint": ["SECRET"]}]}),
     "'output_fingerprint' that is not text"),
])
def test_recipe_files_from_outside_are_checked_field_by_field(text, message):
    with pytest.raises(InputError) as exc:
        Recipe.from_json(text)
    text_of = str(exc.value)
    assert re.search(message, text_of), text_of
    assert "\n" not in text_of and "SECRET" not in text_of and "7777" not in text_of and len(text_of) < 300


def test_well_typed_recipes_still_load(session):
    text = Recipe.from_history(session).to_json()
    assert Recipe.from_json(text).steps == tuple(session.steps())
    assert Recipe.from_json(_with_step(top=90, merge=[])).steps[0].top == 90


@pytest.mark.parametrize("payload,message", [
    ({"format": "kanon-recipe", "steps": {"kind": "recode"}}, "wrong shape"),
    ({"format": "kanon-recipe", "steps": ["recode"]}, "Step 1 of the recipe is not an object"),
    ({"format": "kanon-recipe", "steps": [{"description": "Merge", "kind": "recode", "column": "a", "colour": 1}]},
     r"Step 1 \(recode of a\) of the recipe is not valid: Step 'recode' has unknown parameter\(s\): colour"),
    ({"format": "kanon-recipe", "format_version": 99}, "newer kanon"),
    ({"format": "kanon-recipe", "format_version": "x"}, "not a number"),
])
def test_bad_recipes_are_clear_errors(payload, message):
    with pytest.raises(InputError, match=message):
        Recipe.from_json(json.dumps(payload))
    with pytest.raises(InputError, match="not valid JSON"):
        Recipe.from_json("{")
    with pytest.raises(InputError, match="not UTF-8"):
        Recipe.from_json(b"\xff\xfe\x00")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=8) | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=40,
)


@given(json_values)
def test_pretty_json_round_trips(value):
    text = pretty_json(value)
    assert text.endswith("\n")
    assert json.loads(text) == value
    assert pretty_json(json.loads(text)) == text


def _paths(value, prefix=()):
    """Every path (keys and indices) into a parsed JSON value."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _replaced(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(value)]


@settings(max_examples=200, deadline=None)
@given(st.data(), json_values)
def test_any_field_replaced_by_any_json_loads_or_is_one_input_error(session, data, junk):
    """Whatever a recipe file holds at whatever place, reading it builds a recipe or raises one InputError."""
    d = json.loads(Recipe.from_history(session, input_path="survey.csv", extra={"k": 3}).to_json())
    paths = [p for p in _paths(d) if p[:1] != ("format",)]
    path = data.draw(st.sampled_from(paths))
    try:
        Recipe.from_dict(_replaced(d, path, junk))
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400


def test_a_recipe_holding_long_codes_is_read_back_and_replays(tmp_path):
    """16-digit codes merged in a session: the recipe was written, then refused when read (numbers beyond 10^15).
    Whole numbers are read up to 2^63 - 1, and the recipe replays to the same version."""
    from kanon_core.io import load_dataset

    data = tmp_path / "big.csv"
    data.write_text("code,x\n1234567890123456,1\n1234567890123457,2\n1234567890123458,3\n", encoding="utf-8")
    ds = load_dataset(data)
    h = History.start(ds)
    h.apply(RecodeStep(column="code", merge=(1234567890123456, 1234567890123457)))
    path = tmp_path / "big.recipe.json"
    Recipe.from_history(h, input_path="big.csv").save(path)
    replay = Recipe.load(path).replay_checked(load_dataset(data))
    assert replay.history.current.dataset.frame["code"].tolist() == [1234567890123456] * 2 + [1234567890123458]
    with pytest.raises(InputError, match="beyond 10\\^15 in size \\(whole numbers: 2\\^63 - 1\\)"):
        Recipe.from_json(_with_step(into=2**63))


def test_declare_missing_steps_are_named_in_messages_without_their_codes():
    """A declared code is a value of the data ("-9", "M"): a replay's messages name the step by variable and count."""
    from kanon_core.declare_missing import DeclareMissingValues
    from kanon_core.steps import DeclareMissingCodes

    assert DeclareMissingCodes(column="inc", codes=(-9, -8)).describe_without_values() == "Missing codes of inc: 2"
    step = DeclareMissingValues(values=(("sex", ("M",)),))
    assert step.describe_without_values() == "Declare missing: sex (1 value(s))"


def test_declared_missing_codes_are_typed_for_the_file_they_are_replayed_on(tmp_path):
    """The code -9 was typed as a number for the first wave; on a wave whose column reads as text (one stray
    'n/a') it matched none of the text cells '-9', so the refusals became a category (wildcards lost), and the
    release's read-back check stopped `kanon apply` calling it a fault of kanon's."""
    from kanon_core.io import load_dataset, typed_codes
    from kanon_core.steps import DeclareMissingCodes

    (tmp_path / "w1.csv").write_text("id,inc\n1,100\n2,-9\n3,300\n", encoding="utf-8")
    (tmp_path / "w2.csv").write_text("id,inc\n1,100\n2,-9\n3,n/a\n", encoding="utf-8")
    w1 = load_dataset(tmp_path / "w1.csv")
    h = History.start(w1)
    h.apply(DeclareMissingCodes("inc", typed_codes(w1.frame["inc"], ["-9"])))
    assert h.current.dataset.missing_mask("inc").tolist() == [False, True, False]
    recipe = Recipe.from_history(h, input_path="w1.csv")
    out = recipe.replay_checked(load_dataset(tmp_path / "w2.csv")).history.current.dataset
    assert out.missing_mask("inc").tolist() == [False, True, False]
    assert recipe.replay_checked(load_dataset(tmp_path / "w1.csv")).verified_steps == 1  # its own file: as recorded
