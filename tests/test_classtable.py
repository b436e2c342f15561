"""The class table against direct counts on the records (brute force), on small random files."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.classtable import ClassTable
from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from tests.reference.brute_force import brute_force_class_sizes


@st.composite
def files(draw, max_rows: int = 30, max_qis: int = 4, max_card: int = 4):
    n = draw(st.integers(1, max_rows))
    q = draw(st.integers(1, max_qis))
    codes = np.array(draw(st.lists(st.lists(st.integers(-1, max_card - 1), min_size=q, max_size=q),
                                   min_size=n, max_size=n)), dtype=np.int32)
    weights = np.array(draw(st.lists(st.floats(0.5, 100), min_size=n, max_size=n)))
    sens = np.array(draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n)), dtype=np.int32)
    return codes, weights, sens


def _rows(codes: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in r) for r in codes]


@given(files())
@settings(max_examples=60, deadline=None)
def test_counts_weights_and_sensitive_counts_match_the_records(f):
    codes, weights, sens = f
    t = ClassTable.from_codes(codes, weights=weights, sensitive={"s": (sens, (10, 20, 30))})
    assert len(set(_rows(t.codes))) == t.n_classes  # every class distinct
    expect = Counter(_rows(codes))
    got = {r: int(c) for r, c in zip(_rows(t.codes), t.count)}
    assert got == dict(expect)
    assert t.n_records == len(codes)
    for i, row in enumerate(_rows(codes)):  # record index points at the record's own class
        assert _rows(t.codes[[t.record_class[i]]])[0] == row
    wsum = {r: 0.0 for r in expect}
    for r, w in zip(_rows(codes), weights):
        wsum[r] += w
    for r, w in zip(_rows(t.codes), t.weight):
        assert w == pytest.approx(wsum[r])
    dense = t.sensitive["s"].dense(t.n_classes, include_missing=True)
    for c in range(t.n_classes):
        members = sens[t.record_class == c]
        for v in range(3):
            assert dense[c, v] == int((members == v).sum())
        assert dense[c, 3] == int((members == -1).sum())
    assert t.sensitive["s"].numeric is not None


@given(files(), st.sampled_from(["category", "wildcard"]))
@settings(max_examples=60, deadline=None)
def test_class_sizes_of_the_table_broadcast_to_brute_force_fk(f, missing):
    codes, weights, _ = f
    t = ClassTable.from_codes(codes, weights=weights)
    sizes = t.class_sizes(missing)
    fk, Fk = brute_force_class_sizes(codes, missing, weights)
    assert np.array_equal(t.per_record(sizes.fk), fk)
    np.testing.assert_allclose(t.per_record(sizes.Fk), Fk)


def test_generalize_keeps_a_qi_missing_in_every_record_missing():
    """Its lookup is empty (no observed code): the recode looks nothing up (it raised IndexError)."""
    codes = np.array([[-1, 0], [-1, 1], [-1, 0]], dtype=np.int32)
    t = ClassTable.from_codes(codes).generalize([np.array([], dtype=np.int64), np.array([5, 5])])
    assert _rows(t.codes) == [(-1, 5)] and t.count.tolist() == [3]


@given(files(), st.data())
@settings(max_examples=60, deadline=None)
def test_generalize_equals_aggregating_the_recoded_records(f, data):
    codes, weights, sens = f
    q = codes.shape[1]
    lookups = []
    for j in range(q):
        if data.draw(st.booleans()):
            lookups.append(None)
        else:  # one entry per observed code: empty for a QI missing in every record
            size = int(codes[:, j].max()) + 1
            lookups.append(np.array(data.draw(st.lists(st.integers(0, 2), min_size=size, max_size=size)), dtype=np.int64))
    recoded = codes.copy()
    for j, lk in enumerate(lookups):
        if lk is not None:
            obs = recoded[:, j] >= 0
            recoded[obs, j] = lk[recoded[obs, j]]
    t = ClassTable.from_codes(codes, weights=weights, sensitive={"s": (sens, (1, 2, 3))}).generalize(lookups)
    direct = ClassTable.from_codes(recoded, weights=weights, sensitive={"s": (sens, (1, 2, 3))})
    by_row = {r: i for i, r in enumerate(_rows(direct.codes))}
    assert set(by_row) == set(_rows(t.codes))
    order = np.array([by_row[r] for r in _rows(t.codes)])
    assert np.array_equal(t.count, direct.count[order])
    np.testing.assert_allclose(t.weight, direct.weight[order])
    assert np.array_equal(t.sensitive["s"].dense(t.n_classes, True),
                          direct.sensitive["s"].dense(direct.n_classes, True)[order])
    assert np.array_equal(_rows(t.codes[t.record_class]), _rows(recoded))


@given(files())
@settings(max_examples=40, deadline=None)
def test_project_equals_aggregating_the_columns(f):
    codes, _, _ = f
    names = tuple(f"v{j}" for j in range(codes.shape[1]))
    t = ClassTable.from_codes(codes, names)
    keep = names[::2]
    p = t.project(keep)
    assert p.qis == keep
    expect = Counter(_rows(codes[:, ::2]))
    assert {r: int(c) for r, c in zip(_rows(p.codes), p.count)} == dict(expect)


def test_from_aggregate_encodes_like_the_data_set():
    frame = pd.DataFrame({"sex": ["m", "f", None, "f", "m", "m"], "age": [30, 41, 30, None, 30, 52],
                          "w": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    ds = Dataset(frame, roles=Roles(qis=("sex", "age"), weight="w"))
    mem = ClassTable.from_dataset(ds)
    grouped = frame.groupby(["sex", "age"], dropna=False).agg(n=("w", "size"), w=("w", "sum")).reset_index()
    agg = ClassTable.from_aggregate(
        ("sex", "age"), [grouped["sex"].where(grouped["sex"].notna(), None).tolist(),
                         grouped["age"].where(grouped["age"].notna(), None).tolist()],
        grouped["n"].to_numpy(), grouped["w"].to_numpy())
    assert agg.values == mem.values
    a = {r: (int(c), float(w)) for r, c, w in zip(_rows(agg.codes), agg.count, agg.weight)}
    m = {r: (int(c), float(w)) for r, c, w in zip(_rows(mem.codes), mem.count, mem.weight)}
    assert a == m
    assert agg.record_class is None
    with pytest.raises(InputError):
        agg.per_record(agg.count)


def test_from_aggregate_merges_rows_an_engine_kept_apart():
    agg = ClassTable.from_aggregate(("x",), [[1, 1.0, None]], np.array([2, 3, 1]))
    assert sorted(agg.count.tolist()) == [1, 5]


def test_a_sensitive_variable_with_the_wrong_length_is_refused():
    with pytest.raises(InputError):
        ClassTable.from_codes(np.zeros((3, 1), np.int32), sensitive={"s": (np.zeros(2, np.int32), (1,))})
