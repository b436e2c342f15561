"""MINUCs by counting every QI subset, table by table: for many distinct rows and few QIs.

The pairwise search of :mod:`kanon_core.risk.minucs` compares every unsafe distinct row (a class of a class
table, or a distinct record of a file in memory) with every other: its cost is (unsafe rows) x (rows),
which a census with millions of classes cannot pay (a 1M-row table of 677,548 classes took 372 s at sizes
up to 2). With few QIs the other classical route is cheaper: count each subset of QIs once, as mu-Argus
and Wilson et al. (RTI) tabulate combinations, and read every record's MINUCs off the counts.

Definition (the same as :mod:`kanon_core.risk.minucs`). count(r, S) is the number of records that agree
with record r on every QI of S (under wildcard semantics a missing value of the other record agrees with
anything, and only sets of QIs r has observed are r's combinations; under category semantics missing is a
value). S is unsafe for r when count(r, S) < k, and a MINUC of r when it is unsafe and every proper subset
is safe.

Argument. (1) count(r, S) only falls when S grows (agreeing on more QIs is harder), so unsafe sets are
closed upwards and S is minimal exactly when S is unsafe and each immediate subset S \\ {j} is safe: if a
proper subset T were unsafe, the immediate subset S \\ {j} with j outside T would contain T and be unsafe
too. (2) count(r, S) is the class size of r's class in the table projected on S: the projection merges
the classes that agree on S, summing their records, and under wildcard semantics the wildcard class size
of the projected table counts exactly the classes that agree with r wherever both are observed on S.
(3) A class whose size on all its QIs is at least k is safe on every subset by (1), so only the classes
below k (here "unsafe rows") are followed. (4) Under wildcard semantics a set holding a QI that r has
missing is not r's combination: it is marked safe for r, which changes no minimality test of r's own
combinations (their subsets hold only QIs r has observed). So the unsafe bit of every (row, subset) pair,
then the test of (1) on 64 rows at a time, gives every MINUC of every row up to ``max_size`` and nothing
else. The tests check this against brute force over all subsets and against the pairwise search.

Cost. The projections are made by rolling each table up from a parent one QI larger, depth first, so only
the first levels group all the classes and the tables shrink below: every subset up to ``max_size`` is
visited once, with the larger ones it is reached through (:func:`visit_count`). Memory: one bit per
unsafe row and subset (:func:`bits_needed`), the tables along one path of the tree, and the per-row tallies
of :class:`~kanon_core.risk.minucs.MinucSummary` (and, when the MINUCs are kept, their masks, written in a
second pass over the bits once the tallies give each row's run). The root's subtrees run on two threads;
the caller's thread tells the progress. The search suits many distinct rows and few QIs; the pairwise one
suits many QIs, where 2^q subsets are too many: :func:`choose_method` weighs the two.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from math import comb
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..dataset import MissingSemantics
from ..errors import Cancelled, InputError
from ..progress import Progress, report
from .keys import group_ids

if TYPE_CHECKING:
    from ..classtable import ClassTable
    from .minucs import Collapsed, MinucSummary

MinucMethod = Literal["auto", "pairs", "subsets"]
METHODS: tuple[str, ...] = ("auto", "pairs", "subsets")
METHOD_TEXT = {
    "pairs": "by comparing every distinct record below k with every other (its cost grows with the square of "
             "their number: suited to many QIs and a survey-sized file)",
    "subsets": "by counting every combination of QIs up to the maximum size, one table per combination (its "
               "cost grows with the distinct records times the combinations: suited to many records and "
               "few QIs)",
}
"""How each method finds the MINUCs, in words for the pages (a class of a large file is a distinct record)."""

BIT_BUDGET = 1 << 30
"""Bytes of unsafe bits (one per unsafe row and subset) and plan the subset search may hold; beyond, it
refuses (and ``auto`` runs the pairwise search)."""

SECONDS_PER_PAIR = 2.5e-10
"""Seconds per (unsafe class, class, QI) of the pairwise search on one core of the benchmark machine."""

SECONDS_PER_GROUPED_ROW = 1.6e-8
"""CPU seconds per (projection, class of the whole table) of the subset search: 1M generated rows, 677,548
classes, all 1,023 projections of 10 QIs took 10.9 CPU s (sizes up to 3: 5.9e-9 per pair)."""

SECONDS_PER_PROJECTION = 1e-3
"""Seconds each projection costs whatever its size (the calls, the plan lookups, the pattern grouping): on
the bundled sample's 8 QIs (255 projections of about 15,000 classes) the search took 0.26-0.36 s, where
the pairwise one took 0.22 s, and on 12 QIs (4,095 projections) 5 s against 0.1 s."""

ROOT_SHARE = 0.08
"""A projection costs on average this share of the first one, made from the whole table (measured on the
same run: 0.135 s for the first, 0.0106 s on average): the tables shrink as QIs are dropped."""


@dataclass(frozen=True)
class SubsetPlan:
    """The subsets searched (bit masks, ascending), their sizes and their immediate subsets' indices."""

    masks: np.ndarray  # (n,) uint64
    sizes: np.ndarray  # (n,) int64
    below: np.ndarray  # (n, max(limit, 1)) int64, -1 padded; a single QI has none

    def index(self, mask: int) -> int:
        return int(np.searchsorted(self.masks, np.uint64(mask)))


