"""Project files: save a session, reopen it (same versions, same bytes), refuse a changed file unless allowed."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kanon_core.dataset import Roles
from kanon_core.errors import InputError
from kanon_core.export import export_bytes
from kanon_core.history import History
from kanon_core.io import load_dataset
from kanon_core.project import DataRef, Project, open_project
from kanon_core.steps import SetRoles
from kanon_core.treat.recode import RecodeStep
from kanon_core.treat.suppress import SuppressStep

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
