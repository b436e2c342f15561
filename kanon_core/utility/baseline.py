"""The "before" of every comparison: the original data seen with a version's roles and missing semantics.

Roles (weight, strata, PSUs, QIs) and the missing-value semantics are set as steps, so version 0 may have
none of them. Comparing a release with version 0 as loaded would then be unweighted while the release
is weighted. The Compare page (its default "Before") and the report both compare with this dataset.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dataset import Dataset
from ..history import History


def original_with_roles(history: History, vid: int | None = None) -> Dataset:
    """The original records and values with version ``vid``'s (default: the current one's) roles and
    missing semantics: the same design, the same QIs and the same counting as that version."""
    version = history.versions[history.current_id if vid is None else vid]
    treated = version.dataset
    return history.original.dataset.with_roles(treated.roles).with_missing(treated.missing)


def reads_alike(a: Dataset, b: Dataset, variables: Sequence[str]) -> bool:
    """Whether ``a`` and ``b`` read the same on ``variables``: the same cells (of the same type), the same
    missing cells and the same labels, everything a weighted percentage or a model of them reads
    (:func:`~kanon_core.utility.survey.proportions`, :func:`~kanon_core.utility.formula.build_matrix`).
    An estimate of such variables on one is then the estimate on the other (with the same design), so a
    comparison makes it once: for a version before any treatment of them, every variable a recode left
    alone."""
    for v in variables:
        if not a.frame[v].equals(b.frame[v]) or a.meta_of(v) != b.meta_of(v):
            return False
        if not np.array_equal(a.missing_mask(v), b.missing_mask(v)):
            return False
    return True
