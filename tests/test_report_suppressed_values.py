"""The report does not give back the value of a suppressed cell.

Counts before and after per category tell how many records left each category; when exactly one category
lost records and none gained any, every suppressed cell of the variable held it. The report then pools that
category with another, and never names a value as the one that held every suppressed cell. Checked on random
files after suppression, from the tables the report shows, against the data counted directly."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.report import ReportOptions, build_report
from kanon_core.report.build import EVERY_SUPPRESSED_LABEL
from kanon_core.report.mask import gives_back_suppressed_values, pooled_label
from kanon_core.treat.suppress import SuppressStep


def _num(x) -> float:
    return float(x) if not isinstance(x, str) else float("nan")


def test_one_category_losing_records_is_pooled_with_another():
    variables = np.array(["sex", "sex", "region", "region", "region"])
    before = np.array([50, 40, 30, 30, 30])
    after = np.array([45, 40, 28, 30, 29])  # sex: only "f" lost (5 suppressed: all "f"); region: two lost
    flags = gives_back_suppressed_values(variables, before, after, np.zeros(5, dtype=bool))
    assert flags.tolist() == [True, True, False, False, False]
    # a row that gained records (a recode moved them): differences no longer tell where suppressed cells were
    assert not gives_back_suppressed_values(variables, before, np.array([45, 45, 30, 30, 30]),
                                            np.zeros(5, dtype=bool)).any()
    # another category pooled already: the one that lost joins that pool, nothing more
    assert gives_back_suppressed_values(variables, before, after,
                                        np.array([False, False, False, False, True])).tolist() == [
        True, True, False, False, False]


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 3), st.integers(0, 10_000))
def test_no_suppressed_value_is_given_back_on_random_files(k, seed):
    """Two large categories of b and a rare one, a random a; Wilson et al.'s record-wise model blanks the rare
    category's cells, often all of one category (what the rule is for: most cases of this file)."""
    rng = np.random.default_rng(seed)
    sizes = [int(rng.integers(2 * k, 12)), int(rng.integers(2 * k, 12)), int(rng.integers(1, k + 2))]
    b = [f"B{j}" for j, s in enumerate(sizes) for _ in range(s)]
    a = [f"A{int(x)}" for x in rng.integers(0, 2, len(b))]
    frame = pd.DataFrame({"a": a, "b": b, "y": rng.normal(0, 1, len(b)).round(3)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b"), outcomes=("y",)), name="random"))
    h.apply(SuppressStep(qis=("a", "b"), k=k, model="record"))
    released = h.current.dataset.frame
    report = build_report(h, options=ReportOptions(k=k, minucs=False, created="2026-01-01"))
    shown = report.utility.categories
    masked = report.masking
    for col in ("a", "b"):
        gone = frame[col][released[col].isna()]
        rows = shown[shown["variable"] == col]
        lost = rows[[_num(o) > _num(t) or isinstance(o, str) for o, t in zip(rows["n_original"],
                                                                                   rows["n_treated"],
                                                                                   strict=True)]]
        if gone.nunique() == 1 and len(gone):
            # every suppressed cell held one category: no row may say so by itself
            held = gone.iloc[0]
            assert held not in set(rows["label"].astype(str)) or len(lost) != 1 or lost["label"].iloc[0] != held
            pooled = rows[rows["label"].astype(str).str.startswith(pooled_label(k))]
            if len(pooled):
                n_pooled = masked[(masked["table"] == "weighted percentages per category")
                                  & (masked["variable"] == col)]["categories_masked"].sum()
                assert n_pooled >= 2
        # nor does a category that disappeared with as many records as its variable lost
        for step in report.suppression_steps:
            lost_cells = dict(zip(step.per_variable["variable"], step.per_variable["suppressed"], strict=True))
            t = step.completely_suppressed
            for v, var, n in zip(t["value"], t["variable"], t["records"], strict=True):
                if var == col and str(v) in set(frame[col]):
                    assert _num(n) != lost_cells[col], (col, v, n)
        # "value suppressed most" never names the category that held every suppressed cell
        for t in [report.suppression_overall] + [s.most_suppressed for s in report.suppression_steps]:
            value_col = "most_suppressed" if "most_suppressed" in t.columns else "value"
            for v, var in zip(t[value_col], t["variable"], strict=True):
                if var == col and gone.nunique() == 1 and len(gone):
                    assert str(v) != str(gone.iloc[0]), (col, v)


def test_the_label_says_why_the_value_is_not_named():
    """Six suppressed sexes, all "f": the row would give back each of them; four of ten "f" names no one."""
    from kanon_core.report.build import _mask_most_suppressed
    from kanon_core.report.mask import MaskLog, SmallCategories

    small = SmallCategories(k=3, texts={}, withhold_all=frozenset(), counts={})
    table = pd.DataFrame({"variable": ["sex", "region"], "n_suppressed": [6, 10], "most_suppressed": ["f", "north"],
                          "most_suppressed_n": [6, 4], "most_suppressed_percent": [100.0, 40.0]})
    log = MaskLog(3)
    out = _mask_most_suppressed(table, small, "most_suppressed", "most_suppressed_n", log, "t")
    assert out["most_suppressed"].tolist() == [EVERY_SUPPRESSED_LABEL, "north"]
    assert out["most_suppressed_n"].tolist() == [6, 4]  # the variable's suppressed total, shown beside it
    assert log.frame()["variable"].tolist() == ["sex"]


def test_a_category_that_disappeared_with_every_suppressed_cell_is_not_named():
    """Category Z of b (3 records, each on a value of a that is common elsewhere) is unique with a; a is
    protected, so suppression by Wilson et al.'s record-wise model blanks b on exactly those 3 records: every
    suppressed b held Z. The report names Z nowhere as what was suppressed: not as the value suppressed most,
    not as the category that disappeared (3 records, the 3 cells b lost), and the per-category table pools it with another."""
    a = [f"a{i % 3}" for i in range(30)] + ["a0", "a1", "a2"]
    b = [f"b{i % 2}" for i in range(30)] + ["Z", "Z", "Z"]
    frame = pd.DataFrame({"a": a, "b": b, "y": np.arange(33, dtype=float)})
    frame = frame.sort_values(["a", "b"], kind="stable").reset_index(drop=True)
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("a", "b"), outcomes=("y",)), name="z"))
    h.apply(SuppressStep(qis=("a", "b"), k=2, protected=("a",), model="record"))
    released = h.current.dataset.frame
    assert sorted(frame["b"][released["b"].isna()]) == ["Z", "Z", "Z"]  # what the file was built to give
    report = build_report(h, options=ReportOptions(k=2, minucs=False, created="2026-01-01"))
    step = report.suppression_steps[0]
    assert "Z" not in set(step.most_suppressed["value"].astype(str))
    assert "Z" not in set(step.completely_suppressed["value"].astype(str))
    assert EVERY_SUPPRESSED_LABEL in set(step.completely_suppressed["value"])
    assert "Z" not in set(report.suppression_overall["most_suppressed"].astype(str))
    rows = report.utility.categories
    assert "Z" not in set(rows.loc[rows["variable"] == "b", "label"].astype(str))


