"""Immutability, encoding, steps, history (undo/redo/branch) and recipes."""

from __future__ import annotations

import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.history import History
from kanon_core.recipe import Recipe
from kanon_core.steps import DeclareMissingCodes, DropVariables, SetMissing, SetRoles, step_from_dict


def _ds() -> Dataset:
    frame = pd.DataFrame({"a": [3, 1, 2, 1], "b": ["x", "y", None, "x"], "c": [1.0, 2.0, 3.0, 4.0]})
    return Dataset(frame=frame, roles=Roles(qis=("a", "b")))


def test_codes_follow_value_order_and_missing_is_minus_one():
    qm = _ds().qi_matrix()
    assert qm.codes[:, 0].tolist() == [2, 0, 1, 0]
    assert qm.codes[:, 1].tolist() == [0, 1, -1, 0]
    assert qm.values[0] == (1, 2, 3)


def test_steps_never_mutate_the_original():
    ds = _ds()
    before = ds.frame.copy()
    h = History.start(ds)
    h.apply(DropVariables(("c",)))
    h.apply(DeclareMissingCodes("a", (1,)))
    h.apply(SetMissing("category"))
    pd.testing.assert_frame_equal(ds.frame, before)
    assert h.current.dataset.missing == "category"
    assert "c" not in h.current.dataset.columns
    assert h.current.dataset.qi_matrix().codes[:, 0].tolist() == [1, -1, 0, -1]


def test_undo_redo_and_branch():
    h = History.start(_ds())
    v1 = h.apply(SetMissing("category"))
    v2 = h.apply(DropVariables(("c",)))
    assert h.undo().id == v1.id and h.undo().id == 0
    assert not h.can_undo()
    assert h.redo().id == v1.id
    # branching from v1 clears redo and makes a sibling of v2
    v3 = h.apply(SetRoles(qis=("a",)))
    assert v3.parent == v1.id and not h.can_redo()
    assert [v.id for v in h.lineage()] == [0, v1.id, v3.id]
    assert v2.id in h.versions
    with pytest.raises(InputError):
        h.checkout(99)


def test_recipe_round_trip_and_replay_identical():
    ds = _ds()
    h = History.start(ds)
    h.apply(DropVariables(("c",)))
    h.apply(SetRoles(qis=("a",)))
    r = Recipe.from_history(h, input_path="d.csv")
    again = Recipe.from_json(r.to_json())
    assert again.steps == r.steps and again.roles == r.roles
    replayed = again.replay(ds)
    pd.testing.assert_frame_equal(replayed.current.dataset.frame, h.current.dataset.frame)
    assert again.check_input(ds) == []


def test_replay_mismatch_names_the_step():
    h = History.start(_ds())
    h.apply(DropVariables(("c",)))
    r = Recipe.from_history(h)
    other = Dataset(frame=pd.DataFrame({"a": [1], "b": ["x"]}), roles=Roles())
    with pytest.raises(InputError, match="Step 1 .*Drop c.*unknown variable"):
        r.replay(other)


def test_unknown_step_kind_is_a_clear_error():
    with pytest.raises(InputError, match="Unknown step kind"):
        step_from_dict({"kind": "teleport"})
    with pytest.raises(InputError, match="not a kanon recipe"):
        Recipe.from_json('{"hello": 1}')


@pytest.mark.parametrize(
    "roles,message",
    [(Roles(qis=("zz",)), "Unknown variable"), (Roles(qis=("a", "a")), "listed twice"),
     (Roles(qis=("a",), direct_ids=("a",)), "both")],
)
def test_bad_roles(roles, message):
    with pytest.raises(InputError, match=message):
        _ds().with_roles(roles)


def test_a_declared_missing_code_on_the_weight_is_a_missing_weight():
    """A weight cell holding a declared missing code is missing (refused as such), never a weight of that value."""
    import pandas as pd
    import pytest

    from kanon_core.dataset import Dataset, Roles, VariableMeta
    from kanon_core.errors import InputError

    frame = pd.DataFrame({"a": [1, 2, 3], "w": [1.0, 7.86, 2.0]})
    ds = Dataset(frame, roles=Roles(weight="w"), meta={"w": VariableMeta(missing_codes=(7.86,))})
    with pytest.raises(InputError, match="Weight 'w' is missing for 1 record"):
        ds.weights()
    assert Dataset(frame, roles=Roles(weight="w")).weights().tolist() == [1.0, 7.86, 2.0]
