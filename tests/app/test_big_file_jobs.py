"""A large file's long steps (summary, class table, wildcard sizes) run as background jobs with progress and
Cancel: the engine's messages reach the progress text, DuckDB stops a running query, Polars stops after
it, and a cancelled step says "cancelled", changes nothing and is not restarted by itself.

The dashboard's large-file path is the Data page's "Open a large file" block (a file opened by its path is
always read out of core), so a small generated Parquet file takes the same path as a census file. The page
runs wait for their jobs; a user's click on Cancel is what ``Progress.cancel`` does (the button's
callback is ``Job.cancel``), here called from another thread while the page waits.
"""

from __future__ import annotations

import threading

import pytest

from kanon_app import big_file
from kanon_core.engines import get_engine
from kanon_core.engines.base import EngineSettings
from kanon_core.engines.source import open_source
from kanon_core.errors import Cancelled
from kanon_core.progress import Progress
from tests.app.helpers import CENSUS_QIS, blocking_work, frame_with, metric, open_page, write_census_parquet

QIS = CENSUS_QIS
_write = write_census_parquet


@pytest.fixture
def parquet(tmp_path):
    return _write(tmp_path / "census.parquet")


def _recorded():
    seen = []
    return seen, Progress(lambda fraction, message: seen.append((fraction, message)))


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_engine_messages_reach_the_progress_text(parquet, engine):
    seen, progress = _recorded()
    table = big_file.table_work(big_file._stamp(str(parquet)), engine, tuple(QIS), None)(progress)
    messages = [m for _, m in seen]
    assert f"{engine}: counting classes on 3 quasi-identifiers" in messages
    assert f"{engine}: {table.n_classes:,} classes of 3,000 records" in messages
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    seen, progress = _recorded()
    summary = big_file.summary_work(big_file._stamp(str(parquet)), engine)(progress)
    assert summary.n_records == 3000 and any(f"{engine}: summarising 4 columns" in m for _, m in seen)


def test_a_running_duckdb_query_is_interrupted_on_cancel(parquet):
    flag = threading.Event()
    shares = []

    def report(share):
        shares.append(share)
        flag.set()  # cancel once the query is under way

    settings = EngineSettings(cancelled=flag.is_set, query_progress=report)
    heavy = "SELECT sum(a.range * b.range) FROM range(100000) a, range(100000) b"  # 10^10 rows: long if not stopped
    try:
        with pytest.raises(Cancelled):
            engine = get_engine("duckdb")
            engine._run(settings, open_source(parquet), lambda _relation: heavy, "testing")
    finally:
        settings.close()
    assert shares and flag.is_set()


def test_a_cancel_flag_already_set_stops_before_the_query(parquet):
    settings = EngineSettings(cancelled=lambda: True)
    with pytest.raises(Cancelled):
        get_engine("duckdb").class_table(str(parquet), QIS, settings=settings)
    settings.close()


def test_polars_stops_at_the_next_message_after_its_query(parquet):
    seen = []

    def cancel_on_first(fraction, message):
        seen.append(message)
        progress.cancel()  # a click during the GROUP BY: Polars finishes it, then stops

    progress = Progress(cancel_on_first)
    with pytest.raises(Cancelled):
        big_file.table_work(big_file._stamp(str(parquet)), "polars", tuple(QIS), None)(progress)
    assert seen == ["polars: counting classes on 3 quasi-identifiers"]


def _cancel_when(started: threading.Event, holder: dict) -> threading.Thread:
    """What the Cancel button does, from another thread once the work has started."""
    def click():
        if started.wait(60):
            holder["progress"].cancel()
    t = threading.Thread(target=click, daemon=True)
    t.start()
    return t


def _open(at, path):
    at.text_input(key="w_big_path").set_value(str(path)).run()
    at.button(key="w_big_open").click().run()
    assert not at.exception


