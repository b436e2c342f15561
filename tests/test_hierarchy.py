"""Generalization hierarchies: validation, every builder against hand-checked outputs, Angiuli & Waldo's greedy
binning example, ARX file round trips, and properties every built hierarchy must have."""

from __future__ import annotations

import datetime
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kanon_core.errors import InputError
from kanon_core.treat.hierarchy import (
    TOP,
    Hierarchy,
    cut_hierarchy,
    date_hierarchy,
    find_hierarchy_file,
    greedy_binning_hierarchy,
    greedy_bins,
    grouping_hierarchy,
    interval_hierarchy,
    load_hierarchies,
    masking_hierarchy,
    quantile_hierarchy,
    read_arx_hierarchy,
    round_cut,
    top_bottom_hierarchy,
    value_key,
    write_arx_hierarchy,
)

ADULT = Path(__file__).resolve().parent.parent / "sample_data" / "adult"
ADULT_VARS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
              "salary-class"]


def rows_of(h: Hierarchy) -> dict[str, tuple[str, ...]]:
    return {r[0]: r[1:] for r in h.rows}


def assert_well_formed(h: Hierarchy, values) -> None:
    """The properties of every hierarchy, recomputed here from the rows (not from the class's own checks)."""
    # every observed value has a row
    assert (h.match(list(values)) >= 0).all()
    # one label at the top, and it is '*'
    assert {r[-1] for r in h.rows} == {TOP}
    # each level is a function of the one before and strictly coarser (builders drop levels adding nothing)
    sizes = []
    for lv in range(h.height):
        sizes.append(len({r[lv] for r in h.rows}))
        if lv:
            parent: dict[str, str] = {}
            for r in h.rows:
                assert parent.setdefault(r[lv - 1], r[lv]) == r[lv]
    assert sizes[0] == h.n_values and sizes[-1] == 1
    inner = sizes[:-1]  # the root may equal the level below only when there is a single value
    assert all(a > b for a, b in zip(inner, inner[1:])) and (len(inner) == 1 or inner[-1] > 1)


# -- validation ------------------------------------------------------------------------------------------------
def test_valid_hierarchy_shape_and_groups():
    h = Hierarchy((("a", "ab", "*"), ("b", "ab", "*"), ("c", "c", "*")), "v")
    assert (h.height, h.max_level, h.n_values) == (3, 2, 3)
    assert h.n_groups() == (3, 2, 1)
    idx, labels = h.groups_at(1)
    assert idx.tolist() == [0, 0, 1] and labels == ("ab", "c")
    with pytest.raises(InputError, match="levels 0 to 2"):
        h.labels_at(3)


@pytest.mark.parametrize("rows, message", [
    ((), "no rows"),
    ((("a",), ("b",)), "at least two levels"),
    ((("a", "x", "*"), ("b", "*")), "has 2 levels"),
    ((("a", "*"), ("a", "*")), "same original value"),
    ((("39", "*"), (" 39", "*")), "same original value"),  # the same text written twice ("39.0": see matching)
    ((("a", "ab", "*"), ("b", "ab", "*"), ("c", "c", "c")), "single label"),
    ((("a", "x", "1"), ("b", "x", "2"), ("c", "y", "2")), "not a coarsening"),
])
def test_invalid_hierarchies_are_rejected(rows, message):
    with pytest.raises(InputError, match=message):
        Hierarchy(rows, "v")


def test_non_coarsening_message_names_rows_not_values():
    with pytest.raises(InputError) as exc:
        Hierarchy((("secret1", "g", "*"), ("secret2", "g", "*"), ("other", "h", "*"), ("x", "g", "**")))
    assert "secret" not in str(exc.value)


def test_tables_renumber_present_groups_and_reject_unknown_values():
    h = Hierarchy((("a", "ab", "*"), ("b", "ab", "*"), ("c", "cd", "*"), ("d", "cd", "*")), "v")
    # data codes 0, 1, 2 stand for values c, a, d (b is absent from the data)
    t = h.tables(["c", "a", "d"])
    assert t.table.tolist() == [[1, 0, 2], [1, 0, 1], [0, 0, 0]]
    assert t.labels == (("a", "c", "d"), ("ab", "cd"), ("*",))
    assert t.n_groups == (3, 2, 1)
    with pytest.raises(InputError, match="2 value") as exc:
        h.tables(["a", "zzz", "yyy"])
    assert "zzz" not in str(exc.value)


