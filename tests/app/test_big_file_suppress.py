"""The Suppress page on a large file: the strict local suppression solved on the class table as a background
job (progress, Cancel), its figures as the core computes them, and the release written by the engine as
``kanon suppress --engine duckdb -o`` writes it, checked from the intruder's side.

A small generated Parquet file opened on the Data page takes the same out-of-core path as a census file.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

from kanon_app import big_file, big_suppress
from kanon_core.engines import get_engine
from kanon_core.engines.local_suppression import solve_at_scale
from kanon_core.io import load_dataset
from kanon_core.risk.intruder import SUPPRESSED, findable_below_k
from kanon_core.risk.restore import NOT_COUNTED_AT_SCALE
from kanon_core.treat.suppress_result import optimality_of
from tests.app.helpers import CENSUS_QIS, blocking_work, frame_with, metric, write_census_parquet
from tests.app.test_big_file_recode import _opened, click_and_cancel

QIS = CENSUS_QIS


@pytest.fixture
def parquet(tmp_path):
    return write_census_parquet(tmp_path / "census.parquet")


def _suppress_page(path, k=3, missing="wildcard"):
    at = _opened(path, "suppress.py")
    assert not at.exception
    at.number_input(key="w_big_sup_k").set_value(k).run()
    at.radio(key="w_big_sup_missing").set_value(missing).run()
    return at


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_the_figures_shown_are_the_core_solution_on_the_class_table(parquet, missing):
    at = _suppress_page(parquet, 3, missing)
    assert any("large file" in i.value for i in at.info)  # the page says what it works on
    assert not at.metric  # nothing solved before the click
    at.button(key="btn_big_suppress").click().run()
    assert not at.exception and not at.error
    ref = solve_at_scale(get_engine("duckdb"), str(parquet), QIS, 3, missing)
    assert ref.result.n_suppressed > 0  # the test data need suppression at k = 3
    assert metric(at, "Cells suppressed") == f"{ref.result.n_suppressed:,}"
    assert metric(at, "Records touched") == f"{ref.result.records_touched:,}"
    assert metric(at, "Records below k = 3 (recounted)") == "0"
    assert metric(at, "Findable among fewer than 3") == "0"
    # the attack by other released variables is counted on records only: the page says it was not counted
    assert [w.value for w in at.warning] == [NOT_COUNTED_AT_SCALE]
    said = optimality_of(ref.result.cost, ref.result.lower_bound, ref.result.optimal, "exact", ref.result.stats)
    assert sum(c.value.startswith(said.sentence()) for c in at.caption) == 1
    shown = frame_with(at, "cells suppressed")
    assert list(shown["variable"]) == QIS
    assert [int(v) for v in shown["cells suppressed"]] == list(ref.per_variable().values())


def test_the_release_is_the_command_lines_and_protects_everyone(parquet, tmp_path):
    from kanon_core.cli import main

    at = _suppress_page(parquet, 3, "wildcard")
    at.button(key="btn_big_suppress").click().run()
    out = tmp_path / "release.parquet"
    at.text_input(key="w_big_sup_release_path").set_value(str(out)).run()
    at.button(key="btn_big_sup_release").click().run()
    assert not at.exception and not at.error
    assert any("Release written" in s.value for s in at.success)
    cli_out = tmp_path / "cli.parquet"
    assert main(["suppress", str(parquet), "--qi", ",".join(QIS), "--k", "3", "--engine", "duckdb",
                 "--json", str(tmp_path / "s.json"), "-o", str(cli_out)]) == 0
    got, want = load_dataset(out).frame, load_dataset(cli_out).frame
    pd.testing.assert_frame_equal(got, want)
    original = load_dataset(parquet).frame
    assert len(got) == len(original)
    # from the intruder's side, by code independent of the solver: every person of the file, knowing their
    # QIs, finds at least 3 released records consistent with them (a blank matches any value)
    both = pd.concat([original[QIS], got[QIS]], ignore_index=True).astype(object)
    codes = np.stack([pd.factorize(both[q], use_na_sentinel=True)[0] for q in QIS], axis=1).astype(np.int32)
    n = len(original)
    released = codes[n:].copy()
    released[(released < 0) & (codes[:n] >= 0)] = SUPPRESSED  # blanked by the release, not missing in the file
    assert (released == SUPPRESSED).any()
    assert findable_below_k(codes[:n], released, 3, "wildcard") == 0
    assert findable_below_k(codes[:n], codes[:n], 3, "wildcard") > 0  # the file itself is not protected
    blanked = int(got[QIS].isna().sum().sum() - original[QIS].isna().sum().sum())
    assert blanked == int(metric(at, "Cells suppressed").replace(",", ""))

    at.button(key="btn_big_sup_release").click().run()  # the file exists now: refused, not overwritten
    assert any("exists already" in e.value for e in at.error)


def test_cancel_leaves_the_state_unchanged_and_waits_for_a_click(parquet, monkeypatch):
    at = _suppress_page(parquet)
    before = dict(at.session_state[big_file.KEY])
    calls, started, holder = [], threading.Event(), {}
    monkeypatch.setattr(big_suppress, "solve_work", blocking_work(calls, started, holder, "Solving"))
    click_and_cancel(at, "btn_big_suppress", started, lambda: holder["progress"].cancel())
    assert not at.exception
    assert any("Local suppression cancelled: nothing was changed" in i.value for i in at.info)
    assert not at.metric
    assert dict(at.session_state[big_file.KEY]) == before
    at.run()  # not restarted by itself
    assert len(calls) == 1 and not at.metric
    monkeypatch.undo()
    at.button(key="btn_big_again_big_suppress").click().run()
    assert not at.exception
    assert metric(at, "Records below k = 3 (recounted)") == "0"


def test_export_says_it_works_on_the_data_set_in_memory(parquet):
    at = _opened(parquet, "export.py")
    assert not at.exception
    assert any("census.parquet" in i.value and "works on the data set in memory" in i.value for i in at.info)


def test_risk_target_figures_are_the_core_and_the_release_the_command_lines(parquet, tmp_path):
    """The second target: the weight chosen on the Data page, the limit on the page; the figures are the core's
    call on the class table, and the release is ``kanon suppress --max-risk --engine duckdb``'s, in which every
    record still above the limit (recounted from the file read back) has no cell left to lose."""
    from kanon_core.cli import main
    from kanon_core.engines.local_suppression import solve_risk_at_scale
    from kanon_core.risk.classes import compute_class_sizes
    from kanon_core.risk.individual import individual_risk

    at = _opened(parquet, "data.py")
    at.selectbox(key="w_big_weight").set_value("weight").run()
    at.switch_page("pages/suppress.py").run()
    at.radio(key="w_big_sup_target").set_value("individual risk at most a limit").run()
    at.number_input(key="w_big_sup_maxrisk").set_value(0.02).run()
    assert not at.exception and not at.metric
    at.button(key="btn_big_risk_suppress").click().run()
    assert not at.exception and not at.error
    ref = solve_risk_at_scale(get_engine("duckdb"), str(parquet), QIS, 0.02, "weight", "wildcard").result
    s = ref.summary()
    assert s["n_suppressed"] > 0 and s["records_above_before"] > 0
    assert metric(at, "Cells suppressed to the risk target") == f"{s['n_suppressed']:,}"
    assert metric(at, "Records above the threshold") == f"{s['records_above_before']:,} → {s['records_above_after']:,}"
    out = tmp_path / "risk.parquet"
    at.text_input(key="w_big_sup_release_path").set_value(str(out)).run()
    at.button(key="btn_big_sup_release").click().run()
    assert not at.exception and any("Release written" in x.value for x in at.success)
    cli_out = tmp_path / "cli.parquet"
    assert main(["suppress", str(parquet), "--qi", ",".join(QIS), "--max-risk", "0.02", "--weight", "weight",
                 "--engine", "duckdb", "--json", str(tmp_path / "r.json"), "-o", str(cli_out)]) == 0
    got = load_dataset(out).frame
    pd.testing.assert_frame_equal(got, load_dataset(cli_out).frame)
    codes = np.stack([pd.factorize(got[q], use_na_sentinel=True)[0] for q in QIS], axis=1).astype(np.int32)
    sizes = compute_class_sizes(codes, "wildcard", got["weight"].to_numpy(dtype=float))
    above = individual_risk(sizes.fk, sizes.Fk) > 0.02
    assert int(above.sum()) == s["records_above_after"]
    assert not (codes[above] >= 0).any()  # every record still above the limit has lost every cell
