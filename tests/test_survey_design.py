"""Survey design and Taylor-linearized variances: hand-computed cases and a loop-based reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.utility.design import SurveyDesign
from kanon_core.utility.survey import mean, proportions

# Two strata with two PSUs each (see the docstring of test_stratified_by_hand for the arithmetic).
STRATA = ["A", "A", "A", "B", "B"]
PSUS = [1, 1, 2, 1, 2]  # ids restart in each stratum: nested
W = [1.0, 1.0, 2.0, 1.0, 3.0]
Y = [1.0, 0.0, 1.0, 0.0, 0.0]


def test_stratified_by_hand():
    """p = 3/8. PSU totals of the scores w(y - p)/W: A: 2/64, 10/64; B: -3/64, -9/64.
    Each stratum: n/(n-1) * sum of squared deviations from its mean = 2 * (2 * (4/64)^2) and
    2 * (2 * (3/64)^2), so V = 100/4096 and SE = 10/64."""
    d = SurveyDesign.from_arrays(W, STRATA, PSUS)
    m = mean(pd.Series(Y), d)
    assert m.estimate == pytest.approx(3 / 8, abs=1e-15)
    assert m.se == pytest.approx(10 / 64, abs=1e-15)
    assert d.degf() == 2
    assert d.n_strata == 2 and d.n_psus == 4 and d.n_lonely_strata == 0


def test_psu_ids_are_nested_within_strata():
    nested = SurveyDesign.from_arrays(W, STRATA, PSUS)
    unique = SurveyDesign.from_arrays(W, STRATA, [11, 11, 12, 21, 22])
    z = np.array([0.3, -0.1, 0.2, 0.5, -0.9])
    np.testing.assert_allclose(nested.vcov(z), unique.vcov(z), atol=1e-15)
    assert nested.n_psus == 4


def test_simple_random_sample_formula():
    """Equal weights, no strata or PSUs: Var(p) = p(1-p)/(n-1), the textbook SRS-with-replacement result."""
    x = pd.Series(["a"] * 3 + ["b"] * 7)
    d = SurveyDesign.from_arrays(None, n=10)
    t = proportions(x, d).table.set_index("value")
    assert t.loc["a", "estimate"] == pytest.approx(0.3)
    assert t.loc["a", "se"] == pytest.approx(math.sqrt(0.3 * 0.7 / 9), abs=1e-15)
    assert d.degf() == 9


# Lonely PSU: add stratum C with a single PSU holding one record (w=4, y=1). p = 7/12 and the PSU
# totals, in units of 1/144, are A: -2, 10; B: -7, -21; C: 20. Stratum contributions: A 144, B 196,
# C (adjust: uncentred) 400.
LONELY = dict(weights=W + [4.0], strata=STRATA + ["C"], psu=PSUS + [1])
Y_LONELY = pd.Series(Y + [1.0])


@pytest.mark.parametrize("option, units", [
    ("adjust", 144 + 196 + 400),
    ("remove", 144 + 196),
    ("certainty", 144 + 196),
    ("average", (144 + 196) * 3 / 2),
])
def test_lonely_psu_options_by_hand(option, units):
    d = SurveyDesign.from_arrays(LONELY["weights"], LONELY["strata"], LONELY["psu"], lonely_psu=option)
    m = mean(Y_LONELY, d)
    assert m.estimate == pytest.approx(7 / 12)
    assert m.se == pytest.approx(math.sqrt(units) / 144, abs=1e-15)
    assert d.n_lonely_strata == 1
    assert d.degf() == 2


def test_lonely_psu_fail_is_a_clear_error_without_data():
    d = SurveyDesign.from_arrays(LONELY["weights"], LONELY["strata"], LONELY["psu"], lonely_psu="fail")
    with pytest.raises(InputError, match="1 stratum/strata have a single PSU") as exc:
        mean(Y_LONELY, d)
    assert "C" not in str(exc.value).replace("Choose", "")


def test_fail_only_when_the_lonely_stratum_is_in_the_domain():
    d = SurveyDesign.from_arrays(LONELY["weights"], LONELY["strata"], LONELY["psu"], lonely_psu="fail")
    y = Y_LONELY.copy()
    y.iloc[5] = np.nan  # the only record of stratum C leaves the domain
    m = mean(y, d)
    assert m.estimate == pytest.approx(3 / 8)
    assert m.se == pytest.approx(10 / 64)


def test_domain_keeps_the_psu_count_of_the_whole_design():
    """Drop PSU 1 of stratum A from the domain: p = 1/3 over PSUs 2-4; totals (units 1/18) A: 0, 4;
    B: -1, -3, so V = (2 * 8 + 2 * 2) / 324. Stratum A still has two PSUs; its degf counts one."""
    d = SurveyDesign.from_arrays(W, STRATA, PSUS)
    y = pd.Series([np.nan, np.nan, 1.0, 0.0, 0.0])
    m = mean(y, d)
    assert m.estimate == pytest.approx(1 / 3)
    assert m.se == pytest.approx(math.sqrt(20) / 18, abs=1e-15)
    assert m.df == 1
    assert d.degf() == 2


def test_unknown_option_and_missing_design_values():
    with pytest.raises(InputError, match="must be one of"):
        SurveyDesign.from_arrays(W, STRATA, PSUS, lonely_psu="drop")
    with pytest.raises(InputError, match="missing for 1 record"):
        SurveyDesign.from_arrays(W, ["A", None, "A", "B", "B"], PSUS)
    with pytest.raises(InputError, match="zero or negative"):
        SurveyDesign.from_arrays([1.0, 0.0, 2.0, 1.0, 3.0], STRATA, PSUS)
    with pytest.raises(InputError, match="one value per record"):
        SurveyDesign.from_arrays(W, STRATA[:4], PSUS)


def test_from_dataset_uses_roles_and_overrides():
    frame = pd.DataFrame({"w": W, "s": STRATA, "p": PSUS, "y": Y})
    ds = Dataset(frame, roles=Roles(weight="w", strata="s", psu="p"))
    d = SurveyDesign.from_dataset(ds)
    assert (d.weight_name, d.strata_name, d.psu_name) == ("w", "s", "p")
    assert "2 strata" in d.describe() and "4 PSUs" in d.describe()
    d2 = SurveyDesign.from_dataset(ds.with_roles(Roles()), weight="w")
    assert d2.n_strata == 1 and d2.n_psus == 5
    with pytest.raises(InputError, match="not a variable"):
        SurveyDesign.from_dataset(ds, strata="nope")


# -- finite population correction ------------------------------------------------------------------------------
def test_fpc_simple_random_sample_by_hand():
    """y = 1, 2, 3, 4 from a population of 10: Var(mean) = (1 - 4/10) s^2 / 4 = 0.6 * (5/3) / 4 = 1/4."""
    y = pd.Series([1.0, 2.0, 3.0, 4.0])
    for fpc in ([10] * 4, [0.4] * 4):  # population size or sampling fraction: the same design
        m = mean(y, SurveyDesign.from_arrays(None, n=4, fpc=fpc))
        assert m.se == pytest.approx(0.5, abs=1e-15)
    assert mean(y, SurveyDesign.from_arrays(None, n=4)).se == pytest.approx(math.sqrt(5 / 12), abs=1e-15)
    # a fraction of 0 means an infinite population: no correction
    assert mean(y, SurveyDesign.from_arrays(None, n=4, fpc=[0.0] * 4)).se == pytest.approx(math.sqrt(5 / 12))


def test_fpc_per_stratum_by_hand():
    """The stratified example (V = 100/4096: A 64/4096, B 36/4096) with N_A = 4 PSUs and N_B = 2 (census):
    A's term is halved, B's vanishes, so V = 32/4096."""
    d = SurveyDesign.from_arrays(W, STRATA, PSUS, fpc=[4, 4, 4, 2, 2], fpc_name="N")
    assert mean(pd.Series(Y), d).se == pytest.approx(math.sqrt(32) / 64, abs=1e-15)
    assert "finite population correction (N)" in d.describe()
    # the correction survives a change of weights (the treated file's weights)
    assert d.with_weights(np.array(W)).fpc_factor.tolist() == d.fpc_factor.tolist() == [0.5, 0.0]


def test_fpc_census_lonely_stratum_is_not_a_failure():
    """Stratum C (one PSU) with population size 1 is a census: no variance, and 'fail' does not fail."""
    fpc = [4, 4, 4, 2, 2, 1]
    d = SurveyDesign.from_arrays(LONELY["weights"], LONELY["strata"], LONELY["psu"], lonely_psu="fail", fpc=fpc)
    plain = SurveyDesign.from_arrays(LONELY["weights"], LONELY["strata"], LONELY["psu"], lonely_psu="remove")
    halved_a = SurveyDesign.from_arrays(LONELY["weights"], LONELY["strata"], LONELY["psu"], lonely_psu="remove",
                                        fpc=[4, 4, 4, 10**12, 10**12, 2])
    assert mean(Y_LONELY, d).se < mean(Y_LONELY, plain).se
    # A (144 units) halved, B gone, C none: sqrt(72) / 144
    assert mean(Y_LONELY, d).se == pytest.approx(math.sqrt(72) / 144, abs=1e-15)
    assert mean(Y_LONELY, halved_a).se == pytest.approx(math.sqrt(72 + 196) / 144, abs=1e-9)


def test_fpc_lonely_adjust_is_scaled():
    """A single-PSU stratum under 'adjust' contributes f times its squared total: C with N = 5 gives 0.8 * 400."""
    d = SurveyDesign.from_arrays(LONELY["weights"], LONELY["strata"], LONELY["psu"], lonely_psu="adjust",
                                 fpc=[0.0] * 5 + [0.2])  # fractions; 0 = no correction for A and B
    assert mean(Y_LONELY, d).se == pytest.approx(math.sqrt(144 + 196 + 320) / 144, abs=1e-15)


@pytest.mark.parametrize("fpc, needle", [
    ([10, 10, 0.5, 10, 10], "not a mix"),
    ([1, 1, 1, 1, 1], "not a mix"),
    ([4, 5, 4, 2, 2], "varies within 1 stratum"),
    ([4, 4, 4, 1.5, 1.5], "more than 100 % sampling in 1 stratum"),
    ([0.5, 0.5, 0.5, 1.5, 1.5], "not a mix"),
    ([4, None, 4, 2, 2], "missing for 1 record"),
    ([4, "n/a", 4, 2, 2], "1 value"),
    ([4, 4, 4, -2, -2], "2 negative"),
])
def test_fpc_errors_follow_r_and_name_no_values(fpc, needle):
    with pytest.raises(InputError, match=needle) as exc:
        SurveyDesign.from_arrays(W, STRATA, PSUS, fpc=fpc, fpc_name="N")
    assert "n/a" not in str(exc.value) and "'N'" in str(exc.value)


def test_fpc_role_is_read_from_the_dataset_and_old_roles_load():
    frame = pd.DataFrame({"w": W, "s": STRATA, "p": PSUS, "y": Y, "N": [4, 4, 4, 2, 2]})
    ds = Dataset(frame, roles=Roles(weight="w", strata="s", psu="p", fpc="N"))
    assert SurveyDesign.from_dataset(ds).fpc_factor.tolist() == [0.5, 0.0]
    assert SurveyDesign.from_dataset(ds.with_roles(Roles(weight="w", strata="s")), fpc="N").fpc_name == "N"
    with pytest.raises(InputError, match="varies within 1 stratum"):  # without strata: one stratum
        SurveyDesign.from_dataset(ds.with_roles(Roles(weight="w")), fpc="N")
    assert Roles.from_dict(ds.roles.to_dict()) == ds.roles
    assert "fpc" not in Roles(weight="w").to_dict()  # files without an fpc are unchanged
    assert Roles.from_dict({"qis": ["a"], "weight": "w"}).fpc is None
    assert ds.roles.role_of("N") == "finite population correction"
    with pytest.raises(InputError, match="not a variable"):
        SurveyDesign.from_dataset(ds, fpc="nope")


# -- loop-based reference ------------------------------------------------------------------------------------
def naive_vcov(z, strata, psu, domain, lonely, popsize=None):
    """Textbook loops: for each stratum, PSU totals (all PSUs of the design, zero outside the domain).

    ``popsize`` maps a stratum to its population number of PSUs: its term is multiplied by (N - n) / N,
    and a stratum with (N - n) / N below 1e-7 is fully sampled and contributes nothing (R's ``onestrat``).
    """
    z = np.where(domain[:, None], z, 0.0)
    k = z.shape[1]
    total = np.zeros((k, k))
    present, ok = set(), set()
    for h in sorted(set(strata)):
        rows = [i for i in range(len(strata)) if strata[i] == h]
        if any(domain[i] for i in rows):
            present.add(h)
        ids = sorted({psu[i] for i in rows})
        tot = np.array([sum(z[i] for i in rows if psu[i] == j) for j in ids]).reshape(len(ids), k)
        n = len(ids)
        f = 1.0 if popsize is None else (popsize[h] - n) / popsize[h]
        if f < 1e-7:
            ok.add(h)
        elif n > 1:
            dev = tot - tot.mean(axis=0)
            total += f * n / (n - 1) * dev.T @ dev
            ok.add(h)
        elif lonely == "adjust":
            total += f * tot.T @ tot
    if lonely == "average" and present:
        if not present & ok:
            return np.full((k, k), np.nan)
        total *= len(present) / len(present & ok)
    return total


@st.composite
def designs(draw):
    n = draw(st.integers(4, 30))
    n_strata = draw(st.integers(1, 4))
    strata = [draw(st.integers(0, n_strata - 1)) for _ in range(n)]
    psu = [draw(st.integers(0, 3)) for _ in range(n)]
    z = np.array(draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=2 * n, max_size=2 * n))).reshape(n, 2)
    domain = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    lonely = draw(st.sampled_from(["adjust", "remove", "certainty", "average"]))
    return strata, psu, z, domain, lonely


@given(designs(), st.lists(st.integers(0, 4), min_size=4, max_size=4), st.booleans())
def test_vectorized_variance_with_fpc_equals_loops(case, extra, as_fraction):
    """Population sizes N_h = n_h + extra (extra 0: a census stratum), given as sizes or as fractions."""
    strata, psu, z, domain, lonely = case
    n_h = {h: len({p for s, p in zip(strata, psu, strict=True) if s == h}) for h in set(strata)}
    pop = {h: n_h[h] + extra[h] for h in n_h}
    if all(v == 1 for v in pop.values()):
        pop = {h: 2 for h in pop}  # all exactly 1 is refused, as by R
    values = [n_h[h] / pop[h] if as_fraction else pop[h] for h in strata]
    if as_fraction and all(v == 1 for v in values):
        values = [0.5] * len(values)
        pop = {h: n_h[h] / 0.5 for h in pop}
    d = SurveyDesign.from_arrays(None, strata, psu, lonely_psu=lonely, fpc=values)
    keyed_psu = [(s, p) for s, p in zip(strata, psu, strict=True)]
    expected = naive_vcov(z, strata, keyed_psu, domain, lonely, pop)
    np.testing.assert_allclose(d.vcov(z, domain), expected, atol=1e-10, rtol=1e-10)


@given(designs())
def test_vectorized_variance_equals_loops(case):
    strata, psu, z, domain, lonely = case
    d = SurveyDesign.from_arrays(None, strata, psu, lonely_psu=lonely)
    keyed_psu = [(s, p) for s, p in zip(strata, psu, strict=True)]
    expected = naive_vcov(z, strata, keyed_psu, domain, lonely)
    np.testing.assert_allclose(d.vcov(z, domain), expected, atol=1e-10, rtol=1e-10)


@given(designs(), st.randoms(use_true_random=False))
def test_variance_does_not_depend_on_record_order(case, rnd):
    strata, psu, z, domain, lonely = case
    order = list(range(len(strata)))
    rnd.shuffle(order)
    d1 = SurveyDesign.from_arrays(None, strata, psu, lonely_psu=lonely)
    d2 = SurveyDesign.from_arrays(None, [strata[i] for i in order], [psu[i] for i in order], lonely_psu=lonely)
    np.testing.assert_allclose(d1.vcov(z, domain), d2.vcov(z[order], domain[order]), atol=1e-10)


def test_set_roles_step_carries_the_fpc_and_old_recipes_load():
    from kanon_core.steps import SetRoles, step_from_dict

    roles = Roles(qis=("y",), weight="w", strata="s", psu="p", fpc="N")
    step = SetRoles.from_roles(roles)
    assert step.roles() == roles and step_from_dict(step.to_dict()) == step
    frame = pd.DataFrame({"w": W, "s": STRATA, "p": PSUS, "y": Y, "N": [4, 4, 4, 2, 2]})
    assert step.apply(Dataset(frame)).roles.fpc == "N"
    old = SetRoles(qis=("y",), weight="w").to_dict()
    assert "fpc" not in old  # a recipe without an fpc is written as before
    assert step_from_dict(old).fpc is None
