"""The "before" of every comparison: the original data seen with a version's roles and missing semantics.

Roles (weight, strata, PSUs, QIs) and the missing-value semantics are set as steps, so version 0 may have
none of them. Comparing a release with version 0 as loaded would then be unweighted while the release
is weighted. The Compare page (its default "Before") and the report both compare with this dataset.
"""

from __future__ import annotations

from ..dataset import Dataset
from ..history import History


def original_with_roles(history: History, vid: int | None = None) -> Dataset:
    """The original records and values with version ``vid``'s (default: the current one's) roles and
    missing semantics: the same design, the same QIs and the same counting as that version."""
    version = history.versions[history.current_id if vid is None else vid]
    treated = version.dataset
    return history.original.dataset.with_roles(treated.roles).with_missing(treated.missing)
