"""Information-loss metrics, each checked against a hand computation on a tiny table.

The table (k = 2), QI A with hierarchy a1, a2 -> g1; a3 -> g2; -> *, QI B with b1, b2 -> *:

    record  1   2   3   4   5   6
    A       a1  a1  a2  a2  a3  a3
    B       b1  b1  b1  b2  b2  b2

At node (A=1, B=0) the classes are g1·b1 = {1, 2, 3}, g1·b2 = {4}, g2·b2 = {5, 6}: record 4 is suppressed.
At node (0, 0) the classes are a1·b1 = {1, 2}, a2·b1 = {3}, a2·b2 = {4}, a3·b2 = {5, 6}: records 3 and 4 are.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.lattice import build_problem, evaluate_node
from kanon_core.treat.metrics import check_metric, precision_from_loss

HA = Hierarchy((("a1", "g1", "*"), ("a2", "g1", "*"), ("a3", "g2", "*")), "A")
HB = Hierarchy((("b1", "*"), ("b2", "*")), "B")
A = ["a1", "a1", "a2", "a2", "a3", "a3"]
B = ["b1", "b1", "b1", "b2", "b2", "b2"]
log2_3 = math.log2(3)


def problem(a=A, b=B, missing="wildcard"):
    ds = Dataset(pd.DataFrame({"A": a, "B": b}), roles=Roles(qis=("A", "B")), missing=missing)
    return build_problem(ds, {"A": HA, "B": HB})


def node(levels, metric, p=None, k=2):
    return evaluate_node(p or problem(), levels, k, max_suppression=1.0, metric=metric)


# -- Prec (Sweeney 2002): mean over cells of level / height, a suppressed record counting as fully generalized ----
def test_prec_with_a_suppressed_record():
    s = node((1, 0), "prec")
    assert s.n_small == 1
    # 5 kept records x (1/2 + 0/1) + 1 suppressed record x (2/2 + 1/1), over 6 records x 2 QIs
    assert s.loss == pytest.approx((5 * 0.5 + 2) / 12)
    assert s.lower_bound == pytest.approx((6 * 0.5) / 12)
    assert precision_from_loss("prec", s.loss) == pytest.approx(1 - 4.5 / 12)


def test_prec_at_the_bottom_and_top():
    s = node((0, 0), "prec")
    assert s.n_small == 2 and s.loss == pytest.approx(2 * 2 / 12) and s.lower_bound == 0
    top = node((2, 1), "prec")
    assert top.n_small == 0 and top.loss == 1.0 and top.lower_bound == 1.0


# -- discernibility: each kept record pays its class size, each suppressed record the data size -----------------
def test_discernibility():
    s = node((1, 0), "dm")
    assert s.loss == 3 + 3 + 3 + 2 + 2 + 1 * 6
    assert s.lower_bound == 3 + 3 + 3 + 1 + 2 + 2
    s = node((0, 0), "dm")
    assert s.loss == 2 + 2 + 2 + 2 + 2 * 6 and s.lower_bound == 2 + 2 + 1 + 1 + 2 + 2
    assert node((2, 1), "dm").loss == 6 * 6
    assert precision_from_loss("dm", 1.0) is None


# -- AECS: records / classes, the suppressed records forming one class --------------------------------------------
def test_average_equivalence_class_size():
    s = node((1, 0), "aecs")
    assert s.loss == pytest.approx(6 / (2 + 1)) and s.lower_bound == pytest.approx(6 / 3)
    s = node((0, 0), "aecs")
    assert s.loss == pytest.approx(6 / (2 + 1)) and s.lower_bound == pytest.approx(6 / 4)
    assert node((1, 1), "aecs").loss == pytest.approx(6 / 2)
    assert node((2, 1), "aecs").loss == 6


# -- non-uniform entropy: sum over cells of log2(count of generalized value / count of original value) --------------
def test_non_uniform_entropy():
    # A: a1, a2, a3 occur 2 times each; g1 4 times, g2 2 times, * 6 times. B: b1, b2 3 times each, * 6 times.
    # Level-1 costs of A: a1, a2 -> log2(4/2) = 1, a3 -> log2(2/2) = 0; root costs: A log2(6/2), B log2(6/3) = 1.
    s = node((1, 0), "entropy")
    assert s.lower_bound == pytest.approx(4 * 1 + 2 * 0)
    # record 4 (a2, b2) is suppressed: its A cell goes from 1 bit to log2 3, its B cell from 0 to 1 bit
    assert s.loss == pytest.approx(4 - 1 + log2_3 + 1)
    s = node((0, 0), "entropy")
    assert s.lower_bound == 0 and s.loss == pytest.approx(2 * (log2_3 + 1))
    assert node((2, 1), "entropy").loss == pytest.approx(6 * log2_3 + 6 * 1)


# -- missing values under wildcard semantics ---------------------------------------------------------------------
def test_metrics_with_a_wildcard_record():
    """A seventh record (A missing, b1) matches records 1-3 under wildcard semantics; at node (1, 0) the classes
    (numbers of matching records) are 4, 4, 4, 1, 2, 2, 4 and record 4 is suppressed."""
    p = problem(A + [None], B + ["b1"])
    dm = node((1, 0), "dm", p)
    assert dm.n_small == 1
    assert dm.lower_bound == 4 + 4 + 4 + 1 + 2 + 2 + 4
    assert dm.loss == 4 + 4 + 4 + 2 + 2 + 4 + 1 * 7
    # Prec counts observed input cells only (6 of A, 7 of B): the missing A cell carries nothing to lose.
    # A: 5 kept cells at 1/2 and record 4's suppressed cell at 1; B: level 0, record 4's cell at 1
    s = node((1, 0), "prec", p)
    assert s.loss == pytest.approx((5 * 0.5 + 1 + 1) / 13)
    assert s.lower_bound == pytest.approx(6 * 0.5 / 13)
    # kept patterns: g1·b1, g2·b2 and (missing)·b1, plus the suppressed class
    assert node((1, 0), "aecs", p).loss == pytest.approx(7 / 4)
    # B now: b1 4 times, b2 3 times, 7 in all; a missing cell costs nothing
    ent = node((1, 0), "entropy", p)
    assert ent.lower_bound == pytest.approx(4)
    assert ent.loss == pytest.approx(4 - 1 + log2_3 + math.log2(7 / 3))


def test_category_semantics_keeps_missing_as_its_own_value():
    p = problem(A + [None], B + ["b1"], missing="category")
    s = node((1, 0), "dm", p)
    # (missing)·b1 is a class of one now: records 4 and 7 are suppressed
    assert s.n_small == 2
    assert s.loss == 3 + 3 + 3 + 2 + 2 + 2 * 7


def test_suppression_limit_decides_anonymity():
    p = problem()
    # 1 record of 6 is 16.7 %: within the limit at 20 %, not at 10 % ...
    assert evaluate_node(p, (1, 0), 2, 0.2, "prec").n_small == 1
    assert not evaluate_node(p, (1, 0), 2, 0.1, "prec").anonymous
    # ... yet that one blanked record would be its person's only candidate (k = 2): not a release either way
    assert not evaluate_node(p, (1, 0), 2, 0.2, "prec").anonymous
    assert evaluate_node(p, (1, 1), 2, 0.0, "prec").anonymous


def test_unknown_metric_and_levels_are_input_errors():
    with pytest.raises(InputError, match="Metric"):
        check_metric("bits")
    with pytest.raises(InputError, match="level 3"):
        evaluate_node(problem(), (3, 0), 2)
    with pytest.raises(InputError, match="one level per"):
        evaluate_node(problem(), (1,), 2)
    with pytest.raises(InputError, match="k must"):
        evaluate_node(problem(), (1, 0), 0)


def test_lower_bounds_never_exceed_losses_and_grow_upwards():
    rng = np.random.default_rng(3)
    p = problem(list(rng.choice(["a1", "a2", "a3"], 40)), list(rng.choice(["b1", "b2"], 40)))
    for metric in ("prec", "dm", "aecs", "entropy"):
        for k in (2, 5, 9):
            grid = {(a, b): node((a, b), metric, p, k) for a in range(3) for b in range(2)}
            for (a, b), s in grid.items():
                assert s.lower_bound <= s.loss + 1e-9
                for up in ((a + 1, b), (a, b + 1)):
                    if up in grid:
                        assert grid[up].lower_bound >= s.lower_bound - 1e-9


def test_recode_and_compare_give_the_same_prec_on_a_file_with_missing_cells():
    """The lattice's Prec (Recode page) and information_loss's (Compare page, report) are one number."""
    from kanon_core.history import History
    from kanon_core.treat.recode import GeneralizeStep
    from kanon_core.utility.info_loss import information_loss

    a = A + [None, "a1", None]
    b = B + ["b1", None, "b2"]
    for missing in ("wildcard", "category"):
        ds = Dataset(pd.DataFrame({"A": a, "B": b}), roles=Roles(qis=("A", "B")), missing=missing)
        p = build_problem(ds, {"A": HA, "B": HB})
        for levels in ((0, 0), (1, 0), (1, 1), (2, 0)):
            s = evaluate_node(p, levels, 2, max_suppression=1.0, metric="prec")
            h = History.start(ds)
            h.apply(GeneralizeStep.build(dict(zip("AB", levels, strict=True)), {"A": HA, "B": HB}, suppress_k=2))
            loss = information_loss(ds, h.current.dataset, ["A", "B"], {"A": HA, "B": HB})
            assert 1 - s.loss == pytest.approx(loss.prec), (missing, levels)
            assert loss.table["cells"].tolist() == [7, 8]  # 9 records; A has 2 missing cells, B 1


def test_losses_with_the_suppression_of_another_criterion():
    """distinct 2-diversity of S at node (0, 0): S = x y | x | x | z z, so only class a1·b1 = {1, 2} keeps
    its records; 4 records suppressed. Prec = 8 suppressed cells / 12 = 2/3; DM = 2 * 2 + 4 * 6 = 28."""
    frame = pd.DataFrame({"A": A, "B": B, "S": ["x", "y", "x", "x", "z", "z"]})
    ds = Dataset(frame, roles=Roles(qis=("A", "B")), missing="category")
    p = build_problem(ds, {"A": HA, "B": HB}, sensitive=["S"])
    prec = evaluate_node(p, (0, 0), None, 1.0, "prec", criteria=["l=2:S"])
    assert prec.n_small == 4 and prec.loss == pytest.approx(8 / 12)
    assert evaluate_node(p, (0, 0), None, 1.0, "dm", criteria=["l=2:S"]).loss == 28
    # with k = 2 added, record 3 and 4 fail both; nothing changes
    assert evaluate_node(p, (0, 0), 2, 1.0, "prec", criteria=["l=2:S"]).n_small == 4
    # at (1, 0): g1·b1 = {1, 2, 3} has x, y; g1·b2 = {4} x; g2·b2 = {5, 6} z z -> 3 records suppressed
    assert evaluate_node(p, (1, 0), None, 1.0, "prec", criteria=["l=2:S"]).n_small == 3