def test_values_match_through_their_normalised_text():
    h = Hierarchy((("02138", "021**", "*"), ("39", "3*", "*"), ("Male", "M", "*"), ("1.5", "1*", "*")), "v")
    assert h.match([2138, 39.0, " 39 ", "Male", 1.5, "x", None]).tolist() == [0, 1, 1, 2, 3, -1, -1]
    # an SPSS code without a row is matched by its value label
    assert h.match([1], labels=["Male"]).tolist() == [2]
    assert value_key(float("nan")) is None and value_key(pd.NA) is None
    assert value_key(np.int64(7)) == value_key("7.0") == "7"


def test_dates_match_whether_read_as_text_or_as_datetimes():
    h = date_hierarchy(["2020-01-15", "2020-01-20", "2020-05-02"])
    data = [pd.Timestamp("2020-01-20"), np.datetime64("2020-05-02"), datetime.date(2020, 1, 15)]
    assert h.match(data).tolist() == [1, 2, 0]


def test_frame_round_trip_and_empty_cells():
    h = Hierarchy((("a", "ab", "*"), ("b", "ab", "*")), "v")
    assert Hierarchy.from_frame(h.to_frame(), "v") == h
    bad = h.to_frame()
    bad.iloc[1, 1] = ""
    with pytest.raises(InputError, match="Row 2"):
        Hierarchy.from_frame(bad)


# -- builders, hand-checked --------------------------------------------------------------------------------------
def test_fixed_width_intervals():
    h = interval_hierarchy([20, 23, 25, 31, 47, 23], [5, 10])
    assert rows_of(h) == {
        "20": ("20-24", "20-29", "*"),
        "23": ("20-24", "20-29", "*"),
        "25": ("25-29", "20-29", "*"),
        "31": ("30-34", "30-39", "*"),
        "47": ("45-49", "40-49", "*"),
    }


def test_fixed_width_intervals_with_top_and_bottom_coding():
    # intervals start at the bottom code 22; everything from the top code 40 on is one category
    h = interval_hierarchy([20, 23, 25, 31, 38, 47], [5, 10], bottom=22, top=40)
    assert rows_of(h) == {
        "20": ("<22", "<22", "*"),
        "23": ("22-26", "22-31", "*"),
        "25": ("22-26", "22-31", "*"),
        "31": ("27-31", "22-31", "*"),
        "38": ("37-39", "32-39", "*"),
        "47": (">=40", ">=40", "*"),
    }


def test_non_integral_intervals_are_half_open():
    h = interval_hierarchy([0.2, 0.4, 0.6, 1.1], [0.5])
    assert rows_of(h) == {"0.2": ("[0, 0.5)", "*"), "0.4": ("[0, 0.5)", "*"), "0.6": ("[0.5, 1)", "*"),
                          "1.1": ("[1, 1.5)", "*")}


@pytest.mark.parametrize("widths", [[5, 7], [10, 5], [0], [-1]])
def test_interval_widths_must_nest(widths):
    with pytest.raises(InputError):
        interval_hierarchy([1, 2, 3], widths)


def test_cut_points():
    h = cut_hierarchy([1, 5, 10, 15, 30], [[5, 15], [15]])
    assert rows_of(h) == {
        "1": ("<5", "<15", "*"),
        "5": ("5-14", "<15", "*"),
        "10": ("5-14", "<15", "*"),
        "15": (">=15", ">=15", "*"),
        "30": (">=15", ">=15", "*"),
    }
    h = cut_hierarchy([0.5, 0.7, 1.5, 2.5], [[1, 2]])
    assert rows_of(h) == {"0.5": ("<1", "*"), "0.7": ("<1", "*"), "1.5": ("[1, 2)", "*"), "2.5": (">=2", "*")}
    with pytest.raises(InputError, match="subset"):
        cut_hierarchy([1, 5, 10], [[5], [7]])


