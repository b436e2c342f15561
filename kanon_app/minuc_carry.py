"""The MINUCs page's carry-over: the MINUCs of an earlier version's search that a new search can keep.

After a recode the officer searches again; the records the recode did not touch keep their MINUCs
(:mod:`kanon_core.risk.minucs_carry` says which and why), taken from the nearest earlier version on the
current version's line whose search, for the same QIs, k, size limit and semantics, this session holds.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from kanon_core.dataset import QIMatrix
from kanon_core.errors import KanonError
from kanon_core.risk.minucs_carry import CarryPlan, plan_carry

from . import state
from .prefetch import earlier_minuc_search


@dataclass(frozen=True)
class Carry:
    """A plan to carry MINUCs over, and the version they come from."""

    plan: CarryPlan
    version_id: int

    def text(self) -> str:
        """What the page says before the search (its estimate is of the records searched again)."""
        n, searched = self.plan.n_records, self.plan.records_searched
        return (f"Version v{self.version_id}'s search is reused: {n - searched:,} of {n:,} records keep their "
                f"MINUCs (the change did not touch them); the estimate is for the {searched:,} searched again.")


def earlier_search(params: Hashable, qis: tuple[str, ...], qm: QIMatrix, k: int, missing: str,
                   max_size: int | None) -> Carry | None:
    """The carry-over for the MINUCs page's search ``params`` of the current version (None: no earlier
    version on its line has searched the same, or its QIs cannot be read)."""
    found = earlier_minuc_search(params)
    if found is None:
        return None
    version, prior = found
    try:
        prior_qm = state.memo("qi_matrix", tuple(qis), lambda ds=version.dataset: ds.qi_matrix(list(qis)),
                              version=version)
    except KanonError:
        return None
    plan = plan_carry(prior, prior_qm, qm, k, missing, max_size)
    return None if plan is None else Carry(plan, version.id)
