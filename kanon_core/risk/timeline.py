"""A one-line risk summary per version, for the history timeline and the report."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from .classes import compute_class_sizes


@dataclass(frozen=True)
class VersionRisk:
    n_qis: int
    k: int
    n_violating: int
    k_achieved: int
    suppressed_cells: int


def suppressed_cells(original: Dataset, treated: Dataset, columns: list[str] | None = None) -> dict[str, int]:
    """Cells missing in ``treated`` but observed in ``original`` (same records), per variable."""
    if original.n_records != treated.n_records:
        raise ValueError("versions must have the same records")
    cols = columns if columns is not None else [c for c in treated.roles.qis if c in original.frame.columns]
    out = {}
    for c in cols:
        if c in original.frame.columns and c in treated.frame.columns:
            out[c] = int((treated.missing_mask(c) & ~original.missing_mask(c)).sum())
    return out


def version_risk(original: Dataset, ds: Dataset, k: int) -> VersionRisk | None:
    """Violations at k under the version's own QIs and semantics; None when it has no QIs."""
    if not ds.roles.qis:
        return None
    fk = compute_class_sizes(ds.qi_matrix().codes, ds.missing).fk
    sup = suppressed_cells(original, ds) if original.n_records == ds.n_records else {}
    return VersionRisk(
        n_qis=len(ds.roles.qis),
        k=k,
        n_violating=int((fk < k).sum()),
        k_achieved=int(fk.min()) if len(fk) else 0,
        suppressed_cells=int(np.sum(list(sup.values()))) if sup else 0,
    )
