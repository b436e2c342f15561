"""Level 0 of a hierarchy is the variable as the data holds it, whatever rows its values matched.

Rows are matched stripped (hand-written hierarchy files are padded), so a text column holding ``"a"`` and
``" a"`` matches both to the row ``a``. A release at level 0 keeps the values, two categories; the search
counted one, and claimed k = 2 for a file of unique records. These tests take the intruder's side: the
search's chosen release, written by its recipe step, is checked by comparing released records with each
person's values as released (their own text at level 0, their row's label above).
"""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.treat.default_hierarchy import default_hierarchy
from kanon_core.treat.hierarchy import Hierarchy, read_arx_hierarchy
from kanon_core.treat.lattice import build_problem, search_optimal
from tests.test_lattice import Case, cases, consistent_records, searched_release

PADDINGS = ["", " ", "  ", "\t"]


def test_values_differing_by_spaces_are_two_categories_at_level_0():
    frame = pd.DataFrame({"v": ["a", " a", "b", "b"], "w": ["x", "x", "y", "y"]})
    ds = Dataset(frame=frame, roles=Roles(qis=("v", "w")))
    hier = {"v": read_arx_hierarchy(b"a;*\nb;*\n", "v"), "w": read_arx_hierarchy(b"x;*\ny;*\n", "w")}
    res = search_optimal(build_problem(ds, hier), k=2)
    assert res.levels["v"] == 1  # at level 0 the release holds "a" and " a" once each
    released = res.step().apply(ds).frame
    assert released.groupby(["v", "w"], dropna=False).size().min() >= 2


@given(cases(), st.data())
def test_nobody_is_findable_among_fewer_than_k_when_values_carry_spaces(case, data):
    frame = case.frame.fillna("v0")
    padded = frame.map(lambda v: data.draw(st.sampled_from(PADDINGS)) + v + data.draw(st.sampled_from(PADDINGS)))
    case = Case(padded, case.rows, case.missing, case.k)
    found = searched_release(case, data)
    if found is None:
        return
    res, release = found
    maps = [{r[0]: r for r in case.rows[q]} for q in case.qis]
    people = [tuple(v if lv == 0 else m[v.strip()][lv] for m, v, lv in zip(maps, rec, res.level_tuple, strict=True))
              for rec in padded[list(case.qis)].itertuples(index=False)]
    assert min(consistent_records(p, release) for p in people) >= case.k


def test_the_automatic_hierarchy_of_values_differing_by_spaces_is_one_row_each_and_reads_back():
    values = [" ", "  ", "a", " a", "b", "c", "d", "a"]
    ds = Dataset(frame=pd.DataFrame({"v": values}), roles=Roles(qis=("v",)))
    hier = default_hierarchy(ds, "v")  # was refused: "rows 1 and 2 have the same original value"
    assert sorted(r[0] for r in hier.rows) == ["", "a", "b", "c", "d"]
    assert all(label.strip() and not label.startswith(" /") for r in hier.rows for label in r[1:])
    assert read_arx_hierarchy(hier.to_arx_csv().encode(), "v").rows == hier.rows
    assert Hierarchy.from_frame(hier.to_frame(), "v").rows == hier.rows
    tables = hier.tables(ds.qi_matrix(["v"]).values[0])
    assert len(tables.labels[0]) == 7  # the data's seven distinct texts, at level 0
