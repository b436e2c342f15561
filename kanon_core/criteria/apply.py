"""Suppress the records that fail privacy criteria: the replay of a generalization search's suppression.

The search counts, at the chosen node, the records of classes failing any criterion and suppresses them
(ARX's rule). A recipe step stores the criteria's specs and calls :func:`suppress_failing` on the
generalized file, which rebuilds the same class table (the generalized values are the node's classes)
and blanks every QI of those records, so a replay gives the same release.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..classtable import ClassTable
from ..dataset import Dataset
from .base import Criterion, Evaluation, failing_records, parse_criterion


def failing_record_mask(ds: Dataset, qis: Sequence[str], criteria: Sequence[Criterion | str]) -> np.ndarray:
    """Per record, whether its class on ``qis`` fails any of ``criteria`` (specs or objects)."""
    crit = [parse_criterion(c) if isinstance(c, str) else c for c in criteria]
    sensitive = sorted({s for c in crit for s in c.sensitive})
    weighted = any(getattr(c, "weighted", False) for c in crit)
    table = ClassTable.from_dataset(ds, qis, weighted=weighted, sensitive=sensitive)
    semantics = "wildcard" if ds.missing == "wildcard" and bool((table.codes < 0).any()) else "category"
    split = any(getattr(c, "alpha", 1.0) < 1.0 for c in crit)
    ev = Evaluation(table, semantics, table.class_sizes(semantics, 1.0, wildcard_split=split))
    fail, _ = failing_records(crit, ev)
    return table.per_record(fail)


def suppress_failing(ds: Dataset, qis: Sequence[str], criteria: Sequence[Criterion | str]) -> tuple[Dataset, int]:
    """Blank every QI of the records whose class fails a criterion; returns the data and their number."""
    from ..treat.recode import blank_records

    return blank_records(ds, qis, failing_record_mask(ds, qis, criteria))
