"""Results that are pure functions of dataset objects are computed once for those very objects and shared by
the sessions holding them (kanon_app.shared_results): never found for another object, even one with the same
content or at the same address, and each page still reads what it read before."""

from __future__ import annotations

import weakref

import numpy as np
import pandas as pd
import pytest

from kanon_app import shared_results
from kanon_app.cache import shared
from kanon_core.dataset import Dataset, Roles


def _dataset(seed: int = 3) -> Dataset:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.integers(0, 4, 60), "b": rng.integers(0, 3, 60), "t": ["x", "NA"] * 30})
    return Dataset(frame=frame, roles=Roles(qis=("a", "b")), name="d")


def test_computed_once_for_the_same_objects():
    ds, calls = _dataset(), []
    for _ in range(3):
        value = shared_results.on_data((ds,), "probe", 1, lambda: calls.append(1) or len(calls))
    assert value == 1 and len(calls) == 1
    assert shared_results.on_data((ds,), "probe", 2, lambda: "other params") == "other params"


def test_another_object_with_the_same_content_computes_its_own():
    first, second = _dataset(), _dataset()
    assert first.frame.equals(second.frame)
    shared_results.on_data((first,), "probe-content", None, lambda: "first")
    assert shared_results.on_data((second,), "probe-content", None, lambda: "second") == "second"


def test_an_entry_left_by_an_object_at_the_same_address_is_not_taken():
    """An object freed and another made at its address: the key (the ids) matches, the weak reference does
    not, so the value is computed again."""
    ds, gone = _dataset(), _dataset(4)
    key = ("on-data", (id(ds),), "probe-address", None)
    shared().put(key, ((weakref.ref(gone),), "stale"))
    assert shared_results.on_data((ds,), "probe-address", None, lambda: "fresh") == "fresh"


def test_pairs_of_datasets_are_keyed_in_order():
    a, b = _dataset(5), _dataset(6)
    shared_results.on_data((a, b), "probe-pair", None, lambda: "ab")
    assert shared_results.on_data((b, a), "probe-pair", None, lambda: "ba") == "ba"
    assert shared_results.on_data((a, b), "probe-pair", None, lambda: "again") == "ab"


@pytest.mark.parametrize("name", ["role_guidance", "variable_summary", "missing_like_counts"])
def test_the_shared_results_are_the_core_functions(name):
    from kanon_core.describe import variable_summary
    from kanon_core.guidance import suggest_roles
    from kanon_core.io import missing_like_counts

    ds = _dataset(7)
    core = {"role_guidance": suggest_roles, "variable_summary": variable_summary,
            "missing_like_counts": missing_like_counts}[name]
    got, want = getattr(shared_results, name)(ds), core(ds)
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want)
    else:
        assert got == want


def test_version_risk_and_labelable_are_the_core_functions():
    from kanon_app.labels_ui import MAX_CODES
    from kanon_core.risk.timeline import version_risk

    ds = _dataset(8)
    assert shared_results.version_risk(ds, ds, 3) == version_risk(ds, ds, 3)
    assert shared_results.version_risk(ds, ds, 3, 0.5) == version_risk(ds, ds, 3, 0.5)
    assert shared_results.labelable(ds, MAX_CODES) == ["a", "b", "t"]
    assert shared_results.labelable(ds, 2) == ["t"]


def test_risk_summary_is_the_core_function():
    from kanon_core.risk.summary import risk_summary

    ds = _dataset(9)
    got = shared_results.risk_summary(ds, ("a", "b"), 3)
    want = risk_summary(ds.qi_matrix(["a", "b"]), 3, ds.missing, ds.weights())
    assert (got.n_violating, got.k_achieved, got.n_classes, got.violations) == (
        want.n_violating, want.k_achieved, want.n_classes, want.violations)
    assert np.array_equal(got.sizes.fk, want.sizes.fk)
    assert shared_results.risk_summary(ds, ("a", "b"), 3) is got
    assert shared_results.risk_summary(ds, ("a",), 3) is not got


def test_the_risk_line_and_the_risk_summary_count_class_sizes_once(monkeypatch):
    """The timeline's risk line and the Risk page's summary of the same dataset and QIs read one count of
    its class sizes (with the wildcard split and the weights), whatever k and alpha."""
    import kanon_core.risk.classes as classes

    counted = []
    real = classes.class_sizes_of_table
    monkeypatch.setattr(classes, "class_sizes_of_table", lambda *a, **kw: (counted.append(1), real(*a, **kw))[1])
    ds = _dataset(10)
    shared_results.version_risk(ds, ds, 3)
    summary = shared_results.risk_summary(ds, ds.roles.qis, 3)
    shared_results.version_risk(ds, ds, 5, 0.5)
    shared_results.risk_summary(ds, ds.roles.qis, 4, 0.5)
    assert len(counted) == 1
    assert summary.sizes.fk_wild is not None
