"""What the report must not tell, from the steward's and the intruder's side: a merged
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


# -- labels holding "/", the original's small categories in a step's tables, value-labels and
# hierarchy steps in the embedded recipe, the k a count is stated with, suppression to a risk threshold --------
SLASHED = "Amer. Indian/Alaska Native"


def _slashed_survey() -> Dataset:
    ds = _survey()
    meta = {"race": VariableMeta("Race", {1: "White", 2: "Black", 3: "Asian", 4: "More than one race", 5: SLASHED})}
    frame = ds.frame.copy()
    frame.loc[1, "race"] = 5  # two records of the category whose own label holds a "/"
    return Dataset(frame, meta=meta, roles=ds.roles)


def test_a_merged_label_does_not_name_a_rare_category_whose_own_label_holds_a_slash():
    h = History.start(_slashed_survey())
    h.apply(RecodeStep("race", merge=(4, 5), into=4))
    assert h.current.dataset.value_label("race", 4) == f"More than one race / {SLASHED}"
    h.apply(SuppressStep(qis=("sex", "race", "region", "kids"), k=3))
    html = _report(h)
    assert "Indian/Alaska" not in html.replace("\\u002f", "/")


def merged_rare_race() -> History:
    """Pacific Islander (2 records) merged into Other race (6 in all), then suppression to k = 3 with sex and
    region protected: race is blanked for the merged category's records, each unique on the three."""
    rows = [(s, r, race) for s in (1, 2) for r in (1, 2, 3) for race in (3, 7) for _ in range(12)]
    rows += [(1, 1, 1), (2, 2, 1), (1, 3, 6), (2, 1, 6), (1, 2, 6), (2, 3, 6)]
    frame = pd.DataFrame(rows, columns=["sex", "region", "race"])
    meta = {"race": VariableMeta("Race", {1: "Pacific Islander", 3: "Black", 6: "Other race", 7: "White"})}
    h = History.start(Dataset(frame, meta=meta, roles=Roles(qis=("sex", "region", "race"))))
    h.apply(RecodeStep("race", merge=(1, 6), into=6))
    h.apply(SuppressStep(qis=("sex", "region", "race"), k=3, protected=("sex", "region")))
    return h


def test_a_step_table_withholds_a_category_small_in_the_original():
    """A merge of 2 records into a category of 6, all of them then suppressed (each unique on the protected
    variables' values with race): the step's own input and output hold the merged category (6 records, then
    none), but its label names a category of 2 records in the original."""
    report = build_report(merged_rare_race(), options=ReportOptions(k=3, minucs=False))
    (step,) = report.suppression_steps
    for table in (step.most_suppressed, step.completely_suppressed):
        assert len(table) and not table.astype(str).apply(lambda c: c.str.contains("Pacific")).any().any()
    assert "Pacific" not in render_html(report)


def test_the_recipe_withholds_value_labels_and_hierarchy_groups_naming_a_rare_category():
    from kanon_core.treat.hierarchy import grouping_hierarchy
    from kanon_core.treat.recode import GeneralizeStep
    from kanon_core.value_labels import SetValueLabels

    rng = np.random.default_rng(4)
    country = rng.choice(["Germany", "France", "Samoa"], 100).astype(object)
    country[0] = "Tonga"  # one record
    frame = pd.DataFrame({"country": country, "sex": rng.integers(1, 3, 100)})
    ds = Dataset(frame, roles=Roles(qis=("country", "sex")))
    h = History.start(ds)
    h.apply(SetValueLabels(labels=(("country", (("Tonga", "Kingdom of Tonga"), ("Samoa", "Samoa"))),)))
    hier = grouping_hierarchy(country, [{"Tonga": "Tonga / Samoa", "Samoa": "Tonga / Samoa"}], name="country")
    h.apply(GeneralizeStep.build({"country": 1}, {"country": hier}))
    html = _report(h)
    recipe = html[html.index("Recipe"):]
    assert "Kingdom of Tonga" not in recipe and '"Tonga"' not in recipe and "Tonga / Samoa" not in recipe


def test_the_people_findable_are_counted_at_the_k_the_sentence_states():
    """A step suppressing to k = 3, a report at k = 2: the count in the conclusions is the one at k = 2, as the
    sentence says, recounted here from the intruder's side on the step's input and output."""
    from kanon_core.report.build import conclusions, findable_after
    from kanon_core.risk.intruder import findable_below_k, released_codes

    rng = np.random.default_rng(7)
    frame = pd.DataFrame({q: rng.integers(0, 4, 150) for q in ("a", "b", "c")})
    h = History.start(Dataset(frame, roles=Roles(qis=("a", "b", "c"))))
    h.apply(SuppressStep(qis=("a", "b", "c"), k=3, model="release", method="greedy"))
    parent, child = h.versions[0].dataset, h.current.dataset
    codes = parent.qi_matrix(("a", "b", "c")).codes
    mask = np.column_stack([child.missing_mask(q) & ~parent.missing_mask(q) for q in ("a", "b", "c")])
    want = {k: findable_below_k(codes, released_codes(codes, mask), k, parent.missing) for k in (2, 3)}
    assert want[2] != want[3] and want[2] > 0  # the case tells the two k apart
    report = build_report(h, options=ReportOptions(k=2, minucs=False))
    assert findable_after(report)[0] == want[2]
    assert f"{want[2]:,} people are findable among fewer than 2 released records" in " ".join(conclusions(report))
    (step,) = report.suppression_steps
    assert f"fewer than 3 released records: {want[3]:,}" in step.protection


def test_suppression_to_a_risk_threshold_is_checked_from_the_persons_side():
    """A risk-targeted suppression step blanks cells as local suppression does: the report's suppression
    section lists it and the claim of k-anonymity rests on the people it leaves findable."""
    from kanon_core.risk.intruder import findable_below_k, released_codes
    from kanon_core.treat.suppress_risk import RiskSuppressStep

    rng = np.random.default_rng(11)
    frame = pd.DataFrame({q: rng.integers(0, 4, 150) for q in ("a", "b", "c")})
    h = History.start(Dataset(frame, roles=Roles(qis=("a", "b", "c"))))
    h.apply(RiskSuppressStep(max_risk=0.2))
    parent, child = h.versions[0].dataset, h.current.dataset
    codes = parent.qi_matrix(("a", "b", "c")).codes
    mask = np.column_stack([child.missing_mask(q) & ~parent.missing_mask(q) for q in ("a", "b", "c")])
    findable = findable_below_k(codes, released_codes(codes, mask), 3, parent.missing)
    report = build_report(h, options=ReportOptions(k=3, minucs=False))
    assert len(report.suppression_steps) == 1 and report.suppression_steps[0].findable == findable
    html = render_html(report)
    assert "No local suppression step was applied" not in html
    if findable:
        assert "the release is 3-anonymous" not in html
