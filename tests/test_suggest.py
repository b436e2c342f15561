"""Recode suggestions: touched MINUCs counted by brute force, the upper-bound property, the recodes themselves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.risk.minucs import find_minucs
from kanon_core.treat.suggest import suggest_recodes, suggestion_effect, suggestions_frame
from tests.reference.brute_force import brute_force_minucs


@st.composite
def datasets(draw):
    n = draw(st.integers(6, 30))
    q = draw(st.integers(2, 4))
    cards = [draw(st.integers(3, 6)) for _ in range(q)]
    cols = {}
    for j, c in enumerate(cards):
        col = draw(arrays(np.int64, n, elements=st.integers(0, c - 1)))
        cols[f"v{j}"] = pd.array([int(x) * 10 + 1 for x in col], dtype="Int64")  # values 1, 11, 21, ...
    frame = pd.DataFrame(cols)
    labelled = draw(st.booleans())
    meta = {}
    if labelled:
        meta = {c: VariableMeta(value_labels={int(v): f"cat {v}" for v in frame[c].unique()}) for c in frame}
    return Dataset(frame=frame, meta=meta, roles=Roles(qis=tuple(frame.columns)))


def _touched_by_brute_force(codes: np.ndarray, k: int, j: int, value_codes: set[int]) -> int:
    """MINUCs over records that contain QI j and have one of ``value_codes`` there."""
    total = 0
    for r, masks in enumerate(brute_force_minucs(codes, k)):
        if codes[r, j] in value_codes:
            total += sum(1 for m in masks if (m >> j) & 1)
    return total


@settings(max_examples=40, deadline=None)
@given(datasets(), st.integers(2, 3))
def test_touched_minucs_are_counted_exactly_and_bound_the_removed_ones(ds, k):
    qm = ds.qi_matrix()
    res = find_minucs(qm, k=k)
    suggestions = suggest_recodes(ds, res, qm, per_variable=2)
    for s in suggestions[:8]:
        j = qm.names.index(s.variable)
        # the codes of the recoded values (labels are unique per variable in this data)
        codes_hit = {qm.labels[j].index(label) for label in s.values}
        assert s.minucs_touched == _touched_by_brute_force(qm.codes, k, j, codes_hit)
        effect = suggestion_effect(ds, s, res)
        after = s.apply(ds).qi_matrix()
        brute_after = sum(len(m) for m in brute_force_minucs(after.codes, k))
        assert effect.minucs_after == brute_after
        # a MINUC without a recoded value keeps its counts: only touched ones can go
        assert effect.minucs_removed <= s.minucs_touched
        # records below k, counted by brute force (complete rows here: a class is the identical rows)
        def below(codes):
            rows = [tuple(r) for r in codes]
            return sum(1 for r in rows if rows.count(r) < k)
        if not (qm.codes < 0).any() and not (after.codes < 0).any():
            assert effect.violating_before == below(qm.codes)
            assert effect.violating_after == below(after.codes)
            assert effect.violating_after <= effect.violating_before  # merging never splits a class
        # the categories lost are the categories that disappear
        assert len(qm.values[j]) - len(after.values[j]) == s.categories_lost
        assert s.categories_lost >= 1 and len(after.values[j]) >= 2
    scores = [s.score for s in suggestions]
    assert scores == sorted(scores, reverse=True)


def _sample() -> Dataset:
    # 'age' has a rare top tail (70, 80, 90) and a rare value in the middle; 'sex' makes combinations.
    ages = [20] * 12 + [30] * 12 + [40] * 12 + [50] * 1 + [60] * 10 + [70] * 2 + [80] * 1 + [90] * 1
    sex = ([1, 2] * 40)[: len(ages)]
    frame = pd.DataFrame({"age": pd.array(ages, dtype="Int64"), "sex": pd.array(sex, dtype="Int64"),
                          "region": pd.array([1, 2, 3] * 17 + [1, 2], dtype="Int64")[: len(ages)]})
    return Dataset(frame=frame, roles=Roles(qis=("age", "sex", "region")))


def test_candidates_by_hand():
    ds = _sample()
    res = find_minucs(ds.qi_matrix(), k=2)
    sug = suggest_recodes(ds, res, capacity=5)
    by_kind = {}
    for s in sug:
        by_kind.setdefault((s.variable, s.kind), []).append(s)
    # the rare 50 is merged with a neighbour (40 or 60)
    merges = [tuple(s.steps[0].merge) for s in by_kind[("age", "merge")]]
    assert (40, 50) in merges or (50, 60) in merges
    # rare merge (capacity 5), Angiuli & Waldo's cost n_a n_b / (n_a + n_b) (mean_a - mean_b)^2 by hand:
    # 80+90 (50) first; then 50+60 (10/11 * 100 = 91) before 70+{80,90} (225); then {50,60}+70
    # (11*2/13 * 10.9^2 = 200); then {50..70} (13 records) + {80,90}: one category 50-90.
    rare = by_kind[("age", "merge rare")][0]
    assert [tuple(st.merge) for st in rare.steps] == [(50, 60, 70, 80, 90)]
    assert rare.categories_lost == 4
    counts = rare.apply(ds).frame["age"].value_counts()
    assert counts.min() >= 5
    # an unlabelled numeric variable is top-coded with a clipping step
    tops = by_kind[("age", "top-code")]
    assert all(s.steps[0].top is not None for s in tops)
    top90 = [s for s in tops if s.steps[0].top == 70.0]
    assert top90 and top90[0].categories_lost == 2
    after = top90[0].apply(ds)
    assert sorted(after.frame["age"].dropna().unique().tolist()) == [20, 30, 40, 50, 60, 70]
    # sex has two categories: merging them would drop it, so it is never suggested
    assert not any(s.variable == "sex" for s in sug)
    table = suggestions_frame(sug)
    assert list(table["variable"]) == [s.variable for s in sug]


def test_labelled_tails_are_merged_so_labels_remain():
    ds = _sample()
    meta = {"age": VariableMeta(value_labels={v: f"{v}s" for v in range(20, 100, 10)})}
    ds = Dataset(frame=ds.frame, meta=meta, roles=ds.roles)
    res = find_minucs(ds.qi_matrix(), k=2)
    tops = [s for s in suggest_recodes(ds, res) if s.kind == "top-code"]
    assert tops and all(s.steps[0].merge and s.steps[0].top is None for s in tops)
    after = tops[0].apply(ds)
    merged_into = min(tops[0].steps[0].merge)
    assert "/" in after.value_label("age", merged_into)


def test_result_of_other_qis_is_refused():
    ds = _sample()
    res = find_minucs(ds.qi_matrix(["age", "sex"]), k=2)
    with pytest.raises(InputError, match="MINUC"):
        suggest_recodes(ds, res, ds.qi_matrix(["age", "region"]))


def test_recipe_round_trip_of_a_suggested_step():
    from kanon_core.steps import step_from_dict

    ds = _sample()
    res = find_minucs(ds.qi_matrix(), k=2)
    s = suggest_recodes(ds, res)[0]
    again = [step_from_dict(st.to_dict()) for st in s.steps]
    assert again == list(s.steps)
