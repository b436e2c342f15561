"""The lattice search on an aggregated class table (an out-of-core engine's) equals the search on the records."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.classtable import ClassTable
from kanon_core.errors import InfeasibleError
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.lattice import LatticeProblem, search_optimal
from tests.test_criteria import CRITERION, _dataset, _inputs, problems


@settings(max_examples=60, deadline=None)
@given(problems(), st.lists(CRITERION, min_size=1, max_size=2), st.sampled_from([0.0, 0.1, 0.3]))
def test_search_on_the_aggregated_table_equals_the_search_on_the_records(case, criteria, max_suppression):
    frame, rows, missing = case
    ds, problem, _, _ = _inputs(frame, rows, missing)
    table = ClassTable.from_dataset(ds, tuple(rows), weighted=True, sensitive=["s"])
    aggregated = ClassTable(table.qis, table.codes, table.count, table.weight, table.values, table.labels,
                            table.sensitive, None)  # as an engine hands it back: no per-record index
    hs = [Hierarchy(r, q) for q, r in rows.items()]
    tabs = [h.tables(table.values[j], table.labels[j]) for j, h in enumerate(hs)]
    on_table = LatticeProblem.from_table(aggregated, tuple(t.table for t in tabs), missing=ds.missing,
                                         level_labels=tuple(t.labels for t in tabs), hierarchies=tuple(hs))
    assert on_table.n_records == problem.n_records
    try:
        expect = search_optimal(problem, None, max_suppression, "prec", criteria=criteria)
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            search_optimal(on_table, None, max_suppression, "prec", criteria=criteria)
        return
    got = search_optimal(on_table, None, max_suppression, "prec", criteria=criteria)
    assert got.levels == expect.levels
    assert got.loss == pytest.approx(expect.loss)
    assert got.n_suppressed_records == expect.n_suppressed_records


def test_a_criterion_needing_a_variable_the_table_lacks_is_refused():
    import pandas as pd

    frame = pd.DataFrame({"q0": ["v0", "v1", "v0"], "s": ["a", "b", "a"], "w": [1.0, 2.0, 3.0]})
    rows = {"q0": (("v0", "*"), ("v1", "*"))}
    ds = _dataset(frame, rows, "category")
    table = ClassTable.from_dataset(ds, ("q0",), weighted=True)
    h = Hierarchy(rows["q0"], "q0")
    t = h.tables(table.values[0], table.labels[0])
    problem = LatticeProblem.from_table(table, (t.table,), missing="category", hierarchies=(h,))
    from kanon_core.errors import InputError

    with pytest.raises(InputError):
        search_optimal(problem, None, 0.0, "prec", criteria=["l=2:s"])
