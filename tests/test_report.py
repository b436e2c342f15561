"""The HTML report: builds on the sample with the demo recipe, has every section, references nothing
outside itself, names no category with fewer than k records, and shows the numbers of the kanon_core
functions the dashboard uses. Those functions are called again here on the same data (their own tests check
them against brute force and R); the suppressed cells and the threshold rule are recounted here directly."""

from __future__ import annotations

import re
import sys
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.io import load_dataset
from kanon_core.recipe import Recipe
from kanon_core.report import CONFIDENTIALITY_NOTE, SECTIONS, ReportOptions, build_report, render_html
from kanon_core.report.build import conclusions as report_conclusions
from kanon_core.risk.minucs import find_minucs
from kanon_core.risk.summary import risk_summary
from kanon_core.treat.suppress import SuppressStep
from kanon_core.utility import compare_distributions, compare_models

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "sample_data" / "demo.recipe.json"


class Page(HTMLParser):
    """Tables by id (rows of cell texts), section ids, and every tag's attributes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.sections: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "section":
            self.sections.append(a["id"])
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_script:
            self.scripts[-1] += data

    def frame(self, table_id: str) -> pd.DataFrame:
        rows = self.tables[table_id]
        return pd.DataFrame(rows[1:], columns=rows[0])


def num(text: str) -> float:
    """A number of the report; an empty or undefined cell ("undefined: <why>") as NaN."""
    return float(text.replace(",", "")) if text and not text.startswith("undefined") else float("nan")


@pytest.fixture(scope="module")
def demo():
    recipe = Recipe.load(DEMO)
    history = recipe.replay(load_dataset(ROOT / "sample_data" / "els_like.csv"))
    report = build_report(history, options=ReportOptions(k=3, notes=recipe.notes, created="2026-01-01"))
    html = render_html(report)
    return history, report, html, Page(html)


def test_report_has_every_section_and_the_confidentiality_note(demo):
    _, report, html, page = demo
    assert page.sections == [sid for sid, _ in SECTIONS]
    assert escape(CONFIDENTIALITY_NOTE) in html
    assert report.notes.split(".")[0] in html  # the officer's scenario
    assert '"kind": "local_suppression"' in html  # the recipe, escaped inside <pre>
    for tid in ("roles", "risk-summary", "violations-by-k", "per-qi", "steps", "suppression-overall",
                "minucs-by-size", "minucs-by-variable", "utility-summary", "utility-categories", "models-0",
                "info-loss-summary", "info-loss-variables"):
        assert tid in page.tables, tid
        assert len(page.tables[tid]) > 1, tid  # a header and at least one row
    assert html.count('class="plotly-graph-div"') >= 3


def test_report_is_self_contained(demo):
    _, _, html, page = demo
    assert len(page.tags) > 0
    for tag, attrs in page.tags:
        for key in ("src", "href", "data", "srcset", "poster"):
            value = (attrs.get(key) or "").strip().lower()
            assert not value or value.startswith("#"), (tag, key, value)
        assert tag not in ("link", "img", "iframe", "object", "embed", "base")
    lower = html.lower()
    assert "@import" not in lower
    assert "cdn.plot.ly" not in "".join(page.scripts[1:]).lower()  # figures: no loader of plotly.js
    assert len(page.scripts[0]) > 1_000_000  # plotly.js itself, inline
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs() in html


def test_report_shows_no_record_values(demo):
    history, _, html, page = demo
    body = html[html.index("</script></head>"):]
    frame = history.original.dataset.frame
    for col in ("STU_ID", "F2BYWT", "BYTXMSTD"):
        for v in frame[col].head(20):
            assert f">{v}<" not in body and f" {v} " not in body, (col, v)
    assert "STU_ID" in page.frame("roles")["variable"].tolist()  # named as a variable, never shown


def test_risk_numbers_equal_kanon_core(demo):
    history, report, _, page = demo
    treated = history.current.dataset
    qis = treated.roles.qis
    original = history.original.dataset
    before = risk_summary(original.qi_matrix(qis), 3, treated.missing)
    after = risk_summary(treated.qi_matrix(qis), 3, treated.missing)
    t = page.frame("risk-summary").set_index("measure")
    assert num(t.loc["Smallest class size (k achieved)", "before"]) == before.k_achieved == 1
    assert num(t.loc["Smallest class size (k achieved)", "after"]) == after.k_achieved >= 3
    assert num(t.loc["Records in classes smaller than k = 3", "before"]) == before.n_violating > 0
    assert num(t.loc["Records in classes smaller than k = 3", "after"]) == 0
    assert num(t.loc["Sample uniques (class of 1)", "before"]) == before.n_sample_uniques
    assert num(t.loc["Distinct quasi-identifier patterns", "after"]) == after.n_classes
    v = page.frame("violations-by-k")
    assert [int(num(x)) for x in v["k"]] == list(range(2, 11))
    assert [int(num(x)) for x in v["before"]] == [before.violations[k] for k in range(2, 11)]
    assert [int(num(x)) for x in v["after"]] == [after.violations[k] for k in range(2, 11)]


def test_steps_and_suppression_equal_kanon_core(demo):
    history, report, _, page = demo
    lineage = history.lineage()
    steps = page.frame("steps")
    # each step's own description, a recode's codes followed by their labels: "into 1 (1 = 'None')"
    assert len(steps) == len(lineage)
    for d, v in zip(steps["description"], lineage, strict=True):
        assert d == v.label or (d.startswith(v.label + " (") and "= '" in d), (d, v.label)
    original, treated = history.original.dataset, history.current.dataset
    qis = list(treated.roles.qis)
    # recounted here cell by cell: observed (by the file's missing rules) before, missing after
    cells = {q: int(sum(1 for a, b in zip(original.missing_mask(q), treated.missing_mask(q), strict=True)
                        if b and not a)) for q in qis}
    assert num(steps["suppressed values"].iloc[-1]) == sum(cells.values()) == report.n_suppressed > 0
    overall = page.frame("suppression-overall").set_index("variable")
    assert {q: int(num(overall.loc[q, "values suppressed"])) for q in qis} == cells
    # the suppression step's table equals the engine's own result when the step is run again
    last = lineage[-1]
    assert isinstance(last.step, SuppressStep)
    res = last.step.run(history.versions[last.parent].dataset)
    table = page.frame(f"suppression-step-{len(lineage) - 1}").set_index("variable")
    assert {q: int(num(table.loc[q, "values suppressed"])) for q in res.names} == dict(
        zip(res.names, res.per_variable_counts.tolist(), strict=True))


def test_minucs_and_utility_equal_kanon_core(demo):
    history, report, _, page = demo
    original = history.original.dataset.with_roles(history.current.dataset.roles)
    treated = history.current.dataset
    qis = treated.roles.qis
    # one k for the whole report: the MINUC section uses the report's k (it was fixed at 2)
    assert report.minucs.k == report.k == 3
    ref = find_minucs(original.qi_matrix(qis), k=report.k, missing=treated.missing)
    by_size = page.frame("minucs-by-size")
    got = {int(num(s)): int(num(b)) for s, b in zip(by_size["size"], by_size["before"], strict=True)}
    assert got == {s: v for s, v in ref.totals_by_size().items() if v}
    assert set(by_size["after"]) == {"0"}  # 3-anonymous, so no record is unique on any QI subset
    comp = compare_distributions(original, treated, list(qis))
    u = page.frame("utility-summary").set_index("measure")
    assert int(num(u.loc["Categories compared", "value"])) == comp.summary.n_categories
    assert int(num(u.loc["Confidence intervals overlapping", "value"])) == comp.summary.n_overlap
    cats = page.frame("utility-categories")
    # the demo's recodes leave no category under k: every row is shown (what is withheld is the value suppressed
    # most where fewer than k suppressed cells held it)
    assert report.masking["table"].str.endswith("value suppressed most").all()
    assert len(cats) == len(comp.table) > 0
    np.testing.assert_allclose([num(x) for x in cats["% before"]], comp.table["pct_original"].round(2), atol=0.006)
    mc = compare_models(original, treated, report.utility.models[0].results["original"].formula)
    models = page.frame("models-0")
    assert [int(num(x)) for x in models["records used"]] == [r.n_used for r in mc.results.values()]
    assert models["significant"].tolist() == mc.significance_table()["significant"].tolist()


def test_rendering_is_deterministic(demo):
    _, report, html, _ = demo
    assert render_html(report) == html


def _small() -> History:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 80), "b": rng.integers(0, 3, 80), "c": rng.integers(0, 5, 80)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b", "c")), name="small"))
    h.apply(SuppressStep(qis=("a", "b", "c"), k=2))
    return h


def test_minuc_counts_computed_elsewhere_are_waited_for_in_the_reports_thread():
    """The dashboard hands the report a function that waits for the counts its tab started: the report
    gathers its other sections meanwhile, calls it off the caller's thread, and uses what it gives; a function
    that gives None (nothing ahead) leaves the search to the report itself. Same sections either way."""
    import threading

    from kanon_core.report import report_minuc_searches
    from kanon_core.utility.baseline import original_with_roles

    h = _small()
    opts = ReportOptions(k=2, utility=False, created="2026-01-01")
    qis = tuple(h.current.dataset.roles.qis)
    pair = report_minuc_searches(original_with_roles(h, h.current_id), h.current.dataset, qis, opts)
    callers = []

    def ahead():
        callers.append(threading.current_thread())
        return pair

    given_pair = build_report(h, options=opts, minucs=pair)
    waited = build_report(h, options=opts, minucs=ahead)
    searched = build_report(h, options=opts, minucs=lambda: None)
    assert callers and callers[0] is not threading.current_thread()
    assert waited.minucs.before is pair[0] and waited.minucs.after is pair[1]
    for other in (waited, searched):
        assert other.minucs.by_size.equals(given_pair.minucs.by_size)
        assert other.minucs.contributions.equals(given_pair.minucs.contributions)
    assert searched.minucs.before is not pair[0]



def test_sections_without_minucs_are_gathered_before_waiting_for_them(monkeypatch):
    """While the counts computed elsewhere are still under way, every section that does not need them is
    gathered (the steps table last among them), so that little is left once the search ends."""
    import threading

    from kanon_core.report import build as report_build
    from kanon_core.report import report_minuc_searches
    from kanon_core.utility.baseline import original_with_roles

    h = _small()
    opts = ReportOptions(k=2, utility=False, created="2026-01-01")
    qis = tuple(h.current.dataset.roles.qis)
    pair = report_minuc_searches(original_with_roles(h, h.current_id), h.current.dataset, qis, opts)
    released = threading.Event()
    order = []
    steps_table = report_build._steps_table

    def recorded_steps(*args, **kwargs):
        order.append(("steps", released.is_set()))
        return steps_table(*args, **kwargs)

    def ahead():
        released.wait(5)
        return pair

    monkeypatch.setattr(report_build, "_steps_table", recorded_steps)
    timer = threading.Timer(0.5, released.set)
    timer.start()
    try:
        report = build_report(h, options=opts, minucs=ahead)
    finally:
        timer.cancel()
    assert order == [("steps", False)]
    assert report.minucs.before is pair[0]

def test_minuc_section_is_skipped_without_the_engine(monkeypatch):
    monkeypatch.setitem(sys.modules, "kanon_core.risk.minucs", None)  # import now fails
    report = build_report(_small(), options=ReportOptions(k=2))
    assert report.minucs is None and "not available" in report.minuc_note
    page = Page(render_html(report))
    assert "minucs-by-size" not in page.tables and "minucs" in page.sections
    assert report.utility is not None and report.utility.models == ()
    assert "no outcome variable" in report.utility.notes[-1]


def test_minucs_skipped_when_too_costly_and_options_respected():
    report = build_report(_small(), options=ReportOptions(k=2, minuc_budget_seconds=0.0, utility=False))
    assert report.minucs is None and "estimated" in report.minuc_note
    assert report.utility is None
    html = render_html(report)
    assert "The utility comparison was not computed" in html


def test_a_search_whose_cost_cannot_be_estimated_in_time_is_not_made():
    """With 40 QIs the estimate's sampled search alone takes tens of seconds: it stops at its share of the limit
    (0.4 s at least), and the report says the cost is unknown -- never an extrapolation as the cost -- and
    searches nothing."""
    from kanon_core.report.build import report_minuc_searches

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"q{j}": rng.integers(0, 2 + j % 4, 1000) for j in range(40)})
    ds = Dataset(frame, roles=Roles(qis=tuple(frame.columns)), name="wide")
    note = report_minuc_searches(ds, ds, tuple(frame.columns), ReportOptions(k=3, minuc_budget_seconds=1.0))
    assert isinstance(note, str) and note.startswith("MINUCs not computed: the cost of the search")
    assert "could not be estimated within 0.4 s" in note and "limit of 1 s" in note


def test_information_loss_uses_the_generalization_hierarchies():
    from kanon_core.treat.hierarchy import Hierarchy
    from kanon_core.treat.recode import GeneralizeStep
    from kanon_core.utility.info_loss import information_loss

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 60), "b": rng.integers(0, 3, 60)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b")), name="gen"))
    ha = Hierarchy((("0", "0-1", "*"), ("1", "0-1", "*"), ("2", "2-3", "*"), ("3", "2-3", "*")), "a")
    h.apply(GeneralizeStep.build({"a": 1, "b": 0}, {"a": ha}))
    report = build_report(h, options=ReportOptions(k=2))
    loss = report.utility.info_loss
    ref = information_loss(h.original.dataset, h.current.dataset, ["a", "b"], {"a": ha})
    assert loss.prec == pytest.approx(ref.prec) == pytest.approx(0.75)  # a at level 1 of 2, b untouched
    page = Page(render_html(report))
    table = page.frame("info-loss-variables").set_index("variable")
    assert num(table.loc["a", "Prec"]) == pytest.approx(0.5)


def test_variables_blanked_in_full_count_as_completely_suppressed_in_the_report():
    """A release whose every record is blanked (its classes all below k): each category of each QI is completely
    suppressed, counted in Wilson's summary (the report used to leave such variables out of the comparison)."""
    from kanon_core.treat.recode import GeneralizeStep

    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 40), "b": rng.integers(0, 3, 40)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b")), name="blank"))
    h.apply(GeneralizeStep.build({}, {}, suppress_k=41, qis=("a", "b")))
    assert h.current.dataset.frame[["a", "b"]].isna().all().all()
    report = build_report(h, options=ReportOptions(k=2, minucs=False))
    summary = report.utility.comparison.summary
    assert summary.n_completely_suppressed == frame["a"].nunique() + frame["b"].nunique()
    assert summary.n_categories == 0
    assert any("every category completely suppressed): a, b" in n for n in report.utility.notes)


