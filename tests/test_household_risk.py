"""Household risk 1 − ∏(1 − r_i): hand cases, Boole's formula (sdcMicro's C++ route) and the totals."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.errors import InputError
from kanon_core.risk.household import household_risk, household_summary


def _boole(rs):
    """Inclusion–exclusion over the members, as sdcMicro's measure_hierachical expands it."""
    total = 0.0
    for size in range(1, len(rs) + 1):
        for combo in combinations(rs, size):
            total += (-1) ** (size + 1) * float(np.prod(combo))
    return total


def test_by_hand():
    r = np.array([0.1, 0.2, 0.5, 0.3, 0.05])
    hh = np.array([7, 7, 3, 7, -1])
    got = household_risk(r, hh)
    h7 = 1 - 0.9 * 0.8 * 0.7
    np.testing.assert_allclose(got, [h7, h7, 0.5, h7, 0.05])
    s = household_summary(r, hh, "hid", 0.4)
    assert s.expected_reidentifications == pytest.approx(3 * h7 + 0.55)  # summed over records, as sdcMicro
    assert s.global_risk == pytest.approx((3 * h7 + 0.55) / 5)
    assert (s.n_households, s.largest_household, s.n_above) == (3, 3, 4)
    assert "hid" in s.warning and "must not be released unchanged" in s.warning
    assert s.to_json()["release_unchanged"] is False


def test_nan_member_makes_household_undefined():
    got = household_risk(np.array([0.1, np.nan, 0.2]), np.array([0, 0, 1]))
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == pytest.approx(0.2)


def test_undefined_households_are_counted_not_read_as_safe():
    """A household with a member of undefined risk is neither above the threshold nor safe: it is counted."""
    s = household_summary(np.array([0.9, np.nan, 0.2]), np.array([0, 0, 1]), "hid", 0.5)
    assert (s.n_above, s.n_undefined) == (0, 2)
    assert s.to_json()["records_risk_undefined"] == 2
    assert s.expected_reidentifications == pytest.approx(0.2)


def test_shape_error():
    with pytest.raises(InputError):
        household_risk(np.array([0.1]), np.array([0, 1]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 4), st.floats(0, 1)), min_size=1, max_size=10))
def test_equals_boole_formula(rows):
    hh = np.array([h for h, _ in rows])
    r = np.array([x for _, x in rows])
    got = household_risk(r, hh)
    for i in range(len(rows)):
        members = [r[j] for j in range(len(rows)) if (hh[j] == hh[i] and hh[i] >= 0) or j == i]
        assert got[i] == pytest.approx(_boole(members), abs=1e-9)