def test_cancelled_class_table_says_so_changes_nothing_and_waits_for_a_click(parquet, monkeypatch):
    at = open_page("data.py")
    _open(at, parquet)
    calls, started, holder = [], threading.Event(), {}
    monkeypatch.setattr(big_file, "table_work", blocking_work(calls, started, holder))
    before = dict(at.session_state[big_file.KEY])
    canceller = _cancel_when(started, holder)
    at.multiselect(key="w_big_qis").set_value(QIS).run()  # starts counting for the Risk page
    at.switch_page("pages/risk.py").run()  # waits for it, with the progress bar, until cancelled
    canceller.join(60)
    assert not at.exception
    assert any("Counting classes cancelled: nothing was changed" in i.value for i in at.info)
    assert not at.metric
    state = at.session_state[big_file.KEY]
    assert state["stamp"] == before["stamp"] and state["engine"] == before["engine"]
    assert state["qis"] == tuple(QIS)
    at.run()  # not restarted by itself: the page offers it
    assert len(calls) == 1 and not at.exception
    assert any(b.key == "btn_big_again_big_table" for b in at.button)
    started.clear()
    canceller = _cancel_when(started, holder)
    at.button(key="btn_big_again_big_table").click().run()  # run again, and cancelled again in that run
    canceller.join(60)
    assert len(calls) == 2 and not at.exception and not at.metric
    assert any("Counting classes cancelled" in i.value for i in at.info)
    assert [b.key for b in at.button].count("btn_big_again_big_table") == 1
    monkeypatch.undo()
    at.button(key="btn_big_again_big_table").click().run()
    assert not at.exception
    assert metric(at, "Records") == "3,000"


def test_cancelled_open_keeps_the_file_already_open(parquet, tmp_path, monkeypatch):
    at = open_page("data.py")
    _open(at, parquet)
    before = dict(at.session_state[big_file.KEY])
    other = _write(tmp_path / "other.parquet", n=500, seed=9)
    calls, started, holder = [], threading.Event(), {}
    monkeypatch.setattr(big_file, "summary_work", blocking_work(calls, started, holder))
    canceller = _cancel_when(started, holder)
    _open(at, other)
    canceller.join(60)
    assert any("Summarising the file cancelled: nothing was changed" in i.value for i in at.info)
    assert at.session_state[big_file.KEY]["stamp"] == before["stamp"]
    assert big_file.PENDING not in at.session_state
    assert list(frame_with(at, "distinct")["variable"]) == ["region", "age", "sex", "weight"]
    at.run()
    assert len(calls) == 1 and not at.exception


def test_category_figures_first_and_a_cancelled_wildcard_step_keeps_them(parquet, monkeypatch):
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.risk.summary import risk_summary

    at = open_page("data.py")
    _open(at, parquet)
    calls, started, holder = [], threading.Event(), {}
    monkeypatch.setattr(big_file, "sizes_work", blocking_work(calls, started, holder))
    canceller = _cancel_when(started, holder)
    at.multiselect(key="w_big_qis").set_value(QIS).run()  # counts the classes, then starts the wildcard sizes
    at.switch_page("pages/risk.py").run()
    canceller.join(60)
    assert len(calls) == 1  # the sizes started once, on the Data page, and the Risk page waited for that job
    assert not at.exception
    qm = load_dataset(parquet, roles=Roles(qis=tuple(QIS))).qi_matrix()
    category, wildcard = risk_summary(qm, 3, "category"), risk_summary(qm, 3, "wildcard")
    assert category.n_violating != wildcard.n_violating  # the test tells the two apart
    assert metric(at, "Records below k = 3") == f"{category.n_violating:,}"
    assert any("counted as a **category**" in w.value for w in at.warning)
    assert any("Wildcard class sizes cancelled" in i.value for i in at.info)
    # cancelled: the category figures in full (the tables shown first only with the wildcard figures)
    assert list(frame_with(at, "singletons")["variable"]) == QIS
    monkeypatch.undo()
    at.button(key="btn_big_again_big_sizes").click().run()
    assert not at.exception
    assert metric(at, "Records below k = 3") == f"{wildcard.n_violating:,}"
    assert not any("counted as a **category**" in w.value for w in at.warning)