def test_the_smallest_category_before_does_not_give_back_a_pool():
    """Sex: 20 f and 20 m. Two f records are alone on (sex, age), with m records of their ages; age is
    protected, so Wilson et al.'s record-wise model blanks their sex: every suppressed sex was f. The
    per-category table pools f with m (40 before), and the release shows f 18, m 20. A smallest category of 20
    before would say both had 20, so f lost both: the per-QI table reads "2 or more" there (k = 2), and its
    count after, which the release gives anyway, stays."""
    sex = ["f", "f"] + ["m"] * 6 + ["f"] * 18 + ["m"] * 14
    age = ["u0", "u1"] + ["u0", "u1"] * 3 + ["a"] * 32
    frame = pd.DataFrame({"sex": sex, "age": age, "y": np.arange(40, dtype=float)})
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("sex", "age"), outcomes=("y",)), name="pairs"))
    h.apply(SuppressStep(qis=("sex", "age"), k=2, protected=("age",), model="record"))
    released = h.current.dataset.frame
    assert sorted(frame["sex"][released["sex"].isna()]) == ["f", "f"]  # what the file was built to give
    report = build_report(h, options=ReportOptions(k=2, minucs=False, created="2026-01-01"))
    rows = report.utility.categories
    assert not {"f", "m"} & set(rows.loc[rows["variable"] == "sex", "label"].astype(str))
    per_qi = report.per_qi.set_index("variable")
    assert per_qi.loc["sex", "smallest_category_before"] == "2 or more"
    assert per_qi.loc["sex", "smallest_category_after"] == 18
    assert per_qi.loc["age", "smallest_category_before"] == 4  # age has no pool: its count stays (u0, u1)
