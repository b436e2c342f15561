"""Whole numbers a double cannot hold: one definition for every place that computes or writes in floats.

A double holds every whole number up to 2^53 exactly; beyond it two neighbouring codes share one double
(9007199254740993 becomes 9007199254740992). Codes that long occur (identifiers, long geographic codes), and a
step that passes them through floats would silently make two codes one, so such steps count them and refuse.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MAX_EXACT_WHOLE = 2 ** 53
"""The largest magnitude up to which every whole number has its own double."""


def count_beyond_double(values: pd.Series) -> int:
    """How many values are whole numbers of magnitude beyond :data:`MAX_EXACT_WHOLE`.

    Integer columns are compared as integers; an object column counts its Python or NumPy integers (codes
    longer than 19 digits are read as Python integers). Decimals are not counted: they are doubles already,
    and written as the same doubles.
    """
    if values.dtype.kind in "iu":
        arr = values.dropna().to_numpy()
        if values.dtype.kind == "u":
            return int((arr > MAX_EXACT_WHOLE).sum())
        return int(((arr > MAX_EXACT_WHOLE) | (arr < -MAX_EXACT_WHOLE)).sum())
    if values.dtype.kind == "O":
        return sum(1 for v in values.tolist()
                   if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                   and abs(int(v)) > MAX_EXACT_WHOLE)
    return 0
