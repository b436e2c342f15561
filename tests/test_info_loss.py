"""Prec, the loss metric and discernibility by hand, on a six-record table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InfeasibleError, InputError
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.recode import GeneralizeStep, RecodeStep
from kanon_core.utility.info_loss import information_loss
from tests.reference.brute_force import brute_force_class_sizes

AGE = Hierarchy((("20", "20-29", "*"), ("25", "20-29", "*"), ("30", "30-39", "*"), ("35", "30-39", "*"),
                 ("40", "40-49", "*"), ("45", "40-49", "*")), "age")


def _original() -> Dataset:
    frame = pd.DataFrame({"age": pd.array([20, 25, 30, 35, 40, 20, None], dtype="Int64"),
                          "sex": pd.array([1, 2, 1, 2, 1, 1, 2], dtype="Int64")})
    return Dataset(frame=frame, roles=Roles(qis=("age", "sex")))


def _treated(original: Dataset) -> Dataset:
    frame = original.frame.copy()
    frame["age"] = pd.Series(["20-29", "20-29", "30-39", "30-39", "*", None, None], dtype=object)
    return original.with_frame(frame)


def test_prec_and_lm_by_hand():
    orig = _original()
    res = information_loss(orig, _treated(orig), ["age", "sex"], {"age": AGE})
    age = res.table.set_index("variable").loc["age"]
    # 6 observed cells (the 7th is missing in the original): levels 1,1,1,1 of 2, then "*" (2 of 2) and a
    # suppressed cell (counts as 2 of 2): mean h/|DGH| = (4 * 0.5 + 1 + 1) / 6 = 2/3, Prec = 1/3.
    assert age["cells"] == 6 and age["suppressed"] == 1
    assert age["prec"] == pytest.approx(1 / 3)
    # LM with the hierarchy's 6 values: "20-29" and "30-39" stand for 2 leaves: (2-1)/(6-1) = 0.2 each;
    # "*" for all 6: 1; suppressed: 1. Mean = (4 * 0.2 + 1 + 1) / 6.
    assert age["loss_metric"] == pytest.approx((4 * 0.2 + 2) / 6)
    sex = res.table.set_index("variable").loc["sex"]
    assert sex["prec"] == pytest.approx(1.0) and sex["loss_metric"] == 0.0 and sex["cells"] == 7
    # overall over the 13 observed cells: generalization 4 of age; sex none
    assert res.prec == pytest.approx(1 - 4 / 13)
    assert res.loss_metric == pytest.approx((4 * 0.2 + 2) / 13)


def test_lm_without_hierarchy_uses_the_values_the_data_shows():
    orig = _original()
    merged = RecodeStep(column="age", merge=(20, 25, 30)).apply(orig)
    res = information_loss(orig, merged, ["age"])
    age = res.table.iloc[0]
    # domain {20, 25, 30, 35, 40}: the merged value stands for 3 of them: (3-1)/(5-1) = 0.5 for the
    # 4 records with 20, 25, 30 (20 twice); 35 and 40 keep theirs (0).
    assert age["loss_metric"] == pytest.approx(4 * 0.5 / 6)
    assert math.isnan(age["prec"]) and math.isnan(res.prec)


def test_prec_equals_the_level_share_of_a_generalize_step():
    orig = _original()
    step = GeneralizeStep.build({"age": 1}, {"age": AGE})
    res = information_loss(orig, step.apply(orig), ["age"], {"age": AGE})
    assert res.prec == pytest.approx(0.5)  # every observed cell at level 1 of 2


def test_discernibility_is_the_sum_of_class_sizes_both_semantics():
    orig = _original()
    treated = _treated(orig)
    for missing in ("wildcard", "category"):
        o, t = orig.with_missing(missing), treated.with_missing(missing)
        res = information_loss(o, t, ["age", "sex"])
        for ds, value in ((o, res.discernibility_original), (t, res.discernibility_treated)):
            codes = ds.qi_matrix(["age", "sex"]).codes
            assert value == int(brute_force_class_sizes(codes, missing)[0].sum())
        # class sizes counted by the caller (the report counts each file once) give the same figures
        counted = [brute_force_class_sizes(ds.qi_matrix(["age", "sex"]).codes, missing)[0] for ds in (o, t)]
        given_sizes = information_loss(o, t, ["age", "sex"], counted=counted)
        assert given_sizes.table.equals(res.table)
        assert (given_sizes.discernibility_original, given_sizes.discernibility_treated,
                given_sizes.avg_class_original, given_sizes.avg_class_treated) == (
            res.discernibility_original, res.discernibility_treated, res.avg_class_original, res.avg_class_treated)
        with pytest.raises(ValueError):
            information_loss(o, t, ["age", "sex"], counted=[c[:-1] for c in counted])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([20, 25, 30, 35, 40, 45]), min_size=2, max_size=25), st.integers(0, 2))
def test_prec_is_one_minus_level_share_for_any_level(ages, level):
    frame = pd.DataFrame({"age": pd.array(ages, dtype="Int64")})
    orig = Dataset(frame=frame, roles=Roles(qis=("age",)))
    out = GeneralizeStep.build({"age": level}, {"age": AGE}).apply(orig)
    res = information_loss(orig, out, ["age"], {"age": AGE})
    assert res.prec == pytest.approx(1 - level / 2)
    # LM from the hierarchy: leaves under each label at that level (1, 2 or 6 of 6)
    leaves = {0: 1, 1: 2, 2: 6}[level]
    assert res.loss_metric == pytest.approx((leaves - 1) / 5)
    assert np.isfinite(res.avg_class_treated)


def test_bad_input():
    orig = _original()
    with pytest.raises(InputError, match="both versions"):
        information_loss(orig, orig.with_frame(orig.frame.drop(columns=["sex"])), ["sex"])
    with pytest.raises(InputError, match="quasi-identifier"):
        information_loss(orig, orig, [])


def test_version_hierarchies_prefer_the_generalization_steps():
    """A variable generalized by a step keeps that step's hierarchy, whatever the session holds now; the
    others take the session's; the content hash changes with any row."""
    from kanon_core.history import History
    from kanon_core.treat.recode import GeneralizeStep
    from kanon_core.utility.info_loss import hierarchies_fingerprint, version_hierarchies

    ha = Hierarchy((("0", "0-1", "*"), ("1", "0-1", "*"), ("2", "2-3", "*"), ("3", "2-3", "*")), "a")
    edited = Hierarchy((("0", "*"), ("1", "*"), ("2", "*"), ("3", "*")), "a")
    hb = Hierarchy((("0", "low", "*"), ("1", "low", "*"), ("2", "high", "*")), "b")
    frame = pd.DataFrame({"a": [0, 1, 2, 3] * 5, "b": [0, 1, 2, 0, 1] * 4})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b")), name="v"))
    h.apply(GeneralizeStep.build({"a": 1, "b": 0}, {"a": ha}))
    got = version_hierarchies(h, None, {"a": edited, "b": hb})
    assert got["a"].rows == ha.rows and got["b"].rows == hb.rows
    assert version_hierarchies(h, 0, {"a": edited})["a"].rows == edited.rows  # v0: no step yet
    alone = version_hierarchies(h)  # no session (the command line): the step's hierarchy only
    assert set(alone) == {"a"} and alone["a"].rows == ha.rows
    assert hierarchies_fingerprint({"a": ha}) == hierarchies_fingerprint({"a": Hierarchy(ha.rows, "a")})
    assert hierarchies_fingerprint({"a": ha}) != hierarchies_fingerprint({"a": edited})
    # the report measures with the same hierarchies: Prec of a at level 1 of 2 on every cell
    loss = information_loss(h.original.dataset, h.current.dataset, ["a", "b"], got)
    assert loss.table.set_index("variable").loc["a", "prec"] == pytest.approx(0.5)


