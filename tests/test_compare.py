"""Before/after percentages (Wilson et al., RTI, section 4.2) on cases small enough to compute by hand.

With equal weights and no strata or clusters every record is its own PSU, so a percentage p among the
m non-missing of n records has the domain variance ``n / (n - 1) * p (1 - p) / m`` (the with-replacement
formula; the textbook ``p (1 - p) / (n - 1)`` when nothing is missing), and the Wald interval is
``p +/- 1.959964 se``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.utility.compare import (
    STATUS_COMPARED,
    STATUS_NEW,
    STATUS_RECODED,
    STATUS_SUPPRESSED,
    compare_distributions,
    intervals_overlap,
    recode_map,
)

ROOT = Path(__file__).resolve().parent.parent
Z = 1.959963984540054


def ds(values, weights=None, name="v", labels=None) -> Dataset:
    frame = pd.DataFrame({name: pd.Series(values, dtype=object)})
    roles = Roles(qis=(name,))
    if weights is not None:
        frame["w"] = weights
        roles = Roles(qis=(name,), weight="w")
    meta = {name: VariableMeta(label="The variable", value_labels=labels or {})}
    return Dataset(frame=frame, meta=meta, roles=roles)


def by_hand(values) -> dict:
    """Unweighted percentage, SE and Wald CI (in %) of every value, missing (None) left out."""
    present = [v for v in values if v is not None]
    n, m = len(values), len(present)
    out = {}
    for v in sorted(set(present)):
        p = present.count(v) / m
        se = np.sqrt(n / (n - 1) * p * (1 - p) / m)
        out[v] = (100 * p, 100 * se, 100 * (p - Z * se), 100 * (p + Z * se))
    return out


def row(result, value):
    t = result.table
    return t[t["value"].map(lambda x: x == value)].iloc[0]


# -- overlap -------------------------------------------------------------------------------------------------------
def test_interval_overlap_cases():
    low1, high1 = np.array([0, 0, 0, 0, 5]), np.array([1, 1, 1, 10, 6])
    low2, high2 = np.array([1, 1.0001, -1, 2, 0]), np.array([2, 2, -0.5, 3, 4.999])
    # touching, disjoint above, disjoint below, nested, disjoint below again
    assert intervals_overlap(low1, high1, low2, high2).tolist() == [True, False, False, True, False]


@given(st.lists(st.floats(-100, 100), min_size=4, max_size=4))
def test_overlap_is_symmetric_and_means_a_common_point(xs):
    a, b, c, d = xs
    l1, h1, l2, h2 = min(a, b), max(a, b), min(c, d), max(c, d)
    got = bool(intervals_overlap(l1, h1, l2, h2)[0])
    assert got == bool(intervals_overlap(l2, h2, l1, h1)[0])
    assert got == (max(l1, l2) <= min(h1, h2))


# -- percentages, differences, suppression -------------------------------------------------------------------------
def test_percentages_differences_and_overlap_by_hand():
    orig = [1, 1, 2, 2, 2, 3, 3, 3, 3, 3]
    treat = [1, None, 2, 2, 2, 3, 3, None, None, None]
    res = compare_distributions(ds(orig), ds(treat))
    h_o, h_t = by_hand(orig), by_hand(treat)
    for v in (1, 2, 3):
        r = row(res, v)
        assert r["status"] == STATUS_COMPARED
        assert (r["pct_original"], r["se_original"], r["ci_low_original"], r["ci_high_original"]) == pytest.approx(h_o[v])
        assert (r["pct_treated"], r["se_treated"], r["ci_low_treated"], r["ci_high_treated"]) == pytest.approx(h_t[v])
        assert r["difference"] == pytest.approx(h_o[v][0] - h_t[v][0])
        assert r["relative_difference"] == pytest.approx((h_o[v][0] - h_t[v][0]) / h_o[v][0])
        assert r["overlap"] == (max(h_o[v][2], h_t[v][2]) <= min(h_o[v][3], h_t[v][3]))
    # 2: 30 % before, 50 % after; n_treated counts records
    assert row(res, 2)["difference"] == pytest.approx(-20.0)
    assert row(res, 3)["n_original"] == 5 and row(res, 3)["n_treated"] == 2
    s = res.summary
    diffs = [h_o[v][0] - h_t[v][0] for v in (1, 2, 3)]
    assert s.n_categories == 3 and s.n_completely_suppressed == 0
    assert s.mean_difference == pytest.approx(np.mean(diffs)) and s.median_difference == pytest.approx(np.median(diffs))
    assert (s.min_difference, s.max_difference) == pytest.approx((min(diffs), max(diffs)))
    assert s.n_overlap == int(res.table["overlap"].sum()) and s.share_overlap == pytest.approx(s.n_overlap / 3)


def test_disjoint_intervals_do_not_overlap():
    orig = ["a"] * 50 + ["b"] * 50
    treat = ["a"] * 50 + [None] * 45 + ["b"] * 5  # b: 50 % -> 9 %
    res = compare_distributions(ds(orig), ds(treat))
    assert not row(res, "b")["overlap"] and not row(res, "a")["overlap"]
    assert res.summary.n_overlap == 0


def test_completely_suppressed_category():
    orig = [1, 1, 2, 2, 3, 3, 3]
    treat = [1, 1, 2, 2, 3, 3, None]
    gone = [1, 1, None, None, 3, 3, 3]
    res = compare_distributions(ds(orig, labels={2: "two"}), ds(gone, labels={2: "two"}))
    r = row(res, 2)
    assert r["status"] == STATUS_SUPPRESSED and r["n_treated"] == 0 and r["pct_treated"] == 0
    assert r["difference"] == pytest.approx(100 * 2 / 7) and r["relative_difference"] == pytest.approx(1.0)
    assert res.summary.n_completely_suppressed == 1
    assert res.summary.completely_suppressed == (("v", "two"),)
    assert res.summary.n_categories == 2  # only categories present in both files enter the summary
    assert "1 value(s) completely suppressed" in res.summary.sentence()
    assert compare_distributions(ds(orig), ds(treat)).summary.n_completely_suppressed == 0


def test_a_variable_with_every_value_suppressed_is_compared_as_completely_suppressed():
    """Every category of a variable blanked in full is completely suppressed (0 % after, counted in Wilson's
    summary), and the other variables are still compared: the whole comparison failed on that variable."""
    frame_o = pd.DataFrame({"sex": [1, 2, 1, 2, 1, 2], "region": [1, 1, 2, 2, 3, 3]})
    frame_t = frame_o.astype(object).copy()
    frame_t["region"] = None
    frame_t.loc[0, "sex"] = None
    roles = Roles(qis=("sex", "region"))
    res = compare_distributions(Dataset(frame=frame_o, roles=roles), Dataset(frame=frame_t, roles=roles))
    region = res.variable_table("region")
    assert region["status"].tolist() == [STATUS_SUPPRESSED] * 3
    assert region["pct_original"].tolist() == pytest.approx([100 / 3] * 3)
    assert (region["pct_treated"] == 0).all() and (region["n_treated"] == 0).all() and region["overlap"].isna().all()
    sex = res.variable_table("sex")
    hand = by_hand([None, 2, 1, 2, 1, 2])
    assert sex["pct_treated"].tolist() == pytest.approx([hand[1][0], hand[2][0]])
    assert res.summary.n_completely_suppressed == 3 and res.summary.n_categories == 2


def test_merge_into_an_existing_code_is_a_recode_not_a_suppression():
    orig = [1, 2, 3, 4, 5, 5, 1, 2]
    treat = [1, 2, 3, 4, 1, 1, 1, 2]  # 5 -> 1: no new value appears
    res = compare_distributions(ds(orig), ds(treat))
    t = res.table
    assert t["recoded"].all()
    assert STATUS_SUPPRESSED not in set(t["status"]) and res.summary.n_completely_suppressed == 0
    assert list(t["value"]) == [1, 2, 3, 4] and (t["status"] == STATUS_COMPARED).all()
    # compared on the treated coding: 1 stands for 1 or 5 in the original too (4 of 8 records)
    assert row(res, 1)["pct_original"] == pytest.approx(50.0) == row(res, 1)["pct_treated"]
    assert np.allclose(t["difference"], 0) and t["overlap"].all()


def test_merge_plus_suppression_compares_on_the_new_coding():
    orig = ["a", "b", "c", "c", "d", "d", "d", "a"]
    treat = ["ab", "ab", "c", None, "d", "d", None, "ab"]  # a, b -> ab (a new value), two cells suppressed
    res = compare_distributions(ds(orig), ds(treat))
    assert list(res.table["value"]) == ["ab", "c", "d"]
    r = row(res, "ab")
    assert r["pct_original"] == pytest.approx(100 * 3 / 8) and r["pct_treated"] == pytest.approx(100 * 3 / 6)
    assert res.summary.n_completely_suppressed == 0


def test_unmapped_value_whose_records_are_all_suppressed_is_completely_suppressed():
    orig = ["a", "b", "c", "c", "e"]
    treat = ["ab", "ab", "c", "c", None]  # e never seen unsuppressed: it keeps its own value
    res = compare_distributions(ds(orig), ds(treat))
    assert row(res, "e")["status"] == STATUS_SUPPRESSED


def test_local_recoding_is_flagged_recoded_and_new_values_only_in_treated():
    orig = [1, 1, 2, 3, 3, 4]
    treat = [1, 2, 2, 2, None, 9]  # 1 goes to two values: not a global recoding; 3 and 4 disappear
    res = compare_distributions(ds(orig), ds(treat))
    status = dict(zip(res.table["value"], res.table["status"], strict=True))
    assert status == {1: STATUS_COMPARED, 2: STATUS_COMPARED, 3: STATUS_RECODED, 4: STATUS_RECODED, 9: STATUS_NEW}
    assert res.table["recoded"].all() and res.summary.n_completely_suppressed == 0
    assert row(res, 9)["pct_original"] == 0 and np.isnan(row(res, 9)["relative_difference"])


def test_recode_map():
    o = pd.Series([1, 2, 5, 5, 3], dtype=object)
    t = pd.Series([1, 2, 1, 1, None], dtype=object)
    miss_o, miss_t = o.isna().to_numpy(), t.isna().to_numpy()
    assert recode_map(o, t, miss_o, miss_t) == {1: 1, 2: 2, 5: 1}
    t2 = pd.Series([1, 2, 1, 5, None], dtype=object)
    assert recode_map(o, t2, miss_o, t2.isna().to_numpy()) is None


def test_weighted_percentages_use_each_files_weights():
    orig = ["a", "a", "b", "b"]
    res = compare_distributions(ds(orig, [1.0, 1.0, 1.0, 3.0]), ds(orig, [1.0, 1.0, 3.0, 3.0]))
    assert row(res, "b")["pct_original"] == pytest.approx(100 * 4 / 6)
    assert row(res, "b")["pct_treated"] == pytest.approx(100 * 6 / 8)


def test_refuses_different_records_and_unknown_variables():
    with pytest.raises(InputError, match="same records"):
        compare_distributions(ds([1, 2]), ds([1, 2, 3]))
    with pytest.raises(InputError, match="not in the treated"):
        compare_distributions(ds([1, 2]), ds([1, 2], name="u"), variables=["v"])


# -- the demo release --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_recoded():
    """The demo recipe's roles and recodes (its local suppression left out): original and recoded file."""
    from kanon_core.io import load_dataset
    from kanon_core.recipe import Recipe

    recipe = Recipe.load(ROOT / "sample_data" / "demo.recipe.json")
    data = recipe.start(load_dataset(ROOT / "sample_data" / "els_like.csv"))
    original = data
    for step in recipe.steps:
        if step.kind == "local_suppression":
            continue
        data = step.apply(data, None)
        if step.kind == "set_roles":
            original = data
    return original, data