def test_quantile_bins_hold_equal_numbers_of_records():
    values = list(range(1, 101))
    h = quantile_hierarchy(values, (4, 2))
    level1 = Counter(rows_of(h)[str(v)][0] for v in values)
    assert level1 == {"<26": 25, "26-50": 25, "51-75": 25, ">=76": 25}
    assert {rows_of(h)[str(v)][1] for v in range(1, 51)} == {"<51"}
    assert {rows_of(h)[str(v)][1] for v in range(51, 101)} == {">=51"}
    with pytest.raises(InputError):
        quantile_hierarchy(["a", "b"])
    with pytest.raises(InputError):
        quantile_hierarchy(values, (1,))


def test_top_and_bottom_coding_and_clipping():
    values = [10, 20, 30, 40, 50]
    assert rows_of(top_bottom_hierarchy(values, bottom=20, top=40)) == {
        "10": ("<=20", "*"), "20": ("<=20", "*"), "30": ("30", "*"), "40": (">=40", "*"), "50": (">=40", "*")}
    # clipping (Near & Abuah): the released value is the bound itself
    assert rows_of(top_bottom_hierarchy(values, bottom=20, top=40, clip=True)) == {
        "10": ("20", "*"), "20": ("20", "*"), "30": ("30", "*"), "40": ("40", "*"), "50": ("40", "*")}
    assert rows_of(top_bottom_hierarchy(values, top=35)) == {
        "10": ("10", "*"), "20": ("20", "*"), "30": ("30", "*"), "40": (">=35", "*"), "50": (">=35", "*")}
    # a code that merges nothing adds no level
    assert top_bottom_hierarchy(values, top=45).height == 2
    with pytest.raises(InputError):
        top_bottom_hierarchy(values)
    with pytest.raises(InputError):
        top_bottom_hierarchy(values, bottom=40, top=20)


def test_category_grouping():
    h = grouping_hierarchy(["b", "a", "d", "c", "a"], [{"a": "ab", "b": "ab"}, {"ab": "abc", "c": "abc"}])
    assert h.rows == (("a", "ab", "abc", "*"), ("b", "ab", "abc", "*"), ("c", "c", "abc", "*"),
                      ("d", "d", "d", "*"))
    # keys match numbers by value; numbers come first, in numeric order
    h = grouping_hierarchy([10, 2, "x", 1], [{"1": "low", 2.0: "low"}])
    assert h.rows == (("1", "low", "*"), ("2", "low", "*"), ("10", "10", "*"), ("x", "x", "*"))


def test_zip_masking_replaces_trailing_characters():
    h = masking_hierarchy(["02138", "02139", "02141", "02210", "02139"])
    assert h.rows == (("02138", "0213*", "021**", "*"), ("02139", "0213*", "021**", "*"),
                      ("02141", "0214*", "021**", "*"), ("02210", "0221*", "022**", "*"))
    # ZIP codes read as numbers lost their leading zero: width pads them back; rows keep the data's text
    h = masking_hierarchy([2138, 2139, 2141, 2210], width=5)
    assert [r[1:] for r in h.rows] == [("0213*", "021**", "*"), ("0213*", "021**", "*"), ("0214*", "021**", "*"),
                                       ("0221*", "022**", "*")]
    assert (h.match(["02138", 2210]) >= 0).all()
    assert masking_hierarchy(["ab", "ac", "bd"], mask_char="#").rows == (
        ("ab", "a#", "*"), ("ac", "a#", "*"), ("bd", "b#", "*"))


def test_zip_masking_matches_the_bundled_zip_hierarchy():
    h = read_arx_hierarchy(Path(__file__).parent / "data" / "hierarchies" / "zip.csv")
    built = masking_hierarchy(list(h.originals))
    # the same first level; the file's "021**", shared by every value, is the root of the built one
    assert [r[:2] for r in built.rows] == [r[:2] for r in h.rows]
    assert len(set(h.labels_at(2))) == 1 and built.height == 3