@pytest.mark.parametrize("rows, level", [
    # a label repeated over levels (top coding kept at level 2): 90 -> 80+ -> 80+ -> *
    ((("20", "20-39", "<80", "*"), ("30", "20-39", "<80", "*"), ("50", "40-79", "<80", "*"),
      ("90", "80+", "80+", "*")), 2),
    # values kept as themselves at level 1: 20 -> 20 -> *
    ((("20", "20", "*"), ("50", "50", "*"), ("90", "90+", "*"), ("95", "90+", "*")), 1),
])
def test_prec_of_a_generalization_step_equals_the_lattice_s_when_labels_repeat(rows, level):
    """Sweeney's Prec of a full-domain generalization charges its level to every cell. A hierarchy may keep a
    value as itself at a level or repeat a label over levels; read off the released text alone those cells
    looked ungeneralized (level 0) or lower (the first level with that label), so the Compare page and the
    report gave another Prec than the Recode page's search (0.833 against 0.5 for the second hierarchy). With
    the level the step applied (version_levels) both agree, checked against the lattice's own evaluation."""
    from kanon_core.history import History
    from kanon_core.treat.lattice import build_problem, evaluate_node
    from kanon_core.utility.info_loss import version_hierarchies, version_levels

    h_age = Hierarchy(rows, "age")
    leaves = [int(r[0]) for r in rows]
    ds = Dataset(pd.DataFrame({"age": [leaves[i % len(leaves)] for i in range(9)] + [leaves[-1]]}),
                 roles=Roles(qis=("age",)))
    lattice = 1 - evaluate_node(build_problem(ds, {"age": h_age}), (level,), 1, max_suppression=1.0,
                                metric="prec").loss
    assert lattice == pytest.approx(1 - level / (len(rows[0]) - 1))
    hist = History.start(ds)
    hist.apply(GeneralizeStep.build({"age": level}, {"age": h_age}))
    assert version_levels(hist) == {"age": level} and version_levels(hist, 0) == {}
    loss = information_loss(ds, hist.current.dataset, ["age"], version_hierarchies(hist),
                            levels=version_levels(hist))
    assert loss.prec == pytest.approx(lattice)
    # a release read without its step (no level known) is charged by its text, as before
    unknown = information_loss(ds, hist.current.dataset, ["age"], version_hierarchies(hist))
    assert unknown.prec > lattice