def n_searched(q: int, limit: int) -> int:
    """Subsets of 1..limit of q QIs."""
    return sum(comb(q, s) for s in range(1, limit + 1))


def subset_plan(q: int, limit: int) -> SubsetPlan:
    """Every subset of 1..``limit`` of ``q`` QIs with the indices of its immediate subsets."""
    if q <= 22:
        masks = np.arange(1, 1 << q, dtype=np.uint64)
        if limit < q:
            from .minucs import popcount

            masks = masks[popcount(masks) <= limit]
    else:
        masks = np.array(sorted(sum(1 << j for j in c) for s in range(1, limit + 1)
                                for c in combinations(range(q), s)), dtype=np.uint64)
    from .minucs import popcount

    sizes = popcount(masks)
    below = np.full((len(masks), max(limit, 1)), -1, dtype=np.int64)
    filled = np.zeros(len(masks), dtype=np.int64)
    for j in range(q):
        bit = np.uint64(1) << np.uint64(j)
        has = ((masks & bit) != 0) & (sizes > 1)
        rows = np.flatnonzero(has)
        below[rows, filled[rows]] = np.searchsorted(masks, masks[rows] & ~bit)
        filled[rows] += 1
    return SubsetPlan(masks=masks, sizes=sizes, below=below)


def visit_count(q: int, limit: int) -> int:
    """Projections the depth-first roll-up makes: every subset up to ``limit`` and the larger sets it is
    reached through (see :meth:`_Search.visit`), the full set included."""
    return _visits(q, 0, limit)


@lru_cache(maxsize=4096)
def _visits(m: int, rest: int, limit: int) -> int:
    """Nodes of the tree under S = {0..m-1} plus ``rest`` QIs above m (see :meth:`_Search.visit`)."""
    if m + rest == 1:
        return 1
    return 1 + sum(_visits(j, m - 1 - j + rest, limit) for j in range(m) if m - 1 - j + rest <= limit)


