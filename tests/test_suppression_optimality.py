"""What a suppression run proved of its cost (:class:`~kanon_core.treat.suppress_result.Optimality`), kept with
the version it made, so that the Suppress page and the report say it: proven optimal, or the proven bound, the
gap and why the optimum is not proven."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.recipe import Recipe
from kanon_core.report import ReportOptions, build_report
from kanon_core.treat.strict.solve import UNPROVEN_WILDCARD
from kanon_core.treat.suppress import SuppressStep
from kanon_core.treat.suppress_result import (
    GREEDY_NOT_PROVEN,
    NO_PROOF_WITHIN_LIMITS,
    Optimality,
    optimality_of,
)


def test_the_sentence_states_the_proof_or_the_bound_gap_and_reason():
    proven = Optimality(12.0, 12.0, True, "the charge bound and the class programme")
    assert proven.gap == 0.0
    assert proven.sentence() == ("Proven optimal for its protection model: the cost, 12, equals a proven lower "
                                 "bound.")
    open_ = Optimality(2774.0, 1114.0, False, "a bound", "a reason")
    assert open_.gap == pytest.approx((2774 - 1114) / 2774)
    assert open_.sentence() == ("Not proven optimal: cost 2,774, proven lower bound 1,114 (a bound), gap 59.8 %; "
                                "a reason.")
    assert Optimality.from_json(open_.to_json()) == open_
    assert Optimality(0.0, 0.0, False).gap == 0.0  # nothing suppressed: no gap to speak of


@pytest.mark.parametrize(("optimal", "method", "stats", "why"), [
    (True, "exact", {"unproven": "ignored once proven"}, ""),
    (False, "exact", {"unproven": "the class programme stopped"}, "the class programme stopped"),
    (False, "greedy", {}, GREEDY_NOT_PROVEN),
    (False, "exact", {}, NO_PROOF_WITHIN_LIMITS),
])
def test_the_reason_comes_from_the_solver_else_from_the_method(optimal, method, stats, why):
    assert optimality_of(5.0, 5.0 if optimal else 3.0, optimal, method, {**stats, "bound": "b"}) == \
        Optimality(5.0, 5.0 if optimal else 3.0, optimal, "b", why)


def _survey(missing_cells: bool) -> Dataset:
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 3, size=(160, 4))
    frame = pd.DataFrame(codes, columns=["a", "b", "c", "d"]).astype("Int64")
    if missing_cells:
        frame = frame.mask(pd.DataFrame(rng.random(codes.shape) < 0.08, columns=frame.columns))
    return Dataset(frame, roles=Roles(qis=("a", "b", "c", "d")))


@pytest.mark.parametrize("missing_cells", [False, True])
def test_a_version_keeps_what_its_run_proved_and_the_report_states_it(missing_cells):
    ds = _survey(missing_cells)
    step = SuppressStep(k=3)
    expected = step.run(ds).optimality()
    assert expected.optimal is (not missing_cells)  # complete file: proven; wildcard missing cells: not
    if missing_cells:
        assert expected.why_not_proven == UNPROVEN_WILDCARD
    history = History.start(ds)
    version = history.apply(step)
    assert version.outcome == expected
    report = build_report(history, options=ReportOptions(k=3, minucs=False, utility=False))
    assert [t.optimality for t in report.suppression_steps] == [expected.sentence()]
    # a replayed recipe keeps it too (the report of `kanon apply`)
    replayed = Recipe.from_history(history).replay_checked(ds).history
    assert replayed.current.outcome == expected


def test_a_version_added_without_it_reports_no_claim():
    ds = _survey(False)
    step = SuppressStep(k=3)
    history = History.start(ds)
    history.add(step, step.release_of(ds, step.run(ds)))  # as a caller that kept no outcome
    report = build_report(history, options=ReportOptions(k=3, minucs=False, utility=False))
    assert [t.optimality for t in report.suppression_steps] == [""]


@pytest.mark.parametrize(("model", "method"), [("strict", "exact"), ("strict", "greedy"), ("record", "exact"),
                                               ("release", "greedy")])
def test_every_model_and_method_says_how_its_bound_was_proven(model, method):
    from kanon_core.treat.suppress import suppress

    res = suppress(_survey(True), 3, model=model, method=method)
    said = res.optimality()
    assert res.n_suppressed > 0 and said.bound  # a bound is always named once something was suppressed
    assert said.lower_bound <= said.cost and said.optimal == res.optimal
    assert (said.why_not_proven == GREEDY_NOT_PROVEN) == (method == "greedy" and not res.optimal)
    assert res.summary()["bound"] == said.bound and res.summary()["why_not_proven"] == said.why_not_proven