def test_summary_labels_say_what_the_numbers_are():
    orig = _original()
    measures = information_loss(orig, _treated(orig), ["age", "sex"], {"age": AGE}).summary()["measure"].tolist()
    assert "Discernibility (sum of squared class sizes)" in measures
    assert "Records per class" in measures and not any("LeFevre" in m for m in measures)


def test_a_code_a_step_declared_missing_is_not_charged_and_prec_equals_the_lattice_s():
    """-9 observed in the original, declared missing by a step, then age generalized to level 1 (the code kept
    as "-9"): the search after the declaration reads -9 as missing from the start and charges the other cells
    level 1 (Prec 0.5). The Compare page charged the two -9 cells as suppressed (Prec 1/3 here, LM 1 each);
    they took no information and are now left out, so both pages give 0.5 and no value reads suppressed."""
    from kanon_core.history import History
    from kanon_core.steps import DeclareMissingCodes
    from kanon_core.treat.lattice import build_problem, evaluate_node
    from kanon_core.utility.info_loss import version_hierarchies, version_levels
    from kanon_core.utility.suppressed import suppressed_mask

    ds = Dataset(pd.DataFrame({"age": [20, 25, 30, 35, -9, -9]}), roles=Roles(qis=("age",)))
    hist = History.start(ds)
    hist.apply(DeclareMissingCodes("age", (-9,)))
    declared = hist.current.dataset
    lattice = 1 - evaluate_node(build_problem(declared, {"age": AGE}), (1,), 1, max_suppression=1.0,
                                metric="prec").loss
    hist.apply(GeneralizeStep.build({"age": 1}, {"age": AGE}))
    release = hist.current.dataset
    assert release.frame["age"].tolist()[-2:] == ["-9", "-9"]  # kept, declared missing
    loss = information_loss(ds, release, ["age"], version_hierarchies(hist), levels=version_levels(hist))
    row = loss.table.set_index("variable").loc["age"]
    assert row["cells"] == 4 and row["suppressed"] == 0 == suppressed_mask(ds, release, ["age"]).total
    assert loss.prec == pytest.approx(lattice) == pytest.approx(0.5)
    assert row["loss_metric"] == pytest.approx(0.2)  # each 20-29 / 30-39 stands for 2 of the 6 values


def test_a_value_recoded_into_a_declared_code_is_charged_as_suppressed():
    """x written as -9, the code the release declares missing: that value is gone (a suppression in effect),
    unlike a -9 the original held."""
    from kanon_core.steps import DeclareMissingCodes
    from kanon_core.utility.suppressed import suppressed_mask

    ds = Dataset(pd.DataFrame({"age": [20, 25, 30, -9]}), roles=Roles(qis=("age",)))
    frame = ds.frame.copy()
    frame.loc[0, "age"] = -9
    after = DeclareMissingCodes("age", (-9,)).apply(ds.with_frame(frame))
    loss = information_loss(ds, after, ["age"])
    row = loss.table.set_index("variable").loc["age"]
    assert row["cells"] == 3 and row["suppressed"] == 1 == suppressed_mask(ds, after, ["age"]).total
    assert row["loss_metric"] == pytest.approx(1 / 3)


@given(st.lists(st.tuples(st.sampled_from([1, 2, 3, -9, None]), st.sampled_from([1, 2, -9, None]),
                          st.sampled_from([1, 2, 3])), min_size=3, max_size=25),
       st.lists(st.booleans(), min_size=2, max_size=2), st.sampled_from(["category", "wildcard"]))
@settings(max_examples=60, deadline=None)
def test_the_information_loss_suppressed_count_is_the_one_definition(rows, declare, missing):
    """On random files where a step declares -9 missing in some QIs, then local suppression to k = 2: the
    information-loss table's suppressed values per variable are suppressed_mask's, and its cells are the cells
    observed in the original less those a step declared missing."""
    from kanon_core.history import History
    from kanon_core.steps import DeclareMissingCodes
    from kanon_core.treat.suppress import SuppressStep
    from kanon_core.utility.suppressed import suppressed_mask

    qis = ("a", "b", "c")
    frame = pd.DataFrame(rows, columns=list(qis)).astype("Int64")
    ds = Dataset(frame, roles=Roles(qis=qis), missing=missing)
    hist = History.start(ds)
    for q, yes in zip(("a", "b"), declare, strict=True):
        if yes:
            hist.apply(DeclareMissingCodes(q, (-9,)))
    try:
        hist.apply(SuppressStep(qis=qis, k=2))
    except InfeasibleError:  # a file no suppression can bring to k: nothing to compare
        return
    release = hist.current.dataset
    loss = information_loss(ds, release, list(qis)).table.set_index("variable")
    sup = suppressed_mask(ds, release, list(qis)).per_variable()
    for q in qis:
        assert int(loss.loc[q, "suppressed"]) == sup[q]
        declared = ds.frame[q].eq(-9).fillna(False).to_numpy() & release.missing_mask(q) if q in ("a", "b") and \
            declare[("a", "b").index(q)] else np.zeros(len(frame), dtype=bool)
        assert int(loss.loc[q, "cells"]) == int((~ds.missing_mask(q) & ~declared).sum())
