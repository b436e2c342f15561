"""Start the dashboard with its libraries loaded: ``python -m kanon_app.serve [streamlit options]``.

Streamlit imports what a page needs in the first session that runs it, so the first officer to open a
fresh server waits while pandas, numba's compiled kernels and the app's own modules load (about 1.5 s
of a 3.5 s first page on 2 cores). This launcher loads them first, in the server's own process, where
every session's script finds them already imported, and then hands over to ``streamlit run app.py``
with the options given. The server answers once it is ready, and the first page opens as fast as the
next ones. The other pages' modules, the regression models' libraries and the MINUC kernels are loaded
too (1-2 s more at start on 2 cores), so the first visit to each page, the first model fit and the first
report do not wait for them either. Nothing about a session is kept: the warm-up opens the
bundled default sample, the one immutable object every session starts from (kanon_app.state.default_sample),
and computes its first pages (kanon_app.shared_results), and reads nothing else.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"

FIRST_PAGE_MODULES = (
    "pandas", "pyarrow", "kanon_core.dataset", "kanon_core.io", "kanon_core.guidance",
    "kanon_core.risk.timeline", "kanon_core.risk.summary", "kanon_core.engines.api",
    "kanon_core.utility.compare", "kanon_core.utility.baseline", "kanon_core.cli.common", "kanon_core.outputs",
    "kanon_app.state", "kanon_app.sidebar", "kanon_app.navigation",
    "kanon_app.roles_ui", "kanon_app.guide", "kanon_app.glossary_ui", "kanon_app.labels_ui",
    "kanon_app.prefetch", "kanon_app.big_file", "kanon_app.pager", "kanon_app.chart_code",
    "plotly.graph_objects", "plotly.io", "plotly.tools", "plotly.offline",
)
"""What the first page run imports (the Data page with the sidebar), listed from a fresh session."""

OTHER_PAGE_MODULES = (
    "plotly.express", "kanon_core.risk.describe_record", "kanon_core.utility.plots", "kanon_core.risk.minucs",
    "kanon_core.risk.minucs_by_subsets", "kanon_core.risk.suda", "kanon_core.risk.qid",
    "kanon_app.minuc_carry", "kanon_app.minuc_estimate_text", "kanon_app.many_levels", "kanon_app.sections", "kanon_core.treat.lattice", "kanon_core.treat.suggest",
    "kanon_core.treat.explain", "kanon_core.criteria", "kanon_app.hierarchy_ui", "kanon_core.treat.suppress",
    "kanon_app.big_suppress", "kanon_app.risk_suppress_ui", "kanon_app.compare_ui", "kanon_core.utility.bias",
    "kanon_core.risk.restore",
    "kanon_core.utility.info_loss", "kanon_core.utility.model_builder", "kanon_core.utility.model_compare",
    "kanon_app.export_ui", "kanon_core.export", "kanon_core.project", "kanon_core.recipe",
    "kanon_core.report", "pandas.io.formats.style", "pandas.io.formats.csvs",
)
"""What the other pages import when first opened, and the regression models' libraries (statsmodels and
scipy.stats: 0.75 s after the first page's modules) that Compare's "Fit the three models" and the report
load: loaded at start too, so no officer's first visit to a page, first fit or first report waits."""


LOADING_MESSAGE = ("kanon: loading its libraries and compiled kernels before the server answers (a few seconds; "
                   "when the kernels were not compiled ahead, as scripts/setup.sh does with 'kanon kernels', the "
                   "first start after an install or an update compiles those it needs, about half a minute)")
"""Printed before the warm-up, so that the wait before the server's address shows is not taken for a hang."""


def warm_up() -> None:
    """Import the pages' modules and compute the default sample's first pages, which every session opens on
    (kanon_app.shared_results), load the compiled kernels the first pages use (kanon_core.kernels'
    START_FAMILIES: the class sizes, the MINUC search and its sections, from numba's cache or compiling them
    once), and make once what a page's first chart or alert loads."""
    for name in (*FIRST_PAGE_MODULES, *OTHER_PAGE_MODULES):
        importlib.import_module(name)
    from kanon_app import shared_results, state
    from kanon_core import kernels

    summary = shared_results.first_pages(state.default_sample(), state.DEFAULT_K)
    _warm_empty_chart()
    _warm_bar_chart()
    _warm_risk_charts(summary, state.DEFAULT_K)
    _warm_alert_text()
    kernels.warm(kernels.START_FAMILIES)
    _skip_direct_run_check()


def _warm_empty_chart() -> None:
    """Build and serialise the first page's empty chart once (kanon_app.chart_code): Plotly loads the parts of
    its figure and of its JSON writer on first use."""
    from kanon_app.chart_code import empty_figure

    empty_figure().to_json()


def _warm_bar_chart() -> None:
    """Build and serialise a two-bar Plotly Express chart once: the first ``px.bar`` loads every trace type
    Plotly Express knows (0.2-0.3 s), which the Risk and MINUCs pages' first run would otherwise pay."""
    import pandas as pd
    import plotly.express as px

    px.bar(pd.DataFrame({"x": ["a", "b"], "y": [1, 2]}), x="x", y="y").to_json()


def _warm_risk_charts(summary, k: int) -> None:
    """Build and serialise the Risk page's class-size chart of the default sample once: its first build loads
    the parts of Plotly's layout it sets (annotations, shapes, axes: 0.1-0.2 s)."""
    if summary is None:
        return
    from kanon_core.utility.plots import class_size_figure

    class_size_figure(summary.size_distribution, k).to_json()


def _warm_alert_text() -> None:
    """Streamlit looks for a leading emoji in the text of every alert (``st.info``, ``st.warning``) that is
    not plain ASCII, loading its emoji catalogue and compiling one large pattern the first time (0.2-0.4 s
    of the first page to show such an alert, the Risk page's): done here once."""
    from streamlit.string_util import extract_leading_emoji

    extract_leading_emoji("k ≥ 2")


def _skip_direct_run_check() -> None:
    """Streamlit checks once per process, at the first element any session draws, whether it was started
    without ``streamlit run`` (to print how to run an app); the check walks the whole call stack and resolves
    every module's file (0.2 s of the first page on 2 cores). This launcher always hands over to ``streamlit
    run``, so the check is marked done here. Only a flag is set: a Streamlit without it is not affected."""
    import streamlit.delta_generator as delta_generator

    delta_generator._use_warning_has_been_displayed = True


def main(argv: Sequence[str] | None = None) -> int:
    # Set before numpy loads, as app.py does (an explicit setting wins): see app.py.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(LOADING_MESSAGE, file=sys.stderr, flush=True)
    warm_up()
    from kanon_app.page_head import serve_with_chart_code

    serve_with_chart_code()  # the page loads Streamlit's chart code while it waits for the first run
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    return int(cli.main() or 0)


if __name__ == "__main__":
    sys.exit(main())
