"""A one-line risk summary per version, for the history timeline and the report."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..utility.suppressed import suppressed_mask
from .classes import ClassSizes, compute_class_sizes


@dataclass(frozen=True)
class VersionRisk:
    n_qis: int
    k: int
    n_violating: int
    k_achieved: int
    suppressed_cells: int
    alpha: float = 1.0


def version_risk(original: Dataset, ds: Dataset, k: int, alpha: float = 1.0,
                 sizes: ClassSizes | None = None) -> VersionRisk | None:
    """Violations at k under the version's own QIs and semantics (wildcard matches weighed by sdcMicro's
    ``alpha``); None when it has no QIs.

    ``sizes`` hands in the class sizes of the version's QI codes already counted under its semantics with
    the wildcard split (:func:`compute_class_sizes`, e.g. those of the Risk page's summary), so one file is
    counted once; they are taken at ``alpha``, as if counted here.
    """
    if not ds.roles.qis:
        return None
    if sizes is None:
        fk = compute_class_sizes(ds.qi_matrix().codes, ds.missing, alpha=alpha).fk
    else:
        sizes.check_counted_on(ds.n_records, ds.missing)
        fk = sizes.at_alpha(alpha).fk
    # the QIs present in both versions: a variable added later has nothing suppressed yet
    sup = suppressed_mask(original, ds).total if original.n_records == ds.n_records else 0
    return VersionRisk(
        n_qis=len(ds.roles.qis),
        k=k,
        n_violating=int((fk < k).sum()),
        k_achieved=int(np.floor(fk.min())) if len(fk) else 0,
        suppressed_cells=sup,
        alpha=float(alpha),
    )
