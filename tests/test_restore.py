"""Suppressed cells restored from other released variables, against a brute force written from the definition."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.risk.restore import restorable_cells

QIS = ("q0", "q1", "q2")


def _brute(frame: pd.DataFrame, blank: np.ndarray, k: int, missing: str) -> tuple[int, dict[str, int], int]:
    """Restorable cells per QI and the people then findable below k, by loops over records and variables."""
    n = len(frame)
    cols = list(frame.columns)

    def shown(i: int, c: str):
        if c in QIS and blank[i, QIS.index(c)] and not before[i, QIS.index(c)]:
            return None
        v = frame.at[i, c]
        return None if pd.isna(v) else v

    restored = np.zeros_like(blank)
    while True:  # rounds, until one restores nothing: a restored cell is shown to the next round
        before = restored.copy()
        for j, q in enumerate(QIS):
            for v in cols:
                if v == q:
                    continue
                seen: dict = {}
                conflict = False
                for r in range(n):
                    a, b = shown(r, v), shown(r, q)
                    if a is not None and b is not None:
                        if seen.setdefault(a, b) != b:
                            conflict = True
                if conflict:
                    continue
                for i in range(n):
                    if blank[i, j] and not before[i, j] and shown(i, v) is not None and shown(i, v) in seen \
                            and seen[shown(i, v)] == frame.at[i, q]:
                        restored[i, j] = True
        if (restored == before).all():
            break
    by_variable = {q: int(restored[:, j].sum()) for j, q in enumerate(QIS) if restored[:, j].any()}

    def consistent(person: int, rec: int) -> bool:
        for j, q in enumerate(QIS):
            truth = frame.at[person, q]
            if blank[rec, j] and not restored[rec, j]:
                continue
            val = frame.at[rec, q]
            if pd.isna(truth) and pd.isna(val):
                continue
            if (pd.isna(truth) or pd.isna(val)) and missing == "wildcard":
                continue
            if pd.isna(truth) or pd.isna(val) or truth != val:
                return False
        return True

    findable = sum(1 for p in range(n) if sum(consistent(p, r) for r in range(n)) < k)
    return int(restored.sum()), by_variable, findable


@st.composite
def releases(draw):
    n = draw(st.integers(2, 12))
    cell = st.one_of(st.none(), st.integers(0, 2))
    frame = pd.DataFrame({c: pd.Series([draw(cell) for _ in range(n)], dtype=object)
                          for c in (*QIS, "school", "score")})
    blank = np.array([[draw(st.booleans()) and not pd.isna(frame.at[i, q]) for q in QIS] for i in range(n)])
    return frame, blank, draw(st.integers(2, 4)), draw(st.sampled_from(["wildcard", "category"]))


@settings(max_examples=150, deadline=None)
@given(releases())
def test_restorable_cells_match_the_brute_force(case):
    frame, blank, k, missing = case
    parent = Dataset(frame=frame, roles=Roles(qis=QIS), missing=missing)
    child_frame = frame.copy()
    for j, q in enumerate(QIS):
        child_frame.loc[blank[:, j], q] = None
    got = restorable_cells(parent, parent.with_frame(child_frame), QIS, k)
    n, by_variable, findable = _brute(frame, blank, k, missing)
    assert (got.n_suppressed, got.n_restorable, got.by_variable, got.findable_after) == \
        (int(blank.sum()), n, by_variable, findable)
    assert got.findable_after >= got.findable_before


def test_a_school_code_gives_back_the_region_it_lies_in():
    """Each school lies in one region: a region blanked on a pupil's record is read off the school's other
    pupils. A test score shared by chance with a record of another region determines nothing."""
    frame = pd.DataFrame({"region": ["n", "n", "n", "s", "s", "s"], "sex": ["m", "f", "m", "f", "m", "f"],
                          "school": [1, 1, 1, 2, 2, 2], "score": [5, 6, 7, 5, 8, 9]})
    parent = Dataset(frame=frame, roles=Roles(qis=("region", "sex")))
    child = parent.with_frame(frame.assign(region=["n", None, "n", "s", "s", "s"]))
    got = restorable_cells(parent, child, ("region", "sex"), 2)
    assert (got.n_suppressed, got.n_restorable, got.via) == (1, 1, {"region": "school"})
    assert "region from school (1)" in got.sentence() and "'n'" not in got.sentence()
    alone = parent.with_frame(frame.drop(columns=["school"]).assign(region=["n", None, "n", "s", "s", "s"]))
    assert restorable_cells(parent.with_frame(frame.drop(columns=["school"])), alone, ("region", "sex"),
                            2).n_restorable == 0


def test_a_restored_cell_restores_in_the_next_round():
    """Pupil 1's region and district are suppressed, pupil 0's district too. Round 1: pupil 1's region is read off
    its school (pupil 0 shows the school's region), pupil 0's district off its region (region n is shown with
    district 1 only). Pupil 1's district needs its region, shown only once written back: round 2 restores it.
    One round counted 2 of the 3 cells."""
    frame = pd.DataFrame({"region": ["n", "n", "n", "s", "s"], "district": [1, 1, 1, 2, 2],
                          "school": ["A", "A", "B", "C", "C"]})
    parent = Dataset(frame=frame, roles=Roles(qis=("region", "district")))
    child = parent.with_frame(frame.assign(region=["n", None, "n", "s", "s"], district=[None, None, 1, 2, 2]))
    got = restorable_cells(parent, child, ("region", "district"), 2)
    assert (got.n_suppressed, got.n_restorable) == (3, 3)
    assert got.by_variable == {"region": 1, "district": 2} and got.via == {"region": "school", "district": "region"}


def test_kanon_suppress_reports_the_cells_the_release_gives_back(tmp_path, capsys):
    """Sex costs 10, so the unique (n, f) pupil's region is suppressed, with the (s, f) pupils' for company
    (the strict model: the blanked records share their pattern); each school lies in one region, so both regions are read off the school codes and
    the (n, f) pupil is unique again. The release as written, read back with kanon's reader, gives the same."""
    from kanon_core.cli import main
    from kanon_core.io import load_dataset

    rows = [("n", "m", 1)] * 2 + [("s", "m", 2)] * 2 + [("n", "f", 1)] + [("s", "f", 2)] * 2
    data = tmp_path / "d.csv"
    data.write_text("region,sex,school\n" + "".join(f"{r},{s},{c}\n" for r, s, c in rows), encoding="utf-8")
    out = tmp_path / "s.json"
    assert main(["suppress", str(data), "--qi", "region,sex", "--k", "2", "--importance", "sex=10",
                 "-o", str(tmp_path / "r.csv"), "--json", str(out)]) == 0
    summary = json.loads(out.read_text())["restorable"]
    assert summary == {"cells": 3, "by_variable": {"region": 3}, "via": {"region": "school"},
                       "findable_below_k_after_restoring": 1}
    roles = Roles(qis=("region", "sex"))
    ds, release = load_dataset(data, roles=roles), load_dataset(tmp_path / "r.csv", roles=roles)
    ref = restorable_cells(ds, release, ("region", "sex"), 2)
    assert (ref.n_restorable, ref.findable_before, ref.findable_after) == (3, 0, 1)
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("kanon suppress: warning: 3 of the 3 suppressed cells can be restored")
    assert "1 person is findable among fewer than 2" in err[-1]


def test_kanon_apply_reports_each_suppression_step_s_restorable_cells(tmp_path, capsys):
    """A recipe replayed by `kanon apply` said "0 records below k" of a release whose suppressed regions the
    school codes give back; it now says so per step, in its JSON and on standard error."""
    from kanon_core.cli import main
    from kanon_core.history import History
    from kanon_core.io import load_dataset
    from kanon_core.recipe import Recipe
    from kanon_core.steps import SetRoles
    from kanon_core.treat.suppress import SuppressStep

    rows = [("n", "m", 1)] * 2 + [("s", "m", 2)] * 2 + [("n", "f", 1)] + [("s", "f", 2)] * 2
    data = tmp_path / "d.csv"
    data.write_text("region,sex,school\n" + "".join(f"{r},{s},{c}\n" for r, s, c in rows), encoding="utf-8")
    h = History.start(load_dataset(data))
    h.apply(SetRoles(qis=("region", "sex")))
    h.apply(SuppressStep(qis=("region", "sex"), k=2, importance=(("sex", 10.0),)))
    recipe = tmp_path / "r.json"
    Recipe.from_history(h, input_path="d.csv", extra={"k": 2}).save(recipe)
    out = tmp_path / "a.json"
    assert main(["apply", str(recipe), str(data), "-o", str(tmp_path / "rel.csv"), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["restorable"] == [
        {"step": 2, "cells": 3, "by_variable": {"region": 3}, "via": {"region": "school"},
         "findable_below_k_after_restoring": 1}]
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        "kanon apply: warning: step 2: 3 of the 3 suppressed cells can be restored")
