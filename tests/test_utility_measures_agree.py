"""The Compare page / report (:mod:`kanon_core.utility.info_loss`) and the Recode page's lattice search
(:mod:`kanon_core.treat.metrics`) give one discernibility and one records-per-class figure for one release."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.lattice import build_problem, evaluate_node
from kanon_core.treat.recode import GeneralizeStep
from kanon_core.utility.info_loss import information_loss


def _hierarchy(rng: random.Random, values: list[str], height: int, name: str) -> Hierarchy:
    """Nested levels: each level merges the groups of the one below at random, the top is '*'."""
    groups = {v: v for v in values}
    rows = {v: [v] for v in values}
    for lv in range(1, height):
        labels = sorted(set(groups.values()))
        merged = {g: f"L{lv}g{rng.randrange(max(1, len(labels) // 2))}" for g in labels}
        groups = {v: merged[groups[v]] for v in values}
        for v in values:
            rows[v].append(groups[v])
    for v in values:
        rows[v].append("*")
    return Hierarchy(tuple(tuple(rows[v]) for v in values), name)


def _release(seed: int, semantics: str):
    rng = random.Random(seed)
    nq, n = rng.choice([2, 3]), rng.randint(8, 20)
    doms = [rng.randint(2, 5) for _ in range(nq)]
    qis = [f"q{j}" for j in range(nq)]
    data = {q: [] for q in qis}
    for _ in range(n):
        row = [None if rng.random() < 0.2 else f"v{rng.randrange(doms[j])}" for j in range(nq)]
        if all(x is None for x in row):  # an all-missing record cannot be told suppressed or not (see NOTES)
            row[0] = "v0"
        for q, x in zip(qis, row, strict=True):
            data[q].append(x)
    ds = Dataset(pd.DataFrame(data), roles=Roles(qis=tuple(qis)), missing=semantics)
    hs = {q: _hierarchy(rng, [f"v{i}" for i in range(doms[j])], rng.randint(1, 3), q) for j, q in enumerate(qis)}
    levels = {q: rng.randrange(hs[q].max_level) for q in qis}
    k = rng.choice([0, 2, 3])
    rel = GeneralizeStep.build(levels, hs, suppress_k=k, qis=qis).apply(ds)
    return ds, rel, qis, hs, levels, k


@pytest.mark.parametrize("semantics", ["category", "wildcard"])
def test_discernibility_and_records_per_class_equal_the_lattice_on_random_releases(semantics):
    suppressing = 0
    for seed in range(40):
        ds, rel, qis, hs, levels, k = _release(seed, semantics)
        loss = information_loss(ds, rel, qis, hs, levels={q: lv for q, lv in levels.items() if lv > 0})
        problem = build_problem(ds, hs, qis)
        node = [levels[q] for q in qis]
        dm = evaluate_node(problem, node, max(k, 1), 1.0, "dm")
        aecs = evaluate_node(problem, node, max(k, 1), 1.0, "aecs")
        suppressing += dm.n_small > 0
        assert loss.discernibility_treated == dm.loss, (seed, semantics)
        assert loss.avg_class_treated == pytest.approx(aecs.loss), (seed, semantics)
        same = evaluate_node(build_problem(ds, hs, qis), [0] * len(qis), 1, 1.0, "dm")
        assert loss.discernibility_original == same.loss
    assert suppressing >= 5  # the cases that disagreed before are there


@pytest.mark.parametrize("semantics", ["category", "wildcard"])
def test_discernibility_by_hand_charges_each_suppressed_record_n(semantics):
    """A = a1,a1,a2,a2,a3,a4, k = 2: a3 and a4 suppressed. B&A: 2+2+2+2 for the kept, 6+6 for the suppressed
    (before: 12 under category semantics, 28 under wildcard)."""
    h = {"A": Hierarchy((("a1", "*"), ("a2", "*"), ("a3", "*"), ("a4", "*")), "A")}
    ds = Dataset(pd.DataFrame({"A": ["a1", "a1", "a2", "a2", "a3", "a4"]}), roles=Roles(qis=("A",)), missing=semantics)
    rel = GeneralizeStep.build({"A": 0}, h, suppress_k=2, qis=("A",)).apply(ds)
    loss = information_loss(ds, rel, ["A"], h)
    assert loss.discernibility_treated == 20 == evaluate_node(build_problem(ds, h), [0], 2, 1.0, "dm").loss
    assert loss.discernibility_original == 2 * 2 * 2 + 1 + 1
    # records per class: 2 kept classes + the suppressed records as one: 6 / 3
    assert loss.avg_class_treated == pytest.approx(2.0)
    assert "squared" in loss.summary()["measure"].iloc[2]


def test_wildcard_kept_record_is_charged_the_records_it_matched_before_suppression():
    """(a1, missing) matches (a1, b1), (a1, b2) x2; (a1, b1) has fk 2 < 3 and is suppressed. The kept
    (a1, missing) is charged its 4 matches at the node, not the release's (all of them, since the blanked
    record matches everything) nor only the kept ones."""
    frame = pd.DataFrame({"A": ["a1", "a1", "a1", "a1", "a2", "a2", "a2"],
                          "B": [None, "b1", "b2", "b2", "b3", "b3", "b3"]})
    h = {"A": Hierarchy((("a1", "*"), ("a2", "*")), "A"),
         "B": Hierarchy((("b1", "*"), ("b2", "*"), ("b3", "*")), "B")}
    ds = Dataset(frame, roles=Roles(qis=("A", "B")), missing="wildcard")
    rel = GeneralizeStep.build({"A": 0, "B": 0}, h, suppress_k=3, qis=("A", "B")).apply(ds)
    lat = evaluate_node(build_problem(ds, h), [0, 0], 3, 1.0, "dm")
    assert lat.n_small == 1
    # kept: (a1, .) 4; (a1, b2) x2: 3 each; (a2, b3) x3: 3 each; suppressed (a1, b1): 7
    assert information_loss(ds, rel, ["A", "B"], h).discernibility_treated == lat.loss == 4 + 6 + 9 + 7
