"""Global recoding steps (generalize to hierarchy levels, merge, top/bottom code) and their previews."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.steps import step_from_dict
from kanon_core.treat.hierarchy import Hierarchy, interval_hierarchy
from kanon_core.treat.recode import (
    GeneralizeStep,
    RecodeStep,
    changed_counts,
    generalized_column,
    level_counts,
    preview_step,
    risk_effect,
    suppress_small_classes,
)

AGE_H = Hierarchy((("20", "20-29", "*"), ("25", "20-29", "*"), ("31", "30-39", "*"), ("38", "30-39", "*"),
                   ("45", "40-49", "*")), "age")
EDU_H = Hierarchy((("a", "low", "*"), ("b", "low", "*"), ("c", "high", "*")), "edu")


@pytest.fixture
def ds():
    frame = pd.DataFrame({
        "age": [20, 25, 31, 38, 45, np.nan, 25],
        "edu": ["a", "b", "c", "c", "a", "b", None],
        "sex": [1, 2, 1, 2, 1, 2, 1],
        "income": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0],
    })
    meta = {"sex": VariableMeta(label="Sex", value_labels={1: "Male", 2: "Female"}),
            "age": VariableMeta(label="Age in years")}
    return Dataset(frame, meta=meta, roles=Roles(qis=("age", "edu", "sex")))


# -- GeneralizeStep ------------------------------------------------------------------------------------------------
def test_generalized_column_replaces_values_by_level_labels(ds):
    col = generalized_column(ds, "age", AGE_H, 1)
    assert col.tolist() == ["20-29", "20-29", "30-39", "30-39", "40-49", None, "20-29"]
    assert generalized_column(ds, "age", AGE_H, 2).tolist() == ["*"] * 5 + [None, "*"]
    with pytest.raises(InputError, match="Unknown variable"):
        generalized_column(ds, "height", AGE_H, 1)


def test_generalize_step_applies_levels_and_keeps_other_columns(ds):
    step = GeneralizeStep.build({"age": 1, "edu": 1, "sex": 0}, {"age": AGE_H, "edu": EDU_H})
    out = step.apply(ds)
    assert out.frame["age"].tolist() == ["20-29", "20-29", "30-39", "30-39", "40-49", None, "20-29"]
    assert out.frame["edu"].tolist() == ["low", "low", "high", "high", "low", "low", None]
    assert out.frame["sex"].tolist() == ds.frame["sex"].tolist()
    assert out.frame["income"].equals(ds.frame["income"])
    # the recoded variable keeps its variable label; value labels of the old codes are gone
    assert out.meta_of("age").label == "Age in years" and out.meta_of("sex").value_labels == {1: "Male", 2: "Female"}
    assert ds.frame["age"].iloc[0] == 20  # the input is not modified
    assert step.describe() == "Generalize age to level 1, edu to level 1"
    # only generalized variables carry their hierarchy
    assert set(step.hierarchies) == {"age", "edu"}


def _coded(values, dtype, codes, labels=None, style="repr"):
    frame = pd.DataFrame({"age": pd.Series(values, dtype=dtype), "sex": [1, 2] * (len(values) // 2)})
    meta = {"age": VariableMeta(label="Age", value_labels=labels or {}, missing_codes=codes, float_style=style)}
    return Dataset(frame, meta=meta, roles=Roles(qis=("age", "sex")))


def test_generalize_keeps_declared_missing_codes_as_text_with_their_labels():
    """-9 (refused) and -8 (don't know) are declared missing: generalized, each keeps its code, written as the
    release writes it and declared as that text with its label; an empty cell stays empty; the other values'
    labels go with the values. Risk reads exactly the same cells as missing before and after."""
    ds = _coded([20, -9, 31, None, -8, 25], "Int64", (-9, -8, -7), {-9: "Refused", 20: "twenty", -7: "Skipped"})
    out = GeneralizeStep.build({"age": 1}, {"age": AGE_H}).apply(ds)
    assert out.frame["age"].tolist() == ["20-29", "-9", "30-39", None, "-8", "20-29"]
    assert out.meta_of("age") == VariableMeta(label="Age", value_labels={"-9": "Refused", "-7": "Skipped"},
                                              missing_codes=("-9", "-8", "-7"))
    assert out.missing_mask("age").tolist() == ds.missing_mask("age").tolist()
    # the kept codes replay: generalizing again (level 2 of the same hierarchy) keeps them once more
    again = GeneralizeStep.build({"age": 2}, {"age": AGE_H}).apply(ds)
    assert again.frame["age"].tolist() == ["*", "-9", "*", None, "-8", "*"]


def test_generalize_writes_a_float_code_in_the_variable_s_style():
    """A code of a column of decimals is kept as the text its release writes: "-9" in a column read from "plain"
    text (as R or Stata write whole numbers), "-9.0" in Python's form."""
    for style, text in (("plain", "-9"), ("repr", "-9.0")):
        ds = _coded([20.0, -9.0], "float64", (-9.0,), style=style)
        out = GeneralizeStep.build({"age": 1}, {"age": AGE_H}).apply(ds)
        assert out.frame["age"].tolist() == ["20-29", text] and out.meta_of("age").missing_codes == (text,)


def test_generalize_refuses_a_label_written_as_a_declared_code():
    """A hierarchy label equal to a declared code's text would make its records read as missing in the release
    (wildcards to every count): refused, naming the variable, not the label."""
    ds = _coded([20, -9, 31, 38], "Int64", (-9,))
    h = Hierarchy((("20", "-9", "*"), ("31", "30-39", "*"), ("38", "30-39", "*")), "age")
    with pytest.raises(InputError, match="declared missing codes") as err:
        GeneralizeStep.build({"age": 1}, {"age": h}).apply(ds)
    assert "-9" not in str(err.value)
    # the release declares the code missing even where no record holds it: refused too
    with pytest.raises(InputError, match="declared missing codes"):
        GeneralizeStep.build({"age": 1}, {"age": h}).apply(_coded([20, 31], "Int64", (-9,)))


def test_generalize_step_suppresses_small_classes(ds):
    # at (age 1, edu 1), under wildcard semantics: r0, r1 (20-29, low) match r0, r1, r5 (age missing) and
    # r6 (edu missing) -> 4; r5 (missing, low) matches r0, r1, r4, r5, r6 -> 5; r6 (20-29, missing) -> 4
    step = GeneralizeStep.build({"age": 1, "edu": 1}, {"age": AGE_H, "edu": EDU_H}, suppress_k=3, qis=("age", "edu"))
    out = step.apply(ds)
    blank = out.frame[["age", "edu"]].isna().all(axis=1).tolist()
    # r2, r3 (30-39, high): 2 records; r4 (40-49, low): r4, r5 -> 2; all three are blanked
    assert blank == [False, False, True, True, True, False, False]
    assert step.describe().endswith("suppress records in classes smaller than 3")


def test_suppress_small_classes_under_both_semantics():
    frame = pd.DataFrame({"a": ["x", "x", "y", None], "b": ["u", "u", "u", "u"]})
    wild = Dataset(frame, roles=Roles(qis=("a", "b")))
    out, n = suppress_small_classes(wild, ("a", "b"), 3)
    # wildcard: (x,u) matches r0, r1, r3 -> 3; (y,u) matches r2, r3 -> 2; r3 matches all -> 4
    assert n == 1 and out.frame["a"].isna().tolist() == [False, False, True, True]
    cat = wild.with_missing("category")
    out, n = suppress_small_classes(cat, ("a", "b"), 2)
    assert n == 2 and out.frame["a"].isna().tolist() == [False, False, True, True]
    assert suppress_small_classes(cat, ("a", "b"), 1)[1] == 0


def test_generalize_step_round_trips_through_json_and_replays(ds):
    step = GeneralizeStep.build({"age": 1, "edu": 2}, {"age": AGE_H, "edu": EDU_H}, suppress_k=2, qis=("age", "edu"))
    again = step_from_dict(json.loads(json.dumps(step.to_dict())))
    assert again == step and hash(again) == hash(step)
    assert again.apply(ds).frame.equals(step.apply(ds).frame)


def test_generalize_step_errors(ds):
    with pytest.raises(InputError, match="hierarchy is not given"):
        GeneralizeStep({"age": 1}, {})
    with pytest.raises(InputError, match="0 or more"):
        GeneralizeStep({"age": -1}, {"age": AGE_H.rows})
    with pytest.raises(InputError, match="No hierarchy given for edu"):
        GeneralizeStep.build({"edu": 1}, {"age": AGE_H})
    with pytest.raises(InputError, match="unknown variable"):
        GeneralizeStep.build({"height": 1}, {"height": AGE_H}).apply(ds)
    with pytest.raises(InputError, match="level 3 does not exist"):
        GeneralizeStep.build({"age": 3}, {"age": AGE_H}).apply(ds)
    short = Hierarchy((("20", "*"), ("25", "*")), "age")
    with pytest.raises(InputError, match="3 value") as exc:
        GeneralizeStep.build({"age": 1}, {"age": short}).apply(ds)
    assert "31" not in str(exc.value)  # counts, never values


def test_generalize_matches_numbers_written_as_text():
    frame = pd.DataFrame({"age": [23.0, 27.0, 41.0]})
    h = interval_hierarchy(["23", "27", "41"], [10])
    out = GeneralizeStep.build({"age": 1}, {"age": h}).apply(Dataset(frame))
    assert out.frame["age"].tolist() == ["20-29", "20-29", "40-49"]


# -- RecodeStep ------------------------------------------------------------------------------------------------
def test_top_and_bottom_coding_clips_to_the_bounds():
    frame = pd.DataFrame({"age": [15, 30, 45, 60, 75, 90, -9]})
    ds = Dataset(frame, meta={"age": VariableMeta(missing_codes=(-9,))})
    out = RecodeStep(column="age", top=70, bottom=20).apply(ds)
    # the declared missing code -9 is below the bottom code but is not recoded
    assert out.frame["age"].tolist() == [20, 30, 45, 60, 70, 70, -9]
    assert out.frame["age"].dtype == frame["age"].dtype
    assert out.meta_of("age").value_labels == {70: "70 or more", 20: "20 or less"}
    assert out.meta_of("age").missing_codes == (-9,)
    out = RecodeStep(column="age", top=70, top_value=99.5).apply(ds)
    assert out.frame["age"].tolist() == [15, 30, 45, 60, 99.5, 99.5, -9]
    assert out.meta_of("age").value_labels == {99.5: "70 or more"}


def test_merge_categories_with_labels():
    ds = Dataset(pd.DataFrame({"sex": [1, 2, 3, 1]}),
                 meta={"sex": VariableMeta(value_labels={1: "Male", 2: "Female", 3: "Other"})})
    out = RecodeStep(column="sex", merge=(2, 3)).apply(ds)
    assert out.frame["sex"].tolist() == [1, 2, 2, 1]
    assert out.meta_of("sex").value_labels == {1: "Male", 2: "Female / Other"}
    out = RecodeStep(column="sex", merge=("2", 3.0), into=9).apply(ds)
    assert out.frame["sex"].tolist() == [1, 9, 9, 1]
    assert out.meta_of("sex").value_labels == {1: "Male", 9: "Female / Other"}


def test_merge_text_categories_keeps_their_form():
    ds = Dataset(pd.DataFrame({"edu": ["a", "b", "c", "a"], "zip": ["02138", "02139", "02141", "02138"]}))
    out = RecodeStep(column="edu", merge=("b", "a")).apply(ds)
    assert out.frame["edu"].tolist() == ["b/a", "b/a", "c", "b/a"]
    assert out.meta_of("edu").value_labels == {}
    # codes written as numbers on the command line still find the text codes, and the merged code is the
    # smallest of the data's own codes, leading zero included
    out = RecodeStep(column="zip", merge=(2139, 2138)).apply(ds)
    assert out.frame["zip"].tolist() == ["02138", "02138", "02141", "02138"]


def test_merge_numbers_defaults_to_the_smallest():
    ds = Dataset(pd.DataFrame({"kids": [0, 1, 2, 3, 4, 5]}))
    out = RecodeStep(column="kids", merge=(5, 3, 4)).apply(ds)
    assert out.frame["kids"].tolist() == [0, 1, 2, 3, 3, 3]
    assert out.frame["kids"].dtype == np.int64
    assert out.meta_of("kids").value_labels == {3: "5 / 3 / 4"}


@pytest.mark.parametrize("kwargs, message", [
    ({"column": "", "top": 1}, "Choose the variable"),
    ({"column": "age"}, "needs categories"),
    ({"column": "age", "merge": (1,)}, "at least two"),
    ({"column": "age", "top": 10, "bottom": 20}, "below the top"),
])
def test_recode_step_validation(kwargs, message):
    with pytest.raises(InputError, match=message):
        RecodeStep(**kwargs)


def test_recode_step_errors_on_data():
    ds = Dataset(pd.DataFrame({"edu": ["a", "b"], "age": [1, 2]}))
    with pytest.raises(InputError, match="numeric"):
        RecodeStep(column="edu", top=3).apply(ds)
    with pytest.raises(InputError, match="None of the values"):
        RecodeStep(column="edu", merge=("x", "y")).apply(ds)
    with pytest.raises(InputError, match="unknown variable"):
        RecodeStep(column="height", top=3).apply(ds)


def test_recode_step_round_trips_and_describes():
    step = RecodeStep(column="age", merge=(15, 30), into=15, top=80.0)
    assert step_from_dict(json.loads(json.dumps(step.to_dict()))) == step
    assert step.describe() == "Recode age: merge 2 categories into 15, top-code at 80"


# -- previews ------------------------------------------------------------------------------------------------------
def test_level_counts(ds):
    counts = level_counts(ds, "age", AGE_H, 1)
    # data: 20, 25, 31, 38, 45, missing, 25
    assert counts.to_dict(orient="list") == {
        "value": ["20-29", "30-39", "40-49", "(missing)"],
        "records": [3, 2, 1, 1],
        "original values": [2, 2, 1, 0],
    }


def test_changed_counts_after_a_merge():
    before = Dataset(pd.DataFrame({"edu": ["a", "b", "c", "a", None]}))
    after = RecodeStep(column="edu", merge=("a", "b"), into="ab").apply(before)
    table = changed_counts(before, after, ["edu"])
    assert table.to_dict(orient="list") == {
        "variable": ["edu"] * 3,
        "value": ["ab", "c", "(missing)"],
        "records": [3, 1, 1],
        "original values": [2, 1, 0],
    }


def test_risk_effect_by_hand():
    frame = pd.DataFrame({"a": [1, 1, 2, 3, 3, 3], "b": ["x", "x", "y", "y", "z", "z"]})
    before = Dataset(frame, roles=Roles(qis=("a", "b")))
    after = RecodeStep(column="b", merge=("y", "z"), into="yz").apply(before)
    risk = risk_effect(before, after, k=3).set_index("measure")
    # before: classes (1,x) 2, (2,y) 1, (3,y) 1, (3,z) 2; after: (1,x) 2, (2,yz) 1, (3,yz) 3
    assert risk.loc["Records in classes smaller than 3"].tolist() == [6, 3, -3]
    assert risk.loc["Sample uniques (class of 1)"].tolist() == [2, 1, -1]
    assert risk.loc["Distinct QI patterns"].tolist() == [4, 3, -1]
    assert risk.loc["Smallest class size"].tolist() == [1, 1, 0]
    with_minucs = risk_effect(before, after, k=2, minucs=True).set_index("measure")
    # k = 2 MINUCs are minimal sample-unique combinations: before {a} of r2 (a=2) and {a, b} of r3 (3, y);
    # after only {a} of r2
    assert with_minucs.loc["MINUCs"].tolist() == [2, 1, -1]


def test_preview_step_is_the_applied_step(ds):
    step = GeneralizeStep.build({"age": 1}, {"age": AGE_H})
    preview = preview_step(ds, step, k=2)
    assert preview.dataset.frame.equals(step.apply(ds).frame)
    assert preview.counts["variable"].unique().tolist() == ["age"]
    assert set(preview.risk["measure"]) >= {"Records in classes smaller than 2", "Smallest class size"}
    recode = RecodeStep(column="income", top=50.0)
    preview = preview_step(ds, recode, k=2)
    assert preview.counts["variable"].unique().tolist() == ["income"]
    # the top code shows with its new value label: 50, 60 and 70 became it
    assert preview.counts.set_index("value").loc["50 or more"].tolist() == ["income", 3, 3]


def test_preview_minuc_counts_carry_over_and_match_fresh_searches():
    """The preview's MINUC count after a merge carries the untouched records' MINUCs over from the search
    before (its own, or one handed in, e.g. the MINUCs page's): the same counts as two searches from scratch;
    a search for another k handed in is ignored."""
    from kanon_core.risk.minucs import find_minucs

    rng = np.random.default_rng(11)
    frame = pd.DataFrame({"a": rng.integers(0, 7, 150), "b": rng.integers(0, 3, 150), "c": rng.integers(0, 4, 150),
                          "d": rng.choice([1.0, 2.0, np.nan], 150)})
    before = Dataset(frame, roles=Roles(qis=("a", "b", "c", "d")))
    step = RecodeStep(column="a", merge=(5, 6))
    after = step.apply(before)
    qis = ("a", "b", "c", "d")
    for k in (2, 3):
        fresh = [find_minucs(ds.qi_matrix(list(qis)), k=k, missing=ds.missing).total for ds in (before, after)]
        page = find_minucs(before.qi_matrix(list(qis)), k=k, missing=before.missing)
        other_k = find_minucs(before.qi_matrix(list(qis)), k=k + 1, missing=before.missing)
        for given in (None, page, other_k):
            risk = preview_step(before, step, k=k, qis=qis, minucs=True, minucs_before=given).risk
            assert risk.set_index("measure").loc["MINUCs", ["before", "after"]].tolist() == fresh


def _occupations() -> Dataset:
    frame = pd.DataFrame({"occ": [1, 2, 3, 3, 4, 9]})
    labels = {1: "Farmer", 2: "Laborer", 3: "Clerk", 4: "Manager", 9: "Refused"}
    return Dataset(frame=frame, meta={"occ": VariableMeta(value_labels=labels, missing_codes=(9,))})


def test_recoding_into_an_existing_code_names_both_in_its_label():
    """Merging 1 and 2 into 3 ("Clerk") labelled the clerks "Farmer / Laborer" too; top-coding 3 and more into
    1 ("Farmer") labelled the farmers "3 or more". The category holds both, and its label says so."""
    ds = _occupations()
    merged = RecodeStep(column="occ", merge=(1, 2), into=3).apply(ds)
    assert merged.frame["occ"].tolist() == [3, 3, 3, 3, 4, 9]
    assert dict(merged.meta_of("occ").value_labels) == {3: "Farmer / Laborer / Clerk", 4: "Manager", 9: "Refused"}
    topped = RecodeStep(column="occ", top=3, top_value=1).apply(ds)
    assert topped.frame["occ"].tolist() == [1, 2, 1, 1, 1, 9]
    assert dict(topped.meta_of("occ").value_labels) == {1: "Farmer / 3 or more", 2: "Laborer", 9: "Refused"}
    new = RecodeStep(column="occ", merge=(1, 2), into=7).apply(ds)  # a new code: the merged ones' labels only
    assert dict(new.meta_of("occ").value_labels)[7] == "Farmer / Laborer"


@pytest.mark.parametrize("step", [RecodeStep(column="occ", merge=(1, 2), into=9),
                                  RecodeStep(column="occ", top=3, top_value=9),
                                  RecodeStep(column="occ", bottom=2, bottom_value=9)])
def test_recoding_into_a_declared_missing_code_is_refused(step):
    """The records would silently become missing (wildcards to every count) and the refusals relabelled."""
    with pytest.raises(InputError, match=r"^The value to .* is a declared missing code of 'occ'"):
        step.apply(_occupations())


@pytest.mark.parametrize("value", ["3+", True])
def test_a_top_code_into_a_text_in_a_numeric_variable_is_refused(value):
    with pytest.raises(InputError, match="'occ' holds numbers: the value to top-code into must be a finite number"):
        RecodeStep(column="occ", top=3, top_value=value).apply(_occupations())


def test_a_date_variable_is_not_merged_or_top_coded():
    """Merged dates became text beside dates, and the step's timestamps made every recipe and project file of
    the session fail to write (a traceback on the Export page). Refused, pointing to date hierarchies."""
    frame = pd.DataFrame({"dob": pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"])})
    ds = Dataset(frame=frame)
    for step in (RecodeStep(column="dob", merge=tuple(frame["dob"][:2])), RecodeStep(column="dob", top=1.0)):
        with pytest.raises(InputError, match="'dob' holds dates: generalize it with a date hierarchy"):
            step.apply(ds)


def test_a_step_recorded_before_codes_were_kept_replays_as_recorded():
    """A recipe (or project) written before generalization kept declared missing codes has no
    ``keep_missing_codes`` field: it replays as it was recorded (the codes blank), so the results it recorded
    still verify, and it is written back in its own form. A step made now keeps the codes and says so."""
    from kanon_core.history import History
    from kanon_core.recipe import Recipe
    from kanon_core.steps import step_from_dict

    ds = _coded([20, -9, 31, None, -8, 25], "Int64", (-9, -8), {-9: "Refused"})
    new = GeneralizeStep.build({"age": 1}, {"age": AGE_H})
    old_form = {k: v for k, v in json.loads(json.dumps(new.to_dict())).items() if k != "keep_missing_codes"}
    old = step_from_dict(old_form)
    assert new.keep_missing_codes and not old.keep_missing_codes
    assert "keep_missing_codes" not in old.to_dict() and new.to_dict()["keep_missing_codes"] is True
    assert old.apply(ds).frame["age"].tolist() == ["20-29", None, "30-39", None, None, "20-29"]
    assert old.apply(ds).meta_of("age") == VariableMeta(label="Age")
    assert new.apply(ds).frame["age"].tolist() == ["20-29", "-9", "30-39", None, "-8", "20-29"]
    # recorded with the old step, saved, loaded and replayed: every recorded result verifies
    history = History.start(ds)
    history.apply(old)
    text = Recipe.from_history(history).to_json()
    assert "keep_missing_codes" not in text
    replay = Recipe.from_json(text).replay_checked(ds)
    assert replay.verified_steps == 1 and replay.history.current.dataset.frame["age"].tolist() == [
        "20-29", None, "30-39", None, None, "20-29"]
