"""The dashboard's pages and the builders on a quasi-identifier of 100,000 categories (a postcode-like text code
next to ordinary QIs): what an officer waits for when a file has one.

The file is made up: 200,000 records, ``postcode`` a text code with 100,000 distinct values (every value at
least once, the rest drawn at random), ``sex`` (2 codes), ``region`` (8), a score and a weight. Each page is
opened in Streamlit's own test runner (``streamlit.testing.v1.AppTest``: the page's script with its session
state, no browser), once to warm up, then timed: the first run of a new session on that page, and a rerun with
nothing changed. The Recode page's tabs are timed one by one (a tab switch reruns only the tabs). The core rows
time the hierarchy builders and the report's per-category table on the same file.

Prints a table: step, seconds (median of --repeat runs), and what the step gave. Run:
python benchmarks/bench_many_levels.py [--repeat 3] [--records 200000] [--levels 100000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from benchmarks.bench_recipe import timed  # noqa: E402
from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
from benchmarks.synthetic import many_levels_frame  # noqa: E402
from kanon_core.dataset import Dataset, Roles  # noqa: E402
from tests.app.helpers import session_on  # noqa: E402

APP = str(ROOT / "app.py")
PAGES = ("data.py", "risk.py", "minucs.py", "recode.py", "suppress.py", "compare.py", "export.py")
RECODE_TABS = ("Levels", "Optimal generalization", "Single recode", "Suggestions from MINUCs", "Hierarchies")
QIS = ("postcode", "sex", "region")


def many_levels(records: int, levels: int) -> Dataset:
    """The made-up file (:func:`benchmarks.synthetic.many_levels_frame`) with its roles."""
    if records < levels:
        raise SystemExit("--records must be at least --levels")
    return Dataset(many_levels_frame(records, levels), roles=Roles(qis=QIS, weight="wgt", outcomes=("score",)),
                   name="many_levels")


def open_page(ds: Dataset, page: str, **state: Any):
    """Seconds of a new session's first run of ``page``, and the session (checked: no exception)."""
    at = session_on(ds, timeout=600, **state)
    at.switch_page(f"pages/{page}")
    t = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - t
    if at.exception:
        raise SystemExit(f"{page}: the page raised an exception")
    return seconds, at


def rerun(at) -> float:
    t = time.perf_counter()
    at.run()
    return time.perf_counter() - t


def page_rows(ds: Dataset, repeat: int) -> list[tuple[str, float, str]]:
    rows = []
    for page in PAGES:
        open_page(ds, page)  # warm-up: imports, compiled kernels, the page's module
        opens, reruns = [], []
        for _ in range(repeat):
            seconds, at = open_page(ds, page)
            opens.append(seconds)
            reruns.append(rerun(at))
        rows.append((f"{page[:-3]} page: first open", statistics.median(opens), "a new session"))
        rows.append((f"{page[:-3]} page: rerun", statistics.median(reruns), "nothing changed"))
    for tab in RECODE_TABS:
        opens = []
        for _ in range(repeat):
            seconds, _ = open_page(ds, "recode.py", w_recode_section=tab)
            opens.append(seconds)
        rows.append((f"recode page opened on the tab {tab!r}", statistics.median(opens), "only this tab is drawn"))
    return rows


def core_rows(ds: Dataset, repeat: int) -> list[tuple[str, float, str]]:
    from kanon_core.treat.default_hierarchy import default_hierarchy
    from kanon_core.treat.hierarchy import masking_hierarchy
    from kanon_core.utility.compare import compare_distributions

    rows = []
    column = ds.frame["postcode"]
    distinct = pd.Series(column.unique())
    s, h = timed(lambda: default_hierarchy(ds, "postcode"), repeat)
    rows.append(("default hierarchy of postcode (frequency grouping)", s, f"{len(h.rows):,} rows, "
                 f"{len(h.rows[0]) - 1} levels"))
    s, h = timed(lambda: masking_hierarchy(distinct, name="postcode"), repeat)
    rows.append(("masking hierarchy, the distinct values", s, f"{len(h.rows):,} rows, {len(h.rows[0]) - 1} levels"))
    s, h = timed(lambda: masking_hierarchy(column, name="postcode"), repeat)
    rows.append(("masking hierarchy, the records' column", s, f"{len(column):,} records read"))
    s, comparison = timed(lambda: compare_distributions(ds, ds, list(QIS)), repeat)
    rows.append(("per-category comparison (Compare, report)", s, f"{len(comparison.table):,} rows"))
    return rows


def report_row(ds: Dataset) -> tuple[str, float, str]:
    """The HTML report of the file against itself, once (its size is what the per-category bound is for)."""
    from kanon_core.history import History
    from kanon_core.report import ReportOptions, build_report, render_html

    history = History.start(ds)
    t = time.perf_counter()
    html = render_html(build_report(history, options=ReportOptions(k=3)))
    seconds = time.perf_counter() - t
    return ("HTML report (build and render)", seconds, f"{len(html.encode()) / 1e6:.1f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--levels", type=int, default=100_000)
    ap.add_argument("--no-pages", action="store_true", help="only the core rows")
    args = ap.parse_args()
    print(f"machine: {describe_machine()}")
    print(describe_speed(speed()))
    ds = many_levels(args.records, args.levels)
    print(f"input: {ds.n_records:,} records; postcode {ds.frame['postcode'].nunique():,} categories, sex 2, "
          f"region 8; QIs {', '.join(QIS)}; median of {args.repeat} runs")
    rows = core_rows(ds, args.repeat) + [report_row(ds)]
    if not args.no_pages:
        rows += page_rows(ds, args.repeat)
    width = max(len(r[0]) for r in rows)
    print(f"\n| {'step':<{width}} | seconds | gives |")
    print(f"|{'-' * (width + 2)}|--------:|-------|")
    for name, seconds, note in rows:
        print(f"| {name:<{width}} | {seconds:7.2f} | {note} |")


if __name__ == "__main__":
    main()
