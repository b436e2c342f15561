"""Property: a CSV file loaded and released with no treatment gives back the text of every cell.

Files are generated with empty cells, text that other programs read as missing ("NA", "null", "."),
leading zeros, integers beyond 64 bits, floats in many forms (shortest, exponent, trailing zeros, spaces),
unicode, quotes, delimiters and line breaks inside cells. The release goes through the project's writer
(:func:`kanon_core.export.write_release`) and through ``kanon apply`` with a recipe of no steps.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.export import write_release
from kanon_core.history import History
from kanon_core.io import float_text, load_dataset, missing_like_counts
from kanon_core.recipe import Recipe

NA_LIKE = ["NA", "N/A", "n/a", "NULL", "null", "None", "nan", "NaN", ".", "-", "?", "#N/A", " NA "]
# the list in kanon_core.io's documentation, written out again (compared ignoring case and outer spaces)
DOCUMENTED_MISSING_LIKE = {"na", "n/a", "n.a.", "n.a", "#n/a", "nan", "null", "none", "nil", "missing", ".", "-",
                           "--", "?", "*"}
TEXT_ALPHABET = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=";|\t") | st.sampled_from(
    ['"', ",", "\n", " ", "é", "年", "\u00a0"])

cells = st.one_of(
    st.just(""),
    st.sampled_from(NA_LIKE),
    st.integers(-(2**70), 2**70).map(str),
    st.integers(0, 10**6).map(lambda i: "0" + str(i)),  # leading zeros
    st.integers(-1000, 1000).map(lambda i: f" {i}"),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: float_text(f, "plain")),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda f: f"{f:.3e}"),
    st.floats(-1e6, 1e6).map(lambda f: f"{f:.2f}"),
    st.text(TEXT_ALPHABET, min_size=1, max_size=6),
)


@st.composite
def tables(draw) -> list[list[str]]:
    n_cols = draw(st.integers(1, 4))
    n_rows = draw(st.integers(1, 7))
    # columns of one kind make typed (integer, float) columns likely, mixed ones text columns
    kinds = [draw(st.sampled_from(["mixed", "int", "float", "plain"])) for _ in range(n_cols)]
    finite = st.floats(allow_nan=False, allow_infinity=False)
    kind_cells = {"mixed": cells, "int": st.one_of(st.just(""), st.integers(-(2**63), 2**63 - 1).map(str)),
                  "float": st.one_of(st.just(""), finite.map(repr)),
                  # whole numbers without ".0", as R and Stata write them
                  "plain": st.one_of(st.just(""), finite.map(lambda f: float_text(f, "plain")),
                                     st.integers(-10**6, 10**6).map(str))}
    rows = [[draw(kind_cells[k]) for k in kinds] for _ in range(n_rows)]
    if all(c == "" for row in rows for c in row):
        rows[0][0] = "x"
    return [[f"v{j}" for j in range(n_cols)], *rows]


def _expected_kind(cells: list[str]) -> str:
    """The type a column should get, decided cell by cell from the text alone (the reader works on
    distinct values with vectorised steps)."""
    present = [c for c in cells if c != ""]
    if not present:
        return "float"
    if all(re.fullmatch(r"-?(0|[1-9][0-9]*)", c) and c != "-0" and -(2**63) <= int(c) < 2**63 for c in present):
        return "int"

    def same(c: str, plain: bool) -> bool:
        try:
            f = float(c)
        except ValueError:
            return False
        text = repr(f)
        if plain and text.endswith(".0"):
            text = text[:-2]
        return math.isfinite(f) and text == c and not (f == 0 and c.startswith("-"))

    if all(same(c, False) for c in present) or all(same(c, True) for c in present):
        return "float"
    return "text"


def _csv_text(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode("utf-8")


def _cells(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=tables())
def test_release_without_treatment_reproduces_every_cell(tmp_path, rows):
    src = tmp_path / "in.csv"
    src.write_bytes(_csv_text(rows))
    ds = load_dataset(src)
    out = tmp_path / "out.csv"
    write_release(ds, out)
    assert _cells(out.read_bytes()) == rows
    assert out.read_bytes() == src.read_bytes()  # same quoting conventions: the very same bytes
    # nothing was read as missing but empty cells, and each column has the type its text allows
    for j, name in enumerate(rows[0]):
        dtype = ds.frame[name].dtype
        kind = "int" if pd.api.types.is_integer_dtype(dtype) else "float" if pd.api.types.is_float_dtype(dtype) \
            else "text"
        assert kind == _expected_kind([row[j] for row in rows[1:]])
        assert ds.missing_mask(name).tolist() == [row[j] == "" for row in rows[1:]]
    # missing-like text is counted, per column, exactly
    expected = {name: sum(1 for row in rows[1:] if row[j].strip().lower() in DOCUMENTED_MISSING_LIKE)
                for j, name in enumerate(rows[0])}
    got = missing_like_counts(ds)
    for name, n in expected.items():
        assert got.get(name, 0) == n
    # declaring them missing (the Data page's one click) makes exactly those cells and the empty ones missing
    step = DeclareMissingValues.missing_like(ds)
    declared = step.apply(ds) if step.values else ds
    for j, name in enumerate(rows[0]):
        want = [row[j] == "" or row[j].strip().lower() in DOCUMENTED_MISSING_LIKE for row in rows[1:]]
        assert declared.missing_mask(name).tolist() == want


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=tables())
def test_kanon_apply_with_no_steps_reproduces_every_cell(tmp_path, rows):
    src = tmp_path / "in.csv"
    src.write_bytes(_csv_text(rows))
    recipe = tmp_path / "r.recipe.json"
    Recipe.from_history(History.start(load_dataset(src)), input_path=src.name).save(recipe)
    out = tmp_path / "out.csv"
    assert main(["apply", str(recipe), "-o", str(out), "--json", str(tmp_path / "s.json")]) == 0
    assert _cells(out.read_bytes()) == rows
    assert json.loads((tmp_path / "s.json").read_text())["records"] == len(rows) - 1