def test_cells_another_released_variable_gives_back_are_reported_with_the_people_then_findable():
    """Each school lies in one region; the regions suppressed are read off the school codes, and a pupil is then
    unique: the report's conclusions must not call the release protected, and the step says why (names and
    counts, no value)."""
    from kanon_core.risk.restore import restorable_cells

    rows = [("n", "m", 1)] * 2 + [("s", "m", 2)] * 2 + [("n", "f", 1)] + [("s", "f", 2)] * 2
    frame = pd.DataFrame(rows, columns=["region", "sex", "school"])
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("region", "sex")), name="schools"))
    h.apply(SuppressStep(qis=("region", "sex"), k=2, importance=(("sex", 10.0),)))
    report = build_report(h, options=ReportOptions(k=2, minucs=False, utility=False))
    ref = restorable_cells(h.original.dataset, h.current.dataset, ("region", "sex"), 2)
    step = report.suppression_steps[0]
    assert (step.restorable, step.findable, step.findable_restored) == (ref.n_restorable, 0, ref.findable_after) \
        == (3, 0, 1)
    html = render_html(report)
    assert "region from school (3)" in step.restoration and step.restoration in html.replace("&#x27;", "'")
    assert "the release does NOT protect them" in " ".join(report_conclusions(report))
    assert "2-anonymous on its" not in " ".join(report_conclusions(report))


