"""Choosing among the categories of a variable that has very many (a postcode of 100,000 values).

A select box sends every option to the browser, which freezes on 100,000 of them, and an officer cannot
scroll through them anyway. A variable with more than :data:`MAX_OPTIONS` categories gets a search field
instead: the options are the categories whose label contains the text typed (at most :data:`MAX_OPTIONS`,
the first in the variable's order), or, before anything is typed, the categories with the most records. A
caption always says how many categories there are and how many are listed; categories already chosen stay
listed, so a search for others never drops them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from kanon_core.fmt import markdown_literal

MAX_OPTIONS = 200
"""Options a select box lists at once: a screenful to scroll, cheap for the browser."""


def listed_categories(column: str, labels: Sequence[str], counts: Sequence[int], chosen: Sequence[int],
                      find_key: str) -> list[int]:
    """The category indices to offer for ``column`` (all of them up to :data:`MAX_OPTIONS`), with the
    search field (widget ``find_key``) and a caption when there are more. ``chosen`` (indices already
    selected) are always among them, first."""
    n = len(labels)
    if n <= MAX_OPTIONS:
        return list(range(n))
    text = st.text_input(f"Find categories of {column} ({n:,} categories: type part of one to list it)",
                         key=find_key, placeholder="part of a category, e.g. its first characters")
    if text.strip():
        hits = matching(labels, text.strip())
        shown = hits[:MAX_OPTIONS]
        more = (f"; the first {MAX_OPTIONS:,} are listed, type more to narrow" if len(hits) > MAX_OPTIONS
                else "")
        st.caption(markdown_literal(f'{len(hits):,} of {n:,} categories contain "{text.strip()}"{more}.'))
    else:
        shown = np.argsort(-np.asarray(counts, dtype=np.int64), kind="stable")[:MAX_OPTIONS]
        st.caption(markdown_literal(f"{column} has {n:,} categories: the {MAX_OPTIONS:,} with the most records "
                                    "are listed; type in the field above to find the others."))
    valid = [int(i) for i in chosen if isinstance(i, int | np.integer) and 0 <= int(i) < n]
    return list(dict.fromkeys([*valid, *(int(i) for i in shown)]))


def matching(labels: Sequence[str], text: str) -> np.ndarray:
    """Indices of the labels containing ``text`` (ignoring case), in their order: one vectorised pass."""
    found = pd.Series(labels, dtype=object).astype(str).str.contains(text, case=False, regex=False)
    return np.flatnonzero(found.to_numpy(dtype=bool))
