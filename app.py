"""kanon dashboard: statistical disclosure control of survey microdata.

Run with ``streamlit run app.py``. Pages live in ``pages/`` and are registered here explicitly; all
numbers come from ``kanon_core``.
"""

from __future__ import annotations

import os

# Multithreaded OpenBLAS is far slower than one thread on the small dense problems of the Compare page
# (a 13,099 x 61 QR: 350 ms vs 22 ms on 2 cores). Must be set before numpy loads; an explicit setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pathlib import Path  # noqa: E402

import streamlit as st

from kanon_app import chart_code, glossary_ui, prefetch, sidebar, state
from kanon_core import threads

st.set_page_config(page_title="kanon — disclosure control", page_icon=":material/shield:", layout="wide")

PAGE_DIR = Path(__file__).resolve().parent / "pages"
PAGES = [  # Material icons: emoji render as empty boxes where the fonts are missing
    ("data.py", "Data", ":material/table_chart:"),
    ("risk.py", "Risk", ":material/warning:"),
    ("minucs.py", "MINUCs", ":material/search:"),
    ("recode.py", "Recode", ":material/transform:"),
    ("suppress.py", "Suppress", ":material/content_cut:"),
    ("compare.py", "Compare", ":material/bar_chart:"),
    ("export.py", "Export", ":material/download:"),
]

with threads.foreground():  # work started ahead of a click waits while a page is drawn (kanon_core.threads)
    state.init()
    pages = [st.Page(f"pages/{f}", title=t, icon=i, url_path=f[:-3]) for f, t, i in PAGES[1:]
             if (PAGE_DIR / f).exists()]
    # Streamlit serves the first page at "/" only, and its own address answered "Page not found" over the
    # page: the first page has a name nobody types, and its usual address (/data) is a hidden page opening it
    file, title, icon = PAGES[0]
    first = st.Page(f"pages/{file}", title=title, icon=icon, url_path="start", default=True)
    pages.insert(0, first)
    alias = st.Page(lambda: st.switch_page(first), title=title, url_path=file[:-3], visibility="hidden")
    nav = st.navigation([*pages, alias])
    with st.sidebar:
        # versions whose risk is not counted yet are completed after the page (a fresh session's first count
        # loads the compiled kernels): the page reaches the browser first, even when it stops early
        finish_timeline = sidebar.render_timeline(defer=True)
        glossary_ui.render_sidebar()
    try:
        nav.run()
    finally:
        finish_timeline()
    chart_code.load_once()  # the page is complete: the browser's chart code, while the officer reads
    prefetch.start_default_comparison()  # and the Compare page's table
