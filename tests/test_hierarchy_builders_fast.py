"""The two builders a postcode's 100,000 categories go through on the Recode page, grouping by rarity and
masking, made fast with arrays: they must give exactly the hierarchy of the plain versions kept below as the
reference (same rows, labels, levels and order), or refuse alike, on any input: codes "007" and "7", ties
in records and in names, names that clash, categories of no records, one value, mixed types."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.treat.default_hierarchy import blank_name, frequency_grouping_hierarchy
from kanon_core.treat.hierarchy import TOP, Hierarchy, _complete, _distinct_texts, masking_hierarchy


# -- the reference: the builders as they were, one merge and one value at a time ---------------------------------
def _reference_group_name(named: Sequence[str], n: int) -> str:
    """Members named only when they hold the smallest capacity (see _reference_merged)."""
    if len(named) == n <= 3:
        return " / ".join(named)
    if not named:
        return f"{n} rare categories"
    return " / ".join(named[:2]) + f" / … ({n} categories)"


def _reference_merged(a: tuple, b: tuple, labels: Sequence[str], number: int, named_from: float) -> tuple:
    """The union of two heap entries; a category's label may name the group if it holds ``named_from``."""
    def nameable(g: tuple) -> list[str]:
        if g[5] is not None:
            return g[5]
        return [labels[g[4][0]]] if g[0] >= named_from else []

    first = sorted(nameable(a) + nameable(b))[:3]
    big, small = (a[4], b[4]) if len(a[4]) >= len(b[4]) else (b[4], a[4])
    big.extend(small)
    return a[0] + b[0], _reference_group_name(first, len(big)), -number, 0, big, first


def _reference_level_labels(groups: Sequence[tuple], size: int, texts: Sequence[str]) -> list[str]:
    ordered = sorted(groups, key=lambda g: (g[5] is not None, min(g[4])))
    taken = {g[1] for g in groups}
    used: set[str] = set()
    suffix: dict[str, int] = {}
    of = [""] * size
    for g in ordered:
        label = g[1] if g[1].strip() else blank_name(texts)  # (added since: a blank category is named above 0)
        if label in used and g[5] is not None:
            k = suffix.get(label, 2)
            while f"{label} ({k})" in taken:
                k += 1
            suffix[label] = k + 1
            label = f"{label} ({k})"
            taken.add(label)
        used.add(label)
        for i in g[4]:
            of[i] = label
    return of


def reference_frequency_grouping(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                                 capacities: Sequence[float], name: str = "") -> Hierarchy:
    """The heap version: pop the two smallest groups, push their union, one merge at a time."""
    heap = [(int(counts[i]), texts[i], 0, i, [i], None) for i in range(len(texts))]
    heapq.heapify(heap)
    merges = 0
    levels = []
    for c in sorted(capacities):
        while len(heap) > 1 and heap[0][0] < c:
            merges += 1
            heap_a, heap_b = heapq.heappop(heap), heapq.heappop(heap)
            heapq.heappush(heap, _reference_merged(heap_a, heap_b, labels, merges, min(capacities)))
        levels.append(_reference_level_labels(heap, len(texts), texts))
    return _complete(list(texts), levels, name)


def reference_masking(values: Iterable[Any], mask_char: str = "*", width: int | None = None,
                      name: str = "") -> Hierarchy:
    """Masking one value and one level at a time, from the values' distinct row texts."""
    texts = _distinct_texts(values, name)
    shown = [t.zfill(width) if width and t.lstrip("-").isdigit() else t for t in texts]
    longest = max(len(t) for t in shown)
    cols = []
    for lv in range(1, longest):
        # an empty label is "*" now (an empty cell reads as missing), as the builder does
        cols.append([t[: max(0, len(t) - lv)] + mask_char * min(lv, len(t)) or TOP for t in shown])
    return _complete(texts, cols, name)