# -- the threshold rule: no category with fewer than k records is named ------------------------------------
SECRET = "Zyzzyva-7731"


def _with_a_unique_value() -> History:
    """60 records: a QI city with three common values and one unique one (SECRET), a numeric QI income with
    three common amounts and ten unique ones, an analysis variable hobby with SECRET once, an outcome. Then a recode merging
    hobby's SECRET into a common value and local suppression to k = 3."""
    from kanon_core.treat.recode import RecodeStep

    rng = np.random.default_rng(11)
    n = 60
    city = np.array(["Avon", "Brill", "Cleeve"] * 20, dtype=object)
    city[7] = SECRET
    hobby = np.array(["chess", "golf", "rowing"] * 20, dtype=object)
    hobby[23] = SECRET
    # income: 50 records on three common amounts, 10 unique ones (a numeric variable without labels)
    income = np.concatenate([np.repeat([20_000, 30_000, 40_000], [17, 17, 16]), 10_000 + 37 * np.arange(10)])
    frame = pd.DataFrame({
        "city": city, "sex": rng.choice(["f", "m"], n), "income": rng.permutation(income),
        "hobby": hobby, "score": rng.normal(50, 10, n).round(2),
    })
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("city", "sex", "income"), outcomes=("score",)),
                              name="unique"))
    h.apply(RecodeStep(column="hobby", merge=(SECRET, "chess"), into="chess"))
    h.apply(RecodeStep(column="income", top=float(frame["income"].max())))  # a bound that is a unique value
    h.apply(SuppressStep(qis=("city", "sex", "income"), k=3))
    return h


