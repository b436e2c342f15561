"""Carrying MINUCs over from an earlier search of the same records: the recode-and-recheck loop.

An officer recodes a few values, then searches the MINUCs again. Most records' MINUCs cannot have changed,
and this module says which, so that only the others are searched.

Why it is exact. Record u's MINUCs are a function of the multiset of its disagreement sets
D(u, w) over all records w (and of k and u's own missing QIs): count(u, S) is the number of records w with
D(u, w) disjoint from S (see :mod:`kanon_core.risk.minucs`). Call u's *block* in QI j the set of records
with the same code as u in j (the missing ones form one block). Under ``category`` semantics QI j is in
D(u, w) exactly when w is outside u's block. Under ``wildcard`` semantics it is when u and w are both
observed and w is outside u's block, so D(u, w) also depends on which records are missing in j. Say u is
*stable* when, in every QI, its block is the same set of records before and after, and (wildcard) the set of
records missing in each QI is the same. Then D(u, w) is the same for every w, so u's MINUCs are the same.
The test compares partitions, not codes, so a recode that renumbers the codes changes nothing.

A block is the same set exactly when u's group on the pair (code before, code after) is as large as its
group before and as its group after (the pair group lies in both), which is three counts per QI.

Records identical to a stable record u after the change are in u's block in every QI, hence identical to u
before and stable too: each distinct row of the new search is wholly stable or wholly not, and a stable one
has the same records as a distinct row of the earlier search. :func:`~kanon_core.risk.minucs.find_minucs`
checks both (and the row's record count), re-searches a few carried rows as a spot check of this argument,
and falls back to searching every row should any check fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..dataset import MissingSemantics, QIMatrix

if TYPE_CHECKING:
    from .minucs import MinucResult

SPOT_CHECK_ROWS = 16
"""Carried rows (with MINUCs before, or below k now) that each carrying search re-searches and compares with
what it carried: a run-time check of the argument above."""


@dataclass(frozen=True, eq=False)
class CarryPlan:
    """What a new search can take from ``prior``: per record of the new codes, the prior's distinct row
    whose MINUCs it keeps, or -1 when it must be searched."""

    prior: MinucResult
    prior_row: np.ndarray = field(repr=False)

    def serves(self, names: tuple[str, ...], k: int, missing: MissingSemantics, limit: int | None) -> bool:
        """Whether the prior answers the same question: the same QIs, k, semantics and size limit (None: all
        sizes), found completely by the pairwise search (the rows a size limit cut are not kept)."""
        return _same_question(self.prior, names, k, missing, limit)

    @property
    def n_records(self) -> int:
        return int(len(self.prior_row))

    @property
    def records_searched(self) -> int:
        return int((self.prior_row < 0).sum())


def _same_question(prior: MinucResult, names: tuple[str, ...], k: int, missing: MissingSemantics,
                   limit: int | None) -> bool:
    return (tuple(prior.names) == tuple(names) and prior.k == k and prior.missing == missing
            and prior.max_size == limit and prior.complete and prior.method == "pairs")


def stable_records(before: np.ndarray, after: np.ndarray, missing: MissingSemantics) -> np.ndarray:
    """Per record: whether every QI's block (records with its code; see the module) is the same before and
    after, and, under wildcard semantics, every QI's missing records are the same."""
    before = np.asarray(before)
    after = np.asarray(after)
    n, q = before.shape
    stable = np.ones(n, dtype=bool)
    for j in range(q):
        b = before[:, j].astype(np.int64) + 1
        a = after[:, j].astype(np.int64) + 1
        if missing == "wildcard" and not np.array_equal(b == 0, a == 0):
            return np.zeros(n, dtype=bool)
        nb, na = int(b.max(initial=0)) + 1, int(a.max(initial=0)) + 1
        pair = b * na + a
        _, pair_id, pair_count = np.unique(pair, return_inverse=True, return_counts=True)
        in_pair = pair_count[pair_id.reshape(-1)]
        stable &= (in_pair == np.bincount(b, minlength=nb)[b]) & (in_pair == np.bincount(a, minlength=na)[a])
    return stable


def plan_carry(prior: MinucResult, prior_codes: np.ndarray | QIMatrix, codes: np.ndarray | QIMatrix,
               k: int, missing: MissingSemantics, max_size: int | None) -> CarryPlan | None:
    """The records whose MINUCs a search of ``codes`` can take from ``prior`` (found on ``prior_codes``, the
    same records in the same order), or None when the prior cannot serve: other QIs, k, semantics or size
    limit, another number of records, or a prior cut short by its size limit (which rows it cut is not kept).
    """
    if not prior_answers(prior, prior_codes, k, missing, max_size) or not prior_answers(
            prior, codes, k, missing, max_size):
        return None
    before = np.asarray(prior_codes.codes if isinstance(prior_codes, QIMatrix) else prior_codes)
    after = np.asarray(codes.codes if isinstance(codes, QIMatrix) else codes)
    stable = stable_records(before, after, missing)
    return CarryPlan(prior=prior, prior_row=np.where(stable, prior.row_of_record, -1).astype(np.int64))


def prior_answers(prior: MinucResult, codes: np.ndarray | QIMatrix, k: int, missing: MissingSemantics,
                  max_size: int | None) -> bool:
    """Whether ``prior`` is a complete pairwise search, for k, ``missing`` and ``max_size``, of as many
    records with as many QIs as ``codes`` (and the same QI names, when ``codes`` has names)."""
    names = tuple(codes.names) if isinstance(codes, QIMatrix) else tuple(prior.names)
    arr = np.asarray(codes.codes if isinstance(codes, QIMatrix) else codes)
    if arr.ndim != 2 or len(prior.row_of_record) != len(arr) or prior.n_qis != arr.shape[1]:
        return False
    limit = None if max_size is None or max_size >= arr.shape[1] else int(max_size)
    return _same_question(prior, names, k, missing, limit)
