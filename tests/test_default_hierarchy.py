"""Starting hierarchies: files win, numbers get nested capacity bins, other variables keep-or-drop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kanon_core.dataset import Dataset, Roles
from kanon_core.treat.default_hierarchy import default_hierarchies, default_hierarchy
from kanon_core.treat.hierarchy import TOP

ADULT = Path(__file__).resolve().parent.parent / "sample_data" / "adult"


def _ds() -> Dataset:
    rng = np.random.default_rng(3)
    age = rng.choice([18, 19, 20, 25, 30, 40, 50, 60, 70, 90], size=400, p=[.02, .03, .05, .2, .2, .2, .15, .1, .04, .01])
    frame = pd.DataFrame({"age": pd.array(age, dtype="Int64"), "colour": rng.choice(["red", "blue", "green"], 400),
                          "flag": pd.array(rng.integers(0, 3, 400), dtype="Int64")})
    frame.loc[::17, "age"] = pd.NA
    return Dataset(frame=frame, roles=Roles(qis=("age", "colour", "flag")))


def test_numbers_get_nested_capacity_bins_in_value_order():
    ds = _ds()
    h = default_hierarchy(ds, "age")
    observed = int(ds.frame["age"].notna().sum())
    counts = ds.frame["age"].value_counts()
    assert h.rows[0][-1] == TOP and h.n_values == 10
    groups = h.n_groups()
    assert list(groups) == sorted(groups, reverse=True) and groups[-1] == 1
    for level in range(1, h.max_level):
        labels = h.labels_at(level)
        # bins are runs of adjacent values (value order kept)
        runs = [labels[i] != labels[i - 1] for i in range(1, len(labels))]
        assert sum(runs) == len(set(labels)) - 1
        # the first level reaches the 1 % capacity: every bin holds at least ceil(1 %) records
        per_bin = pd.Series({lab: 0 for lab in set(labels)})
        for row in h.rows:
            per_bin[row[level]] += counts.get(int(row[0]), 0)
        assert per_bin.min() >= np.ceil(0.01 * observed)


def test_texts_and_few_codes_are_kept_or_dropped():
    ds = _ds()
    for col in ("colour", "flag"):
        h = default_hierarchy(ds, col)
        assert h.height == 2 and set(h.labels_at(1)) == {TOP}


def test_arx_files_win_where_present():
    frame = pd.read_csv(ADULT / "adult.csv", sep=";", nrows=300)
    ds = Dataset(frame=frame, roles=Roles(qis=("age", "sex")))
    hs = default_hierarchies(ds, ["age", "sex", "salary-class"], ADULT)
    assert hs["age"].height == 5  # adult_hierarchy_age.csv has 5 levels
    assert hs["sex"].height == 2
    # the salary-class file exists too; without a folder everything is automatic
    auto = default_hierarchies(ds, ["age", "sex"], None)
    assert auto["sex"].height == 2 and auto["age"].rows != hs["age"].rows