def _outcome(fn: Callable[..., Hierarchy], *args: object, **kwargs: object) -> tuple:
    """The rows and name built, or the kind and message of the refusal (both versions must refuse alike)."""
    try:
        h = fn(*args, **kwargs)
    except Exception as exc:  # every way of failing is compared, not only InputError
        return ("raised", type(exc).__name__, str(exc))
    return ("rows", h.rows, h.name)


# -- grouping by rarity --------------------------------------------------------------------------------------------
# codes that differ only as texts, texts written like group names (a category ties with a merged group on its
# name), a NUL and letters outside ASCII (sorted outside numpy), and few labels, so merged groups share names
_CODES = st.one_of(st.sampled_from(["7", "007", "07", "a", "b", "x", "a / b", "x / x", "x / x (2)", "x / x / y",
                                    "x / x / … (4 categories)", "", " ", "NA", "é", "a\x00"]),
                   st.text(max_size=3))
_LABELS = st.one_of(st.sampled_from(["x", "x", "y", "a", "7", "007", "", "x / x"]), st.text(max_size=2))
_CAPACITIES = st.lists(st.one_of(st.integers(0, 12), st.floats(0, 40)), max_size=4)


@st.composite
def _grouping_inputs(draw: st.DrawFn) -> tuple[list[str], list[str], list[int], list[float]]:
    """Small inputs with many ties: counts of 0 to 3 records (0 on purpose: such groups merge one at a time),
    often equal labels; a third of the time a single code, or codes repeated (refused alike)."""
    shape = draw(st.sampled_from(["distinct", "distinct", "one", "repeated"]))
    if shape == "one":
        texts = [draw(_CODES)]
    else:
        texts = draw(st.lists(_CODES, max_size=14, unique=shape == "distinct"))
    labels = draw(st.lists(_LABELS, min_size=len(texts), max_size=len(texts)))
    counts = draw(st.lists(st.sampled_from([0, 1, 1, 1, 2, 2, 3]), min_size=len(texts), max_size=len(texts)))
    return texts, labels, counts, draw(_CAPACITIES)


@given(_grouping_inputs())
def test_grouping_equals_the_reference_on_small_inputs(args):
    texts, labels, counts, caps = args
    assert _outcome(frequency_grouping_hierarchy, texts, labels, counts, caps, "q") == \
        _outcome(reference_frequency_grouping, texts, labels, counts, caps, "q")


@given(st.integers(20, 400), st.integers(0, 2**31), st.sampled_from(["ties", "zipf", "zeros", "spread"]),
       st.integers(1, 4))
def test_grouping_equals_the_reference_on_larger_inputs(n, seed, kind, n_labels):
    """Hundreds of categories: many rounds of pairs, groups left without a pair, names of four and more
    categories shared by several groups, postcodes written with and without leading zeros."""
    rng = np.random.default_rng(seed)
    texts = [f"{i:05d}" if i % 3 else str(i) for i in rng.permutation(n).tolist()]
    labels = [f"L{int(x)}" for x in rng.integers(0, n_labels, n)]
    if kind == "ties":
        counts = rng.integers(1, 3, n)
    elif kind == "zipf":
        counts = rng.zipf(1.6, n) % 50 + 1
    elif kind == "zeros":
        counts = rng.integers(0, 3, n)
    else:
        counts = rng.integers(1, 10**6, n)
    total = int(counts.sum())
    caps = [0.01 * total, 0.05 * total, 0.2 * total]
    assert _outcome(frequency_grouping_hierarchy, texts, labels, counts.tolist(), caps, "q") == \
        _outcome(reference_frequency_grouping, texts, labels, counts.tolist(), caps, "q")