def test_demo_recodes_merge_into_existing_codes_without_any_difference(demo_recoded):
    original, recoded = demo_recoded
    res = compare_distributions(original, recoded)
    t = res.table
    # every recode of the demo merges categories, most into one of their own codes: all compared, none lost
    assert res.summary.n_completely_suppressed == 0 and (t["status"] == STATUS_COMPARED).all()
    assert res.summary.n_categories == 31 == res.summary.n_overlap
    assert np.allclose(t["difference"], 0, atol=1e-9)
    assert set(t.loc[t["recoded"], "variable"]) == {"BYDOB_P", "BYGPARED", "BYINCOME", "BYOCCUF", "BYOCCUM", "BYRACE"}


def test_a_variable_the_treatment_left_alone_is_estimated_once_with_the_same_table(monkeypatch):
    """On the sample with one variable recoded, the untouched variables' percentages are estimated once (the
    after side is the before side), the recoded one twice; the table is the one made estimating every side."""
    import kanon_core.utility.compare as compare_module
    from kanon_app.samples import load_sample
    from kanon_core.treat.recode import RecodeStep

    original = load_sample("els")
    treated = RecodeStep(column="BYRACE", merge=(1, 2)).apply(original)
    variables = ["BYSEX", "BYRACE", "BYINCOME"]
    calls: list[str] = []
    real = compare_module.proportions

    def counting(*args, **kwargs):
        calls.append(kwargs["name"])
        return real(*args, **kwargs)

    monkeypatch.setattr(compare_module, "proportions", counting)
    quick = compare_distributions(original, treated, variables)
    assert sorted(calls) == ["BYINCOME", "BYRACE", "BYRACE", "BYSEX"]
    monkeypatch.setattr(compare_module, "reads_alike", lambda *_: False)
    calls.clear()
    every = compare_distributions(original, treated, variables)
    assert len(calls) == 6
    pd.testing.assert_frame_equal(quick.table, every.table)
    assert quick.summary == every.summary