@pytest.fixture(scope="module")
def unique_report():
    from kanon_core.report import report_html

    h = _with_a_unique_value()
    opts = ReportOptions(k=3, created="2026-01-01",
                         formulas=("score ~ C(city) + C(sex)", "score ~ C(hobby) + C(sex)"))
    html = report_html(h, options=opts)  # what the Export page and `kanon apply --report` call
    return h, build_report(h, options=opts), html


def test_a_unique_value_never_appears_in_the_report(unique_report):
    h, report, html = unique_report
    assert SECRET not in html
    # the secret value would be on the page without the rule: it is a category of the original data
    assert (h.original.dataset.frame["city"] == SECRET).sum() == 1
    # income: numeric with rare values, so none of its values is listed, not even the common ones or in plots
    body = html[html.index("</script></head>"):]  # after plotly.js, whose source holds any number
    for v in h.original.dataset.frame["income"]:
        for text in (str(v), f"{v:,}"):
            assert not re.search(rf"(?<![\d,.]){re.escape(text)}(?![\d,])", body), v


def test_the_report_states_what_it_withheld(unique_report):
    _, report, html = unique_report
    m = report.masking
    assert len(m) and (m["categories_masked"] > 0).all()
    per_table = m.groupby("table")["categories_masked"].sum()
    # all 13 incomes are pooled in the comparison table (one entry per category), and city's unique value with
    # the smallest other city: alone, its count would be the records less the other cities' counts
    cats = m[m["table"] == "weighted percentages per category"].set_index("variable")["categories_masked"]
    assert int(cats["income"]) == 13 and int(cats["city"]) == 2
    assert per_table["recipe (values withheld)"] == 2  # the merge list of the hobby recode, income's bound
    assert per_table["steps (description)"] == 1  # "top-code at <the largest income>" is not shown
    page = Page(html)
    assert "withheld" in page.sections and "withheld" in page.tables
    assert "other categories with fewer than 3 records" in html
    shown = page.frame("utility-categories")
    pooled = shown[shown["label"].str.startswith("other categories with fewer than 3 records")]
    assert set(pooled["variable"]) == {"city", "income"}
    # city: the unique value (1 record, which "< 3" would not hide: 60 less the cities named) with the
    # smallest other city, Brill (19 records in the original)
    assert pooled.set_index("variable").loc["city", "label"] == ("other categories with fewer than 3 records, "
                                                                 "pooled with the smallest others")
    assert num(pooled.set_index("variable").loc["city", "records before"]) == 20
    assert num(pooled.set_index("variable").loc["income", "records before"]) == 60  # every income record


