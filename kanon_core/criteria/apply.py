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


def blanked_group_fails(table: ClassTable, failing: np.ndarray, criteria: Sequence[Criterion]) -> bool:
    """Whether the records of the classes ``failing`` of ``table``, blanked together on every QI, fail any of
    ``criteria`` as the one class they form in the release.

    Why: blanking a failing class does not take its records out of the release; their other variables stay.
    An intruder who knows a person of such a class looks for the released records consistent with that
    person's values, and a record blank on every QI is consistent with everyone: the person is among the
    blanked records (and any other record that still matches). So the blanked records are a class of the
    release like any other, and must meet the criteria as one: at least k of them, diverse enough in the
    sensitive variables. One blanked record of a unique person in region c would otherwise be found at once,
    with its income, while counting it "exempt from k" (as ARX, whose suppressed records leave the release)
    calls the release k-anonymous. No record blanked: nothing to fail.

    The group is evaluated under category semantics: its records agree on every QI (all blank), whatever the
    file's semantics, and the other records of the table are pooled into a second class so that criteria
    comparing a class with the whole file (t-closeness) see the whole file's distribution.
    """
    failing = np.asarray(failing, dtype=bool)
    if not failing.any():
        return False
    pooled = table.pool(failing)
    ev = Evaluation(pooled, "category", pooled.class_sizes("category", 1.0, wildcard_split=False))
    fail, _ = failing_records(list(criteria), ev)
    return bool(fail[0])


def blank_group_of(ds: Dataset, qis: Sequence[str], criteria: Sequence[Criterion | str]) -> tuple[int, bool]:
    """The records of ``ds`` blank on every QI of ``qis`` (the group a release's record suppression makes) and
    whether, as one class, they fail any of ``criteria`` (:func:`blanked_group_fails`)."""
    crit = [parse_criterion(c) if isinstance(c, str) else c for c in criteria]
    sensitive = sorted({s for c in crit for s in c.sensitive})
    weighted = any(getattr(c, "weighted", False) for c in crit)
    table = ClassTable.from_dataset(ds, qis, weighted=weighted, sensitive=sensitive)
    blank = (table.codes < 0).all(axis=1)
    if not blank.any():
        return 0, False
    return int(table.count[blank].sum()), blanked_group_fails(table, blank, crit)


def suppress_failing(ds: Dataset, qis: Sequence[str], criteria: Sequence[Criterion | str]) -> tuple[Dataset, int]:
    """Blank every QI of the records whose class fails a criterion; returns the data and their number."""
    from ..treat.recode import blank_records

    return blank_records(ds, qis, failing_record_mask(ds, qis, criteria))