def bits_needed(n_unsafe: int, q: int, limit: int) -> int:
    """Bytes of the unsafe bits (one per unsafe row and searched subset, in 64-row words) and of the plan
    (each subset's mask, size and immediate subsets)."""
    return n_searched(q, limit) * (((n_unsafe + 63) // 64) * 8 + 16 + 8 * max(limit, 1))


KEY_BITS = 64
"""A projected table whose QIs' codes fit this many bits is held as one packed key per class."""


@dataclass
class _KeyNode:
    """A projected table as one 64-bit key per class (each QI's code + 1 in its own field, 0: missing),
    its record counts, and the class of every unsafe row. ``fields[i]`` is the field of QI ``qis[i]``."""

    mask: int
    qis: np.ndarray  # (s,) int64
    fields: np.ndarray  # (s,) uint64
    keys: np.ndarray
    count: np.ndarray
    of_unsafe: np.ndarray
    may_miss: np.ndarray  # (s,) bool: the QI has missing values in the table

    @classmethod
    def of_codes(cls, mask: int, cols: tuple[int, ...], codes: np.ndarray, count: np.ndarray,
                 of_unsafe: np.ndarray) -> _KeyNode:
        from ._wildcard_kernel import pack_keys
        from .classes import packed_fields

        widths = packed_fields(codes) if len(codes) else np.ones(len(cols), np.int64)
        shifts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.uint64)
        fields = ((np.uint64(1) << widths.astype(np.uint64)) - np.uint64(1)) << shifts
        return cls(mask, np.array(cols, dtype=np.int64), fields, pack_keys(np.ascontiguousarray(codes), shifts),
                   count, of_unsafe, (codes < 0).any(axis=0))

    @property
    def n_qis(self) -> int:
        return len(self.qis)

    def roll_up(self, j: int) -> _KeyNode:
        """The table without QI ``j``: its field cleared, classes that now agree merged (compiled)."""
        from ._subset_kernel import roll_up_keys

        p = int(np.flatnonzero(self.qis == j)[0])
        keys, count, of_unsafe = roll_up_keys(self.keys, self.count, ~self.fields[p], self.of_unsafe)
        return _KeyNode(self.mask & ~(1 << j), np.delete(self.qis, p), np.delete(self.fields, p), keys, count,
                        of_unsafe, np.delete(self.may_miss, p))

    def class_sizes(self, wildcard: bool) -> np.ndarray:
        """Each class's size: its records, plus under wildcard semantics those of every class agreeing with
        it wherever both are observed (the pattern-pair join of :mod:`kanon_core.risk.classes`, on the keys)."""
        from .classes import group_by_pattern, join_pattern_groups

        if not wildcard or not self.may_miss.any():
            return self.count
        weights = self.count.astype(np.float64)
        groups = group_by_pattern(self.keys, self.fields, self.fields[self.may_miss], self.count, weights)
        if len(groups.values) == 1 and groups.values[0] == 0:
            return self.count
        return join_pattern_groups(groups, self.count, weights, False)[0]


@dataclass
class _CodesNode:
    """A projected table as a codes matrix (columns ``cols``), for QIs whose codes do not fit one key."""

    mask: int
    cols: tuple[int, ...]
    codes: np.ndarray
    count: np.ndarray
    of_unsafe: np.ndarray

    @property
    def n_qis(self) -> int:
        return len(self.cols)

    def roll_up(self, j: int) -> _KeyNode | _CodesNode:
        """The table without QI ``j`` (grouped as any codes are), packed once its codes fit one key."""
        from .classes import packed_fields

        p = self.cols.index(j)
        sub = np.delete(self.codes, p, axis=1)
        gid, _ = group_ids(sub)
        n_new = int(gid.max()) + 1 if len(gid) else 0
        first = np.zeros(n_new, dtype=np.int64)
        first[gid[::-1]] = np.arange(len(gid) - 1, -1, -1)
        count = np.bincount(gid, weights=self.count, minlength=n_new).astype(np.int64)
        child = (self.mask & ~(1 << j), self.cols[:p] + self.cols[p + 1:], sub[first], count, gid[self.of_unsafe])
        widths = packed_fields(child[2])
        return _KeyNode.of_codes(*child) if widths is not None and widths.sum() <= KEY_BITS else _CodesNode(*child)

    def class_sizes(self, wildcard: bool) -> np.ndarray:
        from .classes import _wildcard_unique

        if wildcard and (self.codes < 0).any():
            return _wildcard_unique(self.codes, self.count, self.count.astype(np.float64), "auto", False)[0]
        return self.count


def _root(codes: np.ndarray, count: np.ndarray, unsafe_rows: np.ndarray) -> _KeyNode | _CodesNode:
    """The class table itself: packed when its codes fit one key."""
    from .classes import packed_fields

    q = codes.shape[1]
    widths = packed_fields(codes)
    node = (((1 << q) - 1), tuple(range(q)), codes, count, unsafe_rows.astype(np.int64))
    return _KeyNode.of_codes(*node) if widths is not None and widths.sum() <= KEY_BITS else _CodesNode(*node)


class _Search:
    """The state of one search: the plan, the unsafe bits and what the visits have learnt."""

    def __init__(self, codes: np.ndarray, unsafe_rows: np.ndarray, k: int, missing: MissingSemantics, limit: int,
                 progress: Progress | None) -> None:
        self.q = codes.shape[1]
        self.k = k
        self.limit = limit
        self.wildcard = missing == "wildcard"
        self.plan = subset_plan(self.q, limit)
        self.n_words = (len(unsafe_rows) + 63) // 64
        self.bits = np.zeros((len(self.plan.masks), self.n_words), dtype=np.uint64)
        observed = codes[unsafe_rows] >= 0
        self.observed = ((observed.astype(np.uint64) << np.arange(self.q, dtype=np.uint64)).sum(
            axis=1, dtype=np.uint64) if self.wildcard else np.zeros(0, dtype=np.uint64))
        n_eligible = observed.sum(axis=1) if self.wildcard else np.full(len(unsafe_rows), self.q)
        self.can_grow = n_eligible > limit  # rows with combinations larger than the limit
        self.complete = True
        self.progress = progress
        self.visits = visit_count(self.q, limit)
        self.done = 0
        self.lock = threading.Lock()
        self.owner = threading.get_ident()  # the caller's thread: the only one that tells the progress
        self.stopped = False

    def evaluate(self, node: _KeyNode | _CodesNode) -> None:
        """Set the unsafe bits of every unsafe row on ``node``'s QIs (a subset searched)."""
        from ._subset_kernel import unsafe_bits

        size = node.class_sizes(self.wildcard)
        at_limit = node.n_qis == self.limit < self.q
        if unsafe_bits(size, node.of_unsafe, self.k, np.uint64(node.mask), self.observed, self.can_grow, at_limit,
                       self.bits[self.plan.index(node.mask)]):
            self.complete = False

    def visit(self, node: _KeyNode | _CodesNode, m: int, rest: int) -> None:
        """``node`` is S = {0..m-1} plus ``rest`` QIs above m (m = S's smallest absent QI). Its children in
        the tree drop one of 0..m-1, so every subset is reached once; a child whose QIs above its own
        smallest absent QI already exceed the limit has no descendant searched and is not made."""
        if self.stopped or (self.progress is not None and self.progress.cancelled):
            raise Cancelled("The computation was cancelled.")
        if node.n_qis <= self.limit:
            self.evaluate(node)
        with self.lock:
            self.done += 1
        if threading.get_ident() == self.owner:  # progress is told on the caller's thread only (a page's
            self.tell()                          # progress bar cannot be drawn from a worker)
        for j, child_rest in self.children(node, m, rest):
            self.visit(node.roll_up(j), j, child_rest)

    def tell(self) -> None:
        report(self.progress, 0.02 + 0.9 * self.done / self.visits,
               f"MINUCs by subsets: {self.done:,} of {self.visits:,} tables")

    def children(self, node: _KeyNode | _CodesNode, m: int, rest: int) -> list[tuple[int, int]]:
        """The QIs ``node`` drops to make its children in the tree, with each child's QIs above its own
        smallest absent QI; largest subtree first."""
        if node.n_qis == 1:  # the empty set below is safe for everyone
            return []
        return [(j, m - 1 - j + rest) for j in range(m - 1, -1, -1) if m - 1 - j + rest <= self.limit]

    def run(self, root: _KeyNode | _CodesNode, workers: int | None) -> None:
        """Visit the tree: the root here, its subtrees on ``workers`` threads, largest first (the subtree
        dropping QI j holds about twice as many tables as the one dropping j - 1, so two threads balance).
        Each thread holds the tables of one path; the bits of a subset are written by its one visit. This
        thread tells the progress (and a Cancel) every quarter second; the workers stop at their next table
        once the progress is cancelled."""
        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

        from .. import threads

        if root.n_qis <= self.limit:
            self.evaluate(root)
        with self.lock:
            self.done += 1
        self.tell()
        subtrees = self.children(root, self.q, 0)
        n = threads.workers(workers)
        if n == 1 or len(subtrees) <= 1 or threads.holds_slots():  # here (a slot holder must not wait for more)
            with threads.worker_slot():
                for j, rest in subtrees:
                    self.visit(root.roll_up(j), j, rest)
            return
        self.owner = -1  # no worker tells the progress: this thread polls
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="kanon-subsets") as pool:
            futures = threads.submit_all(pool, lambda jr: self.visit(root.roll_up(jr[0]), jr[0], jr[1]), subtrees)
            try:
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, timeout=0.25, return_when=FIRST_EXCEPTION)
                    for f in done:
                        f.result()  # a worker's error (or its Cancelled) is raised here
                    self.tell()  # raises Cancelled when the officer cancelled
            except BaseException:
                self.stopped = True  # the other workers stop at their next table
                for f in futures:
                    f.cancel()
                raise