_GROUPING_CASES = {  # (texts, labels, counts, capacities)
    "one value": (["7"], ["x"], [3], [5]),
    "no value": ([], [], [], [5]),
    "codes equal as numbers": (["007", "7", "07", "0", "00"], ["a"] * 5, [1, 1, 1, 1, 1], [2, 4]),
    "ties in records and names": (["p", "q", "r", "s", "x / x", "d", "t"], ["x"] * 4 + ["y", "z", "w"],
                                  [1, 1, 1, 1, 2, 3, 20], [3]),
    "numbered labels skip names taken": (["p", "q", "r", "s", "x / x", "x / x (2)", "t"], ["x"] * 4 + ["y", "y", "w"],
                                         [1, 1, 1, 1, 2, 2, 20], [2]),
    "groups of four share a name": ([str(i) for i in range(1, 9)], ["b", "c", "c", "b", "e", "c", "d", "c"],
                                    [3, 2, 3, 2, 3, 2, 2, 2], [5, 8]),
    "no records": (["a", "b", "c", "d", "e"], ["x", "x", "y", "z", "x"], [0, 0, 0, 0, 0], [1, 2]),
    "no records among others": (["a", "b", "c", "d", "e", "f"], ["v", "w", "x", "x", "y", "z"], [0, 5, 0, 1, 0, 2],
                                [3, 6]),
    "records below zero": (["a", "b", "c", "d"], ["x", "y", "z", "x"], [-2, 5, 1, 3], [2, 9]),
    "counts as floats": (["a", "b", "c", "d"], ["x", "y", "z", "x"], [1.9, 2.2, 0.5, 3.0], [2, 9]),
    "a NUL and letters outside ASCII": (["a\x00", "a", "é", "e", "z"], ["a\x00", "a", "é", "e", "a"],
                                        [1, 1, 1, 1, 1], [2, 3]),
    "codes repeated": (["a", "a ", "b", "c"], ["x", "x", "y", "y"], [1, 1, 1, 5], [2]),
    "huge records": (["a", "b", "c", "d"], ["x", "y", "z", "w"], [2**70, 3, 2**70, 1], [4, 2**71]),
}


@pytest.mark.parametrize("case", list(_GROUPING_CASES))
def test_grouping_edge_cases_equal_the_reference(case):
    texts, labels, counts, caps = _GROUPING_CASES[case]
    got = _outcome(frequency_grouping_hierarchy, texts, labels, counts, caps, "q")
    assert got == _outcome(reference_frequency_grouping, texts, labels, counts, caps, "q")


def test_a_postcode_is_grouped_as_the_reference_groups_it():
    """5,000 postcodes with Zipf counts, half written with leading zeros: the shape of the Recode page's case."""
    rng = np.random.default_rng(11)
    n = 5000
    texts = [f"{c:05d}" for c in rng.choice(10**5, size=n, replace=False)]
    counts = (rng.zipf(1.6, n) % 500 + 1).tolist()
    total = sum(counts)
    caps = sorted({max(2, math.ceil(s * total)) for s in (0.01, 0.05, 0.20)})
    got = frequency_grouping_hierarchy(texts, texts, counts, caps, "postcode")
    assert got.rows == reference_frequency_grouping(texts, texts, counts, caps, "postcode").rows
    assert got.height == 5


# -- masking -----------------------------------------------------------------------------------------------------
_VALUES = st.one_of(
    st.sampled_from(["02138", "2138", "007", "7", "07", " 7", "7 ", "", " ", "-12", "1.5", "1e3", "inf", "NA",
                     "ab", "a\x00", "é", "0", "00"]),
    st.text(max_size=6),
    st.integers(-300, 99999),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.booleans(),
    st.none(),
)
_DIGITS = st.text("0123456789", min_size=1, max_size=6)
_WORDS = st.text("abcXYZ -/", max_size=5)


@st.composite
def _masking_inputs(draw: st.DrawFn) -> tuple[Any, str, int | None]:
    """Values of any kind, or codes of digits only, or words only (each sorted its own way), passed as a list, a
    text column or a numeric array; masks of one character, several or none; widths that pad numbers."""
    kind = draw(st.sampled_from(["mixed", "digits", "words", "numbers"]))
    if kind == "mixed":
        values: Any = draw(st.lists(_VALUES, min_size=1, max_size=20))
    elif kind == "digits":
        values = draw(st.lists(_DIGITS, min_size=1, max_size=20))
    elif kind == "words":
        values = draw(st.lists(_WORDS, min_size=1, max_size=20))
    else:
        values = np.array(draw(st.lists(st.integers(-999, 99999), min_size=1, max_size=20)))
    container = draw(st.sampled_from(["list", "series", "array"]))
    if container == "series" and kind != "mixed":
        values = pd.Series(list(values))  # a text column is pandas' string type, numbers int64
    elif container == "array" and kind != "numbers":
        values = np.array(values, dtype=object)
    mask = draw(st.sampled_from(["*", "*", "#", "##", "", "\x00", "é"]))
    width = draw(st.sampled_from([None, None, 0, 3, 5]))
    return values, mask, width