def test_dates_to_month_quarter_year():
    h = date_hierarchy(["2021-12-31", "2020-01-15", "2020-01-20", "2020-03-02", "2020-04-30"])
    assert h.rows == (
        ("2020-01-15", "2020-01", "2020-Q1", "2020", "*"),
        ("2020-01-20", "2020-01", "2020-Q1", "2020", "*"),
        ("2020-03-02", "2020-03", "2020-Q1", "2020", "*"),
        ("2020-04-30", "2020-04", "2020-Q2", "2020", "*"),
        ("2021-12-31", "2021-12", "2021-Q4", "2021", "*"),
    )
    h = date_hierarchy(["1999-05-01", "2003-01-01", "2007-06-30"], levels=("decade", "year"))
    assert rows_of(h) == {"1999-05-01": ("1990s", "*"), "2003-01-01": ("2000s", "*"), "2007-06-30": ("2000s", "*")}
    with pytest.raises(InputError, match="not dates"):
        date_hierarchy(["2020-01-01", "soon"])
    with pytest.raises(InputError):
        date_hierarchy(["2020-01-01"], levels=("week",))


def test_builders_reject_unusable_values():
    with pytest.raises(InputError, match="non-numeric"):
        interval_hierarchy([1, "x"], [5])
    with pytest.raises(InputError, match="no observed"):
        greedy_binning_hierarchy([None, float("nan")], (5,))
    with pytest.raises(InputError):
        greedy_binning_hierarchy([1, 2], (0,))


# -- Angiuli & Waldo: greedy capacity binning ---------------------------------------------------------------------------
TABLE_II = {1950: 10, 1951: 4, 1952: 4, 1990: 6, 1991: 11}


def test_angiuli_waldo_table_ii_greedy_bins_are_1950_1952_and_1990_1991():
    """The paper's bins; they meet at the roundest year between them, and no label shows a year they hold."""
    values = [y for y, f in TABLE_II.items() for _ in range(f)]
    h = greedy_binning_hierarchy(values, (10,))
    assert rows_of(h) == {"1950": ("<1970", "*"), "1951": ("<1970", "*"), "1952": ("<1970", "*"),
                          "1990": (">=1970", "*"), "1991": (">=1970", "*")}


def test_greedy_bin_labels_do_not_release_the_extremes():
    """Ages 40, 50 and 103 binned together were labelled ``40-103``: the release told that someone aged 103
    is in the file. The top bin is now open above and the bottom bin open below."""
    ages = [18] * 6 + [19] * 6 + list(range(20, 40)) + [40, 50, 103]
    h = greedy_binning_hierarchy(ages, (3, 6))
    labels = {lab for lv in range(1, h.max_level) for lab in h.labels_at(lv)}
    assert not any("103" in lab or "18" in lab for lab in labels), labels
    assert rows_of(h)["103"][0].startswith(">=") and rows_of(h)["18"][0].startswith("<")


def _label_interval(label: str) -> tuple[float, float]:
    """[lo, hi) of a bin label, read back independently of the code that wrote it."""
    if label == "*":
        return -np.inf, np.inf
    if label.startswith(">="):
        return float(label[2:]), np.inf
    if label.startswith("<"):
        return -np.inf, float(label[1:])
    if label.startswith("["):
        lo, hi = label[1:-1].split(", ")
        return float(lo), float(hi)
    m = re.fullmatch(r"(-?\d+)(?:-(-?\d+))?", label)
    assert m, label
    lo = float(m.group(1))
    return lo, float(m.group(2) or m.group(1)) + 1


def _roundest_between(below: float, above: float) -> float:
    """By enumeration, for values in halves: of the tenths in (below, above], those divisible by the highest
    power of ten (0 first), then the one nearest the middle, the lower on a tie."""
    tenths = range(round(below * 10) + 1, round(above * 10) + 1)

    def roundness(t: int) -> int:
        if t == 0:
            return 99
        power = 0
        while t % 10 ** (power + 1) == 0:
            power += 1
        return power

    best = max(roundness(t) for t in tenths)
    middle = (below + above) * 5
    return min((abs(t - middle), t) for t in tenths if roundness(t) == best)[1] / 10


