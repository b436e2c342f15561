"""Project files: save a session, reopen it (same versions, same bytes), refuse a changed file unless allowed."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Roles
from kanon_core.errors import InputError
from kanon_core.export import export_bytes
from kanon_core.history import History
from kanon_core.io import load_dataset
from kanon_core.project import DataRef, Project, open_project
from kanon_core.steps import SetRoles
from kanon_core.treat.hierarchy import Hierarchy, interval_hierarchy
from kanon_core.treat.recode import RecodeStep
from kanon_core.treat.suppress import SuppressStep
from tests.test_recipe import _paths, _replaced, json_values

CSV = "age,sex,job,w\n" + "\n".join(f"{20 + i % 7},{1 + i % 2},{1 + i % 5},{1 + i % 3}" for i in range(60)) + "\n"


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    p = d / "wave1.csv"
    p.write_text(CSV, encoding="utf-8")
    (d / "wave1.labels.json").write_text(json.dumps({"job": {"label": "Job", "value_labels": {"1": "Clerk"}}}),
                                         encoding="utf-8")
    return p


def _session(path) -> History:
    h = History.start(load_dataset(path))
    h.apply(SetRoles(qis=("age", "sex", "job"), weight="w"))
    h.apply(RecodeStep("job", merge=(4, 5), into=4))
    h.apply(SuppressStep(qis=("age", "sex", "job"), k=3))
    return h


def test_save_and_reopen_gives_the_same_versions_and_bytes(tmp_path, data):
    h = _session(data)
    proj_dir = tmp_path / "projects"
    proj_dir.mkdir()
    project = Project.from_history(h, data_name="wave1.csv", data_path=data, settings={"k": 3, "notes": "n"},
                                   notes="n", relative_to=proj_dir)
    assert project.data.path == "../data/wave1.csv"  # relative: a project moves with its data
    path = project.save(proj_dir / "wave1.kanon.json")
    d = json.loads(path.read_text(encoding="utf-8"))
    assert d["format"] == "kanon-project" and d["data"]["fingerprint"] == h.original.dataset.fingerprint
    assert d["settings"] == {"k": 3, "notes": "n"} and len(d["recipe"]["steps"]) == 3
    again, replay = open_project(path)
    assert again.settings == {"k": 3, "notes": "n"}
    assert replay.warnings == ()
    got = replay.history
    assert [v.label for v in got.lineage()] == [v.label for v in h.lineage()]
    assert got.current.dataset.meta_of("job").label == "Job"
    for fmt in ("csv", "sav"):
        assert (export_bytes(got.current.dataset, fmt, got.original.dataset).data
                == export_bytes(h.current.dataset, fmt, h.original.dataset).data)


def test_changed_data_is_refused_unless_allowed(tmp_path, data):
    h = _session(data)
    project = Project.from_history(h, data_name="wave1.csv", data_path=data.name)
    path = project.save(data.parent / "p.kanon.json")
    data.write_text(CSV.replace("\n21,", "\n22,", 1), encoding="utf-8")
    with pytest.raises(InputError, match="differs from the file the project was saved on \\(wave1.csv\\)"):
        open_project(path)
    _, replay = open_project(path, allow_changed=True)
    assert replay.warnings[0].startswith("The data differs")
    shorter = load_dataset(data).frame.head(30)
    data.write_text(shorter.to_csv(index=False), encoding="utf-8")
    with pytest.raises(InputError, match="has 30 records; the project was saved on 60 records of wave1.csv"):
        open_project(path)


def test_bad_project_files(tmp_path):
    with pytest.raises(InputError, match="not a kanon project"):
        Project.from_json('{"format": "kanon-recipe"}')
    with pytest.raises(InputError, match="data reference is incomplete"):
        Project.from_json('{"format": "kanon-project", "data": {"name": "x"}, "recipe": {}}')
    with pytest.raises(InputError, match="not valid JSON"):
        Project.from_json(b"{nope")
    with pytest.raises(InputError, match="Project file not found"):
        Project.load(tmp_path / "missing.kanon.json")
    ref = DataRef(name="s.csv", fingerprint="f", records=1, sample="els")
    assert DataRef.from_dict(ref.to_dict()) == ref


def test_project_without_a_path_needs_the_data(tmp_path, data):
    h = _session(data)
    p = Project.from_history(h, data_name="upload.csv").save(tmp_path / "u.kanon.json")
    with pytest.raises(InputError, match="does not record where its data is \\(upload.csv\\)"):
        open_project(p)
    project = Project.load(p)
    replay = project.reopen(load_dataset(data))
    pd.testing.assert_frame_equal(replay.release.dataset.frame, h.current.dataset.frame)
    assert replay.history.original.dataset.roles == Roles()


# -- the whole version tree and the session's hierarchies ----------------------------------------------------
def _two_branches(path) -> History:
    """v1 roles; v2 recode, v3 suppression (branch A); v4 top-code from v1, v5 suppression (branch B);
    current: v3 (branch A), so branch B is not on the current lineage."""
    h = History.start(load_dataset(path))
    h.apply(SetRoles(qis=("age", "sex", "job"), weight="w"))
    h.apply(RecodeStep("job", merge=(4, 5), into=4))
    h.apply(SuppressStep(qis=("age", "sex", "job"), k=3))
    h.checkout(1)
    h.apply(RecodeStep("age", top=24))
    h.apply(SuppressStep(qis=("age", "sex", "job"), k=2))
    h.checkout(3)
    return h


def _hierarchies(h: History) -> dict[str, Hierarchy]:
    return {"age": interval_hierarchy(h.original.dataset.frame["age"], (2, 4), name="age")}


def test_the_whole_tree_and_the_hierarchies_come_back(tmp_path, data):
    h = _two_branches(data)
    hier = _hierarchies(h)
    path = Project.from_history(h, data_name="wave1.csv", data_path=data, relative_to=data.parent,
                                hierarchies=hier).save(data.parent / "p.kanon.json")
    d = json.loads(path.read_text(encoding="utf-8"))
    assert d["format_version"] == 2 and d["versions"]["current"] == 3
    assert [(v["id"], v["parent"]) for v in d["versions"]["tree"]] == [(1, 0), (2, 1), (3, 2), (4, 1), (5, 4)]
    project, replay = open_project(path)
    got = replay.history
    assert replay.warnings == () and replay.verified_steps == 5
    assert sorted(got.versions) == sorted(h.versions) and got.current_id == 3
    assert not set(got.lineage(5)) & {got.versions[2], got.versions[3]}  # branch B is off the current lineage
    for vid, v in h.versions.items():
        w = got.versions[vid]
        assert w.parent == v.parent and w.step == v.step and w.label == v.label
        pd.testing.assert_frame_equal(w.dataset.frame, v.dataset.frame)
        assert w.dataset.roles == v.dataset.roles
    assert got.versions[5].dataset.frame["age"].max() == 24  # branch B really was replayed
    assert project.hierarchies.keys() == {"age"} and project.hierarchies["age"].rows == hier["age"].rows
    # the readable recipe is still the current version's lineage
    assert project.recipe.steps == tuple(h.steps(3))


def test_a_version_that_does_not_reproduce_stops_the_reopening(tmp_path, data):
    h = _two_branches(data)
    d = json.loads(Project.from_history(h, data_name="wave1.csv", data_path=data.name).to_json())
    d["versions"]["tree"][3]["top"] = 23  # version 4 now gives another result than the one recorded
    path = data.parent / "p.kanon.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(InputError, match=r"^Version 4 \(recode\) does not reproduce the result recorded in the "
                                         r"project on this file; the replay stops there\.$"):
        open_project(path)
    # on a changed file (allowed) nothing is compared: the tree replays as on a new wave
    data.write_text(CSV.replace("\n21,", "\n22,", 1), encoding="utf-8")
    _, replay = open_project(path, allow_changed=True)
    assert replay.verified_steps == 0 and sorted(replay.history.versions) == [0, 1, 2, 3, 4, 5]


def test_a_format_1_project_still_opens(tmp_path, data):
    h = _two_branches(data)
    d = json.loads(Project.from_history(h, data_name="wave1.csv", data_path=data.name).to_json())
    d["format_version"] = 1
    del d["versions"], d["hierarchies"]
    path = data.parent / "old.kanon.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    project, replay = open_project(path)
    assert project.tree == () and project.hierarchies == {}
    assert [v.label for v in replay.history.lineage()] == [v.label for v in h.lineage()]
    pd.testing.assert_frame_equal(replay.release.dataset.frame, h.current.dataset.frame)


@pytest.mark.parametrize("change,message", [
    (lambda d: d["versions"].update(current=99), "version tree is not valid"),
    (lambda d: d["versions"]["tree"][1].update(parent=5), "version tree is not valid"),
    (lambda d: d["versions"]["tree"][1].update(id=1), "version tree is not valid"),
    (lambda d: d["versions"]["tree"][1].update(id="2"), "version tree is not valid"),
    (lambda d: d["versions"].update(tree="SECRET"), "version tree is not valid"),
    (lambda d: d["versions"]["tree"][1].update(merge="SECRET"),
     r"^Version 2 \(recode of job\) of the project is not valid: its parameter 'merge'"),
    (lambda d: d["versions"]["tree"][1].update(kind="SECRET"), "its kind is not one kanon knows"),
    (lambda d: d.update(hierarchies={"age": "SECRET"}), "hierarchy of 'age' should be a list of rows of texts"),
    (lambda d: d.update(hierarchies={"age": [["SECRET", "*"], ["SECRET", "*"]]}), "have the same original value"),
    (lambda d: d.update(hierarchies=["SECRET"]), "hierarchies part has the wrong shape"),
    (lambda d: d.update(format_version="SECRET"), "'format_version' is not a number"),
    (lambda d: d.update(recipe="SECRET"), "recipe part has the wrong shape"),
    (lambda d: d.update(settings={"k": float("inf")}), "not finite"),
])
def test_bad_trees_and_hierarchies_are_one_line_errors(data, change, message):
    h = _two_branches(data)
    d = json.loads(Project.from_history(h, data_name="wave1.csv", hierarchies=_hierarchies(h)).to_json())
    change(d)
    with pytest.raises(InputError) as exc:
        Project.from_json(json.dumps(d))
    assert re.search(message, str(exc.value)), str(exc.value)
    assert "SECRET" not in str(exc.value) and "\n" not in str(exc.value)


def test_deeply_nested_project_files_are_refused():
    with pytest.raises(InputError, match="^The project file is nested too deeply.$"):
        Project.from_json('{"format": "kanon-project", "settings": ' + "[" * 100_000 + "]" * 100_000 + "}")


@pytest.fixture(scope="module")
def saved_project(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("p")
    (d / "wave1.csv").write_text(CSV, encoding="utf-8")
    h = _two_branches(d / "wave1.csv")
    return json.loads(Project.from_history(h, data_name="wave1.csv", hierarchies=_hierarchies(h)).to_json())


@settings(max_examples=200, deadline=None)
@given(st.data(), json_values)
def test_any_part_replaced_by_any_json_loads_or_is_one_input_error(saved_project, data, junk):
    """Whatever a project file holds at whatever place, reading it builds a project or raises one InputError."""
    paths = [p for p in _paths(saved_project) if p[:1] != ("format",)]
    path = data.draw(st.sampled_from(paths))
    try:
        Project.from_json(json.dumps(_replaced(saved_project, path, junk)))
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400


def test_names_with_line_breaks_stay_on_one_line(saved_project):
    bad = _replaced(saved_project, ("hierarchies",), {"a\nb": [["1", "*"]]})
    with pytest.raises(InputError, match="^The project's hierarchies part names a variable that is not a printable"):
        Project.from_json(json.dumps(bad))
    step = saved_project["versions"]["tree"][1] | {"colour\nSECRET": 1}
    bad = _replaced(saved_project, ("versions", "tree", 1), step)
    with pytest.raises(InputError) as exc:
        Project.from_json(json.dumps(bad))
    assert "\n" not in str(exc.value) and "unknown parameter" in str(exc.value)
