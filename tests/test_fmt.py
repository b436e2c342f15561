"""Numbers for humans (kanon_core.fmt): p-values, no "-0.00", undefined with a reason, headers in words."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core import fmt


@pytest.mark.parametrize(("p", "text"), [(0.0004, "< 0.001"), (0.0, "< 0.001"), (0.001, "0.001"),
                                         (0.04249, "0.042"), (0.5, "0.500"), (1.0, "1.000")])
def test_p_values(p, text):
    assert fmt.p_value(p) == text


def test_p_value_scientific_when_asked_and_undefined_with_reason():
    assert fmt.p_value(3.21e-5, exact=True) == "3.2e-05"
    assert fmt.p_value(0.0, exact=True) == "< 1e-300"
    assert fmt.p_value(0.2, exact=True) == "0.200"
    assert fmt.p_value(float("nan"), why="aliased term") == "undefined: aliased term"
    assert fmt.p_value(None) == "undefined"
    with pytest.raises(ValueError):
        fmt.p_value(1.5)


@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False), st.integers(0, 4))
def test_number_never_writes_negative_zero(x, digits):
    text = fmt.number(x, digits)
    assert not text.startswith("-") or any(ch in "123456789" for ch in text)
    # the text is x rounded (up to the thousands separator)
    assert math.isclose(float(text.replace(",", "")), round(x, digits), abs_tol=10 ** -digits)


def test_number_cases():
    assert fmt.number(-0.001) == "0.00"
    assert fmt.number(-0.004, 2) == "0.00"
    assert fmt.number(-0.006, 2) == "-0.01"
    assert fmt.number(12345) == "12,345"
    assert fmt.number(np.int64(7)) == "7"
    assert fmt.number(None, why="no hierarchy") == "undefined: no hierarchy"
    assert fmt.number(float("nan")) == "undefined"
    assert fmt.number(float("inf")) == "∞"
    assert fmt.percent(-0.01) == "0.0 %"
    assert "None" not in fmt.number(None) and "nan" not in fmt.number(np.nan)


def test_headers_in_words():
    assert fmt.header("n_original") == "records before"
    assert fmt.header("ci_low_treated") == "CI low after"
    assert fmt.header("some_new_column") == "some new column"
    assert fmt.header("variable") == "variable"
    assert not fmt.is_snake_case(fmt.header("pct_treated"))
    assert fmt.is_snake_case("pct_treated") and not fmt.is_snake_case("% after")


def test_readable_table():
    frame = pd.DataFrame({"term": ["a", "b", "c"], "p_value": [0.00001, 0.2, np.nan], "estimate": [-0.0001, 1.234, np.nan],
                          "n_used": [10, 20, 30], "prec": [0.5, np.nan, 1.0], "note": ["", None, "x"]})
    out = fmt.readable_table(frame, why={"prec": "no hierarchy", "p_value": "aliased"})
    assert list(out.columns) == ["term", "p-value", "estimate", "records used", "Prec", "note"]
    assert out["p-value"].tolist() == ["< 0.001", "0.200", "undefined: aliased"]
    assert out["estimate"].tolist() == ["0.00", "1.23", ""]
    assert out["Prec"].tolist() == ["0.50", "undefined: no hierarchy", "1.00"]
    assert out["records used"].tolist() == [10, 20, 30]
    text = out.to_string()
    assert "None" not in text and "nan" not in text and "-0.00" not in text
    # floats without gaps stay numbers (they sort), rounded and without negative zeros
    plain = fmt.readable_table(pd.DataFrame({"difference": [-0.0001, 0.5]}))
    assert plain["difference (points)"].tolist() == [0.0, 0.5]
    assert str(plain["difference (points)"].iloc[0]) == "0.0"


def test_readable_table_rename_wins_over_the_shared_headers():
    frame = pd.DataFrame({"n_suppressed": [1], "max_suppression": [0.01]})
    out = fmt.readable_table(frame, rename={"n_suppressed": "records suppressed"})
    assert list(out.columns) == ["records suppressed", "max suppression"]


def test_a_column_of_texts_and_numbers_is_shown_as_text_that_arrow_can_carry():
    """The Compare page's table holds the categories of every variable in one column (codes 1 and 2 beside
    "a"); a table widget sends its frame as Arrow, which refuses such a column (Streamlit then logged a
    traceback and converted it itself). Shown as text; a column of texts alone, or of numbers, is unchanged."""
    import pyarrow as pa

    frame = pd.DataFrame({"value": pd.Series([1, "a", 2.5, None], dtype=object),
                          "label": pd.Series(["x", None, "y", "z"], dtype=object),
                          "count": [1, 2, 3, 4]})
    with pytest.raises((pa.ArrowTypeError, pa.ArrowInvalid)):
        pa.Table.from_pandas(frame)
    out = fmt.readable_table(frame, headers=False)
    assert out["value"].tolist() == ["1", "a", "2.5", ""]
    assert out["label"].tolist() == ["x", "", "y", "z"] and out["count"].tolist() == [1, 2, 3, 4]
    pa.Table.from_pandas(out)
