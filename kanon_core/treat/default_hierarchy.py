"""A starting hierarchy for every QI, so the optimal search can run before the officer builds any.

Hierarchy files next to the data (ARX's ``*_hierarchy_<variable>.csv``) win. Otherwise a numeric
variable with at least four values gets Angiuli & Waldo's greedy capacity binning at 1 %, 5 % and 20 % of the
records (adjacent values merged towards the closest mass, so ordinal codes keep their order and bins
stay narrow); any other variable gets the two-level hierarchy original → ``*`` (keep or drop). These
are proposals: the Recode page shows them and the officer replaces them with meaningful groupings.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from .hierarchy import TOP, Hierarchy, find_hierarchy_file, greedy_binning_hierarchy, read_arx_hierarchy

CAPACITY_SHARES = (0.01, 0.05, 0.20)


def default_hierarchy(ds: Dataset, column: str) -> Hierarchy:
    """The automatic hierarchy of one variable (see the module docstring)."""
    qm = ds.qi_matrix([column])
    values = qm.values[0]
    if not values:
        raise InputError(f"Variable '{column}' has no observed values; it needs no hierarchy.")
    codes = qm.codes[:, 0]
    observed = int((codes >= 0).sum())
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                  for v in values)
    if numeric and len(values) >= 4:
        caps = sorted({max(2, math.ceil(share * observed)) for share in CAPACITY_SHARES})
        data = np.asarray(values, dtype=np.float64)[codes[codes >= 0]]
        return greedy_binning_hierarchy(data, caps, name=column)
    texts = [str(v) for v in values]
    return Hierarchy(tuple((t, TOP) for t in texts), column)


def default_hierarchies(
    ds: Dataset, columns: Sequence[str], directory: str | os.PathLike | None = None
) -> dict[str, Hierarchy]:
    """Hierarchies for ``columns``: from ARX files in ``directory`` where present, else automatic."""
    out = {}
    for c in columns:
        path = find_hierarchy_file(directory, c) if directory is not None else None
        out[c] = read_arx_hierarchy(path, c) if path is not None else default_hierarchy(ds, c)
    return out
