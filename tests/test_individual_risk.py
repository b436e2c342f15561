"""Benedetti–Franconi individual risk and global risk, checked against sdcMicro's formulas and numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.classtable import ClassTable
from kanon_core.errors import InputError
from kanon_core.risk.classes import compute_class_sizes
from kanon_core.risk.individual import check_max_risk, global_risk, individual_risk

HERE = Path(__file__).parent
W = np.array([18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51])


def _codes(*cols):
    out = []
    for col in cols:
        col = np.asarray(col, dtype=float)
        obs = ~np.isnan(col)
        c = np.full(len(col), -1)
        c[obs] = np.searchsorted(np.unique(col[obs]), col[obs])
        out.append(c)
    return np.column_stack(out).astype(np.int32)


NAN = np.nan
COMPLETE = _codes([2, 3, 2, 2, 3, 3, 1, 2], [3, 3, 3, 3, 3, 3, 4, 3], [1, 3, 1, 2, 1, 1, 1, 1])
WITH_NA = _codes([2, 3, 2, 2, 3, 3, 1, NAN], [3, 3, 3, 3, 3, 3, 4, 3], [1, 3, NAN, 2, 1, 1, NAN, 1])


# sdcMicro's tests/testthat/test_indivRisk.R, the expected vectors (freqCalc at its default alpha = 1)
@pytest.mark.parametrize("codes, method, qual, expected", [
    (COMPLETE, "approx", 1, [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883, 0.03931625,
                             0.01369863]),
    (COMPLETE, "approx", 2, [0.02739726, 0.17158258, 0.02739726, 0.35415167, 0.03755767, 0.03755767, 0.07863251,
                             0.02739726]),
    (COMPLETE, "exact", 1, [0.01355297, 0.08579129, 0.01355297, 0.17707583, 0.01877883, 0.01877883, 0.03931625,
                            0.01355297]),
    (COMPLETE, "exact", 2, [0.02710594, 0.17158258, 0.02710594, 0.35415167, 0.03755767, 0.03755767, 0.07863251,
                            0.02710594]),
    (WITH_NA, "approx", 1, [0.013698630, 0.085791288, 0.010554090, 0.032466112, 0.009836066, 0.009836066,
                            0.039316254, 0.005973716]),
    (WITH_NA, "approx", 2, [0.02739726, 0.17158258, 0.02110818, 0.06493222, 0.01967213, 0.01967213, 0.07863251,
                            0.01194743]),
    (WITH_NA, "exact", 1, [0.013552968, 0.085791288, 0.010504889, 0.032466112, 0.009756889, 0.009756889,
                           0.039316254, 0.005962551]),
    (WITH_NA, "exact", 2, [0.02710594, 0.17158258, 0.02100978, 0.06493222, 0.01951378, 0.01951378, 0.07863251,
                           0.01192510]),
])
def test_sdcmicro_test_expectations(codes, method, qual, expected):
    s = compute_class_sizes(codes, "wildcard", W)
    np.testing.assert_allclose(individual_risk(s.fk, s.Fk, method, qual=qual), expected, atol=5e-9)


@pytest.mark.parametrize("codes, expected", [
    (COMPLETE, [1 / 3, 1, 1 / 3, 1, 0.5, 0.5, 1, 1 / 3]),
    (WITH_NA, [1 / 3, 1, 0.25, 0.5, 1 / 3, 1 / 3, 1, 0.2]),
])
def test_without_weights_is_one_over_fk(codes, expected):
    s = compute_class_sizes(codes, "wildcard")
    np.testing.assert_allclose(individual_risk(s.fk, None), expected)


def test_each_branch_by_hand():
    # fk = 1, Fk = 10: pk = 0.1, pk/(1-pk) log(1/pk) = (1/9) ln 10
    # fk = 2, Fk = 8: pk = 0.25, r = 1/3, r - r^2 ln 4
    # fk = 4, Fk = 20: pk = 0.2, approx pk / (fk - (1 - pk)) = 0.2 / 3.2
    # fk = Fk = 5 (a census): 1/5; fk = 1.5 (alpha < 1): no branch of sdcMicro applies, 0
    fk = np.array([1, 2, 4, 5, 1.5])
    Fk = np.array([10, 8, 20, 5, 9.0])
    expected = [math.log(10) / 9, 1 / 3 - math.log(4) / 9, 0.0625, 0.2, 0.0]
    np.testing.assert_allclose(individual_risk(fk, Fk), expected, rtol=1e-12)
    exact = individual_risk(fk, Fk, "exact")
    np.testing.assert_allclose(exact[[0, 1, 3, 4]], np.asarray(expected)[[0, 1, 3, 4]], rtol=1e-12)


def test_exact_fk3_by_hand():
    # fk = 3, pk = 0.5: A = (0.5^-2 - 1)/2 = 1.5; B(0) = 2^2/(1*1) * (0.5^-1 - 1)/(0.5^-2 - 1) = 4/3;
    # BB = -B(0); (pk/(1-pk))^3 = 1; (-1)^3 log(0.5) = ln 2;  r = 1.5 * (1 - 4/3) + ln 2 = ln 2 - 0.5
    assert individual_risk(np.array([3.0]), np.array([6.0]), "exact")[0] == pytest.approx(math.log(2) - 0.5)
    # fk = 4, pk = 0.5: A = (2^3 - 1)/3 = 7/3; B(0) = 9/2 * 3/7 = 27/14; B(1) = 4/2 * 1/3 = 2/3
    # BB = -27/14 + 27/14 * 2/3 = -9/14; r = 1 * (7/3 * 5/14 + ln 0.5) = 5/6 - ln 2
    assert individual_risk(np.array([4.0]), np.array([8.0]), "exact")[0] == pytest.approx(5 / 6 - math.log(2))


def test_agrees_with_sdcmicro_indivrisk_with_missing_values_and_alpha():
    """sdcMicro's indivRisk run on sdcMicro's own freqCalc fk/Fk (tests/reference/sdcmicro_indivrisk)."""
    fr = pd.read_csv(HERE / "fixtures" / "sdcmicro_alpha" / "freqcalc_alpha.csv")
    ref = pd.read_csv(HERE / "reference" / "sdcmicro_indivrisk" / "indivrisk_alpha.csv")
    assert len(fr) == len(ref)
    for _, idx in fr.groupby("table").groups.items():
        tab = fr.loc[idx]
        kv = [f"k{j}" for j in range(int(tab["n_qis"].iloc[0]))]
        codes = tab[kv].fillna(-1).to_numpy(dtype=np.int32)
        for a in (0, 0.3, 0.5, 1):
            s = compute_class_sizes(codes, "wildcard", tab["w"].to_numpy(), alpha=a)
            for m in ("approx", "exact"):
                want = ref.loc[idx, f"rk_{m}_{a:g}"].to_numpy()
                got = individual_risk(s.fk, s.Fk, m)
                np.testing.assert_allclose(got, want, atol=1e-6, rtol=0, equal_nan=True)
                assert np.isnan(want).sum() == np.isnan(got).sum()


def test_per_class_equals_per_record():
    rng = np.random.default_rng(3)
    codes = rng.integers(-1, 3, size=(200, 3)).astype(np.int32)
    w = rng.uniform(1, 30, 200)
    table = ClassTable.from_codes(codes, weights=w)
    sizes = table.class_sizes("wildcard")
    per_class = individual_risk(sizes.fk, sizes.Fk)
    rec = compute_class_sizes(codes, "wildcard", w)
    np.testing.assert_allclose(table.per_record(per_class), individual_risk(rec.fk, rec.Fk))
    g_rec = global_risk(individual_risk(rec.fk, rec.Fk))
    g_cls = global_risk(per_class, table.count)
    assert g_rec.expected_reidentifications == pytest.approx(g_cls.expected_reidentifications)
    assert g_rec.n_above == g_cls.n_above and g_rec.n_records == g_cls.n_records == 200


def test_global_risk_by_hand():
    g = global_risk(np.array([0.5, 0.02, 0.01, np.nan]), threshold=0.01)
    assert g.expected_reidentifications == pytest.approx(0.53)  # NaN left out (sdcMicro's na.rm = TRUE)
    assert g.global_risk == pytest.approx(0.53 / 4)  # but counted in the mean's denominator
    assert g.n_above == 2  # strictly above the threshold
    assert g.max_risk == 0.5
    assert g.n_undefined == 1 and "exact method" in g.undefined_note
    assert global_risk(np.array([0.5])).undefined_note == ""
    assert global_risk(np.array([0.5, 0.1]), np.array([3, 1]), 0.2).n_above == 3


@pytest.mark.parametrize("bad", [0, 1, -0.1, 2, "x", float("nan")])
def test_bad_thresholds(bad):
    with pytest.raises(InputError):
        check_max_risk(bad)


def test_bad_method_and_shapes():
    with pytest.raises(InputError, match="method"):
        individual_risk(np.array([1.0]), np.array([2.0]), "nope")
    with pytest.raises(InputError):
        individual_risk(np.array([1.0, 2.0]), np.array([2.0]))


def _positive_series(f: float, p: float) -> float:
    """E[1/F] by its definition, term by term: the sum over F >= f of 1/F times the negative binomial
    probability C(F - 1, f - 1) p^f (1 - p)^(F - f) (terms from the previous one by their ratio, all positive:
    nothing cancels), until the tail bound is below 1e-17 of the sum."""
    total, term, big = 0.0, p ** f, f
    while True:
        total += term / big
        term *= (1 - p) * big / (big - f + 1)
        big += 1
        if term / big / p < 1e-17 * total:  # the rest is at most term / big * (1 + q + q^2 + ...)
            return total


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.floats(0.02, 1.0, exclude_max=True))
def test_the_exact_risk_is_the_expectation_it_estimates(f, p):
    """Benedetti & Franconi's exact risk is E[1/F] for F - f negative binomial: compared with that sum of
    positive terms in exact arithmetic (sdcMicro's alternating series gives -17.6 for f = 12, p = 0.95)."""
    got = individual_risk(np.array([float(f)]), np.array([f / p]), "exact")[0]
    assert got == pytest.approx(_positive_series(f, p), rel=1e-10)
    assert 0 < got <= 1 / f


def test_the_exact_risk_is_stable_where_sdcmicros_series_breaks_down():
    fk = np.array([12.0, 20.0, 40.0, 500.0, 3.0])
    Fk = np.array([12 / 0.95, 20 / 0.8, 40 / 0.95, 100000.0, 30.0])
    got = individual_risk(fk, Fk, "exact")
    np.testing.assert_allclose(got[:3], [0.0794733508, 0.0403880658, 0.0237790326], rtol=1e-8)  # the sums of positive terms
    assert np.isfinite(got).all() and (got > 0).all() and (got <= 1 / fk).all()
    g = global_risk(got)
    assert g.n_undefined == 0


def test_near_a_census_the_small_classes_keep_their_digits():
    """fk = 2 with weights summing to 2 up to rounding: sdcMicro's formula cancels to 1.5; the risk is 1/2."""
    fk = np.array([2.0, 2.0, 1.0])
    Fk = np.array([2.000000002, 2.00000000000002, 1.000000001])
    for method in ("approx", "exact"):
        np.testing.assert_allclose(individual_risk(fk, Fk, method), [0.5, 0.5, 1.0], rtol=1e-6)


def test_a_fractional_class_size_whose_series_breaks_down_is_undefined():
    """alpha < 1 gives fractional fk, for which sdcMicro's series is the definition kept; where it leaves
    [0, 1] the risk is undefined (counted so), never a negative risk that passes every threshold."""
    r = individual_risk(np.array([40.5, 12.5, 3.5]), np.array([40.5 / 0.95, 12.5 / 0.95, 7.0]), "exact")
    assert all(np.isnan(x) or 0 <= x <= 1 for x in r)
    assert np.isnan(r[0]) and global_risk(r).n_undefined >= 1
