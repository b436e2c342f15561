"""t-closeness per class: hand-computed EMDs and the transportation LP under both semantics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.classtable import ClassTable
from kanon_core.errors import InputError
from kanon_core.risk.closeness import t_closeness_classes, worst_class
from tests.reference.diversity import brute_t_closeness


def _table(codes, svals):
    values = sorted({v for v in svals if v is not None})
    scodes = np.array([-1 if v is None else values.index(v) for v in svals], dtype=np.int32)
    return ClassTable.from_codes(np.asarray(codes, dtype=np.int32), sensitive={"s": (scodes, values)})


def test_li_et_al_salary_example():
    # Li et al. 2007: salaries 3k..11k (9 values, one record each); class {3k, 4k, 5k} is 0.375 from the
    # file under the ordered distance, class {6k, 8k, 11k} is 0.167
    sal = [3, 4, 5, 6, 7, 8, 9, 10, 11]
    cls = [0, 0, 0, 1, 2, 1, 2, 2, 1]
    table = _table([[c] for c in cls], sal)
    d = table.per_record(t_closeness_classes(table, "s", "category"))  # numbers: ordered by default
    assert d[0] == pytest.approx(0.375)
    assert d[3] == pytest.approx(1 / 6)
    eq = table.per_record(t_closeness_classes(table, "s", "category", "equal"))
    assert eq[0] == pytest.approx(0.5 * (3 * (1 / 3 - 1 / 9) + 6 / 9))


def test_missing_sensitive_values_left_out():
    # file: a, a, b, missing; class 0 = {a, missing} -> P = (1, 0), Q = (2/3, 1/3): equal EMD 1/3
    table = _table([[0], [1], [1], [0]], ["a", "a", "b", None])
    d = t_closeness_classes(table, "s", "category")
    assert d[0] == pytest.approx(1 / 3)
    only_missing = _table([[0], [1]], [None, "a"])
    assert t_closeness_classes(only_missing, "s", "category")[0] == 0.0
    assert d[1] == pytest.approx(1 / 6)  # {a, b}: P = (1/2, 1/2)
    assert worst_class(d, table) == {"t": pytest.approx(1 / 3), "classes": 1, "records": 2}


def test_bad_distance():
    with pytest.raises(InputError, match="distance"):
        t_closeness_classes(_table([[0]], ["a"]), "s", "category", "hamming")


@st.composite
def _data(draw):
    n = draw(st.integers(1, 12))
    q = draw(st.integers(1, 3))
    codes = draw(st.lists(st.lists(st.integers(-1, 2), min_size=q, max_size=q), min_size=n, max_size=n))
    svals = draw(st.lists(st.one_of(st.none(), st.sampled_from([1, 2, 5, 9])), min_size=n, max_size=n))
    return np.array(codes, dtype=np.int32), svals


@settings(max_examples=120, deadline=None)
@given(_data(), st.sampled_from(["wildcard", "category"]), st.sampled_from(["equal", "ordered"]))
def test_against_transportation_lp(data, missing, distance):
    codes, svals = data
    table = _table(codes, svals)
    got = table.per_record(t_closeness_classes(table, "s", missing, distance))
    np.testing.assert_allclose(got, brute_t_closeness(codes, svals, missing, distance), atol=1e-9)


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_ordered_equals_cumulative_definition_on_larger_tables(missing):
    rng = np.random.default_rng(8)
    n = 400
    codes = rng.integers(-1, 4, size=(n, 3))
    svals = [None if rng.random() < 0.05 else int(v) for v in rng.integers(0, 25, n)]
    table = _table(codes, svals)
    got = table.per_record(t_closeness_classes(table, "s", missing, "ordered"))
    domain = sorted({v for v in svals if v is not None})
    q = np.array([sum(v == d for v in svals) for d in domain], dtype=float)
    q /= q.sum()
    for i in range(0, n, 37):
        a = codes[i]
        members = [j for j in range(n) if (np.all(codes[j] == a) if missing == "category"
                                           else np.all((codes[j] == a) | (codes[j] < 0) | (a < 0)))]
        p = np.array([sum(svals[j] == d for j in members) for d in domain], dtype=float)
        want = 0.0 if p.sum() == 0 else np.abs(np.cumsum(p / p.sum() - q)).sum() / (len(domain) - 1)
        assert got[i] == pytest.approx(want, abs=1e-12)


def test_auto_reads_labelled_codes_as_categories():
    """Occupation codes 1 to 9 with value labels are categories: ``auto`` takes the equal distance (a region
    whose two people share one occupation is 0.8 from a file of six occupations), not the ordered one
    (0.36), which would pass t = 0.5. The same codes without labels are read as amounts, and a criterion
    on the Dataset reads the labels as the class table does, in memory and in the lattice."""
    import pandas as pd

    from kanon_core.criteria import parse_criterion
    from kanon_core.criteria.apply import failing_record_mask
    from kanon_core.dataset import Dataset, Roles, VariableMeta

    occ = [1, 2, 3, 4, 5, 5, 5, 5, 9, 9]
    region = ["A"] * 8 + ["B"] * 2
    labels = {1: "Clerk", 2: "Farmer", 3: "Nurse", 4: "Teacher", 5: "Driver", 9: "Sex worker"}
    frame = pd.DataFrame({"region": region, "occ": occ})
    labelled = Dataset(frame, meta={"occ": VariableMeta("Occupation", labels)}, roles=Roles(qis=("region",)))
    plain = Dataset(frame, roles=Roles(qis=("region",)))
    by_hand = {"equal": 0.8, "ordered": 0.36}  # class B: all 9; the file: 1,2,3,4 10 % each, 5 40 %, 9 20 %
    table = ClassTable.from_dataset(labelled, sensitive=("occ",))
    b = table.codes[:, 0].tolist().index(1)
    assert t_closeness_classes(table, "occ", "category")[b] == pytest.approx(by_hand["equal"])
    assert t_closeness_classes(table, "occ", "category", "ordered")[b] == pytest.approx(by_hand["ordered"])
    unlabelled = ClassTable.from_dataset(plain, sensitive=("occ",))
    assert t_closeness_classes(unlabelled, "occ", "category")[b] == pytest.approx(by_hand["ordered"])
    crit = parse_criterion("t=0.5:occ")
    assert failing_record_mask(labelled, ("region",), [crit])[-2:].all()
    assert not failing_record_mask(plain, ("region",), [crit]).any()
