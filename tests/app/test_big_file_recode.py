"""The Recode page on a large file: the optimal generalization found on the class table as a background job
(progress, Cancel), its result as the core computes it, and the release written by the engine as
``kanon generalize --engine duckdb -o`` writes it.

A small generated Parquet file opened on the Data page takes the same out-of-core path as a census file.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

from kanon_app import big_file
from kanon_core.engines import get_engine
from kanon_core.engines.generalize import automatic_hierarchies, level_tables, table_problem
from kanon_core.treat.lattice import search_optimal
from tests.app.helpers import CENSUS_QIS, blocking_work, frame_with, metric, open_page, write_census_parquet

QIS = CENSUS_QIS
_write = write_census_parquet


@pytest.fixture
def parquet(tmp_path):
    return _write(tmp_path / "census.parquet")


def _opened(path, page: str):
    """The app with the large file opened on the Data page, its QIs chosen, then ``pages/<page>`` shown."""
    at = open_page("data.py")
    at.text_input(key="w_big_path").set_value(str(path)).run()
    at.button(key="w_big_open").click().run()
    at.multiselect(key="w_big_qis").set_value(QIS).run()
    at.switch_page(f"pages/{page}").run()
    return at


def _recode_page(path, k=5, limit=1.0):
    at = _opened(path, "recode.py")
    assert not at.exception
    at.number_input(key="w_big_rec_k").set_value(k).run()
    at.number_input(key="w_big_rec_sup").set_value(limit).run()
    return at


def click_and_cancel(at, button: str, started: threading.Event, cancel) -> None:
    """Click ``button`` and, from another thread, press Cancel (``cancel()``) once its job has ``started``."""
    def press():
        if started.wait(60):
            cancel()

    canceller = threading.Thread(target=press, daemon=True)
    canceller.start()
    at.button(key=button).click().run()
    canceller.join(60)


def _reference(path, k=5, max_suppression=0.01, missing="wildcard"):
    table = get_engine("duckdb").class_table(str(path), QIS)
    hs, tabs = level_tables(table, QIS, automatic_hierarchies(table, QIS))
    return table, hs, tabs, search_optimal(table_problem(table, hs, tabs, missing), k, max_suppression, "prec")


def test_automatic_hierarchies_from_the_class_table_are_those_of_the_records(parquet):
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.treat.default_hierarchy import default_hierarchy

    table = get_engine("duckdb").class_table(str(parquet), QIS)
    ds = load_dataset(parquet, roles=Roles(qis=tuple(QIS)))
    got = automatic_hierarchies(table, QIS)
    for q in QIS:
        assert got[q].rows == default_hierarchy(ds, q).rows
    assert got["age"].height > 2  # a real hierarchy, not only the value and the top


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_the_result_shown_is_the_search_on_the_class_table(parquet, missing):
    at = _recode_page(parquet)
    at.radio(key="w_big_rec_missing").set_value(missing).run()
    assert any("automatic hierarchies" in c.value for c in at.caption)
    assert not at.metric  # nothing searched before the click
    at.button(key="btn_big_optimal").click().run()
    assert not at.exception
    table, hs, tabs, ref = _reference(parquet, missing=missing)
    assert metric(at, "Loss (prec)") == f"{ref.loss:.4f}"
    assert metric(at, "Records suppressed") == f"{ref.n_suppressed_records:,}"
    assert metric(at, "Nodes evaluated") == f"{ref.nodes_evaluated:,} of {ref.n_nodes:,}"
    assert metric(at, "Classes before") == f"{table.n_classes:,}"
    after = table.generalize([t.table[ref.levels[q]] for q, t in zip(QIS, tabs, strict=True)])
    assert metric(at, "Classes after") == f"{after.n_classes:,}"
    shown = frame_with(at, "generalized values")
    assert list(shown["variable"]) == QIS
    assert [int(v) for v in shown["level"]] == [ref.levels[q] for q in QIS]
    for q, t, n in zip(QIS, tabs, shown["generalized values"], strict=True):
        assert int(n) == len(np.unique(t.table[ref.levels[q]]))
    assert any(ref.levels[q] > 0 for q in QIS)  # the test data need generalizing at k = 5


def test_cancel_leaves_the_state_unchanged_and_waits_for_a_click(parquet, monkeypatch):
    at = _recode_page(parquet)
    before = dict(at.session_state[big_file.KEY])
    calls, started, holder = [], threading.Event(), {}

    monkeypatch.setattr(big_file, "optimal_work", blocking_work(calls, started, holder, "Searching for the optimum"))
    click_and_cancel(at, "btn_big_optimal", started, lambda: holder["progress"].cancel())
    assert not at.exception
    assert any("Searching the lattice cancelled: nothing was changed" in i.value for i in at.info)
    assert not at.metric
    assert dict(at.session_state[big_file.KEY]) == before
    at.run()  # not restarted by itself
    assert len(calls) == 1 and not at.metric
    assert any(b.key == "btn_big_again_big_optimal" for b in at.button)
    monkeypatch.undo()
    at.button(key="btn_big_again_big_optimal").click().run()
    assert not at.exception
    ref = _reference(parquet)[3]
    assert metric(at, "Records suppressed") == f"{ref.n_suppressed_records:,}"


@pytest.mark.parametrize(("suffix", "k", "limit"), [(".csv", 5, 1.0), (".parquet", 3, 5.0)])
def test_the_release_is_the_command_lines(parquet, tmp_path, suffix, k, limit):
    """At k = 5 (1%) the age is generalized, at k = 3 (5%) records are suppressed: both reach the file."""
    from kanon_core.cli import main
    from kanon_core.io import load_dataset
    from kanon_core.treat.hierarchy import write_arx_hierarchy

    at = _recode_page(parquet, k, limit)
    at.button(key="btn_big_optimal").click().run()
    out = tmp_path / f"release{suffix}"
    at.text_input(key="w_big_release_path").set_value(str(out)).run()
    at.button(key="btn_big_release").click().run()
    assert not at.exception and not at.error
    assert any("Release written" in s.value for s in at.success)

    _, hs, _, ref = _reference(parquet, k, limit / 100)
    folder = tmp_path / "hierarchies"
    folder.mkdir()
    for h in hs:
        write_arx_hierarchy(h, folder / f"{h.name}.csv")
    cli_out = tmp_path / f"cli{suffix}"
    assert main(["generalize", str(parquet), "--qi", ",".join(QIS), "--hierarchies", str(folder), "--k", str(k),
                 "--max-suppression", str(limit / 100), "--engine", "duckdb", "--json", str(tmp_path / "r.json"),
                 "-o", str(cli_out)]) == 0
    got, want = load_dataset(out).frame, load_dataset(cli_out).frame
    pd.testing.assert_frame_equal(got, want)
    original = load_dataset(parquet).frame
    assert len(got) == len(original)
    assert ref.levels["age"] > 0 or ref.n_suppressed_records > 0
    if ref.levels["age"] > 0:  # generalized, not a copy
        assert not got["age"].astype(str).equals(original["age"].astype(str))
    blanked = int(got["sex"].isna().sum())  # sex has no missing value in the input
    assert blanked == ref.n_suppressed_records

    at.button(key="btn_big_release").click().run()  # the file exists now: refused, not overwritten
    assert any("exists already" in e.value for e in at.error)
    at.text_input(key="w_big_release_path").set_value(str(parquet)).run()
    at.button(key="btn_big_release").click().run()
    assert at.error and pd.read_parquet(parquet).shape == (3000, 4)


def test_cancelling_the_release_leaves_no_file(parquet, tmp_path, monkeypatch):
    """The release is a background job: Cancel stops the engine's writing, and the file written beside the
    target (renamed only when complete) is removed, so nothing appears; a new click writes it."""
    at = _recode_page(parquet)
    at.button(key="btn_big_optimal").click().run()
    out = tmp_path / "release.csv"
    at.text_input(key="w_big_release_path").set_value(str(out)).run()
    engine_class = type(get_engine("duckdb"))
    real_release = engine_class.release
    started, holder = threading.Event(), {}

    def slow_release(self, source, target, **kw):
        with open(target, "w") as fh:  # a partial file, where the engine writes
            fh.write("age,sex\n")
        holder["temp"] = target
        started.set()
        while True:
            kw["settings"].say("writing the release")  # the engine's checkpoint: raises once cancelled
            threading.Event().wait(0.01)

    monkeypatch.setattr(engine_class, "release", slow_release)
    def cancel_release():
        """The job is registered in the session just after its thread starts: wait for it, then cancel."""
        for _ in range(600):
            job = at.session_state["jobs"].get("big_release") if "jobs" in at.session_state else None
            if job is not None:
                job.cancel()
                return
            threading.Event().wait(0.05)

    click_and_cancel(at, "btn_big_release", started, cancel_release)
    assert not at.exception
    assert any("Writing the release cancelled: nothing was changed" in i.value for i in at.info)
    assert not out.exists() and not holder["temp"].exists()
    assert not any("Release written" in s.value for s in at.success)

    monkeypatch.setattr(engine_class, "release", real_release)
    at.button(key="btn_big_release").click().run()  # asked again: written this time
    assert not at.exception and any("Release written" in s.value for s in at.success)
    assert len(pd.read_csv(out)) == 3000


def test_compare_page_shows_the_file_against_its_release(parquet, tmp_path):
    """After the release is written, the Compare page shows the weighted percentages of the file and of the
    release (computed by the engine, with the weight chosen on the Data page), equal to the in-memory
    comparison of the two files read back."""
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.utility.compare import compare_distributions

    at = _recode_page(parquet, k=5, limit=1.0)
    at.switch_page("pages/compare.py").run()
    assert any("Write a release of the large file on the Recode page first" in i.value for i in at.info)
    at.switch_page("pages/data.py").run()
    at.selectbox(key="w_big_weight").set_value("weight").run()
    at.switch_page("pages/recode.py").run()
    at.button(key="btn_big_optimal").click().run()
    out = tmp_path / "release.parquet"
    at.text_input(key="w_big_release_path").set_value(str(out)).run()
    at.button(key="btn_big_release").click().run()
    assert out.exists()
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not at.error
    before, after = load_dataset(parquet, roles=Roles(weight="weight")), load_dataset(out, roles=Roles(weight="weight"))
    ref = compare_distributions(before, after, QIS)
    assert metric(at, "CIs overlapping") == f"{ref.summary.n_overlap} of {ref.summary.n_categories}"
    assert metric(at, "Categories completely suppressed") == f"{ref.summary.n_completely_suppressed}"
    assert [len(df.value) for df in at.dataframe] == [len(ref.table)]  # the comparison table, every category
    assert any("weight weight" in c.value for c in at.caption)  # the design named: the weight was used


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_minucs_page_searches_the_class_table(parquet, missing):
    """The MINUCs page on a large file: the counts of the records' MINUCs found on the class table, equal to
    the search on the records read in memory."""
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.risk.minucs import summarize_minucs

    at = _opened(parquet, "minucs.py")
    assert not at.exception
    at.number_input(key="w_big_minuc_k").set_value(3).run()
    at.number_input(key="w_big_minuc_max").set_value(0).run()
    at.radio(key="w_big_minuc_missing").set_value(missing).run()
    assert not at.metric  # nothing searched before the click
    assert any("Estimated: about" in i.value and ("comparing every distinct record" in i.value or "counting every "
               "combination" in i.value) for i in at.info)  # the forecast names the method that will run
    at.button(key="btn_big_minucs").click().run()
    assert not at.exception and not at.error
    ds = load_dataset(parquet, roles=Roles(qis=tuple(QIS)))
    ref = summarize_minucs(ds.qi_matrix(QIS), 3, missing)
    assert metric(at, "MINUCs") == f"{ref.total:,}"
    assert metric(at, "Records with a MINUC") == f"{ref.records_with_minucs():,}"
    assert metric(at, "Complete") == "yes"
    assert any("Found by" in c.value for c in at.caption)
    sets = frame_with(at, "variables")
    assert len(sets) > 0


def test_minucs_page_of_a_large_file_says_when_its_estimate_stopped(parquet, monkeypatch):
    """The forecast is made on the page's thread within the page's time budget; one that stops there says its
    cost is not known (lower bounds as such, never as the cost), and the search is still offered."""
    from kanon_core.risk import minucs as minucs_module

    monkeypatch.setattr(minucs_module, "RESPONSIVE_ESTIMATE_SECONDS", 0.0)  # every estimate stops at once
    at = _opened(parquet, "minucs.py")
    at.number_input(key="w_big_minuc_k").set_value(3).run()
    at.number_input(key="w_big_minuc_max").set_value(0).run()
    assert not at.exception and not at.metric
    assert not any("Estimated: about" in i.value for i in at.info)
    [said] = [w.value for w in at.warning]
    assert said.startswith("The estimate stopped at its time limit") and "sampled classes" in said
    at.button(key="btn_big_minucs").click().run()
    assert not at.exception and not at.error and metric(at, "MINUCs")


def test_a_csv_release_says_its_formula_like_cells(tmp_path):
    """A text column no step reads holds cells a spreadsheet may run ("=ZQX..."): the CSV release written by the
    engine is read back for them and the page says the note the command line prints, counts and names only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _write(tmp_path / "census.parquet")
    table = pq.read_table(path)
    notes = ["=ZQX(1)" if i % 100 == 0 else "fine" for i in range(table.num_rows)]
    pq.write_table(table.append_column("note", pa.array(notes)), path)
    at = _recode_page(path, 5, 1.0)
    at.button(key="btn_big_optimal").click().run()
    for suffix, said in ((".csv", True), (".parquet", False)):
        at.text_input(key="w_big_release_path").set_value(str(tmp_path / f"release{suffix}")).run()
        at.button(key="btn_big_release").click().run()
        assert not at.exception and any("Release written" in s.value for s in at.success)
        shown = [i.value for i in at.info if "formulas" in i.value]
        assert bool(shown) == said
        if said:
            assert shown[0].startswith(f"{sum(n.startswith('=') for n in notes):,} text cell(s)")
            assert "note (" in shown[0] and "ZQX" not in shown[0]
