"""The report's per-category table lists at most a bound of rows per variable: for a postcode of 3,000
categories the rows a data steward needs (completely suppressed, intervals no longer overlapping, the largest
differences, then the largest categories), and it says how many it leaves out; a variable of few categories
keeps every row, the summary still counts every category, and the threshold rule still withholds the small
ones. The choice itself is checked against a direct reading of its documented rule."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.history import History
from kanon_core.report import ReportOptions, build_report, render_html
from kanon_core.report.category_rows import REPORT_CATEGORY_ROWS, category_rows
from kanon_core.treat.suppress import SuppressStep
from kanon_core.utility import compare_distributions
from tests.test_report import Page, num

K = 3
SECRET = "Zq-postcode-"  # two postcodes of one record each: the threshold rule must keep hiding them


def _postcodes() -> History:
    """3,000 postcodes of 5 records, each with one value of x (30 values, 500 records each); two big postcodes
    B1 and B2 (80 records) of which 60 records have rare combinations with x, so suppression to k with x
    protected blanks their postcode (a large drop: intervals apart); a big postcode B3 declared missing
    (completely suppressed); two postcodes of a single record (withheld by the threshold rule)."""
    postcode = [f"P{i:04d}" for i in range(3000) for _ in range(5)]
    x = [f"r{i % 30:02d}" for i in range(3000) for _ in range(5)]
    for big in ("B1", "B2"):
        postcode += [big] * 80
        x += ["c"] * 20 + [f"r{j:02d}" for j in range(30) for _ in range(2)]
    postcode += ["B3"] * 100 + [f"{SECRET}1", f"{SECRET}2"]
    x += ["c"] * 102
    h = History.start(Dataset(frame=pd.DataFrame({"postcode": postcode, "x": x}),
                              roles=Roles(qis=("postcode", "x")), name="postcodes"))
    h.apply(DeclareMissingValues((("postcode", ("B3",)),)))
    h.apply(SuppressStep(qis=("postcode", "x"), k=K, protected=("x",)))
    return h


@pytest.fixture(scope="module")
def postcodes():
    h = _postcodes()
    html = render_html(build_report(h, options=ReportOptions(k=K, minucs=False, created="2026-01-01")))
    treated = h.current.dataset
    comp = compare_distributions(h.original.dataset.with_roles(treated.roles), treated, ["postcode", "x"])
    return html, Page(html), comp


def _rows(page: Page, variable: str) -> pd.DataFrame:
    cats = page.frame("utility-categories")
    return cats[cats["variable"] == variable]


def _nameable(comp, variable: str) -> pd.DataFrame:
    """The comparison's categories of ``variable`` that the threshold rule lets the report name: not the small
    ones, nor (when their pooled count before or after is below k, which the total less the named rows would
    give back) the smallest named one (the first on a tie) that joins them: one is enough in this file."""
    t = comp.table[comp.table["variable"] == variable]
    small = ((t["n_original"] > 0) & (t["n_original"] < K)) | ((t["n_treated"] > 0) & (t["n_treated"] < K))
    pooled = t[small]
    short = [c for c in ("n_original", "n_treated") if 0 < pooled[c].sum() < K]
    named = t[~small]
    if short:
        lifting = named[named[short[0]] > 0]
        joined = lifting.index[int(np.argmin(lifting[short[0]].to_numpy()))]
        assert all(not 0 < pooled[c].sum() + named.loc[joined, c] < K for c in ("n_original", "n_treated"))
        named = named.drop(index=joined)
    return named


def _left_out_note(html: str) -> str:
    """The text under the per-category table."""
    m = re.search(r'<div id="utility-categories-left-out">(.*?)</div>', html, re.S)
    assert m, "no note under the per-category table"
    return re.sub(r"<[^>]+>", " ", m.group(1)).replace("&#x27;", "'")


def test_a_variable_of_many_categories_lists_at_most_the_bound(postcodes):
    _, page, comp = postcodes
    rows = _rows(page, "postcode")
    assert len(_nameable(comp, "postcode")) > 3000
    assert 0 < len(rows) <= REPORT_CATEGORY_ROWS


def test_the_rows_a_steward_needs_are_listed(postcodes):
    _, page, comp = postcodes
    listed = set(_rows(page, "postcode")["label"])
    t = _nameable(comp, "postcode")
    gone = set(t.loc[t["status"] == "completely suppressed", "label"])
    apart = set(t.loc[(t["status"] == "compared") & ~t["overlap"].fillna(True).astype(bool), "label"])
    assert gone == {"B3"} and apart == {"B1", "B2"}  # what the fixture was built to give
    assert gone | apart <= listed
    most_changed = t.assign(change=t["difference"].abs()).nlargest(10, "change")["label"]
    assert set(most_changed) <= listed
    # the rows not listed changed less than every row listed for its change
    assert t.loc[~t["label"].isin(listed), "difference"].abs().max() <= min(
        abs(t.loc[t["label"] == lab, "difference"].iloc[0]) for lab in most_changed)


def test_the_report_says_how_many_were_left_out(postcodes):
    html, page, comp = postcodes
    named = len(_nameable(comp, "postcode"))
    listed = int((~_rows(page, "postcode")["label"].str.startswith(f"other categories with fewer than {K} records")
                  ).sum())
    note = _left_out_note(html)
    assert f"postcode: {listed:,} of {named:,} categories listed" in note
    assert f"{named - listed:,} left out" in note
    assert "Compare page downloads" in note and "kanon estimate" in note
    assert "x:" not in note  # the variable of few categories lost nothing


def test_a_variable_of_few_categories_lists_every_category(postcodes):
    _, page, comp = postcodes
    expected = _nameable(comp, "x")
    assert 1 < len(expected) <= REPORT_CATEGORY_ROWS
    shown = _rows(page, "x")
    assert shown["label"].tolist() == expected["label"].astype(str).tolist()  # every row, in the table's order
    np.testing.assert_allclose([num(v) for v in shown["% before"]], expected["pct_original"].round(2), atol=0.006)


def test_the_summary_still_counts_every_category(postcodes):
    _, page, comp = postcodes
    u = page.frame("utility-summary").set_index("measure")
    assert int(num(u.loc["Categories compared", "value"])) == comp.summary.n_categories > 3000
    assert int(num(u.loc["Confidence intervals overlapping", "value"])) == comp.summary.n_overlap
    assert int(num(u.loc["Categories completely suppressed", "value"])) == comp.summary.n_completely_suppressed


def test_small_categories_stay_withheld(postcodes):
    html, page, comp = postcodes
    t = comp.table[comp.table["variable"] == "postcode"]
    assert t["label"].astype(str).str.startswith(SECRET).sum() == 2  # they are categories of the comparison
    assert SECRET not in html[html.index("</script></head>"):]
    rows = _rows(page, "postcode")
    pooled = rows[rows["label"].str.startswith(f"other categories with fewer than {K} records")]
    # "< 3" would not hide their 2 records (the total less the postcodes named): a postcode of 5 joins them
    assert len(pooled) == 1 and num(pooled["records before"].iloc[0]) == 7
    assert pooled["label"].iloc[0].endswith("pooled with the smallest others")


# -- the choice, against its documented rule -----------------------------------------------------------------
def _reference(rows: list[dict], limit: int) -> list[int]:
    """The documented rule read directly: positions (in the rows' order) of the rows to list."""
    pooled = [i for i, r in enumerate(rows) if pd.isna(r["status"])]
    if len(rows) <= limit:
        return list(range(len(rows)))
    named = [i for i in range(len(rows)) if i not in pooled]
    room = max(limit - len(pooled), 0)
    by_change = sorted(named, key=lambda i: (-abs(rows[i]["difference"]), i))
    by_size = sorted(named, key=lambda i: (-max(rows[i]["pct_original"], rows[i]["pct_treated"]), i))
    out: list[int] = []
    for wanted, order, upto in (
        (lambda r: r["status"] == "completely suppressed", by_change, room),
        (lambda r: r["status"] == "compared" and not r["overlap"], by_change, room),
        (lambda r: True, by_change, room // 2),
        (lambda r: True, by_size, room),
    ):
        for i in order:
            if len(out) < upto and i not in out and wanted(rows[i]):
                out.append(i)
    return sorted(out + pooled)


def _table(spec: list[tuple[str, str | None, int, int, int, bool]]) -> pd.DataFrame:
    """Rows (variable, status, pct before, pct after, difference, overlap); a status None is a pooled row
    (empty cells but its label and sums, as :func:`kanon_core.report.mask.mask_categories` writes it)."""
    return pd.DataFrame([{"variable": v, "label": f"c{i}", "status": s, "pct_original": float(a),
                          "pct_treated": float(b), "difference": None if s is None else float(d),
                          "overlap": None if s is None else o}
                         for i, (v, s, a, b, d, o) in enumerate(spec)])


STATUSES = st.sampled_from(["compared"] * 6 + ["completely suppressed", "recoded", "only in treated"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("uvw"), STATUSES, st.integers(0, 9), st.integers(0, 9),
                          st.integers(-6, 6), st.booleans()), min_size=1, max_size=60),
       st.lists(st.sampled_from("uvw"), max_size=3), st.integers(1, 12))
def test_the_choice_follows_its_documented_rule(spec, pooled_in, limit):
    spec = spec + [(v, None, 1, 1, 0, True) for v in dict.fromkeys(pooled_in)]  # a pooled row per variable
    table = _table(spec)
    got = category_rows(table, limit)
    expected = []
    for v in pd.unique(table["variable"]):
        at = np.flatnonzero(table["variable"] == v)
        expected += [int(at[i]) for i in _reference(table.iloc[at].to_dict("records"), limit)]
    # the listed rows are the table's rows, in the table's order
    assert got.table["label"].tolist() == table["label"].iloc[sorted(expected)].tolist()
    limited = {r.variable: r for r in got.limited}
    for v in pd.unique(table["variable"]):
        n_rows = int((table["variable"] == v).sum())
        shown = int((got.table["variable"] == v).sum())
        assert shown == min(n_rows, limit)
        assert (v in limited) == (n_rows > limit)
        if v in limited:
            named = n_rows - int(v in pooled_in)
            assert limited[v].n_categories == named and limited[v].n_left_out == named - (shown - int(v in pooled_in))


def test_too_many_flagged_rows_list_the_largest_changes_and_say_so():
    spec = [("pc", "compared", 1, 1, d, False) for d in range(30)] + [("pc", "compared", 5, 5, 0, True)] * 5
    got = category_rows(_table(spec), 10)
    assert got.table["difference"].tolist() == [float(d) for d in range(20, 30)]
    (info,) = got.limited
    assert (info.apart.listed, info.apart.of, info.n_left_out) == (10, 30, 25)
    assert info.sentence() == ("pc: 10 of 35 categories listed (the 10 most changed of the 30 whose confidence "
                               "intervals no longer overlap); 25 left out.")


def test_a_bound_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        category_rows(_table([("a", "compared", 1, 1, 0, True)]), 0)


def test_the_status_read_is_the_comparisons():
    from kanon_core.report import category_rows as rows
    from kanon_core.utility.compare import STATUS_SUPPRESSED

    assert rows.STATUS_SUPPRESSED == STATUS_SUPPRESSED


def test_only_compared_rows_can_be_apart():
    """A recoded category and one only in the release have no overlap (missing): never listed as "intervals no
    longer overlap" (with their zero interval on the absent side they used to be)."""
    def one(values):
        return Dataset(pd.DataFrame({"v": pd.Series(values, dtype=object)}), roles=Roles(qis=("v",)))

    comp = compare_distributions(one(["a"] * 40 + ["c"] * 30 + ["d"] * 30),
                                 one(["a"] * 40 + ["cd"] * 30 + ["d"] * 15 + ["cd"] * 15))
    listed = category_rows(comp.table, limit=2)
    (info,) = listed.limited
    assert info.apart.of == 0
