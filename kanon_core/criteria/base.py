"""The privacy-criterion interface: one object per criterion, checked on a class table, combined with AND.

A criterion says which *classes* of a :class:`~kanon_core.classtable.ClassTable` fail it (their records
would have to be suppressed for a release to satisfy it). A release satisfies a set of criteria under a
record-suppression limit when the records of the classes failing *any* of them are at most the limit;
this is ARX's rule (Prause et al., the ARX documentation of ``PrivacyCriterion``), and the one the
generalization lattice and every treatment use.

``monotonic`` is a promise used to prune the generalization lattice: if a node satisfies the criterion
under the suppression limit, so does every more general node. It must be argued in the criterion's
docstring and checked by brute force on small lattices; a criterion that is monotonic only without
suppression says so through :meth:`Criterion.monotonic_at`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from ..classtable import ClassTable
    from ..dataset import MissingSemantics
    from ..risk.classes import ClassSizes


@dataclass(frozen=True)
class Evaluation:
    """What is known about one table when criteria are checked: the table, its semantics, its sizes."""

    table: ClassTable
    missing: MissingSemantics
    sizes: ClassSizes  # per class (ClassTable.class_sizes)


@runtime_checkable
class Criterion(Protocol):
    """A privacy criterion on a class table."""

    @property
    def name(self) -> str:
        """A short name for messages and JSON ("k-anonymity", "distinct-l-diversity", ...)."""

    @property
    def spec(self) -> str:
        """The text that recreates it on the command line (``k=5``, ``l=3:occupation``, ``risk=0.05``)."""

    @property
    def sensitive(self) -> tuple[str, ...]:
        """Sensitive variables whose value counts the table must carry."""

    def monotonic_at(self, suppression_limit: int) -> bool:
        """True when satisfying it at a node implies satisfying it at every more general node."""

    def failing_classes(self, ev: Evaluation) -> np.ndarray:
        """Boolean per class: the classes whose records fail the criterion."""


def failing_records(criteria: list[Criterion], ev: Evaluation) -> tuple[np.ndarray, int]:
    """Classes failing any criterion (AND of the criteria) and the number of records in them."""
    fail = np.zeros(ev.table.n_classes, dtype=bool)
    for c in criteria:
        fail |= np.asarray(c.failing_classes(ev), dtype=bool)
    return fail, int(ev.table.count[fail].sum())
