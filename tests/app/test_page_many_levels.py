"""Every page on a quasi-identifier with thousands of categories (a postcode-like text code) next to ordinary
ones: what reaches the browser stays bounded (chart points, select box options, table rows), and whatever is
left out is said, with the numbers of kanon_core.

The file has 6,000 records and 3,000 postcodes: more than any bound (:data:`MAX_CHART_CATEGORIES` bars,
:data:`MAX_OPTIONS` options, a page of :data:`PAGE_ROWS` rows, :data:`RAW_HISTOGRAM_VALUES` values sent as
such), so each test fails where a page would send one element per category, as with 100,000 postcodes."""

from __future__ import annotations

import base64
import json
import re
import sys
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.synthetic import many_levels_frame
from kanon_app.cache import CONTAINER_SAMPLE, size_of
from kanon_app.hierarchy_ui import MAX_GROUPING_ROWS
from kanon_app.many_levels import MAX_OPTIONS
from kanon_app.pager import PAGE_ROWS
from kanon_core.dataset import Dataset, Roles
from kanon_core.utility.compare import compare_distributions
from kanon_core.utility.plots import (
    MAX_CHART_CATEGORIES,
    RAW_HISTOGRAM_VALUES,
    ci_comparison_spec,
    others_label,
)

from .helpers import metric, session_on

N, LEVELS = 6000, 3000
QIS = ("postcode", "sex", "region")
MAX_TABLE_ROWS = 1000
"""Rows a table may send: the Risk page's record lists stop at 1,000 (with a caption); the others are paged."""


def _wide() -> Dataset:
    return Dataset(many_levels_frame(N, LEVELS), roles=Roles(qis=QIS, weight="wgt", outcomes=("score",)),
                   name="wide")


@pytest.fixture(scope="module")
def wide() -> Dataset:
    return _wide()


def _open(page_file: str, ds: Dataset, **state: Any) -> AppTest:
    at = session_on(ds, timeout=300, **state)
    at.switch_page(f"pages/{page_file}").run()
    assert not at.exception
    return at