def summarize_minucs_by_subsets(table: ClassTable, k: int = 2, missing: MissingSemantics = "wildcard",
                                max_size: int | None = None, progress: Progress | None = None,
                                workers: int | None = None) -> MinucSummary:
    """The counts of :func:`~kanon_core.risk.minucs.summarize_minucs_of_table` found by counting every QI
    subset on the class table (see the module's argument): equal counts, at a cost linear in the classes.

    ``complete`` is False when some row is safe on a set of ``max_size`` QIs and has more QIs it could add
    (a larger MINUC may exist); the combinations are flagged up to ``STAMP_MAX_BITS`` QIs, as there.
    """
    from .minucs import summarize_minucs_of_table

    return summarize_minucs_of_table(table, k, missing, max_size, progress, workers, method="subsets")


def search_subsets(names: tuple[str, ...], n_records: int, limit: int, col: Collapsed, fk: np.ndarray, k: int,
                   missing: MissingSemantics, progress: Progress | None, t0: float,
                   workers: int | None = None, keep: bool = False) -> MinucSummary:
    """The search of :func:`summarize_minucs_by_subsets` on distinct rows (checked codes, their record counts
    and each record's row: a class table's classes, or a file's distinct records) with their class sizes.
    With ``keep`` it returns a :class:`~kanon_core.risk.minucs.MinucResult`: every row's MINUCs as bit masks
    (ascending within a row), written in a second pass over the flags once the tallies give each row's run."""
    from ._minuc_kernel import STAMP_MAX_BITS
    from ._subset_kernel import fill_masks, tally_minimal
    from .minucs import MinucResult, MinucSummary

    codes = col.rows
    q = codes.shape[1]
    unsafe_rows = np.flatnonzero(fk < k)
    need = bits_needed(len(unsafe_rows), q, limit)
    if len(unsafe_rows) and need > BIT_BUDGET:
        raise InputError(f"Counting every subset would hold {need / 2**30:.1f} GiB of flags "
                         f"({n_searched(q, limit):,} subsets x {len(unsafe_rows):,} classes below k): "
                         "lower the maximum MINUC size, or use the pairwise search.")
    row_sizes = np.zeros((len(codes), q), dtype=np.int64)
    row_qis = np.zeros((len(codes), q), dtype=np.int64)
    complete = True
    found_masks = np.zeros(0, dtype=np.uint64)
    if len(unsafe_rows):
        search = _Search(codes, unsafe_rows, k, missing, limit, progress)
        search.run(_root(codes, col.mult, unsafe_rows), workers)
        report(progress, 0.93, "Tallying the minimal sets")
        found = tally_minimal(search.bits, search.plan.masks, search.plan.sizes, search.plan.below,
                              unsafe_rows.astype(np.int64), row_sizes, row_qis)
        complete = search.complete or limit >= q
        found_masks = search.plan.masks[found]
    common = dict(names=tuple(names), k=k, missing=missing, max_size=None if limit >= q else limit,
                  n_records=n_records, rows=col.rows, row_mult=col.mult, row_of_record=col.row_of_record,
                  row_sizes=row_sizes, row_qis=row_qis, combinations=found_masks if q <= STAMP_MAX_BITS else None,
                  complete=complete, method="subsets")
    if not keep:
        report(progress, 1.0, "MINUC search done")
        return MinucSummary(**common, seconds=time.perf_counter() - t0)
    offsets = np.concatenate([[0], np.cumsum(row_sizes.sum(axis=1))]).astype(np.int64)
    row_masks = np.zeros(int(offsets[-1]), dtype=np.uint32 if q <= 32 else np.uint64)
    if len(unsafe_rows):
        fill_masks(search.bits, search.plan.masks.astype(row_masks.dtype), search.plan.below,
                   unsafe_rows.astype(np.int64), offsets, row_masks)
    report(progress, 1.0, "MINUC search done")
    return MinucResult(**common, row_offsets=offsets, row_masks=row_masks, seconds=time.perf_counter() - t0)


