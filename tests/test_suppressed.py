"""Suppressed cells: one definition (observed before, missing after), checked cell by cell against a
brute-force loop, and the timeline, the bias table and the report count through it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.risk.timeline import version_risk
from kanon_core.utility.bias import suppressed_cells
from kanon_core.utility.suppressed import suppressed_mask


def _pair(before_cells: list[list[int | None]], blank: list[list[bool]]) -> tuple[Dataset, Dataset]:
    cols = ["a", "b", "c"]
    before = pd.DataFrame(before_cells, columns=cols, dtype=object)
    after = before.copy()
    for i, row in enumerate(blank):
        for j, b in enumerate(row):
            if b:
                after.iat[i, j] = None
    roles = Roles(qis=tuple(cols))
    return Dataset(frame=before, roles=roles), Dataset(frame=after, roles=roles)


cell = st.one_of(st.none(), st.integers(0, 3))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.lists(cell, min_size=3, max_size=3), min_size=n, max_size=n),
    st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=n, max_size=n))))
def test_suppressed_cells_against_a_cell_by_cell_count(data):
    before_cells, blank = data
    before, after = _pair(before_cells, blank)
    brute = {v: sum(1 for i in range(len(before_cells))
                    if before_cells[i][j] is not None and blank[i][j]) for j, v in enumerate("abc")}
    cells = suppressed_mask(before, after)
    assert cells.per_variable() == brute
    assert cells.total == sum(brute.values())
    assert cells.records_touched == sum(1 for i in range(len(before_cells))
                                        if any(before_cells[i][j] is not None and blank[i][j] for j in range(3)))
    table = suppressed_cells(before, after, ["a", "b", "c"]).set_index("variable")
    assert table["n_suppressed"].to_dict() == brute
    assert version_risk(before, after, 2).suppressed_cells == sum(brute.values())


def test_most_and_completely_suppressed_by_hand():
    before, after = _pair([[1, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [3, 0, 0]],
                          [[True, False, False], [False, False, False], [True, False, False],
                           [True, False, False], [True, False, False]])
    cells = suppressed_mask(before, after, ["a"])
    most = cells.most_suppressed(before)
    assert most.to_dict("records") == [{"variable": "a", "value": "3", "suppressed": 2, "percent_of_variable": 50.0}]
    gone = cells.completely_suppressed(before)
    assert gone.to_dict("records") == [{"variable": "a", "value": "2", "records": 1},
                                       {"variable": "a", "value": "3", "records": 2}]


def test_different_records_or_dropped_variables_are_input_errors():
    before, after = _pair([[1, 0, 0]], [[False, False, False]])
    with pytest.raises(InputError):
        suppressed_mask(before, Dataset(frame=pd.DataFrame({"a": [1, 2]})))
    with pytest.raises(InputError):
        suppressed_mask(before, after.with_frame(after.frame.drop(columns="c"), after.meta), ["c"])
    assert np.array_equal(suppressed_mask(before, after, []).mask.shape, (1, 0))


def test_a_code_declared_missing_later_is_not_suppressed():
    """-9 observed in the original, declared missing afterwards: no information was taken."""
    from kanon_core.dataset import VariableMeta

    before = Dataset(frame=pd.DataFrame({"a": [1, -9, 2, 3]}), roles=Roles(qis=("a",)))
    frame = before.frame.copy()
    frame.loc[2, "a"] = None  # suppressed
    after = before.with_frame(frame, {"a": VariableMeta(missing_codes=(-9,))})
    assert suppressed_mask(before, after).mask[:, 0].tolist() == [False, False, True, False]
    assert version_risk(before, after, 2).suppressed_cells == 1
