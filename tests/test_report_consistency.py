"""The report agrees with itself and with `kanon apply`: the total
of suppressed cells is the release's (as `kanon apply` counts it), a share is in the unit of its neighbours,
the information-loss count says what it counts, a hidden "value suppressed most" says why, and the smallest
category of a QI follows the threshold rule."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.report import ReportOptions, build_report, render_html
from kanon_core.report.build import _mask_most_suppressed, conclusions
from kanon_core.report.mask import small_categories
from kanon_core.steps import DeclareMissingCodes, SetRoles
from kanon_core.treat.suppress import SuppressStep
from kanon_core.utility.bias import suppressed_cells
from tests.test_report import Page
from tests.test_report_withholds import merged_rare_race

OPTIONS = ReportOptions(k=3, minucs=False)


def _case9(tmp_path):
    """Suppression on a, b, c, then a roles step leaves c out of the QIs (c is still
    released, with its suppressed cells)."""
    from kanon_core.io import load_dataset
    from kanon_core.recipe import Recipe

    rng = np.random.default_rng(5)
    n = 150
    df = pd.DataFrame({"id": np.arange(n), "a": rng.choice([1, 2, 3], n), "b": rng.choice([1, 2, 3, 4], n),
                       "c": rng.choice([1, 2, 3, 4, 5], n), "y": rng.normal(50, 10, n).round(2),
                       "w": rng.uniform(1, 3, n).round(3)})
    data = tmp_path / "data.csv"
    df.to_csv(data, index=False)
    h = History.start(load_dataset(data))
    for step in (SetRoles(qis=("a", "b", "c"), weight="w", outcomes=("y",), direct_ids=("id",)),
                 SuppressStep(qis=("a", "b", "c"), k=3),
                 SetRoles(qis=("a", "b"), weight="w", outcomes=("y",), direct_ids=("id",))):
        h.apply(step)
    recipe = tmp_path / "recipe.json"
    Recipe.from_history(h, input_path="data.csv", extra={"k": 3}).save(recipe)
    return h, data, recipe


def test_the_total_of_suppressed_cells_is_kanon_applys(tmp_path):
    """The conclusions said "In total 18 quasi-identifier values were suppressed" (the final QIs a and b only)
    while the step, `kanon apply` and its summary said 49: c, suppressed as a QI, is released as another role."""
    from kanon_core.cli import main

    h, data, recipe = _case9(tmp_path)
    summary = tmp_path / "summary.json"
    assert main(["apply", str(recipe), str(data), "-o", str(tmp_path / "release.csv"), "--json", str(summary),
                 "--report", str(tmp_path / "report.html")]) == 0
    applied = json.loads(summary.read_text())["suppressed_cells"]
    html = (tmp_path / "report.html").read_text(encoding="utf-8")  # the report `kanon apply` wrote
    assert f"In total {applied:,} values of released variables were suppressed" in html  # the conclusions
    assert f"in total {applied:,} values of released variables were suppressed" in html  # the summary's detail
    report = build_report(h, options=OPTIONS)
    assert report.n_suppressed_released == applied
    assert report.n_suppressed < applied  # the case tells the two counts apart
    assert f"{report.n_suppressed:,} on the release's quasi-identifiers" in " ".join(conclusions(report))


def _large_category_few_cells() -> History:
    """Region 3 has 11 records; one of its cells is suppressed (the one person (2, 3))."""
    rows = [(s, r) for s in (1, 2) for r in (1, 2, 3) if (s, r) != (2, 3) for _ in range(10)] + [(2, 3)]
    frame = pd.DataFrame(rows, columns=["sex", "region"])
    h = History.start(Dataset(frame, roles=Roles(qis=("sex", "region"))))
    h.apply(SuppressStep(qis=("sex", "region"), k=3, importance=(("sex", 10.0),), model="release",
                         method="greedy"))
    return h


def test_a_large_category_hidden_for_few_suppressed_cells_is_not_called_small():
    """Germany (77 records) was hidden as "a category with fewer than 3 records" because only 2 of its cells were
    suppressed: the text now gives that reason, and a small category keeps the pooled wording."""
    report = build_report(_large_category_few_cells(), options=OPTIONS)
    (step,) = report.suppression_steps
    assert (report.suppression_overall["variable"] == "region").any()
    for table, col in ((step.most_suppressed, "value"), (report.suppression_overall, "most_suppressed")):
        text = str(table.set_index("variable").loc["region", col])
        assert text == "a category (fewer than 3 of its values suppressed)"
        assert "records" not in text
    # a small category (2 records, both suppressed): its own wording
    frame = pd.DataFrame({"a": ["p"] * 10 + ["q"] * 2, "b": ["x", "y"] * 6})
    original = Dataset(frame, roles=Roles(qis=("a", "b")))
    treated = original.with_frame(frame.assign(a=["p"] * 10 + [None] * 2), original.meta)
    from kanon_core.report.mask import MaskLog

    out = _mask_most_suppressed(suppressed_cells(original, treated, ["a", "b"]),
                                small_categories(original, treated, ["a", "b"], 3), "most_suppressed",
                                "most_suppressed_n", MaskLog(3), "t")
    row = out.set_index("variable").loc["a"]
    assert row["most_suppressed"] == "a category with fewer than 3 records" and row["most_suppressed_n"] == "< 3"


def test_the_share_of_the_value_suppressed_most_is_in_percent_as_in_the_step_table():
    """The overall table printed 0.55 under "its share" beside "% of records"; the step table 54.55 for the same
    quantity. Both now read percent; the overall number is the core's share (bias.suppressed_cells) times 100."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({q: rng.integers(0, 4, 150) for q in ("a", "b", "c")})
    h = History.start(Dataset(frame, roles=Roles(qis=("a", "b", "c"))))
    h.apply(SuppressStep(qis=("a", "b", "c"), k=3))
    report = build_report(h, options=OPTIONS)
    tables = Page(render_html(report))
    overall = tables.frame("suppression-overall").set_index("variable")
    assert "its share (%)" in overall.columns and "its share" not in overall.columns
    (step,) = report.suppression_steps
    core = report.suppression_overall.set_index("variable")
    step_most = tables.frame(f"most-suppressed-step-{step.number}").set_index("variable")
    compared = 0
    for v in overall.index:
        share = pd.to_numeric(core.loc[v, "most_suppressed_percent"], errors="coerce")
        if pd.isna(share):
            continue
        assert float(overall.loc[v, "its share (%)"]) == round(float(share), 2)
        # one step from the original: the step's "percent of variable" is the same quantity
        assert overall.loc[v, "its share (%)"] == step_most.loc[v, "percent of variable"]
        compared += 1
    assert compared  # some share is shown


