"""Shared pieces of the AppTest page tests: the app's path, reading metrics and tables, opening a page."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def metric(at: AppTest, label: str) -> str:
    """The displayed value of the metric with this label."""
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r}: {[m.label for m in at.metric]}")


def frame_with(at: AppTest, column: str):
    """The first dataframe shown that has ``column``."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def open_page(page_file: str, timeout: int = 120) -> AppTest:
    """Start the app (sample data preset) and switch to ``pages/<page_file>``."""
    at = AppTest.from_file(APP, default_timeout=timeout).run()
    at.switch_page(f"pages/{page_file}").run()
    assert not at.exception
    return at


def session_on(ds, timeout: int = 180, **state) -> AppTest:
    """A new session of the app holding ``ds`` (a :class:`~kanon_core.dataset.Dataset`, its original version
    only) as the Load page leaves it; ``state`` is set in the session too (e.g. a page's open tab)."""
    from collections import OrderedDict

    from kanon_core.history import History

    at = AppTest.from_file(APP, default_timeout=timeout).run()
    at.session_state["history"] = History.start(ds)
    at.session_state["source"] = {"kind": "upload", "title": f"{ds.name}.csv", "name": f"{ds.name}.csv"}
    at.session_state["memo"] = OrderedDict()
    for key, value in state.items():
        at.session_state[key] = value
    return at


def open_recode(qis: list[str]) -> AppTest:
    """The Recode page (sample data) with ``qis`` chosen as its quasi-identifiers."""
    at = open_page("recode.py")
    at.multiselect(key="w_rec_qis").set_value(qis).run()
    assert not at.exception
    return at


CENSUS_QIS = ["region", "age", "sex"]


def write_census_parquet(path: Path, n: int = 3000, seed: int = 4) -> Path:
    """A small census-like Parquet file (a region with missing cells, age, sex, a weight) that the Data
    page opens through its large-file path."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"region": rng.choice(["north", "south", "east", "west", None], n),
                          "age": rng.integers(18, 90, n), "sex": rng.choice([1, 2], n),
                          "weight": rng.uniform(1, 50, n)})
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    return path


def blocking_work(calls: list, started, holder: dict, message: str = "duckdb: counting classes on 3 quasi-identifiers"):
    """A work factory whose work reports progress until cancelled (a query or search that takes long): each
    call's arguments go to ``calls``, its Progress to ``holder["progress"]``, and ``started`` is set."""
    import threading

    def factory(*args):
        def work(progress):
            calls.append(args)
            holder["progress"] = progress
            started.set()
            while True:
                progress.update(0.3, message)  # raises once cancelled
                threading.Event().wait(0.01)
        return work
    return factory