def test_overlap_is_judged_only_on_rows_compared_with_two_intervals():
    """A completely suppressed category (its Wald interval reaches below 0, so [0, 0] would "overlap" it), a
    recoded one and one only in the release have no overlap to judge: missing, not True or False."""
    res = compare_distributions(ds(["a"] * 10 + ["b"] * 9 + ["z"]), ds(["a"] * 10 + ["b"] * 9 + [None]))
    assert row(res, "z")["status"] == STATUS_SUPPRESSED and row(res, "z")["ci_low_original"] < 0
    assert pd.isna(row(res, "z")["overlap"]) and row(res, "a")["overlap"] is np.True_
    local = compare_distributions(ds(["a"] * 40 + ["c"] * 30 + ["d"] * 30),
                                  ds(["a"] * 40 + ["cd"] * 30 + ["d"] * 15 + ["cd"] * 15))
    t = local.table
    assert set(t.loc[t["overlap"].isna(), "status"]) == {STATUS_RECODED, STATUS_NEW}
    assert t.loc[t["status"] == STATUS_COMPARED, "overlap"].notna().all()
    s = local.summary
    assert (s.n_categories, s.n_without_interval, s.n_overlap) == (2, 0, 2)


def test_missing_intervals_are_not_counted_as_apart():
    """Logit intervals with no design degrees of freedom (one PSU per stratum) do not exist: the summary counts
    them apart from the overlap, instead of reading "overlap for 0 of 3"."""
    rng = np.random.default_rng(0)
    values = rng.choice(["a", "b", "c"], 60).astype(object)
    frame = pd.DataFrame({"v": values, "s": np.repeat(np.arange(10), 6)})
    roles = Roles(qis=("v",), strata="s", psu="s")
    treated = frame.assign(v=pd.Series(values).where(np.arange(60) >= 5))
    res = compare_distributions(Dataset(frame, roles=roles), Dataset(treated, roles=roles), ci="logit")
    assert res.table["ci_low_original"].isna().all() and res.table["overlap"].isna().all()
    s = res.summary
    assert (s.n_categories, s.n_without_interval, s.n_judged, s.n_overlap) == (3, 3, 0, 0)
    assert np.isnan(s.share_overlap) and "overlap for 0" not in s.sentence()
    assert "3 value(s) have no confidence interval" in s.sentence()
    wald = compare_distributions(Dataset(frame, roles=roles), Dataset(treated, roles=roles), ci="wald").summary
    assert wald.n_without_interval == 0 and wald.n_judged == 3


def test_intervals_overlap_is_missing_where_a_bound_is():
    got = intervals_overlap([0, 0, np.nan, 0], [1, 1, 1, 1], [1, 1.5, 0, 0], [2, 2, 1, np.nan])
    assert got.tolist() == [True, False, pd.NA, pd.NA]