def test_the_wildcard_sizes_job_is_registered_before_the_class_table_is_visible(parquet, monkeypatch):
    """A page that finds the class table in the memo does not wait for the table's job, and starts the wildcard
    sizes itself unless their job is registered: the table must not be visible before that job is, or two
    jobs compute the same sizes (and the page may wait for one that nobody else knows of)."""
    from kanon_app.cache import SessionView

    at = open_page("data.py")
    _open(at, parquet)
    jobs = at.session_state["jobs"]
    seen = []
    real_put = SessionView.put

    def put(self, key, value):
        if key[2] == "big_table":
            seen.append(jobs.get("big_sizes"))
        return real_put(self, key, value)

    monkeypatch.setattr(SessionView, "put", put)
    at.multiselect(key="w_big_qis").set_value(QIS).run()
    table_job = jobs["big_table"]
    assert table_job.wait(60) and table_job.state == "done"
    assert len(seen) == 1 and seen[0] is not None and seen[0].key[2] == "big_sizes"
    assert seen[0].wait(60) and seen[0].state == "done"


def test_polars_path_says_cancel_waits_for_the_query_and_gives_the_same_figures(parquet, monkeypatch):
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.risk.summary import risk_summary

    assert big_file.stops_mid_query("duckdb") and not big_file.stops_mid_query("polars")
    at = open_page("data.py")
    at.selectbox(key="w_big_engine").set_value("polars").run()
    _open(at, parquet)
    assert at.session_state[big_file.KEY]["engine"] == "polars"
    at.multiselect(key="w_big_qis").set_value(QIS).run()
    assert "big_table" not in at.session_state["jobs"]  # Polars cannot be interrupted: no counting ahead
    calls, started, holder = [], threading.Event(), {}
    monkeypatch.setattr(big_file, "table_work", blocking_work(calls, started, holder))
    canceller = _cancel_when(started, holder)
    at.switch_page("pages/risk.py").run()
    canceller.join(60)
    assert not at.exception
    assert any("polars cannot stop a query mid-way" in c.value for c in at.caption)
    assert any("Counting classes cancelled" in i.value for i in at.info)
    monkeypatch.undo()
    at.button(key="btn_big_again_big_table").click().run()
    ref = risk_summary(load_dataset(parquet, roles=Roles(qis=tuple(QIS))).qi_matrix(), 3, "wildcard")
    assert metric(at, "Records below k = 3") == f"{ref.n_violating:,}"


def test_wildcard_sizes_are_computed_while_the_officer_is_on_the_data_page(parquet):
    """Choosing the QIs counts the classes and then, as the table has missing cells, the wildcard class sizes
    the Risk page shows by default, in the background: the Risk page then shows the wildcard figures at once,
    without the category figures first."""
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.risk.summary import risk_summary

    at = open_page("data.py")
    _open(at, parquet)
    at.multiselect(key="w_big_qis").set_value(QIS).run()
    for _ in range(600):  # the sizes job is registered once the table's job has stored the table
        job = at.session_state["jobs"].get("big_sizes")
        if job is not None and job.wait(0.1):
            break
        threading.Event().wait(0.05)
    else:
        raise AssertionError("the wildcard sizes were not started after the class table")
    assert job.state == "done"
    at.switch_page("pages/risk.py").run()
    assert not at.exception
    assert not any("counted as a **category**" in w.value for w in at.warning)
    ref = risk_summary(load_dataset(parquet, roles=Roles(qis=tuple(QIS))).qi_matrix(), 3, "wildcard")
    assert metric(at, "Records below k = 3") == f"{ref.n_violating:,}"