def test_the_information_loss_table_counts_the_suppressed_values_of_the_suppression_section():
    """A QI whose codes 7, 8 a step declares missing: 0 values suppressed in the suppression section, and 120
    "missing after" in the information-loss table, which charged every declared cell as suppressed (LM 1). Those
    cells took no information: they are now left out of Prec and LM, and both tables count the same cells."""
    rng = np.random.default_rng(6)
    n = 120
    frame = pd.DataFrame({"gone": rng.choice([7, 8], n), "sex": rng.choice([1, 2], n),
                          "age": rng.integers(20, 30, n)})
    h = History.start(Dataset(frame, roles=Roles(qis=("gone", "sex", "age"))))
    h.apply(DeclareMissingCodes("gone", (7, 8)))
    h.apply(SuppressStep(qis=("gone", "sex", "age"), k=3))
    report = build_report(h, options=OPTIONS)
    html = render_html(report)
    tables = Page(html)
    loss = tables.frame("info-loss-variables").set_index("variable")
    overall = tables.frame("suppression-overall").set_index("variable")
    assert loss.loc["gone", "values suppressed"] == overall.loc["gone", "values suppressed"] == "0"
    assert loss.loc["gone", "cells"] == "0"  # every cell of it declared missing: none measured
    for v in ("sex", "age"):
        assert loss.loc[v, "values suppressed"] == overall.loc[v, "values suppressed"]
    assert "declared codes included" not in html


def test_the_smallest_category_of_a_qi_below_k_reads_below_k():
    """The per-QI table printed "smallest category before: 2", the count the threshold rule shows as "< 3"
    everywhere else."""
    history = merged_rare_race()
    report = build_report(history, options=OPTIONS)
    race = report.per_qi.set_index("variable").loc["race"]
    assert race["smallest_category_before"] == "< 3"
    assert race["smallest_category_after"] not in (1, 2)
    assert report.per_qi.set_index("variable").loc["sex", "smallest_category_before"] == history.original.dataset.frame["sex"].value_counts().min()
    row = Page(render_html(report)).frame("per-qi").set_index("variable").loc["race"]
    assert row["smallest category before"] == "< 3"
    assert not any(re.fullmatch(r"[12]", str(x)) for x in (row["smallest category before"],
                                                            row["smallest category after"]))
