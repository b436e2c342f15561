"""encode_column against a direct reference: every cell's code is the rank of its value among the distinct
observed values sorted as kanon sorts them; missing cells (empty or declared) are -1."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import MISSING_CODE, _sort_key, encode_column

CELLS = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, -0.0, float("nan")]), st.booleans(),
                  st.sampled_from(["a", "b", "1", "", "NA"]))


def reference(cells: list, codes: tuple) -> tuple[list[int], list]:
    """Distinct values by Python equality in order of first appearance, sorted; a dict gives each cell its
    value's position."""
    missing = [c is None or (isinstance(c, float) and c != c) or c in codes for c in cells]
    seen: dict = {}
    for c, m in zip(cells, missing, strict=True):
        if not m and c not in seen:
            seen[c] = c
    values = sorted(seen, key=_sort_key)
    position = {v: i for i, v in enumerate(values)}
    return [MISSING_CODE if m else position[c] for c, m in zip(cells, missing, strict=True)], values


@given(st.lists(CELLS, max_size=40), st.lists(st.sampled_from([-3, "NA", 2.5]), max_size=2, unique=True))
def test_codes_are_ranks_of_the_sorted_distinct_values(cells, codes):
    series = pd.Series(cells, dtype=object)
    got_codes, got_values, labels = encode_column(series, tuple(codes))
    want_codes, want_values = reference(cells, tuple(codes))
    assert got_codes.tolist() == want_codes
    assert list(got_values) == want_values
    assert [type(v) for v in got_values] == [type(v) for v in want_values]
    assert len(labels) == len(got_values) and got_codes.dtype == np.int32


def test_numeric_columns_encode_as_their_values():
    """An integer column with empty cells (nullable) and a float column: codes follow the numbers' order."""
    ints = pd.Series([5, None, 3, 5, 10], dtype="Int64")
    codes, values, _ = encode_column(ints, (10,))
    assert codes.tolist() == [1, -1, 0, 1, -1] and values == (3, 5)
    floats = pd.Series([0.5, -1.0, np.nan, 0.5])
    codes, values, _ = encode_column(floats)
    assert codes.tolist() == [1, 0, -1, 1] and values == (-1.0, 0.5)


@given(st.lists(st.one_of(st.integers(-5, 5), st.sampled_from([0.5, -0.0, 0.0, 2.0, float("nan")])), max_size=40),
       st.sampled_from(["float64", "Float64", "object"]))
def test_float_columns_encode_as_the_reference_does(cells, dtype):
    """Numbers hashed and sorted as numbers (the fast path for numeric columns) give the codes, values and types
    the reference gives on the same cells as Python objects: -0.0 and 0.0 are one value, NaN is missing."""
    floats = [float(c) for c in cells]
    series = pd.Series(floats, dtype=dtype) if dtype != "object" else pd.Series(floats, dtype=object)
    got_codes, got_values, _ = encode_column(series, (2.0,))
    want_codes, want_values = reference(floats, (2.0,))
    assert got_codes.tolist() == want_codes
    assert list(got_values) == want_values and all(type(v) is float for v in got_values)


@given(st.lists(st.one_of(st.none(), st.integers(-2**40, 2**40)), max_size=40), st.sampled_from(["Int64", "int64"]))
def test_integer_columns_encode_as_the_reference_does(cells, dtype):
    if dtype == "int64":
        cells = [0 if c is None else c for c in cells]
    series = pd.Series(cells, dtype=dtype)
    got_codes, got_values, _ = encode_column(series, (7,))
    want_codes, want_values = reference(cells, (7,))
    assert got_codes.tolist() == want_codes
    assert list(got_values) == want_values and all(type(v) is int for v in got_values)