@given(st.floats(-1e12, 1e12, allow_nan=False), st.floats(-1e12, 1e12, allow_nan=False))
def test_a_round_cut_lies_in_its_gap(x, y):
    """Any two floats: the cut is above the lower and at most the upper, and never -0."""
    assume(x != y)
    below, above = min(x, y), max(x, y)
    cut = round_cut(below, above)
    assert below < cut <= above
    assert not (cut == 0 and math.copysign(1.0, cut) < 0)


@given(st.lists(st.integers(-30, 120), min_size=2, max_size=40), st.booleans(),
       st.lists(st.integers(2, 6), min_size=1, max_size=3))
def test_quantile_bins_meet_at_the_roundest_number_between_their_values(values, halves, n_bins):
    """Each level's intervals hold their values and meet at the roundest number between the neighbouring
    values (found by enumeration), so only where none is rounder does a label show a value of the data."""
    data = np.array(values, dtype=float) * (0.5 if halves else 1.0)
    h = quantile_hierarchy(data, n_bins)
    rows = {float(r[0]): r for r in h.rows}
    for lv in range(1, h.max_level + 1):
        spans = {rows[float(v)][lv]: _label_interval(rows[float(v)][lv]) for v in data}
        assert all(lo <= v < hi for v in data for lo, hi in [spans[rows[float(v)][lv]]])
        for _, cut in sorted(spans.values())[:-1]:
            assert cut == _roundest_between(data[data < cut].max(), data[data >= cut].min())


def test_bins_meet_at_round_numbers_not_at_values_of_the_data():
    """Incomes 37,250 and 41,900 in neighbouring bins meet at 40,000: neither income is shown."""
    incomes = [36_000] * 3 + [37_250] * 3 + [41_900] * 3 + [43_000] * 3
    h = greedy_binning_hierarchy(incomes, (6,))
    assert rows_of(h)["37250"][0] == "<40000" and rows_of(h)["41900"][0] == ">=40000"
    incomes = [10000, 20000, 35000, 52000, 58000, 61873, 75000, 90000, 150000, 400000]
    top = rows_of(quantile_hierarchy(incomes, (4, 2)))
    assert [top[str(v)][0] for v in incomes[::3]] == ["<40000", "40000-59999", "60000-79999", ">=80000"]


@given(st.lists(st.tuples(st.integers(-30, 120), st.integers(1, 9)), min_size=1, max_size=25,
                unique_by=lambda t: t[0]),
       st.lists(st.integers(1, 40), min_size=1, max_size=3), st.booleans())
def test_greedy_bin_labels_cover_their_values_and_show_no_extreme_below_capacity(pairs, caps, halves):
    """Every value lies in its labels' intervals; a level's intervals do not overlap; the minimum is in no
    label, and each bin (so each start a label shows) holds at least the smallest capacity in records."""
    pairs = sorted(pairs)
    scale = 0.5 if halves else 1.0
    uniq = np.array([v * scale for v, _ in pairs])
    counts = np.array([c for _, c in pairs])
    h = greedy_binning_hierarchy(uniq, caps, counts=counts)
    rows = {float(r[0]): r for r in h.rows}
    for lv in range(1, h.max_level + 1):
        spans = {}
        for v in uniq:
            lo, hi = _label_interval(rows[float(v)][lv])
            assert lo <= v < hi
            spans.setdefault(rows[float(v)][lv], (lo, hi))
        ordered = sorted(spans.values())
        assert all(a[1] == b[0] for a, b in zip(ordered, ordered[1:], strict=False))  # they meet
        for _, cut in ordered[:-1]:  # at the roundest number between the neighbouring values
            assert cut == _roundest_between(uniq[uniq < cut].max(), uniq[uniq >= cut].min())
        assert uniq.min() not in [lo for lo, _ in ordered]
        if len(ordered) > 1:  # each bin, so each released start, holds at least the smallest capacity
            assert all(counts[(uniq >= lo) & (uniq < hi)].sum() >= min(caps) for lo, hi in ordered)


def left_to_right_bins(counts, capacity):
    """The paper's original algorithm: scan and close a bin once it holds ``capacity`` records."""
    out, b, filled = [], 0, 0
    for c in counts:
        out.append(b)
        filled += c
        if filled >= capacity:
            b, filled = b + 1, 0
    return out