def test_categories_with_k_records_or_more_are_still_named(unique_report):
    h, report, html = unique_report
    page = Page(html)
    labels = set(page.frame("utility-categories")["label"])
    treated = h.current.dataset.frame
    for c in ("Avon", "Cleeve", "f", "m"):
        col = "city" if c[0].isupper() else "sex"
        assert (treated[col] == c).sum() >= 3
        assert c in labels, c
    assert "Brill" not in labels  # the smallest city, pooled with the unique one (secondary suppression)
    assert "chess" in html  # the recipe keeps the common value of the merge


def test_without_the_threshold_the_unique_value_would_be_named():
    """k = 1 withholds nothing: the secret then shows, so the rule (not chance) is what hides it above."""
    from kanon_core.report import report_html

    html = report_html(_with_a_unique_value(), options=ReportOptions(k=1, created="2026-01-01", minucs=False))
    assert SECRET in html
    assert "Nothing had to be withheld" in html


# -- the threshold rule's pooling, against a direct count --------------------------------------------------
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kanon_core.report.mask import mask_categories, pooled_label, redact_values, small_categories  # noqa: E402


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=15),
       st.integers(2, 5))
def test_pooling_against_a_direct_count(rows, k):
    table = pd.DataFrame([{"variable": v, "value": f"c{i}", "n_original": a, "n_treated": b, "pct": float(a)}
                          for i, (v, a, b) in enumerate(rows)])
    small = [0 < a < k or 0 < b < k for _, a, b in rows]
    out = mask_categories(table, k, small, ("value",), ("n_original", "n_treated", "pct"),
                          ("n_original", "n_treated"))
    t = out.table
    is_pooled = t["value"].str.startswith(pooled_label(k))
    named = t[~is_pooled]["value"].tolist()
    assert named == [f"c{i}" for i in range(len(rows)) if f"c{i}" in named]  # order kept
    for v in "xyz":
        ours = [i for i, (w, _, _) in enumerate(rows) if w == v]
        pool = [i for i in ours if f"c{i}" not in named]
        assert {i for i in ours if small[i]} <= set(pool)  # every small row is pooled

        def short(members, ours=ours):
            return {side for side in (1, 2) if 0 < sum(rows[i][side] for i in members) < k}

        pooled = t[(t["variable"] == v) & is_pooled]
        assert len(pooled) == (1 if pool else 0)
        assert out.masked.get(v, 0) == len(pool)
        if pool:
            for side, col in ((1, "n_original"), (2, "n_treated")):
                total = sum(rows[i][side] for i in pool)
                got = pooled[col].iloc[0]
                assert got == (f"< {k}" if 0 < total < k else total), (col, got, total)
                if 0 < total < k:  # below k only when no named row could lift it
                    assert all(rows[i][side] == 0 for i in ours if i not in pool)
            assert pooled["pct"].iloc[0] == pytest.approx(sum(rows[i][1] for i in pool))
            for i in pool:
                if not small[i]:  # joined the pool (secondary): the pool needs it
                    assert not short([j for j in pool if j != i]) <= short(pool)
            secondary = any(not small[i] for i in pool)
            assert pooled["value"].iloc[0] == pooled_label(k, secondary)


def test_small_categories_by_hand():
    frame = pd.DataFrame({"a": ["p"] * 4 + ["q"] * 2 + ["r"], "n": [1.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5]})
    original = Dataset(frame=frame, roles=Roles(qis=("a", "n")))
    release = original.with_frame(frame.assign(a=["p"] * 4 + [None] * 3), original.meta)
    sc = small_categories(original, release, ["a", "n"], 3)
    assert sc.label_is_small("a", "q") and sc.label_is_small("a", "r") and not sc.label_is_small("a", "p")
    assert sc.sizes("a", "q") == (2, 0)
    # n is numeric without labels and 1.5 is rare: none of its values may be named, not even 2.5 (6 records)
    assert "n" in sc.withhold_all and sc.label_is_small("n", 2.5)
    redacted, count = redact_values([{"column": "a", "merge": ["q", "p"], "into": "p"}], sc.all_texts, sc.texts)
    assert count == 1 and redacted[0]["merge"] == ["(withheld)", "p"] and redacted[0]["into"] == "p"


