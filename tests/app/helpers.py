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
