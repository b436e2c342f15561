"""The core of the dashboard's large-file Recode page: automatic hierarchies from a class table are those of
the records (each distinct value weighted by its records), and the search on the table with them is
:func:`search_optimal`'s, checked against every node of the lattice on small random files."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Roles
from kanon_core.engines import get_engine
from kanon_core.engines.generalize import automatic_hierarchies, level_tables, optimal_at_scale
from kanon_core.errors import InfeasibleError
from kanon_core.io import load_dataset
from kanon_core.treat.default_hierarchy import default_hierarchy
from kanon_core.treat.lattice import build_problem, search_optimal

QIS = ["age", "job"]


@st.composite
def frames(draw):
    n = draw(st.integers(8, 60))
    ages = draw(st.lists(st.integers(15, 40), min_size=n, max_size=n))
    jobs = draw(st.lists(st.sampled_from(["farmer", "clerk", "nurse", "smith", "baker", None]), min_size=n, max_size=n))
    return pd.DataFrame({"age": ages, "job": jobs})


def _table(frame: pd.DataFrame, folder: str):
    path = Path(folder) / "f.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    return path, get_engine("duckdb").class_table(str(path), QIS)


@settings(max_examples=25, deadline=None)
@given(frames())
def test_hierarchies_of_the_table_are_those_of_the_records(frame):
    with tempfile.TemporaryDirectory() as d:
        path, table = _table(frame, d)
        ds = load_dataset(path, roles=Roles(qis=tuple(QIS)))
        got = automatic_hierarchies(table, QIS)
        for q in QIS:
            if ds.qi_matrix([q]).values[0]:
                assert got[q].rows == default_hierarchy(ds, q).rows


@settings(max_examples=25, deadline=None)
@given(frames(), st.integers(2, 5), st.sampled_from([0.0, 0.1]), st.sampled_from(["wildcard", "category"]))
def test_the_optimum_on_the_table_is_the_records_optimum(frame, k, limit, missing):
    """The search on the class table finds the node, loss and suppression of the in-memory search on the records
    (itself checked against brute force in test_lattice), and the figures beside it are those of that node."""
    assume(frame["job"].notna().any())  # every QI observed: both have a hierarchy
    with tempfile.TemporaryDirectory() as d:
        path, table = _table(frame, d)
        ds = replace(load_dataset(path, roles=Roles(qis=tuple(QIS))), missing=missing)
    hierarchies = {q: default_hierarchy(ds, q) for q in QIS}
    try:
        ref = search_optimal(build_problem(ds, hierarchies, QIS), k, limit, "prec")
    except InfeasibleError:  # no node meets k within the limit: the table's search says so too
        with pytest.raises(InfeasibleError):
            optimal_at_scale(table, QIS, k, limit, missing)
        return
    found = optimal_at_scale(table, QIS, k, limit, missing)
    r = found.result
    assert r.levels == ref.levels
    assert r.loss == pytest.approx(ref.loss, rel=1e-9, abs=1e-12)
    assert r.n_suppressed_records == ref.n_suppressed_records
    _, tabs = level_tables(table, QIS, automatic_hierarchies(table, QIS))
    chosen = tuple(r.levels[q] for q in QIS)
    gen = table.generalize([t.table[lv] for t, lv in zip(tabs, chosen, strict=True)])
    fk = gen.class_sizes(missing).fk
    assert int(gen.count[fk < k].sum()) == r.n_suppressed_records  # the records of classes below k
    assert found.n_classes_after == gen.n_classes and found.n_classes_before == table.n_classes
    assert found.n_values == {q: int(len(np.unique(t.table[lv]))) for q, t, lv in zip(QIS, tabs, chosen, strict=True)}