def test_suppression_steps_state_the_people_findable_below_k(unique_report):
    """Per suppression step: people of its input with fewer than k consistent released records, recounted
    here by brute force (wildcard: a missing released or input cell is consistent with anything)."""
    h, report, html = unique_report
    (step,) = report.suppression_steps
    version = h.lineage()[step.number]
    parent, child = h.versions[version.parent].dataset.frame, version.dataset.frame
    qis = ["city", "sex", "income"]
    rows_in = parent[qis].astype(object).where(parent[qis].notna(), None).values.tolist()
    rows_out = child[qis].astype(object).where(child[qis].notna(), None).values.tolist()

    def consistent(person, rec):
        return all(a is None or b is None or a == b for a, b in zip(person, rec, strict=True))

    findable = sum(1 for p in rows_in if sum(consistent(p, r) for r in rows_out) < 3)
    assert f"people findable among fewer than 3 released records: {findable:,}" in step.protection
    assert escape(step.protection[0].upper() + step.protection[1:]) in html
    model = getattr(h.lineage()[step.number].step, "model", None)
    assert not model or f"protection model: {model}" in step.protection.lower()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=6), st.lists(st.integers(1, 9), min_size=2, max_size=5),
       st.integers(2, 4), st.integers(0, 10_000))
def test_no_category_under_k_is_named_on_random_files(sizes_a, sizes_b, k, seed):
    """Random category sizes on two QIs with distinctive names; after suppression to k, every name of a
    category with 1 to k - 1 records in the original or the release (counted here directly) is absent
    from the report; the pooled counts, before and after, are 0 or k or more unless no named category could
    lift them (a pooled count below k would be the total less the named rows); and a category with k or more
    records in both is left unnamed only when the pool needs it."""
    from kanon_core.report import report_html

    rng = np.random.default_rng(seed)
    a = [f"Qa{i}x{seed}" for i, s in enumerate(sizes_a) for _ in range(s)]
    b = [f"Qb{i}y{seed}" for i, s in enumerate(sizes_b) for _ in range(s)]
    n = min(len(a), len(b))
    assume(n >= 2 * k)  # a file smaller than that cannot be made k-anonymous with any category left
    a, b = list(rng.permutation(a)[:n]), list(rng.permutation(b)[:n])
    frame = pd.DataFrame({"a": a, "b": b, "y": rng.normal(0, 1, n).round(3)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b"), outcomes=("y",)), name="random"))
    h.apply(SuppressStep(qis=("a", "b"), k=k))
    html = report_html(h, options=ReportOptions(k=k, minucs=False, created="2026-01-01"))
    body = html[html.index("</script></head>"):]
    shown = Page(html).frame("utility-categories")
    released = h.current.dataset.frame
    for col in ("a", "b"):
        before = frame[col].value_counts().to_dict()
        after = released[col].value_counts().to_dict()
        sizes = {name: (before.get(name, 0), after.get(name, 0)) for name in before}
        for name, (nb, na) in sizes.items():
            if 0 < nb < k or 0 < na < k:
                assert name not in body, (name, nb, na)
        # the per-category table: its pool is every category it does not name
        pool = set(sizes) - set(shown.loc[shown["variable"] == col, "label"])

        def short(names, sizes=sizes):
            return {side for side in (0, 1) if 0 < sum(sizes[x][side] for x in names) < k}

        named = set(sizes) - pool
        for side in short(pool):
            assert all(sizes[x][side] == 0 for x in named), (col, side, sizes, pool)  # none could lift it
        for name, (nb, na) in sizes.items():
            if name in pool and nb >= k and na >= k:
                assert not short(pool - {name}) <= short(pool), (name, sizes, pool)  # the pool needs it


# -- the first paragraph, identifiers, numbers and print -------------------------------------------------------
def test_first_paragraph_states_the_conclusions(demo):
    history, report, html, page = demo
    start = html.index('id="summary"')
    first = html[start:html.index("</div>", start)]
    assert 'id="conclusions"' in first  # the conclusions open the first section
    b, a = report.risk_before, report.risk_after
    assert f"before treatment {b.n_violating:,} of {report.n_records:,} records" in first
    assert ("none can" in first) == (a.n_violating == 0)
    assert "What was changed" in first and f"{report.n_suppressed:,} quasi-identifier values" in first
    assert "BYINCOME recoded in" in first  # recodes counted per variable, not 20 lines
    mc = report.utility.models[0]
    changed = mc.pvalue_table().query("conclusion_changes")["variable"].tolist()
    assert "Regression conclusions" in first
    for v in changed:
        assert v in first
    if not changed:
        assert "every covariate keeps its significance" in first
    # SCH_ID (the school, a PSU) is released unchanged and is named like an identifier
    flagged = {f.variable for f in report.identifiers}
    assert "SCH_ID" in flagged and "SCH_ID" in first


def test_identifier_heuristic():
    from kanon_core.report.build import identifier_like

    rng = np.random.default_rng(2)
    n = 200
    frame = pd.DataFrame({"hh_id": np.arange(n), "PersonID": rng.permutation(n) + 1000, "serial": rng.permutation(n),
                          "income": rng.lognormal(10, 1, n), "code": rng.integers(0, 5, n),
                          "note": [f"t{i}" for i in range(n)], "valid": rng.integers(0, 3, n),
                          "q": rng.integers(0, 4, n)})
    ds = Dataset(frame=frame, roles=Roles(qis=("q",)))
    got = {f.variable: f.reason for f in identifier_like(ds, ds)}
    assert set(got) == {"hh_id", "PersonID", "serial", "note"}  # not income (a measurement), not "valid"
    assert "name" in got["hh_id"] and "distinct" in got["note"]
    changed = ds.with_frame(frame.assign(note="x"))
    assert "note" not in {f.variable for f in identifier_like(ds, changed)}  # treated: not "unchanged"


def test_numbers_for_humans_and_print_css(demo):
    _, report, html, page = demo
    pv = page.frame("model-pvalues-0")
    pcols = [c for c in pv.columns if c.startswith("p-value")]
    assert pcols
    for c in pcols:
        for cell in pv[c]:
            assert cell == "< 0.001" or re.fullmatch(r"[01]\.\d{3}", cell) or cell.startswith("undefined"), cell
    for tid, rows in page.tables.items():
        for row in rows:
            for cell in row:
                assert cell not in ("None", "nan", "NaN") and not cell.startswith("-0.00"), (tid, cell)
        for h in rows[0]:
            assert not re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", h), (tid, h)  # headers in words
    assert "@media print" in html and "white-space:pre-wrap" in html
    assert "nav{display:none}" in html
    assert not re.search(r"seed\s*0\d\d", html, re.IGNORECASE)  # authors are cited, not internal names
    assert "Wilson et al., RTI" in html


def test_step_descriptions_show_value_labels_not_bare_codes(demo):
    _, report, _, page = demo
    steps = page.frame("steps")
    recodes = [d for d in steps["description"] if d.startswith("Recode BYOCCUM: merge")]
    assert recodes and all(" = '" in d for d in recodes)  # "into 1 (1 = 'No job for pay / Homemaker')"
    assert "'Original data'" not in " ".join(steps["description"])


def test_labels_of_merged_small_categories_are_not_named():
    from kanon_core.dataset import VariableMeta
    from kanon_core.treat.recode import RecodeStep

    frame = pd.DataFrame({"occ": [1] * 20 + [2] * 20 + [3] * 1, "q": [1, 2] * 20 + [1]})
    meta = {"occ": VariableMeta(value_labels={1: "Clerk", 2: "Farmer", 3: "Astronaut"})}
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("occ", "q")), meta=meta, name="s"))
    h.apply(RecodeStep(column="occ", merge=(2, 3), into=2))  # "Astronaut" has 1 record
    h.apply(RecodeStep(column="q", merge=(1, 2), into=1))
    html = render_html(build_report(h, options=ReportOptions(k=3, minucs=False, utility=False,
                                                             created="2026-01-01")))
    assert "Astronaut" not in html