def test_seed_002_greedy_is_narrower_than_left_to_right_scan():
    uniq = np.array(list(TABLE_II), dtype=float)
    counts = np.array(list(TABLE_II.values()), dtype=float)
    # the paper reports 1950, 1951-1990, 1991 for the scan ...
    assert left_to_right_bins(counts, 10) == [0, 1, 1, 1, 2]
    greedy = greedy_bins(uniq, counts, 10)
    assert greedy.tolist() == [0, 0, 0, 1, 1]

    def total_width(bins):
        return sum(uniq[bins == b].max() - uniq[bins == b].min() for b in set(bins))

    assert total_width(greedy) == 2 + 1 < total_width(np.array(left_to_right_bins(counts, 10)))


def naive_greedy(uniq, counts, capacity):
    """Angiuli & Waldo's rule written out directly: repeatedly do the cheapest merge of neighbouring bins one of which
    is under capacity (cost: change of the records' placeholder means, in squares; ties to the left)."""
    bins = [[i] for i in range(len(uniq))]
    n = [float(c) for c in counts]
    s = [float(c) * float(u) for u, c in zip(uniq, counts)]
    while True:
        best = None
        for a in range(len(bins) - 1):
            if n[a] >= capacity and n[a + 1] >= capacity:
                continue
            ma, mb = s[a] / n[a], s[a + 1] / n[a + 1]
            cost = n[a] * n[a + 1] / (n[a] + n[a + 1]) * (ma - mb) ** 2
            if best is None or cost < best[0]:
                best = (cost, a)
        if best is None:
            break
        a = best[1]
        bins[a] += bins.pop(a + 1)
        n[a] += n.pop(a + 1)
        s[a] += s.pop(a + 1)
    out = np.empty(len(uniq), dtype=int)
    for b, members in enumerate(bins):
        out[members] = b
    return out


@given(st.dictionaries(st.integers(0, 60), st.integers(1, 9), min_size=1, max_size=14), st.integers(1, 25))
def test_greedy_bins_follow_the_rule_and_meet_the_capacity(freq, capacity):
    uniq = np.array(sorted(freq), dtype=float)
    counts = np.array([freq[int(u)] for u in uniq], dtype=float)
    bins = greedy_bins(uniq, counts, capacity)
    assert bins.tolist() == naive_greedy(uniq, counts, capacity).tolist()
    assert (np.diff(bins) >= 0).all() and bins[0] == 0  # contiguous ranges of values, numbered left to right
    per_bin = np.bincount(bins, weights=counts)
    if counts.sum() >= capacity:
        assert (per_bin >= capacity).all()
    else:
        assert len(per_bin) == 1


@given(st.lists(st.integers(0, 40), min_size=1, max_size=60), st.lists(st.integers(1, 20), min_size=1, max_size=3))
def test_greedy_levels_nest_and_meet_each_capacity(values, capacities):
    h = greedy_binning_hierarchy(values, capacities)
    assert_well_formed(h, values)
    freq = Counter(values)
    rows = rows_of(h)
    for lv in range(h.height - 2):
        per_label = Counter()
        for v, f in freq.items():
            per_label[rows[str(v)][lv]] += f
        assert min(per_label.values()) >= min(capacities) or len(per_label) == 1


# -- property tests for every builder ------------------------------------------------------------------------
ints = st.lists(st.integers(-50, 200), min_size=1, max_size=40)


@given(ints, st.integers(1, 10), st.lists(st.integers(1, 4), max_size=3))
def test_interval_builder_is_well_formed(values, w0, factors):
    widths = [w0]
    for f in factors:
        widths.append(widths[-1] * f)
    h = interval_hierarchy(values, widths)
    assert_well_formed(h, values)
    rows = rows_of(h)
    for v in set(values):  # each interval label of integer data reads "lo-hi" (or "lo") and contains its value
        for label in rows[str(v)][:-1]:
            m = re.fullmatch(r"(-?\d+)(?:-(-?\d+))?", label)
            assert m is not None
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            assert lo <= v <= hi and hi - lo + 1 in widths