def choose_method(n_classes: int, n_unsafe: int, q: int, limit: int, cores: int | None = None) -> str:
    """``subsets`` when counting every subset is forecast cheaper than comparing every class below k with
    every class and its flags fit :data:`BIT_BUDGET`, else ``pairs``.

    The pairwise search costs about (classes below k) x classes x QIs operations, the subset search about
    (projections made) x classes (the tables shrink as QIs are dropped; the constant is an average), both
    split over the cores, plus a fixed cost per projection (which decides small tables). The constants were timed on the benchmark machine; the choice only needs the order
    of magnitude, which differs by 100 times and more on a census table (1M rows: 2 s against 372 s).
    """
    if n_unsafe and bits_needed(n_unsafe, q, limit) > BIT_BUDGET:
        return "pairs"
    cores = max(1, cores or os.cpu_count() or 1)
    pairs = n_unsafe * n_classes * q * SECONDS_PER_PAIR / cores
    subsets = visit_count(q, limit) * (SECONDS_PER_PROJECTION + n_classes * SECONDS_PER_GROUPED_ROW / min(cores, q))
    return "subsets" if subsets < pairs else "pairs"


def estimate_seconds(codes: np.ndarray, count: np.ndarray, unsafe: np.ndarray, limit: int,
                     workers: int | None = None) -> float:
    """Forecast of the subset search's time: one projection of the whole table, timed on this machine, times
    the projections made (:func:`visit_count`) times :data:`ROOT_SHARE`, over the threads (an estimate of
    the order of magnitude: how fast the tables shrink depends on the data)."""
    from .. import threads

    q = codes.shape[1]
    t = time.perf_counter()
    with threads.worker_slot():
        root = _root(codes, count, np.flatnonzero(unsafe))
        if q > 1:
            root.roll_up(q - 1).class_sizes(True)
    one = time.perf_counter() - t
    visits = visit_count(q, limit)
    return visits * (SECONDS_PER_PROJECTION + one * ROOT_SHARE / min(threads.workers(workers), q))


def pick_method(method: str, n_classes: int, n_unsafe: int, q: int, limit: int) -> str:
    """The method asked for (checked), or the cheaper one for ``auto``."""
    if method not in METHODS:
        raise InputError(f"Unknown MINUC search method '{method}': choose {', '.join(METHODS)}.")
    return choose_method(n_classes, n_unsafe, q, limit) if method == "auto" else method