def test_risk_beyond_k_section_before_and_after(demo):
    from kanon_core.risk.classes import compute_class_sizes
    from kanon_core.risk.summary import risk_measures

    history, report, html, page = demo
    assert "risk-beyond" in page.sections
    table = page.frame("risk-beyond-table").set_index("measure")
    treated = history.current.dataset
    qis = treated.roles.qis
    ref = risk_measures(treated, compute_class_sizes(treated.qi_matrix(qis).codes, treated.missing,
                                                     treated.weights()), qis)
    assert table.loc["Expected re-identifications", "after"] == f"{ref.glob.expected_reidentifications:,.2f}"
    assert "Benedetti &amp; Franconi" in html  # author-year citation, escaped


def test_variable_labels_set_as_a_step_after_loading_reach_the_report():
    from kanon_core.value_labels import SetValueLabels

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 60), "b": rng.integers(0, 3, 60)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b")), name="labelled"))
    h.apply(SetValueLabels(labels=(("a", ((1, "one"),)),), variable_labels=(("a", "Region of residence"),)))
    h.apply(SuppressStep(qis=("a", "b"), k=2))
    report = build_report(h, options=ReportOptions(k=2, utility=False, minuc_budget_seconds=0.0))
    assert report.roles.set_index("variable").loc["a", "label"] == "Region of residence"
    assert "Region of residence" in render_html(report)


def test_the_reports_minuc_counts_after_a_recode_equal_searches_from_scratch():
    """On a release whose QI codes differ, the report keeps the original's MINUCs for the release's search,
    which carries the untouched records' over: both sides equal counts searched from scratch, the original's
    side holds no list of MINUCs, and the release's search carried some rows."""
    from kanon_core.report import report_minuc_searches
    from kanon_core.risk.minucs import MinucResult, summarize_minucs
    from kanon_core.treat.recode import RecodeStep
    from kanon_core.utility.baseline import original_with_roles

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 120), "b": rng.integers(0, 3, 120), "c": rng.integers(0, 5, 120)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b", "c")), name="small"))
    h.apply(RecodeStep(column="a", merge=(4, 5)))
    qis = ("a", "b", "c")
    for k in (2, 3):
        opts = ReportOptions(k=k, utility=False, created="2026-01-01")
        original = original_with_roles(h, h.current_id)
        before, after = report_minuc_searches(original, h.current.dataset, qis, opts)
        assert not isinstance(before, MinucResult)
        assert after.rows_carried > 0
        for got, ds in ((before, original), (after, h.current.dataset)):
            ref = summarize_minucs(ds.qi_matrix(list(qis)), k=k, missing=ds.missing)
            assert np.array_equal(got.row_sizes, ref.row_sizes) and np.array_equal(got.row_qis, ref.row_qis)
            assert np.array_equal(got.row_of_record, ref.row_of_record)
            assert np.array_equal(got.combinations, ref.combinations) and got.total == ref.total



