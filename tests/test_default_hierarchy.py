"""Starting hierarchies: files win, numbers get nested capacity bins, other variables keep-or-drop."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.treat.default_hierarchy import (
    default_hierarchies,
    default_hierarchy,
    frequency_grouping_hierarchy,
    infer_scale,
    scale_of,
)
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


def _household(n: int = 600) -> Dataset:
    """Codes of unordered categories without labels (relationship to the head, region) and with labels."""
    rng = np.random.default_rng(11)
    relat = rng.choice(np.arange(1, 10), size=n, p=[.35, .3, .2, .05, .04, .03, .015, .01, .005])
    region = rng.choice(np.arange(1, 8), size=n)
    occup = rng.choice(np.arange(1, 7), size=n)
    income = rng.choice(np.arange(1, 8), size=n)
    frame = pd.DataFrame({"relat": relat, "region": region, "occ": occup, "inc": income,
                          "hours": rng.integers(0, 60, n)})
    meta = {"occ": VariableMeta(value_labels={1: "Clerical", 2: "Farmer", 3: "Laborer", 4: "Manager",
                                              5: "Sales", 6: "Teacher"}),
            "inc": VariableMeta(value_labels={1: "None", 2: "$1,000 or less", 3: "$1,001-$5,000",
                                              4: "$5,001-$10,000", 5: "$10,001-$20,000", 6: "$20,001-$50,000",
                                              7: "More than $50,000"})}
    return Dataset(frame=frame, roles=Roles(qis=("relat", "region", "occ", "inc", "hours")), meta=meta)


def _is_interval(label: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?-\d+(\.\d+)?", label))


def test_nominal_codes_are_grouped_as_categories_never_as_intervals():
    ds = _household()
    for col in ("relat", "region", "occ"):
        assert scale_of(ds, col).scale == "nominal", col
        h = default_hierarchy(ds, col)
        assert h.height > 2, col  # grouped, not only kept or dropped
        labels = {lab for level in range(1, h.max_level) for lab in h.labels_at(level)}
        assert not any(_is_interval(lab) for lab in labels), (col, labels)
    # the rarest relationships are pooled first, and the pool is named by its members
    h = default_hierarchy(ds, "relat")
    first = h.labels_at(1)
    counts = ds.frame["relat"].value_counts()
    pooled = [int(o) for o, lab in zip(h.originals, first, strict=True) if lab != o]
    kept = [int(o) for o, lab in zip(h.originals, first, strict=True) if lab == o]
    assert pooled and max(counts[p] for p in pooled) <= min(counts[k] for k in kept)
    occ = default_hierarchy(ds, "occ")
    assert any("/" in lab for lab in occ.labels_at(1))  # e.g. "Farmer / Laborer": labels, not codes 2-3


def test_ordered_labels_and_measurements_keep_intervals():
    ds = _household()
    assert scale_of(ds, "inc").scale == "ordinal"
    assert scale_of(ds, "hours").scale == "ordinal"
    h = default_hierarchy(ds, "hours")
    assert any(_is_interval(lab) for lab in h.labels_at(1))


def test_officer_overrides_the_scale():
    ds = _household()
    as_ordinal = default_hierarchy(ds, "relat", scale="ordinal")
    assert any(_is_interval(lab) for level in range(1, as_ordinal.max_level) for lab in as_ordinal.labels_at(level))
    as_nominal = default_hierarchy(ds, "inc", scale="nominal")
    assert not any(_is_interval(lab) for level in range(1, as_nominal.max_level) for lab in as_nominal.labels_at(level))
    with pytest.raises(InputError):
        default_hierarchy(ds, "inc", scale="interval")


def test_scale_reasons_and_label_words():
    assert infer_scale("x", ["a", "b"], ["a", "b"]).scale == "nominal"
    lang = ["English", "Spanish", "An Asian language", "Other language"]
    assert infer_scale("lang", [1, 2, 3, 4], lang).scale == "nominal"  # "language" is not the word "age"
    fluency = ["Native speaker", "Very fluent", "Fluent", "Not fluent"]
    assert infer_scale("fl", [1, 2, 3, 4], fluency).scale == "ordinal"
    g = infer_scale("relat", [1, 2, 3, 4, 5], ["1", "2", "3", "4", "5"])  # labels equal to the codes: none
    assert g.scale == "nominal" and "relat" in g.reason


def test_codes_sharing_a_value_label_are_pooled_in_groups_of_their_own():
    """Four rare codes all labelled "Other" pool in two pairs: the pairs stay two groups (two labels), so the
    next level may send them different ways. Their members are rarer than the smallest capacity, so the
    labels count them and name none."""
    codes = np.repeat(np.arange(1, 8), [2, 1, 1, 1, 1, 3, 50])
    meta = {"occ": VariableMeta(value_labels={1: "Fisher", 2: "Other", 3: "Other", 4: "Other", 5: "Other",
                                              6: "Farmer", 7: "Clerk"})}
    ds = Dataset(frame=pd.DataFrame({"occ": codes}), roles=Roles(qis=("occ",)), meta=meta)
    h = default_hierarchy(ds, "occ")
    first = h.labels_at(1)
    assert first[1] == first[2] and first[3] == first[4] and first[1] != first[3]
    assert {first[1], first[3]} == {"2 rare categories", "2 rare categories (2)"}
    assert h.labels_at(2)[1] != h.labels_at(2)[3]  # the two pairs go different ways


def test_a_category_written_like_a_group_is_not_merged_with_that_group():
    """The category "Farmer / Laborer" and the pool of the rare "Farmer" and "Laborer" are two groups."""
    jobs = np.repeat(["Farmer", "Laborer", "Farmer / Laborer", "Clerk", "Teacher"], [1, 1, 2, 3, 50])
    ds = Dataset(frame=pd.DataFrame({"job": jobs}), roles=Roles(qis=("job",)))
    h = default_hierarchy(ds, "job")
    first = dict(zip(h.originals, h.labels_at(1), strict=True))
    assert first["Farmer / Laborer"] == "Farmer / Laborer"
    assert first["Farmer"] == first["Laborer"] != "Farmer / Laborer"


@given(st.lists(st.integers(1, 200), min_size=4, max_size=12), st.lists(st.floats(1, 500), min_size=1, max_size=4))
def test_frequency_grouping_nests_and_meets_each_capacity(counts, caps):
    texts = [str(i) for i in range(len(counts))]
    labels = [f"cat{i}" for i in range(len(counts))]
    h = frequency_grouping_hierarchy(texts, labels, counts, caps)
    assert list(h.labels_at(h.max_level)) == [TOP] * len(counts)
    for level in range(1, h.max_level):
        below, here = h.labels_at(level - 1), h.labels_at(level)
        # nesting: values together at one level stay together above
        for i in range(len(counts)):
            for j in range(len(counts)):
                if below[i] == below[j]:
                    assert here[i] == here[j]
        # every group of a level reaches one of the capacities (each level meets its own)
        sizes = {lab: sum(n for n, x in zip(counts, here, strict=True) if x == lab) for lab in set(here)}
        met = [c for c in caps if min(sizes.values()) >= c]
        assert met
        # a category is pooled only with categories at most as frequent as any category left alone
        alone = [n for n, x, t in zip(counts, here, texts, strict=True) if x == t]
        pooled = [n for n, x, t in zip(counts, here, texts, strict=True) if x != t]
        if alone and pooled:
            assert min(alone) >= max(met) or min(alone) >= min(pooled)


@given(st.lists(st.integers(0, 40), min_size=2, max_size=14), st.lists(st.integers(1, 60), min_size=1, max_size=3))
def test_no_group_label_names_a_category_rarer_than_the_smallest_capacity(counts, caps):
    """Labels above the originals are read back for the codes (``c00``) and value labels (``L00``) they
    show: each belongs to a category of at least the smallest capacity in records. A label naming a
    category of one record would tell the release's readers that such a person is in the file."""
    texts = [f"c{i:02d}" for i in range(len(counts))]
    labels = [f"L{i:02d}" for i in range(len(counts))]
    h = frequency_grouping_hierarchy(texts, labels, counts, caps)
    records = dict(zip(texts, counts, strict=True)) | dict(zip(labels, counts, strict=True))
    for level in range(1, h.max_level + 1):
        for label in set(h.labels_at(level)):
            for token in re.findall(r"[cL]\d\d", label):
                assert records[token] >= min(caps), (label, level)