@given(ints, st.lists(st.integers(-50, 200), max_size=6))
def test_cut_builder_is_well_formed(values, cuts):
    cuts = sorted(set(cuts))
    h = cut_hierarchy(values, [cuts, cuts[::2]])
    assert_well_formed(h, values)


@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=50),
       st.lists(st.integers(2, 12), min_size=1, max_size=3))
def test_quantile_builder_is_well_formed(values, n_bins):
    assert_well_formed(quantile_hierarchy(values, n_bins), values)


@given(ints, st.integers(-60, 210), st.integers(1, 80), st.booleans())
def test_top_bottom_builder_is_well_formed(values, bottom, span, clip):
    assert_well_formed(top_bottom_hierarchy(values, bottom=bottom, top=bottom + span, clip=clip), values)


@given(st.lists(st.text("0123456789ab", min_size=1, max_size=6), min_size=1, max_size=30))
def test_masking_builder_is_well_formed(values):
    h = masking_hierarchy(values)
    assert_well_formed(h, values)
    rows = rows_of(h)
    for v in set(values):  # every level keeps a prefix of the value and masks the rest
        text = next(o for o in rows if value_key(o) == value_key(v))
        for label in rows[text][:-1]:
            kept = label.rstrip("*")
            assert text.startswith(kept) and len(label) == len(text)


@given(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=30),
       st.lists(st.dictionaries(st.sampled_from("abcdefghxyz"), st.sampled_from("xyz"), max_size=5), max_size=3))
def test_grouping_builder_is_well_formed(values, mappings):
    assert_well_formed(grouping_hierarchy(values, mappings), values)


# -- ARX hierarchy files ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("var", ADULT_VARS)
def test_adult_arx_files_round_trip(var, tmp_path):
    path = ADULT / f"adult_hierarchy_{var}.csv"
    h = read_arx_hierarchy(path, var)
    text = path.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert h.n_values == len(lines) and h.height == lines[0].count(";") + 1
    assert h.to_arx_csv().rstrip("\n") == text.rstrip("\n")
    out = write_arx_hierarchy(h, tmp_path / f"{var}.csv")
    assert read_arx_hierarchy(out, var) == h
    assert read_arx_hierarchy(out.read_bytes(), var) == h


def test_adult_hierarchies_cover_the_data_and_give_the_6480_node_lattice():
    hs = load_hierarchies(ADULT, ADULT_VARS)
    data = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str)
    heights = {}
    for var, h in hs.items():
        values = sorted(set(data[var]))
        t = h.tables(values)  # raises if any value has no row
        assert t.n_groups[0] == len(values)
        heights[var] = h.height
    assert heights == {"sex": 2, "age": 5, "race": 2, "marital-status": 3, "education": 4, "native-country": 3,
                       "workclass": 3, "occupation": 3, "salary-class": 2}
    assert np.prod([heights[v] for v in ADULT_VARS[:8]]) == 6480


def test_arx_reader_delimiters_missing_root_and_errors(tmp_path):
    assert read_arx_hierarchy(b"a,ab\nb,ab\nc,c\n").rows == (("a", "ab", "*"), ("b", "ab", "*"), ("c", "c", "*"))
    assert read_arx_hierarchy(b"a\tx\t*\nb\tx\t*\n").rows == (("a", "x", "*"), ("b", "x", "*"))
    assert read_arx_hierarchy("\ufeffa;x;*;;\nb;x;*;;\n".encode()).rows == (("a", "x", "*"), ("b", "x", "*"))
    assert read_arx_hierarchy(b"a\nb\n").rows == (("a", "*"), ("b", "*"))
    with pytest.raises(InputError, match="different numbers"):
        read_arx_hierarchy(b"a;x;*\nb;*\n")
    with pytest.raises(InputError, match="empty"):
        read_arx_hierarchy(b"\n\n")
    with pytest.raises(InputError, match="not found"):
        read_arx_hierarchy(tmp_path / "nope.csv")
    (tmp_path / "d_hierarchy_age.csv").write_text("1;*\n")
    (tmp_path / "sex.csv").write_text("m;*\nf;*\n")
    assert find_hierarchy_file(tmp_path, "age").name == "d_hierarchy_age.csv"
    assert find_hierarchy_file(tmp_path, "sex").name == "sex.csv"
    with pytest.raises(InputError, match="No hierarchy file for race"):
        load_hierarchies(tmp_path, ["age", "race"])