@pytest.mark.parametrize("treat", ["none", "other", "qi"])
def test_class_sizes_of_a_release_that_reads_as_the_original_are_counted_once(monkeypatch, treat):
    """The first version, or one that leaves the QIs and the weight alone, has the original's class sizes:
    the report counts them once, and its risk tables are those counted apart."""
    import kanon_core.risk.classes as classes
    from kanon_core.treat.recode import RecodeStep

    rng = np.random.default_rng(11)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 80), "b": rng.integers(0, 3, 80),
                          "y": rng.integers(0, 5, 80), "w": rng.uniform(1, 3, 80)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b"), weight="w"), name="s"))
    if treat != "none":
        h.apply(RecodeStep(column="y" if treat == "other" else "a", merge=(0, 1), into=0))
    calls = []
    real = classes.compute_class_sizes
    monkeypatch.setattr(classes, "compute_class_sizes", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    html = render_html(build_report(h, options=ReportOptions(k=3, minucs=False, utility=False,
                                                             created="2026-01-01")))
    assert len(calls) == (2 if treat == "qi" else 1)
    monkeypatch.setattr(classes, "compute_class_sizes", real)
    original, treated = h.original.dataset, h.current.dataset
    before = risk_summary(original.qi_matrix(("a", "b")), 3, treated.missing)
    after = risk_summary(treated.qi_matrix(("a", "b")), 3, treated.missing)
    v = Page(html).frame("violations-by-k")
    assert [int(num(x)) for x in v["before"]] == [before.violations[k] for k in range(2, 11)]
    assert [int(num(x)) for x in v["after"]] == [after.violations[k] for k in range(2, 11)]


def test_a_release_with_other_weights_has_its_own_class_sizes():
    """Same QIs, another weight: the weighted sizes differ, so the release's are counted, not the original's
    taken."""
    from kanon_core.report.build import _class_sizes

    rng = np.random.default_rng(12)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 50), "b": rng.integers(0, 3, 50),
                          "w": rng.uniform(1, 3, 50)})
    original = Dataset(frame=frame, roles=Roles(qis=("a", "b"), weight="w"), name="s")
    reweighted = Dataset(frame=frame.assign(w=frame["w"] * 2), roles=original.roles, name="s")
    first, second = _class_sizes(original, reweighted, ("a", "b"))
    assert np.allclose(second.Fk_all, 2 * first.Fk_all)
    copy = Dataset(frame=frame.copy(), roles=original.roles, name="s")
    same, again = _class_sizes(original, copy, ("a", "b"))
    assert again is same


def test_a_merge_target_of_fewer_than_k_records_is_withheld_from_the_embedded_recipe():
    """A category made by a step (a merge into a new name) exists only from that step's version on: the recipe
    embedded in the report named it although it had 2 records at k = 3, as only the original's categories were
    looked at. Now a value small in any version on the way to the release is withheld."""
    from kanon_core.report import report_html
    from kanon_core.treat.recode import RecodeStep

    frame = pd.DataFrame({"a": ["RareAlpha", "RareBeta", "BigGamma", "BigGamma", "BigGamma", "BigDelta", "BigDelta",
                                "BigDelta"], "b": ["x", "y", "x", "y", "x", "y", "x", "y"], "y": np.arange(8.0)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b"), outcomes=("y",)), name="merge"))
    h.apply(RecodeStep(column="a", merge=("RareAlpha", "RareBeta"), into="MergedTwo"))
    assert (h.current.dataset.frame["a"] == "MergedTwo").sum() == 2
    html = report_html(h, options=ReportOptions(k=3, minucs=False, created="2026-01-01", formulas=()))
    assert "MergedTwo" not in html and "RareAlpha" not in html
    assert "BigGamma" in html  # 3 records: named


def test_a_model_whose_every_coefficient_names_a_small_category_leaves_the_report_without_its_plot():
    """Every coefficient of ``y ~ C(a)`` names a category of fewer than k records: the plot had nothing left
    to draw and the whole report failed ("Nothing to plot"); now the report says so and goes on."""
    from kanon_core.report import report_html

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": ["BaseCat"] * 6 + ["SoloOne", "SoloTwo", "SoloThree"], "y": rng.normal(size=9)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a",), outcomes=("y",)), name="model"))
    html = report_html(h, options=ReportOptions(k=5, minucs=False, created="2026-01-01", formulas=("y ~ C(a)",)))
    assert "no coefficient is plotted." in html
    for name in ("SoloOne", "SoloTwo", "SoloThree"):
        assert name not in html
