"""Value labels as a recorded step (kanon_core.value_labels): typed codes, replacement, import from a labels
file, the recipe and ``kanon apply`` (labels written next to the CSV release)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.history import History
from kanon_core.recipe import Recipe, check_step_params
from kanon_core.steps import step_from_dict, version_fingerprint
from kanon_core.value_labels import SetValueLabels, value_table


def _ds() -> Dataset:
    frame = pd.DataFrame({"sex": [1, 2, 2, 1, None], "town": ["a", "b", "a", "c", "c"], "x": [1.5, 2.5, 3.5, 4.5, 5.5]})
    return Dataset(frame, meta={"town": VariableMeta(value_labels={"a": "Alpha"})}, roles=Roles(qis=("sex", "town")))


def test_codes_are_typed_like_their_variable_and_reach_the_encodings():
    ds = SetValueLabels((("sex", (("1", "Male"), ("2", "Female"))),)).apply(_ds())
    assert dict(ds.meta_of("sex").value_labels) == {1: "Male", 2: "Female"}
    assert ds.value_label("sex", 2.0) == "Female"  # the column is float because of its empty cell
    qm = ds.qi_matrix()
    assert qm.labels[0] == ("Male", "Female")
    assert qm.labels[1] == ("Alpha", "b", "c")  # other variables keep their labels


def test_labels_are_replaced_and_empty_text_removes_one():
    ds = SetValueLabels((("town", (("b", "Beta"), ("a", " "))),), (("town", "Town of residence"),)).apply(_ds())
    assert dict(ds.meta_of("town").value_labels) == {"b": "Beta"}
    assert ds.meta_of("town").label == "Town of residence"
    assert ds.frame.equals(_ds().frame)  # cells never change


def test_bad_steps_are_refused_in_one_line():
    with pytest.raises(InputError, match="unknown variable"):
        SetValueLabels((("nope", (("1", "x"),)),)).apply(_ds())
    with pytest.raises(InputError, match="No labels"):
        SetValueLabels().apply(_ds())
    with pytest.raises(InputError, match="pairs"):
        SetValueLabels((("sex", (("1", 2),)),))
    with pytest.raises(InputError, match="longer than"):
        SetValueLabels((("sex", (("1", "x" * 501),)),))


def test_step_round_trips_through_json_and_the_recipe():
    step = SetValueLabels((("sex", ((1, "Male"), (2, "Female"))),), (("sex", "Sex"),))
    d = json.loads(json.dumps(step.to_dict()))
    check_step_params(d)
    assert step_from_dict(d) == step
    hist = History.start(_ds())
    before = version_fingerprint(hist.current.dataset)
    hist.apply(step)
    assert version_fingerprint(hist.current.dataset) != before  # labels are part of the version
    recipe = Recipe.from_json(Recipe.from_history(hist).to_json())
    assert recipe.steps == (step,)
    replay = recipe.replay_checked(_ds(), strict=True)
    assert replay.release.dataset.value_label("sex", 1) == "Male"


def test_from_spec_reads_the_sidecar_format():
    spec = {"sex": {"label": "Sex", "value_labels": {"1": "Male", "2": "Female"}, "missing_codes": ["9"]},
            "town": {"value_labels": {}}, "other": {"label": "not here"}}
    step, unknown = SetValueLabels.from_spec(spec, _ds().columns)
    assert unknown == ["other"]
    assert step.labels == (("sex", (("1", "Male"), ("2", "Female"))),) and step.variable_labels == (("sex", "Sex"),)
    with pytest.raises(InputError, match="no labels"):
        SetValueLabels.from_spec({"other": {"label": "x"}}, _ds().columns)
    with pytest.raises(InputError, match="JSON object"):
        SetValueLabels.from_spec(["sex"], _ds().columns)  # type: ignore[arg-type]
    # missing codes written as one text are refused, not read character by character ("-9": "-" and "9")
    with pytest.raises(InputError, match="list"):
        SetValueLabels.from_spec({"sex": {"value_labels": {"1": "Male"}, "missing_codes": "-9"}}, _ds().columns)


def test_value_table_lists_observed_codes_then_labelled_codes_not_seen():
    ds = SetValueLabels((("sex", (("1", "Male"), ("9", "Refused"))),)).apply(_ds())
    t = value_table(ds, "sex")
    # the column is float (it has an empty cell), written in Python's style: "1.0"
    assert t[["code", "records", "label"]].values.tolist() == [["1.0", 2, "Male"], ["2.0", 2, ""],
                                                               ["9", 0, "Refused"]]
    plain = Dataset(ds.frame, meta={"sex": VariableMeta(float_style="plain")})
    assert value_table(plain, "sex")["code"].tolist() == ["1", "2"]


def test_kanon_apply_replays_labels_into_the_release_sidecar(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("sex,town\n1,a\n2,b\n2,a\n1,b\n")
    from kanon_core.io import load_dataset

    hist = History.start(load_dataset(data))
    hist.apply(SetValueLabels((("sex", (("1", "Male"), ("2", "Female"))),)))
    Recipe.from_history(hist).save(tmp_path / "r.recipe.json")
    assert main(["apply", str(tmp_path / "r.recipe.json"), str(data), "-o", str(tmp_path / "out.csv")]) == 0
    side = json.loads((tmp_path / "out.labels.json").read_text())
    assert side["sex"]["value_labels"] == {"1": "Male", "2": "Female"}
    assert (tmp_path / "out.csv").read_text() == data.read_text()
