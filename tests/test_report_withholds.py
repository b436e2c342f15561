"""What the report must not tell, found by a review from the steward's and the intruder's side: a merged
category's label naming the rare category it absorbed, a rare value declared missing shown in the steps, the
value of the few cells a suppression hid, and a claim of k-anonymity that a person's view contradicts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.history import History
from kanon_core.report import ReportOptions, build_report, render_html
from kanon_core.steps import DeclareMissingCodes
from kanon_core.treat.recode import RecodeStep
from kanon_core.treat.suppress import SuppressStep

RARE = "Zedland race specified"


def _survey(n: int = 120) -> Dataset:
    rng = np.random.default_rng(1)
    race = rng.choice([1, 2, 3], n)
    race[0] = 5  # one record of a rare category
    race[1:12] = 4
    frame = pd.DataFrame({"sex": rng.integers(1, 3, n), "race": race, "region": rng.integers(1, 4, n),
                          "kids": rng.integers(0, 4, n), "y": np.round(rng.normal(50, 10, n), 2),
                          "w": np.round(rng.uniform(50, 150, n), 3)})
    frame.loc[7, "kids"] = 14  # one extreme value
    meta = {"race": VariableMeta("Race", {1: "White", 2: "Black", 3: "Asian", 4: "Hispanic no race", 5: RARE})}
    return Dataset(frame, meta=meta, roles=Roles(qis=("sex", "race", "region", "kids"), weight="w",
                                                  outcomes=("y",)))


def _report(history: History) -> str:
    return render_html(build_report(history, options=ReportOptions(k=3, minucs=False)))


def test_a_merged_category_does_not_name_the_rare_category_it_absorbed():
    h = History.start(_survey())
    h.apply(RecodeStep("race", merge=(4, 5), into=4))
    assert h.current.dataset.value_label("race", 4) == f"Hispanic no race / {RARE}"  # the release's own label
    h.apply(SuppressStep(qis=("sex", "race", "region", "kids"), k=3))
    assert RARE not in _report(h)


def test_a_rare_value_declared_missing_is_not_named_in_the_steps():
    for step in (DeclareMissingCodes(column="kids", codes=(14,)), DeclareMissingValues((("kids", (14,)),))):
        h = History.start(_survey())
        h.apply(step)
        html = _report(h)
        assert "kids: 14" not in html and "kids (14)" not in html
        assert "a code is a value of fewer than 3 records" in html
    h = History.start(_survey())
    h.apply(DeclareMissingCodes(column="region", codes=(3,)))  # a code of many records is shown as it is
    assert "Missing codes of region: 3" in _report(h)


def _release_model_case() -> History:
    rows = [(s, r) for s in (1, 2) for r in (1, 2, 3) if (s, r) != (2, 3) for _ in range(10)] + [(2, 3)]
    frame = pd.DataFrame(rows, columns=["sex", "region"])
    frame["y"] = np.random.default_rng(3).normal(50, 10, len(frame)).round(2)
    h = History.start(Dataset(frame, roles=Roles(qis=("sex", "region"), outcomes=("y",))))
    h.apply(SuppressStep(qis=("sex", "region"), k=3, importance=(("sex", 10.0),), model="release",
                         method="greedy"))
    return h


def test_the_claim_of_k_anonymity_rests_on_the_persons_side():
    """sdcMicro's criterion (the release model) leaves the one person (2, 3) consistent with one released record
    (2, blank): no record is in a class below k counting a blank as any value, yet the release is not
    3-anonymous for that person, and the report says so."""
    html = _report(_release_model_case())
    assert "none can: the release is 3-anonymous" not in html
    assert "1 people are findable among fewer than 3 released records" in html
    assert "the release is NOT 3-anonymous for them" in html


def test_the_value_of_fewer_than_k_suppressed_cells_is_not_shown():
    """One region cell suppressed, of value 3: "value suppressed most: 3, 1 cell" would give it back."""
    build = build_report(_release_model_case(), options=ReportOptions(k=3, minucs=False))
    (step,) = build.suppression_steps
    row = step.most_suppressed.set_index("variable").loc["region"]
    assert str(row["value"]) != "3" and row["suppressed"] == "< 3" and pd.isna(row["percent_of_variable"])
    overall = build.suppression_overall.set_index("variable").loc["region"]
    assert str(overall["most_suppressed"]) != "3" and overall["most_suppressed_n"] == "< 3"