cell = st.text("abcXYZ019 .,;\"'-", min_size=1, max_size=6).map(str.strip).filter(bool)


@given(st.lists(cell, min_size=1, max_size=8, unique_by=value_key), st.lists(st.integers(0, 2), max_size=8),
       st.lists(cell, min_size=3, max_size=3, unique=True))
def test_arx_csv_round_trips_any_hierarchy(originals, grouping, names):
    grouping = (grouping + [0] * len(originals))[: len(originals)]
    h = Hierarchy(tuple((o, names[g], TOP) for o, g in zip(originals, grouping)))
    assert read_arx_hierarchy(h.to_arx_csv().encode()).rows == h.rows


@given(st.lists(st.tuples(st.one_of(st.integers(-5, 40), st.floats(-5, 40, allow_nan=False).map(lambda x: round(x, 1))),
                          st.integers(0, 30)), min_size=1, max_size=25).filter(lambda p: sum(c for _, c in p) > 0),
       st.lists(st.integers(1, 40), min_size=1, max_size=3))
def test_greedy_binning_of_counted_values_is_that_of_the_records(pairs, capacities):
    """Distinct values with record counts (a class table's, repeated values and zero counts included) give
    the hierarchy the records themselves give, without expanding them."""
    values = [v for v, _ in pairs]
    counts = [c for _, c in pairs]
    records = [v for v, c in pairs for _ in range(c)]
    assert rows_of(greedy_binning_hierarchy(values, capacities, counts=counts)) == \
        rows_of(greedy_binning_hierarchy(records, capacities))


def test_greedy_binning_refuses_counts_that_do_not_fit():
    with pytest.raises(InputError, match="one record count"):
        greedy_binning_hierarchy([1, 2, 3], (2,), counts=[1, 2])
    with pytest.raises(InputError, match="one record count"):
        greedy_binning_hierarchy([1, 2], (2,), counts=[1, -1])


def test_a_hierarchy_indexes_its_rows_once_and_matches_alike():
    """The rows' indexes are made on the first match and kept (pages match one hierarchy many times); the
    matches are those of a fresh hierarchy, and the kept index counts in the dashboard cache's bytes."""
    from kanon_app.cache import size_of
    from kanon_core.treat.hierarchy import Hierarchy

    rows = [("012", "01*", "*"), ("12", "1*", "*"), ("7", "*", "*")]
    h = Hierarchy(name="code", rows=rows)
    before = size_of(h, set())
    first = h.match(["012", "12", 7, "x"]).tolist()
    assert "_indexes" in vars(h)
    assert first == h.match(["012", "12", 7, "x"]).tolist() == Hierarchy(name="code", rows=rows).match(
        ["012", "12", 7, "x"]).tolist() == [0, 1, 2, -1]
    assert size_of(h, set()) > before


def test_long_whole_number_codes_match_by_their_exact_digits():
    """A row written "12345678901234567" was read through a float (...568) and silently generalized the data's
    ...568, which has no row; now its digits are read exactly and the value without a row is refused."""
    from kanon_core.dataset import Dataset
    from kanon_core.errors import InputError
    from kanon_core.treat.hierarchy import value_key
    from kanon_core.treat.recode import generalized_column

    assert value_key("12345678901234567") == "12345678901234567" == value_key(12345678901234567)
    assert value_key("02138") == "2138" == value_key(2138.0) and value_key("+5") == "5"
    ds = Dataset(frame=pd.DataFrame({"code": [12345678901234568, 5]}))
    h = Hierarchy((("12345678901234567", "X", "*"), ("5", "Z", "*")))
    with pytest.raises(InputError, match="1 value\\(s\\) of variable 'code' are not in its hierarchy"):
        generalized_column(ds, "code", h, 1)
    exact = Hierarchy((("12345678901234568", "X", "*"), ("5", "Z", "*")))
    assert generalized_column(ds, "code", exact, 1).tolist() == ["X", "Z"]
