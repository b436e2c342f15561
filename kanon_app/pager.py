"""Long tables shown a page of rows at a time.

A browser table of thousands of rows costs a second or more to serialise, send and draw on every rerun, and
the officer reads a screenful. :func:`paged` shows one page of a frame with a page chooser and a caption
saying which rows are shown of how many; every row stays reachable by paging (nothing is cut off), and the
rows are exactly those of the frame, in its order.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

PAGE_ROWS = 50
"""Rows per page: a screenful, cheap to draw."""


def page_count(n_rows: int, page_rows: int = PAGE_ROWS) -> int:
    """Pages needed for ``n_rows`` rows (at least one, so an empty table still has its page)."""
    if page_rows <= 0:
        raise ValueError("page_rows must be positive")
    return max(1, math.ceil(n_rows / page_rows))


def page_slice(n_rows: int, page: int, page_rows: int = PAGE_ROWS) -> tuple[int, int]:
    """The ``[start, stop)`` rows of page ``page`` (1-based; clamped to the pages there are)."""
    page = min(max(int(page), 1), page_count(n_rows, page_rows))
    start = (page - 1) * page_rows
    return start, min(start + page_rows, n_rows)


def paged(frame: pd.DataFrame, key: str, page_rows: int = PAGE_ROWS, noun: str = "rows") -> pd.DataFrame:
    """The page of ``frame`` chosen with a page input keyed ``key`` (style the page, not the whole frame).

    The input appears only when there is more than one page, with a caption "rows 51–100 of 1,234". A page
    number beyond the last (the table shrank, e.g. under a filter) shows the last page.
    """
    n = len(frame)
    pages = page_count(n, page_rows)
    if pages == 1:
        st.session_state.pop(key, None)  # a table that grows again starts on its first page
        return frame
    current = st.session_state.get(key, 1)
    if not isinstance(current, int) or not 1 <= current <= pages:
        st.session_state[key] = min(max(int(current) if isinstance(current, int | float) else 1, 1), pages)
    c1, c2 = st.columns([1, 4], vertical_alignment="bottom")
    page = int(c1.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages, step=1, key=key))
    start, stop = page_slice(n, page, page_rows)
    c2.caption(f"{noun} {start + 1:,}–{stop:,} of {n:,}")
    return frame.iloc[start:stop]
