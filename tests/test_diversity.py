"""l-diversity per class: hand-computed cases (sdcMicro's rules) and brute force under both semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.classtable import ClassTable
from kanon_core.errors import InputError
from kanon_core.risk.diversity import l_diversity_classes
from tests.reference.diversity import brute_l_diversity


def _table(codes, svals):
    values = sorted({v for v in svals if v is not None})
    scodes = np.array([-1 if v is None else values.index(v) for v in svals], dtype=np.int32)
    return ClassTable.from_codes(np.asarray(codes, dtype=np.int32), sensitive={"s": (scodes, values)})


def test_sdcmicro_test_case():
    # sdcMicro's tests/testthat/test_ldiversity.R: key (sex, occupation, ethnicity), NA grouped with NA
    codes = [[0, -1, 1], [0, -1, 1], [0, -1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0]]
    table = _table(codes, [1, 0, 2, 1, 0, 0, 1])
    got = table.per_record(l_diversity_classes(table, "s", "category"))
    assert got.tolist() == [3, 3, 3, 2, 2, 2, 2]


def test_hand_cases_with_missing_sensitive_values():
    # one class of 6: values a, a, a, b, missing, missing
    table = _table([[0]] * 6, ["a", "a", "a", "b", None, None])
    assert l_diversity_classes(table, "s", "category")[0] == 2  # a and b; missing values are no value of S
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))  # observed values only: a 3, b 1
    assert l_diversity_classes(table, "s", "category", "entropy")[0] == pytest.approx(math.exp(h))
    # recursive looks at observed values only: r = (3, 1); l = 2 needs 3 < c * 1
    assert l_diversity_classes(table, "s", "category", "recursive", c=2)[0] == 1
    assert l_diversity_classes(table, "s", "category", "recursive", c=4)[0] == 2
    # only missing values: no value shown, l = 0 by every reading (sdcMicro: entropy exp(0) = 1)
    empty = _table([[0]] * 2, [None, None])
    assert [l_diversity_classes(empty, "s", "category", k)[0] for k in ("distinct", "entropy", "recursive")] == [0, 0, 0]


def test_a_refusal_does_not_make_a_class_diverse():
    """HIV, HIV, HIV and one missing value: every shown value discloses HIV; sdcMicro would read 2 (and 1.75)."""
    table = _table([[0]] * 4, ["HIV", "HIV", "HIV", None])
    assert [l_diversity_classes(table, "s", "category", k)[0] for k in ("distinct", "entropy", "recursive")] == [1, 1, 1]


def test_recursive_by_hand():
    # counts 4, 3, 2, 1: l = 2 iff 4 < c*6, l = 3 iff 4 < c*3, l = 4 iff 4 < c*1
    table = _table([[0]] * 10, list("aaaabbbccd"))
    assert l_diversity_classes(table, "s", "category", "recursive", c=1)[0] == 2
    assert l_diversity_classes(table, "s", "category", "recursive", c=2)[0] == 3
    assert l_diversity_classes(table, "s", "category", "recursive", c=5)[0] == 4
    # sdcMicro reads c <= 0 as 1; here it is refused, as the criterion (LDiversity) always refused it: a
    # constant that means nothing is a typing error to report, not a value to replace
    with pytest.raises(InputError, match="finite constant c above 0"):
        l_diversity_classes(table, "s", "category", "recursive", c=0)


def test_wildcard_class_includes_matching_records():
    # record 2 (missing QI) matches both complete classes; each complete class matches record 2
    table = _table([[0], [1], [-1]], ["a", "b", "c"])
    assert table.per_record(l_diversity_classes(table, "s", "wildcard")).tolist() == [2, 2, 3]
    assert table.per_record(l_diversity_classes(table, "s", "category")).tolist() == [1, 1, 1]


def test_errors():
    table = _table([[0]], ["a"])
    with pytest.raises(InputError, match="kind"):
        l_diversity_classes(table, "s", "category", "nope")
    with pytest.raises(InputError, match="recursive"):
        l_diversity_classes(table, "s", "category", "distinct", c=2)
    with pytest.raises(InputError, match="sensitive"):
        l_diversity_classes(table, "other", "category")


@st.composite
def _data(draw):
    n = draw(st.integers(1, 14))
    q = draw(st.integers(1, 3))
    codes = draw(st.lists(st.lists(st.integers(-1, 2), min_size=q, max_size=q), min_size=n, max_size=n))
    svals = draw(st.lists(st.one_of(st.none(), st.sampled_from("abcd")), min_size=n, max_size=n))
    return np.array(codes, dtype=np.int32), svals


@settings(max_examples=150, deadline=None)
@given(_data(), st.sampled_from(["wildcard", "category"]), st.sampled_from(["distinct", "entropy", "recursive"]),
       st.sampled_from([1.0, 2.0, 3.5]))
def test_against_brute_force(data, missing, kind, c):
    codes, svals = data
    table = _table(codes, svals)
    got = table.per_record(l_diversity_classes(table, "s", missing, kind, c if kind == "recursive" else None))
    np.testing.assert_allclose(got, brute_l_diversity(codes, svals, missing, kind, c), rtol=1e-12)


@settings(max_examples=100, deadline=None)
@given(_data())
def test_pattern_join_equals_compiled_scan(data):
    from kanon_core.risk.diversity import matching_sum, value_count_matrix

    codes, svals = data
    table = _table(codes, svals)
    counts = value_count_matrix(table.sensitive["s"], table.n_classes)
    a = matching_sum(table, counts, "wildcard", method="patterns").toarray()
    b = matching_sum(table, counts, "wildcard", method="scan").toarray()
    np.testing.assert_array_equal(a, b)
    # and both equal the brute-force count of matching records' values
    from tests.reference.diversity import matching_records

    members = matching_records(codes, "wildcard")
    values = sorted({v for v in svals if v is not None})
    for i, ms in enumerate(members):
        want = [sum(svals[j] == v for j in ms) for v in values] + [sum(svals[j] is None for j in ms)]
        np.testing.assert_array_equal(a[table.record_class[i]], want)


@pytest.mark.parametrize("c", [0.0, -1.0, math.nan, math.inf])
def test_recursive_c_must_be_a_finite_number_above_zero(c):
    """A constant that is not a finite positive number is refused, never replaced by another value (c <= 0 once
    read as 1) nor let through (NaN fails every comparison and read as l = 1 for every class)."""
    table = _table([[1], [1], [2]], ["a", "b", "a"])
    with pytest.raises(InputError, match="finite constant c above 0"):
        l_diversity_classes(table, "s", "category", "recursive", c=c)
    from kanon_core.criteria.l_diversity import LDiversity

    with pytest.raises(InputError, match="finite constant c above 0"):
        LDiversity(2, "s", "recursive", c=c)


@pytest.mark.parametrize("text", ["nan", "inf", "-1", "0", "two"])
def test_cli_recursive_c_is_checked_even_without_a_sensitive_variable(tmp_path, capsys, text):
    from kanon_core.cli import main

    p = tmp_path / "d.csv"
    p.write_text("a,s\nx,1\nx,2\ny,1\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["risk", str(p), "--qi", "a", "--recursive-c", text])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--recursive-c" in err[0]