def _array(value: Any) -> list:
    """A trace's data as a list (Plotly writes numeric arrays as base64 typed arrays)."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).tolist()
    return list(value) if value is not None else []


def _figures(at: AppTest) -> dict[str, dict]:
    """Every Plotly chart of the run by its key, as the JSON sent to the browser."""
    return {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def _unbounded(at: AppTest) -> list[str]:
    """The elements of the run that send more than their bound: chart traces, options, table rows."""
    out = []
    for key, fig in _figures(at).items():
        for trace in fig["data"]:
            n = max(len(_array(trace.get("x"))), len(_array(trace.get("y"))))
            if n > MAX_CHART_CATEGORIES:
                out.append(f"chart {key}: {n} points")
    out += [f"select {s.key}: {len(s.options)} options" for s in [*at.selectbox, *at.multiselect]
            if len(s.options) > MAX_OPTIONS]
    out += [f"table {d.key}: {len(d.value)} rows" for d in at.dataframe if len(d.value) > MAX_TABLE_ROWS]
    return out


def _click_and_wait(at: AppTest, button: str, ready) -> None:
    """Click ``button`` and rerun until ``ready(at)`` (work runs off the script thread)."""
    at.button(key=button).click().run()
    for _ in range(60):
        if ready(at):
            break
        at.run()
    assert not at.exception and ready(at)


def test_no_page_opens_with_an_element_per_category(wide):
    """Every page as it opens (its default tab, nothing clicked): no traceback, no error, nothing unbounded."""
    found = {}
    for page_file in ("data.py", "risk.py", "minucs.py", "recode.py", "suppress.py", "compare.py", "export.py"):
        at = _open(page_file, wide)
        assert not at.error, page_file
        found[page_file] = _unbounded(at)
    assert found == dict.fromkeys(found, [])


def test_recode_lists_the_largest_categories_and_finds_the_others(wide):
    at = _open("recode.py", wide, w_recode_section="Single recode")  # lazy tabs: only the open one is drawn
    assert at.selectbox(key="w_single_var").value == "postcode"
    merge = at.multiselect(key="w_single_merge_postcode")
    assert len(merge.options) == MAX_OPTIONS
    counts = wide.frame["postcode"].value_counts()
    listed = [re.fullmatch(r"(\S+) \((\d+)\)", o).groups() for o in merge.options]
    assert min(int(n) for _, n in listed) == counts.sort_values(ascending=False).iloc[MAX_OPTIONS - 1]
    assert all(counts[code] == int(n) for code, n in listed)
    assert any(c.value == f"postcode has {LEVELS:,} categories: the {MAX_OPTIONS:,} with the most records are "
                          "listed; type in the field above to find the others." for c in at.caption)

    at.text_input(key="w_single_find_postcode").set_value("p0001").run()  # any case
    found = sorted(c for c in counts.index if "P0001" in c)
    assert [o.split(" ")[0] for o in at.multiselect(key="w_single_merge_postcode").options] == found
    assert any(c.value == f'{len(found):,} of {LEVELS:,} categories contain "p0001".' for c in at.caption)
    values = list(wide.qi_matrix(["postcode"]).values[0])
    chosen = [values.index("P000100"), values.index("P000101")]
    at.multiselect(key="w_single_merge_postcode").set_value(chosen).run()
    at.text_input(key="w_single_find_postcode").set_value("P0029").run()  # another search keeps the choice
    assert not at.exception
    assert at.multiselect(key="w_single_merge_postcode").value == chosen
    assert _unbounded(at) == []
    # the preview of the merge: a page of the counts of the 2,999 values left, with what the pages hold
    assert any(c.value == f"values 1–{PAGE_ROWS} of {LEVELS - 1:,}" for c in at.caption)
    at.button(key="btn_apply_single").click().run()
    merged = at.session_state["history"].current.dataset.frame["postcode"]
    assert merged.nunique() == LEVELS - 1


def test_recode_hierarchy_tab_bounds_its_table_chart_and_builder(wide):
    at = _open("recode.py", wide, w_recode_section="Hierarchies")
    assert at.selectbox(key="w_hb_var").value == "postcode"
    assert at.selectbox(key="w_hb_kind_postcode").value == "grouping"
    assert [i.value for i in at.info if "too many to group" in i.value] == [
        f"postcode has {LEVELS:,} categories: too many to group by hand in a table (up to {MAX_GROUPING_ROWS:,}). "
        "Mask its trailing characters (postcodes, ZIP codes), or import an ARX hierarchy file made elsewhere."]
    assert not any(d.key == "w_hb_grouping_postcode" for d in at.dataframe)
    assert any(c.value == f"values 1–{PAGE_ROWS} of {LEVELS:,}" for c in at.caption)  # the hierarchy, paged

    fig = _figures(at)["chart_hb_counts"]
    [bars] = fig["data"]
    x, y = _array(bars["x"]), _array(bars["y"])
    assert len(x) == MAX_CHART_CATEGORIES and x[-1] == others_label(LEVELS - MAX_CHART_CATEGORIES + 1)
    counts = wide.frame["postcode"].value_counts()
    assert [counts[v] for v in x[:-1]] == y[:-1]  # each drawn value with its records
    assert min(y[:-1]) >= counts.drop(x[:-1]).max()  # the largest ones
    assert y[-1] == counts.drop(x[:-1]).sum() and sum(y) == N  # and every other record in the last bar
    assert f"the {MAX_CHART_CATEGORIES - 1} largest of {LEVELS:,} values" in fig["layout"]["title"]["text"].replace(
        "<br>", " ")

    at.selectbox(key="w_hb_kind_postcode").set_value("masking").run()  # the builder a postcode needs
    assert not at.exception and not at.error
    assert at.button(key="btn_hb_use").disabled is False
    assert _unbounded(at) == []


def test_compare_draws_the_largest_categories_and_says_what_it_leaves_out(wide):
    at = _open("compare.py", wide)
    assert at.selectbox(key="w_cmp_plot_var").value == "postcode"
    ref = compare_distributions(wide, wide, list(QIS)).table
    figs = _figures(at)
    ci = figs["chart_cmp_ci"]
    assert [len(_array(t["y"])) for t in ci["data"]] == [MAX_CHART_CATEGORIES] * 2
    post = ref[ref["variable"] == "postcode"]
    drawn = post[post["label"].isin(ci["layout"]["xaxis"]["ticktext"])]
    assert _array(ci["data"][0]["y"]) == drawn["pct_original"].tolist()  # the core's percentages, in its order
    rest = post.drop(drawn.index)
    assert drawn["pct_original"].min() >= rest["pct_original"].max()
    assert ci["layout"]["title"]["subtitle"]["text"] == (f"Drawn: the {MAX_CHART_CATEGORIES} largest of {LEVELS:,} categories.<br>Not drawn: "
                    f"{LEVELS - MAX_CHART_CATEGORIES:,} smaller ones, together {rest['pct_original'].sum():.1f} % "
                    f"before and {rest['pct_treated'].sum():.1f} % after.")
    [hist] = figs["chart_cmp_hist"]["data"]
    assert hist["histfunc"] == "sum" and len(_array(hist["x"])) == 30
    compared = np.isfinite(ref["relative_difference"].to_numpy(float)).sum()
    assert compared > RAW_HISTOGRAM_VALUES and sum(_array(hist["y"])) == compared  # every value in a bin
    table = next(d.value for d in at.dataframe if "% after" in d.value.columns)
    assert len(table) == PAGE_ROWS
    assert any(c.value == f"categories 1–{PAGE_ROWS} of {len(ref):,}" for c in at.caption)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the table (CSV)" in labels


def test_the_coefficient_chart_draws_the_largest_coefficients_of_each_covariate(wide):
    """A model with one coefficient per postcode (fitted: 3,000 categories on 6,000 records) draws every
    coefficient of sex and region and the largest of postcode, and says how many it leaves out."""
    from kanon_core.utility import compare_models

    at = _open("compare.py", wide, w_cmp_tab="Regression")
    formula = at.text_input(key="w_cmp_formula_0").value
    assert formula == "score ~ C(postcode) + C(sex) + C(region)"
    at.button(key="btn_cmp_fit").click().run()
    assert not at.exception and not at.error
    coefficients = compare_models(wide, wide, formula).coefficients_long()
    fig = _figures(at)["chart_cmp_coef"]
    drawn = fig["layout"]["yaxis"]["ticktext"]
    assert len(drawn) == MAX_CHART_CATEGORIES and all(len(_array(t["x"])) == len(drawn) for t in fig["data"])
    original = coefficients[coefficients["model"] == "original"].set_index("label")
    assert _array(fig["data"][0]["x"]) == original.loc[drawn, "estimate"].tolist()
    kept = original.loc[drawn]
    assert set(original.loc[original["variable"] != "postcode"].index) <= set(drawn)  # sex and region: all
    by_size = coefficients.assign(size=coefficients["estimate"].abs()).groupby("label")["size"].max()
    postcodes = original.index[original["variable"] == "postcode"]
    shown = [t for t in postcodes if t in set(drawn)]
    assert by_size[shown].min() >= by_size[postcodes.difference(shown)].max()  # the largest of postcode
    n_terms = len(original)
    assert fig["layout"]["title"]["subtitle"]["text"] == (
        f"Drawn: {MAX_CHART_CATEGORIES} of {n_terms:,} coefficients, the largest in absolute value of each "
        f"covariate.<br>Not drawn: {len(postcodes) - len(shown):,} of postcode.")
    assert len(kept) == MAX_CHART_CATEGORIES
    assert _unbounded(at) == []


def test_the_minucs_suda_histogram_sends_its_bins(wide):
    from kanon_core.risk.minucs import find_minucs
    from kanon_core.risk.suda import suda_scores

    at = _open("minucs.py", wide)
    at.number_input(key="w_minuc_k").set_value(2).run()
    _click_and_wait(at, "btn_find_minucs", lambda a: bool(a.metric))
    at.session_state["w_minuc_section"] = "SUDA scores"
    at.run()
    assert not at.exception
    qm = wide.qi_matrix(list(QIS))
    scored = suda_scores(find_minucs(qm, k=2, missing=wide.missing), qm).score
    n_scored = int((scored > 0).sum())
    assert metric(at, "Records with a SUDA score") == f"{n_scored:,}"
    [trace] = _figures(at)["chart_suda"]["data"]
    assert n_scored > RAW_HISTOGRAM_VALUES and len(_array(trace["x"])) == 50
    assert sum(_array(trace["y"])) == n_scored
    assert _unbounded(at) == []


def test_suppress_pages_the_categories_it_suppresses_completely(wide):
    from kanon_core.treat.suppress import suppress

    at = _open("suppress.py", wide)
    _click_and_wait(at, "btn_run_suppress", lambda a: bool(a.metric))
    ref = suppress(wide, 3, qis=list(QIS))
    assert metric(at, "Cells suppressed") == f"{ref.n_suppressed:,}"
    gone = ref.tables(wide.qi_matrix(list(QIS)))["completely_suppressed"]
    assert len(gone) > PAGE_ROWS
    assert any(m.value == f"**Categories completely suppressed: {len(gone):,}**" for m in at.markdown)
    assert any(c.value == f"categories 1–{PAGE_ROWS} of {len(gone):,}" for c in at.caption)
    assert _unbounded(at) == []


def test_the_report_draws_the_largest_categories_of_a_postcode(wide):
    at = _open("export.py", wide)
    at.checkbox(key="w_report_minucs").uncheck().run()
    _click_and_wait(at, "btn_build_report", lambda a: any(
        b.proto.label.startswith("Download the report") for b in a.get("download_button")))
    [html] = [v for key, v in at.session_state["memo"].items() if key[2] == "report_html"]
    text = html.decode("utf-8")
    assert re.search(r"Drawn: the 50 largest of [\d,]+ categories\.", text)
    decoder, sizes = json.JSONDecoder(), {}
    for m in re.finditer(r'Plotly\.newPlot\(\s*"(fig-[^"]+)",\s*', text):
        traces, _ = decoder.raw_decode(text, m.end())
        sizes[m.group(1)] = max(max(len(_array(t.get("x"))), len(_array(t.get("y")))) for t in traces)
    assert "fig-ci-0" in sizes and max(sizes.values()) <= MAX_CHART_CATEGORIES


def test_ci_spec_of_few_categories_is_unchanged_and_of_many_is_bounded(wide):
    """Up to the bound every category is drawn, as before (no note); beyond it, the largest."""
    table = compare_distributions(wide, wide, ["region", "postcode"]).table
    few = ci_comparison_spec(table, "region")
    assert len(few["data"][0]["y"]) == 8 and "subtitle" not in few["layout"]["title"]
    many = ci_comparison_spec(table, "postcode", max_categories=10)
    assert len(many["data"][0]["y"]) == 10
    assert many["layout"]["title"]["subtitle"]["text"].startswith(f"Drawn: the 10 largest of {LEVELS:,} categories.")


class _Counted:
    """An object that counts how often its size is asked for."""

    __slots__ = ()
    asked = 0

    def __sizeof__(self) -> int:
        type(self).asked += 1
        return 48


def test_storing_a_result_with_100000_labels_does_not_measure_each_label():
    """The result cache estimates a long container from a sample: measuring each of a postcode's 100,000
    labels (and hierarchy rows) took seconds every time a result was stored."""
    _Counted.asked = 0
    items = tuple(_Counted() for _ in range(100_000))
    estimate = size_of(items)
    assert _Counted.asked <= CONTAINER_SAMPLE
    assert estimate == pytest.approx(sys.getsizeof(items) + 100_000 * sys.getsizeof(_Counted()), rel=0.01)
