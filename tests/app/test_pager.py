"""The pager's arithmetic: every row on exactly one page, in order, pages clamped to those there are."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_app.pager import page_count, page_slice


@given(st.integers(0, 5000), st.integers(1, 200))
def test_pages_cover_every_row_once_in_order(n_rows, page_rows):
    pages = page_count(n_rows, page_rows)
    rows = [r for p in range(1, pages + 1) for r in range(*page_slice(n_rows, p, page_rows))]
    assert rows == list(range(n_rows))
    assert all(0 < page_slice(n_rows, p, page_rows)[1] - page_slice(n_rows, p, page_rows)[0] <= page_rows
               for p in range(1, pages + 1)) or n_rows == 0


def test_hand_counted_pages_and_clamping():
    assert page_count(0) == 1 and page_count(50) == 1 and page_count(51) == 2
    assert page_slice(120, 2, 50) == (50, 100)
    assert page_slice(120, 3, 50) == (100, 120)
    assert page_slice(120, 9, 50) == (100, 120)  # beyond the last page: the last
    assert page_slice(120, 0, 50) == (0, 50)
    with pytest.raises(ValueError):
        page_count(3, 0)