@given(_masking_inputs())
def test_masking_equals_the_reference(args):
    values, mask, width = args
    again = values.copy() if hasattr(values, "copy") else list(values)
    assert _outcome(masking_hierarchy, values, mask_char=mask, width=width, name="zip") == \
        _outcome(reference_masking, again, mask_char=mask, width=width, name="zip")


_MASKING_CASES = {  # (values, mask, width)
    "codes equal as numbers": (["007", "7", "07", "0", "00", "000"], "*", None),
    "numbers padded": ([2138, 2139, 2141, 2210, 2138.0, 7], "*", 5),
    "one value": (["02138"], "*", None),
    "one character": (["a", "b"], "*", None),
    "nothing observed": ([None, float("nan"), pd.NA], "*", None),
    "a text column with missing cells": (pd.Series(["02138", None, "02139", "2138"], dtype="string"), "*", None),
    "records of a text column": (pd.Series(["02138", "02139", "02138", " 02139", "10001"] * 50), "*", None),
    "an object column of numbers": (pd.Series([1, 1.0, 2.5, np.int64(3), 2**60], dtype=object), "*", 4),
    "true and one": ([True, 1, 1.0, "1", "True"], "*", None),
    "a NUL at the end of a code": (["ab\x00", "ab", "a\x00b"], "*", None),
    "words and numbers": (["b2", "a1", "10", "9", "-3", "x", "", "inf", "Infinity", "1e400"], "*", None),
    "mask of two characters": (["02138", "2139"], "##", None),
    "no mask": (["02138", "02139", "0214"], "", None),
    "long codes": (["x" * 70, "x" * 69 + "y", "z"], "*", None),
    "big numbers": ([2**53 + 1, 2**53, 2**64, -(2**60)], "*", None),
    "a two-dimensional array": (np.array([[1, 2], [3, 4]]), "*", None),
    "a nullable integer column": (pd.Series([2138, None, 2139, 2138], dtype="Int64"), "*", 5),
    "a categorical column": (pd.Series(pd.Categorical(["b", "a", "b", "007", "7"])), "*", None),
    "a generator": ((v for v in ["b", "a", "b"]), "*", None),
}


@pytest.mark.parametrize("case", list(_MASKING_CASES))
def test_masking_edge_cases_equal_the_reference(case):
    values, mask, width = _MASKING_CASES[case]
    if case == "a generator":  # read once: each version gets its own
        got = _outcome(masking_hierarchy, (v for v in ["b", "a", "b"]), mask_char=mask, width=width, name="zip")
        want = _outcome(reference_masking, (v for v in ["b", "a", "b"]), mask_char=mask, width=width, name="zip")
    else:
        got = _outcome(masking_hierarchy, values, mask_char=mask, width=width, name="zip")
        want = _outcome(reference_masking, values, mask_char=mask, width=width, name="zip")
    assert got == want


def test_a_postcode_column_is_masked_as_the_reference_masks_it():
    """The records of a postcode column (pandas' text type), 3,000 codes with leading zeros, repeated."""
    rng = np.random.default_rng(5)
    codes = [f"{c:05d}" for c in rng.choice(10**5, size=3000, replace=False)]
    records = pd.Series(np.repeat(codes, rng.integers(1, 5, len(codes))).tolist())
    got = masking_hierarchy(records, name="postcode")
    assert got.rows == reference_masking(records, name="postcode").rows
    numbers = pd.Series([int(c) for c in codes])
    assert masking_hierarchy(numbers, width=5).rows == reference_masking(numbers, width=5).rows
