"""Replaying a long recipe costs the same per step whatever the length: adding a version to a history does
not go through every version number already there (a recipe may have 10,000 steps), and a long replay
gives exactly the versions, checks and messages of applying its steps one by one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.history import History, Version
from kanon_core.project import Project
from kanon_core.recipe import Recipe, graft
from kanon_core.steps import DeclareMissingCodes, SetMissing, Step, version_fingerprint
from kanon_core.treat.recode import RecodeStep

ROLES = Roles(qis=("age", "job"))


def _ds() -> Dataset:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"age": rng.integers(18, 80, 40), "job": rng.integers(1, 4, 40)})
    return Dataset(frame=frame, meta={}, roles=ROLES, name="survey")


def _toggles(n: int) -> list[Step]:
    """``n`` cheap steps that undo each other in turn, so any number of them applies to the data."""
    kinds = [SetMissing("category"), SetMissing("wildcard")]
    return [kinds[i % 2] for i in range(n)]


def _mixed(n: int) -> list[Step]:
    """``n`` steps of three kinds, each toggled back and forth: recodes of one variable, missing codes
    declared and cleared on another, and the missing-value semantics."""
    cycle: list[Step] = [RecodeStep("job", merge=(1,), into=2), DeclareMissingCodes("age", (99,)),
                         SetMissing("category"), RecodeStep("job", merge=(2,), into=1),
                         DeclareMissingCodes("age", ()), SetMissing("wildcard")]
    return [cycle[i % len(cycle)] for i in range(n)]


class _CountingVersions(dict):
    """A history's versions that count the version numbers looked at by going through all of them."""

    seen = 0

    def _through(self) -> None:
        self.seen += len(self)

    def __iter__(self) -> Iterator[Any]:
        self._through()
        return super().__iter__()

    def keys(self) -> Any:
        self._through()
        return super().keys()

    def values(self) -> Any:
        self._through()
        return super().values()

    def items(self) -> Any:
        self._through()
        return super().items()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[_CountingVersions]:
    """Every history started from now on keeps its versions in a counting dict (listed here)."""
    made: list[_CountingVersions] = []

    def start(cls: type[History], dataset: Dataset) -> History:
        versions = _CountingVersions({0: Version(0, None, None, dataset)})
        made.append(versions)
        return cls(versions=versions)

    monkeypatch.setattr(History, "start", classmethod(start))
    return made


@pytest.mark.parametrize("n", [200, 800])
def test_a_replay_looks_at_a_bounded_number_of_versions_per_step(counted, n):
    replay = Recipe(steps=tuple(_toggles(n)), roles=ROLES).replay_checked(_ds())
    assert len(replay.history.versions) == n + 1 and len(counted) == 1
    # a scan of all versions per step looks at n * (n + 1) / 2 version numbers: 20,100 for 200 steps
    assert counted[0].seen <= n


def test_reopening_a_long_project_tree_looks_at_a_bounded_number_of_versions_per_step(counted):
    h = History.start(_ds())
    for step in _toggles(300):
        h.apply(step)
    h.checkout(150)  # a second branch, so the reopening moves between versions
    for step in _toggles(300):
        h.apply(step)
    project = Project.from_history(h, data_name="survey.csv")
    counted.clear()
    replay = project.reopen(_ds())
    assert replay.verified_steps == 600 and replay.history.current_id == 600
    assert counted[0].seen <= 600


def test_grafting_a_long_replay_looks_at_a_bounded_number_of_versions_per_step():
    ds = _ds()
    session = History(versions=_CountingVersions({0: Version(0, None, None, ds)}))
    replay = Recipe(steps=tuple(_toggles(500)), roles=ROLES).replay_checked(ds)
    added = graft(session, replay)
    assert len(added) == 500 and session.current_id == 500
    assert session.versions.seen <= 500  # type: ignore[attr-defined]


def test_a_long_replay_gives_the_versions_of_applying_its_steps_one_by_one():
    steps = _mixed(600)
    session = History.start(_ds())
    for step in steps:
        session.apply(step)
    recipe = Recipe.from_json(Recipe.from_history(session, input_path="survey.csv").to_json())
    replay = recipe.replay_checked(_ds())
    assert replay.warnings == () and replay.verified_steps == 600  # each step matched its recorded result
    got = replay.history
    assert got.current_id == session.current_id == 600 and sorted(got.versions) == list(range(601))
    for vid, want in session.versions.items():
        v = got.versions[vid]
        assert (v.parent, v.step) == (want.parent, want.step)
        pd.testing.assert_frame_equal(v.dataset.frame, want.dataset.frame)
        assert (v.dataset.roles, v.dataset.missing, v.dataset.meta) == (want.dataset.roles, want.dataset.missing,
                                                                      want.dataset.meta)
        assert version_fingerprint(v.dataset) == version_fingerprint(want.dataset)


def test_a_step_late_in_a_long_recipe_is_still_named_by_its_number():
    steps = (*_toggles(500), RecodeStep("nojob", merge=(1, 2), into=1))
    with pytest.raises(InputError, match=r"^Step 501 \(Recode nojob: merge 2 categories\) cannot be applied: "
                                         r"it uses unknown variable\(s\), not in the data: nojob\.$"):
        Recipe(steps=steps, roles=ROLES).replay_checked(_ds())


def test_version_numbers_stay_one_above_the_highest_whatever_changed_the_versions():
    ds = _ds()
    h = History(versions={0: Version(0, None, None, ds), 3: Version(3, 0, SetMissing("category"), ds)})
    assert h.apply(SetMissing("wildcard")).id == 4
    h.undo()
    assert h.apply(SetMissing("category")).id == 5  # a branch: numbers are not reused
    h.versions[9] = Version(9, 0, SetMissing("category"), ds)  # added directly, not through the history
    assert h.apply(SetMissing("wildcard")).id == 10
    h.versions[11] = Version(11, 0, SetMissing("category"), ds)
    assert h.apply(SetMissing("wildcard")).id == 12
    assert sorted(h.versions) == [0, 3, 4, 5, 9, 10, 11, 12]
