"""Optimal full-domain generalization: the best lattice node, exactly, under privacy criteria with suppression.

The lattice (Samarati; Sweeney's MinGen, 2002) has one node per choice of a level for every QI;
node A is below node B when A is at most as general as B on every QI. A node is *feasible* when the
records of the classes failing any of the privacy criteria (:mod:`kanon_core.criteria`: k-anonymity,
l-diversity, t-closeness, individual risk; combined with AND) are at most the suppression limit (ARX's
rule: those records are then suppressed). k alone is the criterion ``k=K``. The suppressed records are
blanked on every QI but stay in the release with their other variables, so together they are one more class
of it, consistent with every person an intruder looks for: a feasible node is *acceptable* (a release the
search may choose) when no record is suppressed or the suppressed ones meet the criteria as that one class
(:func:`acceptable`; at least k of them for k-anonymity). ARX counts them out, as its suppressed records leave
the release; one blanked record would otherwise be its person's only candidate. Three facts make the search
exact, and the last paragraph of fact 2 says why the acceptance rule leaves them intact:

1. **Monotonicity.** A criterion declared monotonic (argued in its docstring, checked by brute force) has a
   failing-record set that can only shrink when generalizing (or, without suppression, a passing node
   whose whole up-set passes). The AND of such criteria is monotonic too. The search classifies every
   node for the monotonic criteria by evaluating only a few: Flash's strategy (Kohlmayer et al. 2012) —
   walk the lattice bottom-up, build a path of unclassified nodes upwards, binary-search the path and
   *tag* the up-set of each passing node and the down-set of each failing one. No status is guessed
   (under category semantics the search of a path starts where the last path crossed the border, so its
   probes land next to it: :func:`_first_passing`; only where to look first is guessed).
   Criteria that are not monotonic (entropy and recursive l-diversity and t-closeness with suppression,
   individual risk) are evaluated only at nodes that pass the monotonic ones, and only while such a node
   could still beat the best loss found. With a positive suppression limit the promise is record by
   record, so a node also fails when the failing records of several passing nodes above it add up past
   the limit (:class:`_FailingUnion`): such nodes are tagged without being evaluated, and under wildcard
   semantics with k-anonymity alone the classes holding those records are not scanned at the nodes that
   are (used where a node is dear: wildcard semantics, or :data:`TRACK_CLASSES` input classes and more).
2. **Lower bounds.** Each metric's loss without suppression is monotone along the lattice and never
   exceeds the loss with suppression (:mod:`.metrics`). Candidates are examined in increasing order of
   a lower bound until the bound reaches the best loss found — every skipped node is provably no better.
   Because the records failing the monotonic criteria at a node also fail at every node below it, the
   suppression seen at an evaluated node raises the bound of everything below it (Prec, entropy,
   discernibility): most nodes that could only win by suppressing less are never counted.
   Under wildcard semantics discernibility gets such a bound too, from the levels alone, counted once per
   search from the pairs of input classes that differ on at most three QIs (:mod:`.discernibility_bound`: its
   argument, and when it is too costly to count).
   For the metrics whose bound follows from the levels alone (Prec, entropy, discernibility), the
   classification of fact 1 is itself limited to the nodes that could still win: a path starts only at a
   node whose bound is at most the least loss of a passing node found so far (ties included). A node never
   classified has a bound above that loss, which only falls as the search goes on, so it can never win, not
   even a tie; its status is not needed. (Its path still climbs past the band: a failing node there tags a
   large part of the band at once.) On the bundled sample's 8-QI search (wildcard, k = 3) this evaluates 299
   nodes at 0.5 % instead of 2,303, and returns the same node; with discernibility at 1 %, 479 nodes
   instead of 2,849: the passing nodes whose bound is within the band are counted as phase 1 finds them, so
   that the band has a ceiling, and that ceiling narrows the suppression limit of phase 1 for it (a node
   failing more records than the band leaves room for cannot win, nor can any node below it).
   Average class size (records / classes) has no bound from the levels, but every class table the search
   computes bounds its node and every node above (classes only merge upwards; with suppression the
   suppressed records count as one class, so the kept classes plus one are at most the classes): the path
   starts are limited the same way, every table classified raising the bounds above it, and under wildcard
   semantics each start's own table (a roll-up) read before its scan. On the bundled sample at k = 3 this evaluates 145 nodes at 1 % instead of 2,220
   (0.26 s instead of 2.3 s). (Under category semantics a node's classification is its roll-up: there the
   start's table read first skipped few starts on Adult and took 0.28 s instead of 0.15 s at 1 %.) The
   k-minimal nodes, which need every node classified, are listed on request (``k_minimal=True``).

   The acceptance rule is not monotonic (a node suppressing k records may be acceptable while the one above
   it, suppressing one, is not), so it takes no part in the classification: facts 1 and 2 classify and bound
   feasibility, which is. A node becomes the best found only once evaluated and acceptable; a feasible node
   that is not acceptable is, for the search, a node whose loss is infinite, and every bound of fact 2 is a
   lower bound of the loss, hence of that infinity too. So a node left unexamined still had a bound at least
   the least loss of an acceptable node, and the node returned is the optimum among the acceptable nodes
   (checked against every node of small random lattices and against the released file, from the intruder's
   side, in the tests).
3. **Roll-up on the class table.** The records are aggregated once into a class table
   (:class:`~kanon_core.classtable.ClassTable`: distinct QI rows with counts, weights and sensitive value
   counts). A node's table is computed from the evaluated node below it with the fewest classes by
   mapping its codes one level step up and merging equal rows — ARX's roll-up — so the work per node is
   proportional to the size of a small table, not to the file. On millions of classes the merge is
   partitioned by hash so that each part's table stays in the processor's cache, and only the chosen
   node's evaluation is kept in memory.

k-anonymity under wildcard semantics is tested by a compiled scan of the node's classes
(:mod:`._lattice_kernel`) that stops each class as soon as it has k matches and, when only the status is
asked, the whole node as soon as the failing records exceed the limit. Classes holding one that reached k
at the node the table was rolled up from, or at the bottom of the lattice (found once:
:meth:`NodeEvaluator._base_facts`), are not scanned. Every other criterion gets the
exact class sizes of :meth:`ClassTable.class_sizes` (patterns × patterns under wildcard semantics).
Discernibility's exact sizes under wildcard semantics come from a compiled count of their own
(:func:`~._lattice_kernel.wildcard_fk`), taken only at nodes that could still win and, in the quick search,
stopped once a node's discernibility without suppression passes the least loss found (its partial sum is
still a bound for it and the nodes above). A node tagged passing and never classified is first scanned for its
failing records, whose suppression floor, added to the bound it inherits, often shows that it cannot win without
the count. :func:`_check_left` checks the bounds of the nodes left so at run time.

sdcMicro's ``alpha`` enters k-anonymity only (``k=5:alpha=0.5``; ``LatticeProblem.alpha`` is the default
of the ``k`` argument): a record is small when its alpha-weighted fk is below k. Monotonicity still holds
(see :class:`~kanon_core.criteria.k_anonymity.KAnonymity`). The losses count every match in full.

Datafly (Sweeney 2002) is provided as the classic heuristic for comparison.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..classtable import ClassTable
from ..criteria.apply import blanked_group_fails
from ..criteria.base import Criterion, Evaluation, failing_records
from ..criteria.k_anonymity import KAnonymity
from ..dataset import Dataset, MissingSemantics, check_semantics
from ..errors import InfeasibleError, InputError, fewer_records_than_k
from ..progress import Progress, report, scaled_progress
from ..risk.classes import alpha_count
from ..risk.keys import group_ids
from .hierarchy import Hierarchy, LevelTables
from .metrics import (
    BANDED,
    LEVEL_BOUNDED,
    MetricContext,
    MetricName,
    NodeStats,
    check_metric,
    level_bounds,
    lower_bound,
    n_suppressed,
    suppressed_observed,
    suppression_bits,
)
from .metrics import loss as metric_loss

MAX_NODES = 2_000_000
"""Largest lattice searched exactly (the status of every node is held in memory)."""

CACHE_BYTES = 256 * 2**20
"""Class tables of evaluated nodes kept for roll-ups (the largest are dropped first beyond this)."""

TRACK_CLASSES = 100_000
"""Input classes from which a category-semantics search tells failing nodes by the union of passing nodes'
failing records (:class:`_FailingUnion`); below it a node's roll-up is cheaper than the bookkeeping."""

_KEY_LIMIT = 2**62
_NONE = np.iinfo(np.int64).max


# -- the problem ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LatticeProblem:
    """QI codes, the per-level lookup tables of each QI and the missing semantics.

    ``tables[j][l, c]`` is the generalized code of data code c of QI j at level l (dense, -1 never
    occurs: missing codes stay missing at every level). ``level_labels[j][l]`` names those codes.
    ``weights`` (per record, optional) and ``sensitive`` (name -> per-record value codes with -1 missing and
    the values behind them) are carried into the class table for criteria that need them.
    """

    qis: tuple[str, ...]
    codes: np.ndarray
    tables: tuple[np.ndarray, ...]
    missing: MissingSemantics = "wildcard"
    level_labels: tuple[tuple[tuple[str, ...], ...], ...] = ()
    hierarchies: tuple[Hierarchy, ...] = ()
    alpha: float = 1.0
    weights: np.ndarray | None = None
    sensitive: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # codes, values[, value labels]
    weighted: bool = False  # the file's sampling weights were asked for (None in ``weights``: it has none)
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ..risk.classes import check_alpha

        check_semantics(self.missing)
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        codes = np.ascontiguousarray(self.codes, dtype=np.int32)
        object.__setattr__(self, "codes", codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.tables) or codes.shape[1] != len(self.qis):
            raise InputError("The codes, tables and QI names do not agree.")
        if codes.shape[0] == 0:
            raise InputError("The data has no records.")
        for j, t in enumerate(self.tables):
            if t.ndim != 2 or t.shape[0] < 1 or (codes[:, j].max() >= t.shape[1]):
                raise InputError(f"The lookup table of '{self.qis[j]}' does not cover its codes.")

    @property
    def n_records(self) -> int:
        return int(self._derived.get("n_records", self.codes.shape[0]))

    @property
    def sensitive_names(self) -> tuple[str, ...]:
        """The sensitive variables whose value counts the class table carries."""
        if "n_records" in self._derived:  # built from an aggregated table
            return tuple(self._derived["table"].sensitive)
        return tuple(self.sensitive)

    @classmethod
    def from_table(cls, table: ClassTable, tables: Sequence[np.ndarray], missing: MissingSemantics = "wildcard",
                   level_labels: tuple = (), hierarchies: tuple = (), alpha: float = 1.0) -> LatticeProblem:
        """A problem on an already aggregated class table (an out-of-core engine's GROUP BY).

        The search only ever reads the class table, so the records are never expanded: ``codes`` holds one
        row per class, and the record count, weights and sensitive counts come from the table.
        """
        problem = cls(qis=tuple(table.qis), codes=table.codes, tables=tuple(tables), missing=missing,
                      level_labels=level_labels, hierarchies=hierarchies, alpha=alpha,
                      weighted=table.weight is not None)
        problem._derived["table"] = table
        problem._derived["n_records"] = table.n_records
        return problem

    @property
    def heights(self) -> np.ndarray:
        """Number of levels of each QI (0 .. height - 1)."""
        return np.array([t.shape[0] for t in self.tables], dtype=np.int64)

    @property
    def n_nodes(self) -> int:
        return int(math.prod(int(h) for h in self.heights))

    def class_table(self) -> ClassTable:
        """The records aggregated once: distinct QI rows with counts, weights and sensitive counts (cached)."""
        if "table" not in self._derived:
            self._derived["table"] = ClassTable.from_codes(self.codes, self.qis, self.weights, dict(self.sensitive))
        return self._derived["table"]

    def distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct input rows and their record counts (the classes of :meth:`class_table`)."""
        t = self.class_table()
        return t.codes, t.count

    def metric_context(self) -> MetricContext:
        if "ctx" not in self._derived:
            uniq, weight = self.distinct()
            self._derived["ctx"] = MetricContext.build(uniq, weight, self.tables)
        return self._derived["ctx"]

    def n_groups(self, j: int, level: int) -> int:
        """Number of codes of QI j at ``level`` (-1 data level: the data codes)."""
        t = self.tables[j]
        return int(t.shape[1]) if level < 0 else int(t[level].max(initial=-1)) + 1

    def lookup(self, j: int, a: int, b: int) -> np.ndarray:
        """Codes of QI j at level ``a`` (-1: data codes) mapped to level ``b``; the last entry maps -1 to -1.

        Exists because the levels nest (:class:`Hierarchy` checks it): a level-a group lies inside one
        level-b group. Tables that do not nest are refused, since neither roll-up nor monotonicity would hold.
        """
        key = ("lookup", j, a, b)
        if key not in self._derived:
            t = self.tables[j]
            if a < 0:
                out = t[b].astype(np.int32)
            else:
                out = np.full(self.n_groups(j, a), -1, dtype=np.int32)
                out[t[a]] = t[b]
                if (out[t[a]] != t[b]).any():
                    raise InputError(f"The hierarchy levels of '{self.qis[j]}' do not nest.")
            self._derived[key] = np.append(out, np.int32(-1))
        return self._derived[key]

    def check_levels(self, levels: Sequence[int]) -> tuple[int, ...]:
        lv = tuple(int(x) for x in levels)
        if len(lv) != len(self.qis):
            raise InputError(f"Give one level per quasi-identifier ({len(self.qis)}).")
        for q, x, h in zip(self.qis, lv, self.heights, strict=True):
            if not 0 <= x < h:
                raise InputError(f"'{q}' has levels 0 to {h - 1}; level {x} does not exist.")
        return lv


def build_problem(ds: Dataset, hierarchies: Mapping[str, Hierarchy], qis: Sequence[str] | None = None,
                  alpha: float = 1.0, sensitive: Sequence[str] = (), weighted: bool = False) -> LatticeProblem:
    """The lattice problem of ``ds`` on ``qis`` (default: the QI role), with the dataset's missing semantics,
    sdcMicro's ``alpha`` for k-anonymity, the ``sensitive`` variables the criteria need (l-diversity,
    t-closeness) and, with ``weighted``, the sampling weights (individual risk): read only when asked, so a
    search that does not use them never depends on them."""
    qis = tuple(ds.roles.qis if qis is None else qis)
    if not qis:
        raise InputError("Choose at least one quasi-identifier.")
    missing_h = [q for q in qis if q not in hierarchies]
    if missing_h:
        raise InputError(f"No hierarchy for {', '.join(missing_h)}.")
    qm = ds.qi_matrix(qis)
    hs, tabs = [], []
    for j, q in enumerate(qis):
        h = hierarchies[q] if hierarchies[q].name else hierarchies[q].with_name(q)
        t: LevelTables = h.tables(qm.values[j], qm.labels[j])
        hs.append(h)
        tabs.append(t)
    sens = {}
    for name in sensitive:
        if name not in ds.frame.columns:
            raise InputError(f"Sensitive variable '{name}' is not a variable of the data.")
        if name in qis:
            raise InputError(f"'{name}' is a quasi-identifier; a sensitive variable must not be one.")
        scodes, svalues, _ = ds._encoded(name)
        sens[name] = (scodes, tuple(svalues), ds.meta_of(name).value_labels)
    return LatticeProblem(
        qis=qis,
        codes=qm.codes,
        tables=tuple(t.table for t in tabs),
        missing=ds.missing,
        level_labels=tuple(t.labels for t in tabs),
        hierarchies=tuple(hs),
        alpha=alpha,
        weights=ds.weights() if weighted else None,
        sensitive=sens,
        weighted=weighted,
    )


# -- criteria ----------------------------------------------------------------------------------------------------
def resolve_criteria(problem: LatticeProblem, k: int | None, criteria: Sequence[Criterion | str] | None
                     ) -> list[Criterion]:
    """The criteria of a search: ``criteria`` (objects or specs), with k-anonymity at ``k`` (and the problem's
    alpha) added when given and no k criterion is among them."""
    from ..criteria.base import parse_criterion

    out: list[Criterion] = []
    for c in criteria or ():
        c = parse_criterion(c) if isinstance(c, str) else c
        if c.spec not in {x.spec for x in out}:
            out.append(c)
    if k is not None and not any(isinstance(c, KAnonymity) for c in out):
        out.insert(0, KAnonymity(_check_k(k), problem.alpha))
    if not out:
        raise InputError("Give at least one privacy criterion (for example k=5).")
    if any(getattr(c, "weighted", False) for c in out) and not problem.weighted:
        raise InputError("Individual risk needs the sampling weights: build the problem with weighted=True.")
    missing_s = sorted({s for c in out for s in c.sensitive} - set(problem.sensitive_names))
    if missing_s:
        raise InputError(f"The problem was built without the sensitive variable(s) {', '.join(missing_s)}; "
                         "pass them to build_problem(sensitive=...).")
    return out


def _k_of(criteria: Sequence[Criterion]) -> int:
    ks = [c.k for c in criteria if isinstance(c, KAnonymity)]
    return max(ks) if ks else 1


def _refuse_k_above_records(criteria: Sequence[Criterion], n_records: int) -> None:
    """A search for a k above the file's records has no answer at any node or suppression limit (the records
    suppressed form one group of fewer than k too): it says so in the words every command uses, where the
    search would end advising more suppression."""
    k = _k_of(criteria)
    if k > n_records:
        raise InfeasibleError(fewer_records_than_k(n_records, k))


# -- evaluating nodes ------------------------------------------------------------------------------------------
@dataclass
class NodeEval:
    """One node evaluated: its class table, the failing classes (None when the scan stopped early)."""

    levels: tuple[int, ...]
    table: ClassTable
    mono_small: np.ndarray | None  # classes failing a monotonic criterion (exact, or None if stopped early)
    small: np.ndarray | None = None  # classes failing any criterion
    fk: np.ndarray | None = None  # matching records per class (only when a metric or criterion needed it)
    sizes: Any = None  # the ClassSizes of the table, once counted
    per_criterion: dict[str, int] = field(default_factory=dict)  # failing records per criterion spec
    link: tuple | None = None  # (levels, how the table was rolled up), to map input classes to its classes
    cut: bool = False  # the exact sizes were cut short: the node cannot win (fk partial, see complete)

    def stats(self) -> NodeStats:
        assert self.small is not None
        return NodeStats(self.levels, self.table.codes, self.table.count, self.small, self.fk)


class _Lookups:
    """Per pair of level vectors, the padded lookup matrix of the roll-up kernel (cached per QI step)."""

    def __init__(self, problem: LatticeProblem):
        self.problem = problem
        q = len(problem.qis)
        self.width = max(problem.n_groups(j, -1) for j in range(q)) + 1
        self.radix = [[problem.n_groups(j, lv) + 2 for lv in range(int(h))] for j, h in enumerate(problem.heights)]
        self._rows: dict[tuple[int, int, int], np.ndarray] = {}
        self.q = q

    def get(self, src_levels: tuple[int, ...], levels: tuple[int, ...]):
        q = self.q
        luts = np.zeros((q, self.width), dtype=np.int32)
        changed = np.zeros(q, dtype=np.bool_)
        radix = np.empty(q, dtype=np.int64)
        span = 1
        for j in range(q):
            a, b = src_levels[j], levels[j]
            radix[j] = self.radix[j][b]
            span *= int(radix[j])
            if a != b:
                lut = self.problem.lookup(j, a, b)[:-1]
                luts[j, :len(lut)] = lut
                changed[j] = True
        return luts, changed, radix, span


class _Marginals:
    """Per node, the marginals the wildcard scan reads (:func:`~._lattice_kernel.node_marginals`): per QI and
    code the records holding it and those among them with a missing value, and the records missing each QI.

    A QI's marginals at a node depend on its own level alone (the node's codes of QI j are the input's codes
    mapped to its level, :meth:`LatticeProblem.lookup`, and no cell becomes missing or observed), so each
    (QI, level) is counted once from the input's classes and a node's marginals are gathered by offsets;
    the tests compare them with :func:`~._lattice_kernel.node_marginals` on each node's own table.
    """

    def __init__(self, problem: LatticeProblem, base: ClassTable):
        q = len(problem.qis)
        parts: list[np.ndarray] = []
        parts_m: list[np.ndarray] = []
        self._off = np.zeros((q, int(problem.heights.max(initial=0)) + 1), dtype=np.int64)  # level + 1 -> offset
        self._widths = np.ones_like(self._off)  # level + 1 -> the QI's number of codes (at least 1)
        with_missing = (base.codes < 0).any(axis=1)
        at = 0
        for j in range(q):
            col = base.codes[:, j]
            seen = col >= 0
            for lv in range(-1, int(problem.heights[j])):
                codes = col[seen] if lv < 0 else problem.lookup(j, -1, lv)[col[seen]]
                width = problem.n_groups(j, lv)
                part = np.bincount(codes, weights=base.count[seen], minlength=width)
                part_m = np.bincount(codes, weights=base.count[seen] * with_missing[seen], minlength=width)
                self._off[j, lv + 1] = at
                self._widths[j, lv + 1] = max(1, width)
                parts.append(part.astype(np.int64))
                parts_m.append(part_m.astype(np.int64))
                at += width
        # one entry beyond the codes, as node_marginals has: the scan reads a missing cell's slot without a branch
        self._flat = np.concatenate([*parts, np.zeros(1, dtype=np.int64)])
        self._flat_m = np.concatenate([*parts_m, np.zeros(1, dtype=np.int64)])
        self._miss = np.array([int(base.count[base.codes[:, j] < 0].sum()) for j in range(q)], dtype=np.int64)
        self._rows = np.arange(q)

    def at(self, levels: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """(records per code, flat; those with a missing value; each QI's offset; records missing each QI; the
        widest QI's number of codes, at least every code + 1 of the node's table)."""
        at = np.asarray(levels) + 1
        return (self._flat, self._flat_m, self._off[self._rows, at], self._miss,
                int(self._widths[self._rows, at].max(initial=1)))


PARALLEL_FK_CLASSES = 2_000
"""Classes from which a node's exact wildcard sizes are counted on every compute slot (a few ms of work)."""
KERNEL_FK_MAX_CLASSES = 200_000
"""Classes up to which discernibility's exact wildcard sizes come from the lattice's own count
(:func:`~._lattice_kernel.wildcard_fk`, which a node that cannot win may stop). Its lists grow with the table, so
beyond, the general count (patterns x patterns or the pairwise scan, by its cost model) is faster: on 8 QIs of 10
codes each with 3 % of the cells missing, 0.20 s against 0.16 s at 200k classes, 3.2 s against 1.1 s at 1M."""


class NodeEvaluator:
    """Evaluates lattice nodes on the class table under a list of criteria (the hot loop of every search).

    A node's table is rolled up from the cached table of the evaluated node below it with the fewest
    classes (the input's class table when none is cached); tables are kept up to :data:`CACHE_BYTES`.
    ``mono``: the criteria monotonic at this limit and semantics; ``other``: the rest.
    """

    INITIAL_SLOTS = 64  # rows of the cached-levels matrix, doubled (or compacted) when full

    def __init__(self, problem: LatticeProblem, criteria: Sequence[Criterion], limit: int,
                 need_fk: bool = False, cache_bytes: int | None = None):
        self.problem = problem
        self.criteria = list(criteria)
        self.limit = int(limit)
        self.need_fk = need_fk
        self.base = problem.class_table()
        self.q = len(problem.qis)
        self.wildcard = problem.missing == "wildcard" and bool((self.base.codes < 0).any())
        self.semantics: MissingSemantics = "wildcard" if self.wildcard else "category"
        self.mono = [c for c in self.criteria if c.monotonic_at(self.limit, self.semantics)]
        self._mono_specs = [c.spec for c in self.mono]
        self.other = [c for c in self.criteria if c not in self.mono]
        self.split = any(getattr(c, "alpha", 1.0) < 1.0 for c in self.criteria)
        self.evaluations = 0
        self.cache_bytes = CACHE_BYTES if cache_bytes is None else int(cache_bytes)
        self._cache: dict[tuple[int, ...], ClassTable] = {}
        self._bytes = 0
        self._cap = self.INITIAL_SLOTS
        self._next = 0
        self._lv = np.zeros((self._cap, self.q), dtype=np.int16)
        self._lv_tuple: list[tuple[int, ...]] = [()] * self._cap  # the same level vectors as tuples
        self._nc = np.full(self._cap, _NONE, dtype=np.int64)
        self._slot: dict[tuple[int, ...], int] = {}
        self._uncached: set[tuple[int, ...]] = set()  # hubs whose tables were too large to keep
        self._hub_classes: list[int] = []  # the classes of each hub computed
        # Record-level facts (see :meth:`failing_base`) hold only with the record-by-record promise of the
        # monotonic criteria, which :mod:`kanon_core.criteria.base` makes at a positive limit. Mapping input
        # classes to a node's classes costs a pass over the input's classes per passing node: it pays where
        # a node is dear (the wildcard scan, or millions of classes), not where a roll-up of a few
        # thousand classes is all a node costs.
        self.track_base = self.limit > 0 and bool(self.mono) and (self.wildcard or self.base.n_classes >= TRACK_CLASSES)
        self._links: dict[tuple[int, ...], tuple] = {}  # per cached table: (source levels or None, its gid)
        self._base_of: dict[tuple[int, ...], np.ndarray] = {}  # per cached table, once asked: input class -> class
        # k-anonymity alone, scanned under wildcard semantics: classes known to fail need no scan
        self.scans_k = self.wildcard and len(self.mono) == 1 and isinstance(self.mono[0], KAnonymity)
        self.last_link: tuple | None = None  # (levels, link) of the table last returned
        self._luts = _Lookups(problem)
        self._marginals = _Marginals(problem, self.base) if self.wildcard else None  # the scan's bound
        size = 16
        while size < 2 * self.base.n_classes:
            size *= 2
        self._slots = np.zeros(2 * size, dtype=np.int64)  # the roll-up's hash table (key, stamp | class), reused
        self._scratch: np.ndarray | None = None  # the partitioned roll-up's work space (millions of classes)
        self._stamp = 0
        # Per k criterion and node: the classes known to reach k (scanned there, or holding a class that reached
        # it at the node the table was rolled up from: matches only grow), not scanned again.
        self._reached: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}
        self._fact_specs: set[str] = set()

    # -- class tables ----------------------------------------------------------------------------------------
    def table(self, levels: tuple[int, ...]) -> ClassTable:
        """The node's class table (cached, or rolled up). How it was rolled up is left in :attr:`last_link`,
        from which :meth:`failing_base` maps input classes to its classes when asked."""
        got = self._cache.get(levels)
        if got is not None:
            self.last_link = (levels, None)
            return got
        src, src_levels = self.base, (-1,) * self.q
        if self._slot:
            from ._lattice_kernel import pick_source

            i = pick_source(self._lv, self._nc, self._next, np.asarray(levels, dtype=np.int16))
            if i >= 0:
                src_levels = self._lv_tuple[i]
                src = self._cache[src_levels]
        if src is self.base:
            # Nothing evaluated below: go through the node with every QI at level 1 at most (a hub that the
            # other nodes with the same QIs generalized share), so the input's table is read once per hub.
            # A hub too large for the cache would be recomputed for every such node: those go straight. So
            # do all nodes once the hubs computed so far merged too few classes to pay for their own
            # roll-up (:meth:`_hubs_pay`).
            hub = tuple(min(lv, 1) for lv in levels)
            if hub != levels and hub not in self._uncached and self._hubs_pay():
                fresh = hub not in self._cache
                src, src_levels = self.table(hub), hub
                if fresh:
                    self._hub_classes.append(src.n_classes)
                if hub not in self._cache:
                    self._uncached.add(hub)
        out, gid = self._rollup(src, src_levels, levels)
        link = None
        if self.track_base:  # how to map input classes to this node's classes, computed when asked
            link = (None if src is self.base else src_levels, gid)
        self.last_link = (levels, link)
        from ._lattice_kernel import carry_marks

        for spec in self._fact_specs:  # classes holding a class known to reach k are known to reach it
            prev = self._reached.get((spec, src_levels))
            if prev is not None:
                self._reached[(spec, levels)] = carry_marks(gid, prev, out.n_classes)
        self._store(levels, out, link)
        return out

    HUB_TRIAL = 4  # hubs computed before their worth is judged
    HUB_SHARE = 0.5  # hubs pay while they hold at most this share of the input's classes on average

    def _hubs_pay(self) -> bool:
        """Whether going through hubs still pays: a node rolled up from its hub costs the hub's classes, from
        the input its classes; a hub costs one roll-up of the input. Where the records stay nearly unique
        at level 1 (the bundled sample: the first hubs kept 96 to 100 % of its 15,784 classes) the hubs
        only add that roll-up (15 % of the roll-up work at 1 %); on Adult they hold about a third of the
        classes and halve it. Judged on the first :attr:`HUB_TRIAL` hubs; which table a node is rolled up
        from never changes its classes."""
        h = self._hub_classes
        if len(h) < self.HUB_TRIAL:
            return True
        return sum(h) <= self.HUB_SHARE * len(h) * self.base.n_classes

    def _rollup(self, src: ClassTable, src_levels: tuple[int, ...], levels: tuple[int, ...]
                ) -> tuple[ClassTable, np.ndarray]:
        """``src`` (at ``src_levels``) mapped to ``levels``, equal rows merged (a compiled hash join)."""
        from ._lattice_kernel import PARTITION_ROWS, rollup, rollup_partitioned

        luts, changed, radix, span = self._luts.get(src_levels, levels)
        if span < _KEY_LIMIT and src.n_classes >= PARTITION_ROWS and span > 2 * src.n_classes:
            if self._scratch is None or len(self._scratch) < 5 * src.n_classes:
                self._scratch = np.empty(5 * self.base.n_classes, dtype=np.int64)
            gid, codes, count = rollup_partitioned(src.codes, luts, changed, radix, src.count, self._slots,
                                                   self._scratch)
        elif span < _KEY_LIMIT:
            self._stamp += 1
            if self._stamp >= 2**31:  # the stamp lives in the upper half of an int64 entry: start afresh
                self._slots[:] = 0
                self._stamp = 1
            gid, codes, count = rollup(src.codes, luts, changed, radix, src.count, self._slots, self._stamp, span)
        else:  # too many values for one packed int64 per row: pack by ranks (slower, same classes)
            mapped = src.codes.copy()
            for j in np.flatnonzero(changed):
                mapped[:, j] = self.problem.lookup(int(j), src_levels[j], levels[j])[src.codes[:, j]]
            gid, _ = group_ids(mapped)
            first = np.empty(int(gid.max()) + 1, dtype=np.int64)
            first[gid[::-1]] = np.arange(len(gid) - 1, -1, -1)
            codes = mapped[first]
            count = np.bincount(gid, weights=src.count, minlength=len(first)).astype(np.int64)
        weight = None if src.weight is None else np.bincount(gid, weights=src.weight, minlength=len(count))
        sens = {k: s.regroup(gid) for k, s in src.sensitive.items()}
        return ClassTable(self.problem.qis, codes, count, weight, sensitive=sens), gid

    @staticmethod
    def _table_bytes(t: ClassTable) -> int:
        return t.codes.nbytes + 2 * t.count.nbytes + sum(s.count.nbytes * 3 for s in t.sensitive.values())

    def _store(self, levels: tuple[int, ...], table: ClassTable, link: tuple | None = None) -> None:
        size = self._table_bytes(table) + (0 if link is None else link[1].nbytes)
        if size > self.cache_bytes // 4:
            return
        if self._next >= self._cap:
            if len(self._slot) < self._cap // 2:
                self._compact()
            else:
                self._lv = np.vstack([self._lv, np.zeros_like(self._lv)])
                self._nc = np.concatenate([self._nc, np.full(self._cap, _NONE, dtype=np.int64)])
                self._lv_tuple.extend([()] * self._cap)
                self._cap *= 2
        slot = self._next
        self._next += 1
        self._slot[levels] = slot
        self._lv[slot] = levels
        self._lv_tuple[slot] = levels
        self._nc[slot] = table.n_classes
        self._cache[levels] = table
        if link is not None:
            self._links[levels] = link
        self._bytes += size
        if self._bytes > self.cache_bytes:
            self._evict()

    def _evict(self) -> None:
        """Drop the largest tables until three quarters of the budget are used (small tables roll up best)."""
        for lv in sorted(self._cache, key=lambda x: -self._cache[x].n_classes):
            if self._bytes <= 3 * self.cache_bytes // 4:
                break
            self._bytes -= self._table_bytes(self._cache.pop(lv))
            gone = self._links.pop(lv, None)
            self._bytes -= 0 if gone is None else gone[1].nbytes
            gone = self._base_of.pop(lv, None)
            self._bytes -= 0 if gone is None else gone.nbytes
            self._nc[self._slot.pop(lv)] = _NONE
            for spec in self._fact_specs:  # the facts of the dropped table (not a scan of every fact)
                self._reached.pop((spec, lv), None)

    def _compact(self) -> None:
        keys = list(self._slot)
        self._nc[:] = _NONE
        self._slot = {}
        for i, lv in enumerate(keys):
            self._slot[lv] = i
            self._lv[i] = lv
            self._lv_tuple[i] = lv
            self._nc[i] = self._cache[lv].n_classes
        self._next = len(keys)

    # -- criteria ----------------------------------------------------------------------------------------------
    def _sizes(self, table: ClassTable):
        return table.class_sizes(self.semantics, 1.0, wildcard_split=self.split)

    def _size_small(self, table: ClassTable, c: KAnonymity, limit: int, levels: tuple[int, ...],
                    doomed: np.ndarray | None = None) -> np.ndarray | None:
        """Classes failing k-anonymity, fast; None when the scan stopped because more than ``limit`` >= 0
        records fail (under wildcard semantics at alpha = 1). The classes that reached k at the node this
        one was rolled up from are not scanned again (monotonicity: their matches only grew)."""
        count = table.count
        if not self.wildcard:
            return count < c.k
        from ._lattice_kernel import wildcard_small

        lim = limit if c.alpha == 1.0 else -1
        self._base_facts(c)
        known = self._reached.get((c.spec, levels))
        if known is None:
            known = np.zeros(table.n_classes, dtype=np.bool_)
        reached, sure, full, wild, stopped = wildcard_small(table.codes, count, *self._marginals.at(levels), c.k,
                                                            c.alpha, lim, known, doomed)
        if levels in self._cache:
            self._reached[(c.spec, levels)] = reached  # facts even when the scan stopped early
            self._fact_specs.add(c.spec)
        if stopped:
            return None
        if c.alpha == 1.0:
            return ~reached
        # full: the matches counted in full; classes failing by the bound were not scanned
        return ~reached & (sure | (alpha_count(full + wild, wild, c.alpha) < c.k))

    BASE_FACTS_CLASSES = 200_000
    """Input classes up to which the input's own classes reaching k are found once, for every roll-up."""

    def _base_facts(self, c: KAnonymity) -> None:
        """The input classes reaching k at the bottom of the lattice (no QI generalized), scanned once per
        k criterion and passed on, like the facts of any evaluated node, to every table rolled up from
        the input's: a class holding one of them reaches k (matches only grow up the lattice).

        Nodes rolled up straight from the input otherwise scan all their small classes afresh: on the
        bundled sample (15,784 input classes, k = 3) 10,510 reach k already at the bottom, found in one
        scan of about 25 ms.
        """
        key = (c.spec, (-1,) * self.q)
        if key in self._reached or self.base.n_classes > self.BASE_FACTS_CLASSES:
            return
        from ._lattice_kernel import wildcard_small

        base = self.base
        known = np.zeros(base.n_classes, dtype=np.bool_)
        reached = wildcard_small(base.codes, base.count, *self._marginals.at(key[1]), c.k, c.alpha, -1, known)[0]
        self._reached[key] = reached
        self._fact_specs.add(c.spec)

    def classify(self, levels: tuple[int, ...], doomed: np.ndarray | None = None, limit: int | None = None
                 ) -> NodeEval:
        """The monotonic criteria at a node, stopping early once the limit (default the search's) is exceeded
        (``mono_small`` None).

        ``doomed``: input classes whose records fail the monotonic criteria at a node above (so here too, by
        the record-level promise). With k-anonymity the only monotonic criterion under wildcard semantics,
        the classes holding them are not scanned: they fail k-anonymity.
        """
        self.evaluations += 1
        table = self.table(levels)
        link = self.last_link
        doomed_classes = None
        if doomed is not None and self.scans_k:
            base_of = self._base_map(*link)
            if base_of is not None:
                doomed_classes = np.zeros(table.n_classes, dtype=np.bool_)
                doomed_classes[base_of[doomed]] = True
        ev = self._mono(levels, table, early=True, doomed=doomed_classes, limit=limit)
        ev.link = link
        return ev

    def _mono(self, levels: tuple[int, ...], table: ClassTable, early: bool, doomed: np.ndarray | None = None,
              limit: int | None = None) -> NodeEval:
        """The monotonic criteria at a node; with ``early``, stopped (``mono_small`` None) once more than
        ``limit`` records fail (default: the search's limit)."""
        limit = self.limit if limit is None else int(limit)
        ev = NodeEval(levels, table, np.zeros(table.n_classes, dtype=bool))
        for pos, c in enumerate(self.mono):
            # k by the scan that stops at k matches, even when the metric needs exact sizes (discernibility):
            # only the nodes that pass are completed with them (complete), and on the bundled sample most
            # nodes classified fail (the discernibility search took 10 s instead of 25 s at 0 %)
            if isinstance(c, KAnonymity):
                fail = self._size_small(table, c, limit if early else -1, levels, doomed)
                if fail is None:  # the scan stopped: more than the limit fail, the counts are partial
                    ev.mono_small = None
                    return ev
            else:
                if ev.sizes is None:
                    ev.sizes = self._sizes(table)
                    ev.fk = ev.sizes.fk_all
                fail = np.asarray(c.failing_classes(Evaluation(table, self.semantics, ev.sizes)), dtype=bool)
            ev.per_criterion[self._mono_specs[pos]] = int(table.count[fail].sum())
            ev.mono_small |= fail
            if early and pos < len(self.mono) - 1 and int(table.count[ev.mono_small].sum()) > limit:
                ev.mono_small = None  # failing already; the remaining criteria are not counted
                return ev
        return ev

    def complete(self, ev: NodeEval, cap: float | None = None) -> NodeEval:
        """Every criterion at the node (exact failing sets), and fk when a metric needs it.

        ``cap`` (with :attr:`sizes_can_wait`): a discernibility above which the node cannot win. The count of
        the exact sizes stops once it shows the node's discernibility without suppression above it (``ev.cut``;
        fk then partial, each at most exact): that is at least the classes' own records squared plus what the
        count has added so far, and at most the loss. Not the loss itself, with its suppressed records: every
        node above inherits the partial sum as its bound, which must then exceed the cap too (a cut at the
        loss left the nodes above with bounds below it, and on the bundled sample at 1 % three times as many
        nodes were completed).

        With :attr:`sizes_can_wait` and no other criterion, a node whose failing set is not known yet gets its
        exact sizes first, which decide k at alpha 1 themselves (fk < k), instead of the scan that stops at k
        as well; a count cut short leaves ``mono_small`` None (the node cannot win).
        """
        if ev.mono_small is None and ev.fk is None and self.sizes_can_wait and not self.other:
            self._fill_fk(ev, cap)
            if ev.cut:
                return ev
            ev.mono_small = ev.fk < self.mono[0].k
            ev.per_criterion[self._mono_specs[0]] = int(ev.table.count[ev.mono_small].sum())
        if ev.mono_small is None:
            fresh = self._mono(ev.levels, ev.table, early=False)
            ev.mono_small, ev.per_criterion, ev.fk = fresh.mono_small, fresh.per_criterion, fresh.fk
        small = ev.mono_small.copy()
        if ev.sizes is None and self.other:
            ev.sizes = self._sizes(ev.table)
            ev.fk = ev.sizes.fk_all
        for c in self.other:
            fail = np.asarray(c.failing_classes(Evaluation(ev.table, self.semantics, ev.sizes)), dtype=bool)
            ev.per_criterion[c.spec] = int(ev.table.count[fail].sum())
            small |= fail
        ev.small = small
        if self.need_fk and ev.fk is None:
            self._fill_fk(ev, cap)
        return ev

    def _fill_fk(self, ev: NodeEval, cap: float | None) -> None:
        """The node's fk for discernibility: its own counts under category semantics, else the exact count,
        stopped above ``cap`` (see :meth:`complete`); on more than :data:`KERNEL_FK_MAX_CLASSES` classes the
        general count of :meth:`ClassTable.class_sizes`, never stopped."""
        if not self.wildcard:
            ev.fk = ev.table.count
            return
        if ev.table.n_classes > KERNEL_FK_MAX_CLASSES:
            ev.sizes = self._sizes(ev.table)
            ev.fk = ev.sizes.fk_all
            return
        ceiling = None
        if cap is not None and self.sizes_can_wait:
            ceiling = cap - float((ev.table.count.astype(np.float64) ** 2).sum())
        ev.fk, ev.cut = self._exact_fk(ev.table, ev.levels, ceiling)

    def _exact_fk(self, table: ClassTable, levels: tuple[int, ...], ceiling: float | None = None
                  ) -> tuple[np.ndarray, bool]:
        """Every class's matching records under wildcard semantics, exact (what discernibility charges): the
        compiled scan of the classes with a missing value (:func:`~._lattice_kernel.wildcard_fk`), on the
        node's marginals; the same numbers as ``class_sizes`` (``fk_all``), which the tests check. With a
        ``ceiling``, the count stops once the sum of records times matches beyond each class's own records
        squared exceeds it (True: the sizes are partial)."""
        from ..threads import map_workers, workers
        from ._lattice_kernel import wildcard_fk

        args = (table.codes, table.count, *self._marginals.at(levels))
        n_parts = workers() if table.n_classes >= PARALLEL_FK_CLASSES else 1
        never = np.iinfo(np.int64).max
        limit = never if ceiling is None else int(max(-1.0, min(math.floor(ceiling), float(never // 2))))
        running = np.zeros(n_parts, dtype=np.int64)  # each share's progress, read by the others
        parts = map_workers(lambda part: wildcard_fk(*args, part, n_parts, running, limit), range(n_parts),
                            n_parts)
        return sum(p[0] for p in parts), any(p[1] for p in parts)

    @property
    def sizes_can_wait(self) -> bool:
        """Whether a node passing the monotonic criteria can be left without its exact class sizes until the
        search asks for its loss: discernibility under wildcard semantics with k-anonymity (alpha = 1) the
        one monotonic criterion. Each class failing there has fewer than k matches, so its suppression adds
        at least n - k + 1 per record to the discernibility of every node below, which bounds them without
        the exact sizes (:meth:`suppression_floor`)."""
        return self.need_fk and self.scans_k and self.mono[0].alpha == 1.0

    @property
    def suppression_floor_per_record(self) -> float:
        """What each record failing at an evaluated node adds at least (see :meth:`suppression_floor`)."""
        return float(self.problem.n_records - self.mono[0].k + 1)

    def suppression_floor(self, ev: NodeEval) -> float:
        """At least what the records failing at an evaluated node add to the discernibility of every node below
        it, beyond their matches there (see :attr:`sizes_can_wait`): n - k + 1 each."""
        return float(ev.table.count[ev.mono_small].sum()) * self.suppression_floor_per_record

    def evaluate(self, levels: Sequence[int]) -> NodeEval:
        """The node fully evaluated (every criterion, exact)."""
        self.evaluations += 1
        lv = tuple(int(x) for x in levels)
        table = self.table(lv)
        link = self.last_link
        ev = self._mono(lv, table, early=False)
        ev.link = link
        return self.complete(ev)

    def failing_base(self, ev: NodeEval) -> np.ndarray | None:
        """The input classes whose records fail the monotonic criteria at an evaluated node (sorted ids), or
        None when unknown (the scan stopped early, or the evaluator does not track input classes).

        A node's classes are unions of input classes (a roll-up only merges), so the failing records are
        exactly the records of these input classes.
        """
        if ev.mono_small is None or ev.link is None:
            return None
        base_of = self._base_map(*ev.link)
        if base_of is None:
            return None
        return np.flatnonzero(ev.mono_small[base_of])

    def _base_map(self, levels: tuple[int, ...], link: tuple | None) -> np.ndarray | None:
        """Input class -> class of the node at ``levels`` (``link``: how its table was rolled up, None when it
        came from the cache), by composing the roll-ups down to the input's table; None when a table of
        the chain was dropped from the cache. Memoised for cached tables."""
        got = self._base_of.get(levels)
        if got is not None:
            return got
        if link is None:
            link = self._links.get(levels)
            if link is None:
                return None
        src_levels, gid = link
        if src_levels is None:
            out = gid
        else:
            below = self._base_map(src_levels, None)
            if below is None:
                return None
            out = gid[below]
        if levels in self._cache:
            self._base_of[levels] = out
            self._bytes += out.nbytes
        return out


# -- results ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeSummary:
    """One evaluated node: levels, records needing suppression, whether within the limit, its losses."""

    levels: tuple[int, ...]
    n_small: int
    anonymous: bool
    loss: float
    lower_bound: float
    n_patterns: int


def _summary(ctx: MetricContext, metric: MetricName, ev: NodeEval, limit: int, criteria: Sequence[Criterion],
             bound: float | None = None, semantics: MissingSemantics = "category") -> NodeSummary:
    """``bound``: the node's :func:`~kanon_core.treat.metrics.lower_bound` when the caller has it already (the
    search computes the level-only bounds of every node at once with ``level_bounds``, the function
    ``lower_bound`` calls for one node). The node is ``anonymous`` (a release kanon may offer) when its
    failing records are within the limit and, blanked together, meet the criteria as one class
    (:func:`acceptable`)."""
    st = ev.stats()
    n_small = n_suppressed(ctx, st)
    return NodeSummary(ev.levels, n_small, acceptable(ev, n_small, limit, criteria, semantics),
                       metric_loss(metric, ctx, st),
                       lower_bound(metric, ctx, st) if bound is None else bound, st.n_patterns)


def acceptable(ev: NodeEval, n_small: int, limit: int, criteria: Sequence[Criterion],
               semantics: MissingSemantics = "category") -> bool:
    """Whether node ``ev``'s release protects every person: its failing records (``n_small``, the classes
    ``ev.small``) are at most ``limit`` and, when there are any, the blanked group they form passes every
    criterion as one class (:func:`~kanon_core.criteria.apply.blanked_group_fails`: fewer than k blanked
    records would leave their people findable among them), and, under wildcard semantics, the release
    itself passes (:func:`release_passes`)."""
    if n_small > limit:
        return False
    if n_small == 0:
        return True
    return not blanked_group_fails(ev.table, ev.small, criteria) and release_passes(ev, criteria, semantics)


def release_passes(ev: NodeEval, criteria: Sequence[Criterion], semantics: MissingSemantics) -> bool:
    """Under wildcard semantics, whether the node's release, its failing classes blanked, meets every criterion.

    Why: a blanked record matches every record, so in the release each kept record's class is its class at the
    node plus every blanked record. Records added to a class cannot make it fail k-anonymity or distinct
    l-diversity (:attr:`Criterion.holds_when_records_join`), but they can lower its entropy, break recursive
    (c,l)-diversity or move its distribution away from the file's: a class {a, b} with a blanked record a reads
    {a, a, b} in the release. Such criteria are judged on the release's own class table. Under category
    semantics blanked records form a class of their own and change no other class."""
    if semantics != "wildcard" or all(getattr(c, "holds_when_records_join", False) for c in criteria):
        return True
    release = ev.table.blank(ev.small)
    sizes = release.class_sizes("wildcard", 1.0, wildcard_split=True)
    fail, _ = failing_records(list(criteria), Evaluation(release, "wildcard", sizes))
    return not bool(fail.any())


@dataclass(frozen=True)
class SearchResult:
    """The chosen node and what the search saw.

    ``k_minimal``: every minimal node passing the monotonic criteria (none of its direct specializations
    passes; with k alone, the k-minimal nodes), with its loss and suppression — the candidates an officer
    may prefer to the optimum (its ``anonymous`` column says whether each is a release the search may choose:
    :func:`acceptable`); None when the search was not asked to classify every node for them
    (``search_optimal(..., k_minimal=True)``), and so is ``n_anonymous``, the nodes within the limit (their
    blanked group not judged). ``evaluated``: every node whose
    classes were fully counted, for the loss-versus-suppression trade-off. ``criteria`` are the specs of the
    criteria searched for and ``criteria_report`` says, per criterion, how many records fail it at the chosen
    node (all of them are suppressed) and whether it is monotonic.
    """

    algorithm: str
    qis: tuple[str, ...]
    levels: dict[str, int]
    metric: MetricName
    loss: float
    n_suppressed_records: int
    n_records: int
    k: int
    max_suppression: float
    nodes_evaluated: int
    n_nodes: int
    seconds: float
    k_minimal: pd.DataFrame | None
    evaluated: pd.DataFrame
    hierarchies: tuple[Hierarchy, ...] = ()
    n_anonymous: int | None = None
    criteria: tuple[str, ...] = ()
    criteria_report: tuple[dict, ...] = ()
    # nodes told failing by the union of passing nodes' failing records, not evaluated (for discernibility, also
    # those whose failing records, so counted, are too many for them or a node below them to win)
    nodes_inferred: int = 0

    @property
    def level_tuple(self) -> tuple[int, ...]:
        return tuple(self.levels[q] for q in self.qis)

    def step(self):
        """The :class:`~kanon_core.treat.recode.GeneralizeStep` that applies this result, suppression included.

        With k-anonymity alone the step suppresses the classes smaller than k (the recipe form kanon has
        always written); with other criteria it stores their specs and suppresses the classes failing any.
        """
        from .recode import GeneralizeStep

        if not self.hierarchies:
            raise InputError("This result has no hierarchies attached; build the problem from a dataset.")
        hs = {q: h for q, h in zip(self.qis, self.hierarchies, strict=True)}
        if not self.n_suppressed_records:
            return GeneralizeStep.build(self.levels, hs, qis=self.qis)
        if not self.criteria or list(self.criteria) == [f"k={self.k}"]:
            return GeneralizeStep.build(self.levels, hs, suppress_k=self.k, qis=self.qis)
        return GeneralizeStep.build(self.levels, hs, qis=self.qis, criteria=self.criteria)

    def tradeoff(self) -> pd.DataFrame:
        """Evaluated nodes on the Pareto front of (records suppressed, loss): the plot of the trade-off."""
        return pareto_front(self.evaluated)

    def to_json(self) -> dict:
        from .metrics import precision_from_loss

        return {
            "algorithm": self.algorithm,
            "qis": list(self.qis),
            "levels": dict(self.levels),
            "metric": self.metric,
            "loss": self.loss,
            "precision": precision_from_loss(self.metric, self.loss),
            "k": self.k,
            "criteria": [dict(r) for r in self.criteria_report],
            "max_suppression": self.max_suppression,
            "n_records": self.n_records,
            "n_suppressed_records": self.n_suppressed_records,
            "nodes_evaluated": self.nodes_evaluated,
            "n_nodes": self.n_nodes,
            "n_anonymous_nodes": self.n_anonymous,
            "seconds": self.seconds,
            "k_minimal": None if self.k_minimal is None else self.k_minimal.to_dict(orient="records"),
        }


def pareto_front(evaluated: pd.DataFrame) -> pd.DataFrame:
    """Rows not dominated in (``n_suppressed``, ``loss``): fewer suppressions or less loss, never both worse."""
    if evaluated.empty:
        return evaluated
    df = evaluated.sort_values(["n_suppressed", "loss"], kind="stable")
    best = math.inf
    keep = []
    for i, loss_v in zip(df.index, df["loss"], strict=True):
        if loss_v < best - 1e-12 * max(1.0, abs(best) if math.isfinite(best) else 1.0):
            keep.append(i)
            best = loss_v
    return df.loc[keep].reset_index(drop=True)


def _frame(problem: LatticeProblem, summaries: Sequence[NodeSummary], n_records: int) -> pd.DataFrame:
    cols: dict[str, list] = {q: [] for q in problem.qis}
    extra: dict[str, list] = {"anonymous": [], "n_suppressed": [], "pct_suppressed": [], "loss": [],
                              "lower_bound": [], "classes": []}
    for s in summaries:
        for q, lv in zip(problem.qis, s.levels, strict=True):
            cols[q].append(lv)
        extra["anonymous"].append(s.anonymous)
        extra["n_suppressed"].append(s.n_small)
        extra["pct_suppressed"].append(100.0 * s.n_small / n_records)
        extra["loss"].append(s.loss)
        extra["lower_bound"].append(s.lower_bound)
        extra["classes"].append(s.n_patterns)
    return pd.DataFrame({**cols, **extra})


def _criteria_report(criteria: Sequence[Criterion], ev: NodeEval, limit: int, semantics: MissingSemantics
                     ) -> tuple[dict, ...]:
    n_small = int(ev.table.count[ev.small].sum()) if ev.small is not None else None
    holds = n_small is not None and acceptable(ev, n_small, limit, criteria, semantics)
    return tuple({"criterion": c.name, "spec": c.spec, "monotonic": bool(c.monotonic_at(limit, semantics)),
                  "records_failing": ev.per_criterion.get(c.spec), "holds": holds}
                 for c in criteria)


# -- the exact search -------------------------------------------------------------------------------------------
def suppression_limit(n_records: int, max_suppression: float) -> int:
    """Records that may be suppressed: ``floor(max_suppression * n)`` (a fraction in [0, 1])."""
    if not 0.0 <= max_suppression <= 1.0:
        raise InputError("The suppression limit is a fraction between 0 and 1 (e.g. 0.01 for 1 %).")
    return int(math.floor(max_suppression * n_records + 1e-9))


class _Lattice:
    """All nodes as level vectors (row-major ids), with up-/down-set masks and node statuses."""

    UNKNOWN, ANON, NOT = 0, 1, 2

    def __init__(self, heights: np.ndarray):
        self.heights = heights
        self.q = len(heights)
        self.n = int(np.prod(heights))
        if self.n > MAX_NODES:
            raise InputError(
                f"The lattice has {self.n:,} nodes (more than {MAX_NODES:,}). Use fewer quasi-identifiers or "
                "hierarchies with fewer levels, or the Datafly heuristic."
            )
        grids = np.indices(tuple(int(h) for h in heights), dtype=np.int16)
        self.nodes = grids.reshape(self.q, -1).T.copy()
        self.cols = [np.ascontiguousarray(self.nodes[:, j].astype(np.int8)) for j in range(self.q)]
        self.strides = np.array([int(np.prod(heights[j + 1:])) for j in range(self.q)], dtype=np.int64)
        self.level_sum = self.nodes.sum(axis=1, dtype=np.int64)
        self.status = np.zeros(self.n, dtype=np.int8)
        self.frac = (self.nodes / np.maximum(heights - 1, 1)).sum(axis=1)
        # plain Python copies for the per-node loops (numpy scalars are slow one at a time)
        self.levels = [tuple(r) for r in self.nodes.tolist()]
        self._frac = self.frac.tolist()
        self._strides = [int(x) for x in self.strides]
        self._tops = [int(h) - 1 for h in heights]
        self._heights = np.asarray(heights, dtype=np.int64)

    def node_id(self, levels: Sequence[int]) -> int:
        return int(np.dot(np.asarray(levels, dtype=np.int64), self.strides))

    def up(self, i: int, skip: int = -1) -> np.ndarray:
        """Ids of the up-set of node i (itself included), increasing, without the nodes of status ``skip``."""
        from ._lattice_kernel import box_ids

        return box_ids(self.nodes[i], self._heights, self.strides, True, self.status, skip)

    def down(self, i: int, skip: int = -1) -> np.ndarray:
        """Ids of the down-set of node i (itself included), increasing, without the nodes of status ``skip``."""
        from ._lattice_kernel import box_ids

        return box_ids(self.nodes[i], self._heights, self.strides, False, self.status, skip)

    def least_unknown_below(self, i: int, values: np.ndarray) -> float:
        """The least of ``values`` over the unclassified nodes of the down-set of node i (itself included);
        infinity when there is none."""
        from ._lattice_kernel import box_least

        return float(box_least(self.nodes[i], self._heights, self.strides, False, self.status, self.UNKNOWN,
                               values))

    def narrowed_limit(self, i: int, bounds: np.ndarray, ceiling: float, per_record: float, limit: int
                       ) -> tuple[int, float]:
        """The failing records node i, unclassified, may have for it or a node below it to win, and the least
        loss claimed for the nodes below it (itself included) when it has more; infinity when ``limit`` is no
        narrower.

        Every node w of i's down-set that could still win is unclassified (a node found or told failing cannot
        win, and a passing node tags its whole up-set, i included), so its loss is at least the least
        ``bounds`` (its bound from the levels) over the unclassified nodes of the down-set, m. The records
        failing at i fail at w too and each adds ``per_record`` at least beyond its matches: with more than
        (ceiling - m) / per_record of them, w cannot win (its loss is above ``ceiling``), nor can i. The
        down-set's m, not the whole lattice's: the bounds grow up the lattice, and once the nodes below are
        classified, the unclassified ones of a down-set sit high in it."""
        least = self.least_unknown_below(i, bounds)
        most = _records_within(ceiling, least, per_record)
        if most >= limit:
            return limit, math.inf
        return max(0, most), least + (most + 1) * per_record

    def tag_up(self, i: int) -> None:
        from ._lattice_kernel import tag_box

        tag_box(self.nodes[i], self._heights, self.strides, True, self.status, self.UNKNOWN, self.ANON)

    def tag_down(self, i: int) -> None:
        from ._lattice_kernel import tag_box

        tag_box(self.nodes[i], self._heights, self.strides, False, self.status, self.UNKNOWN, self.NOT)

    def successors(self, i: int) -> list[int]:
        v = self.levels[i]
        return [i + st for st, x, top in zip(self._strides, v, self._tops, strict=True) if x < top]

    def k_minimal(self) -> np.ndarray:
        """Passing nodes none of whose direct specializations passes."""
        anon = self.status == self.ANON
        mask = anon.copy()
        ids = np.arange(self.n)
        for j in range(self.q):
            has_pred = self.nodes[:, j] > 0
            pred = ids[has_pred] - self.strides[j]
            mask[has_pred] &= ~anon[pred]
        return np.flatnonzero(mask)


def _gc_paused(fn):
    """Run ``fn`` with Python's cyclic garbage collector paused (restored afterwards, also on errors).

    A search allocates many small objects (a level tuple per node, a summary per evaluated node) and
    frees them by reference counting; their allocation still triggers full collections whose cost grows
    with everything else alive in the process (pandas, numba, the app's session): about 70 ms each on
    the Adult benchmark, more than the whole search at 0 %. The search creates no reference cycles that
    would need the collector.
    """
    import functools
    import gc

    @functools.wraps(fn)
    def run(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return run


@_gc_paused
def search_optimal(
    problem: LatticeProblem,
    k: int | None = None,
    max_suppression: float = 0.0,
    metric: str = "prec",
    progress: Progress | None = None,
    criteria: Sequence[Criterion | str] | None = None,
    k_minimal: bool = False,
) -> SearchResult:
    """The node of least loss satisfying every criterion within the suppression limit, provably optimal.

    ``k`` alone is the criterion ``k=K`` (with the problem's alpha); ``criteria`` (objects or specs such as
    ``"l=3:occupation"``) are combined with it by AND. ``k_minimal``: classify every node and evaluate every
    k-minimal one, to list them (and count the passing nodes) in the result; without it, only the nodes
    that could still win are classified (see the module's fact 2), which is several times faster. Ties
    (losses equal within 1e-9 relative) are broken deterministically, by fewer levels in all, then lattice
    order. Raises :class:`InfeasibleError` when no
    node satisfies the criteria within the limit.
    """
    t0 = time.perf_counter()
    metric_name = check_metric(metric)
    crit = resolve_criteria(problem, k, criteria)
    n = problem.n_records
    _refuse_k_above_records(crit, n)
    limit = suppression_limit(n, max_suppression)
    lat = _Lattice(problem.heights)
    ev = NodeEvaluator(problem, crit, limit, need_fk=metric_name == "dm")
    ctx = problem.metric_context()
    known: dict[int, NodeSummary] = {}
    # Only the evaluation of the best node so far is kept (its criteria are reported): keeping every passing
    # node's class table held gigabytes at millions of classes.
    best_eval: list = [None, None]  # (loss, level sum, id) of the best passing node so far, its evaluation
    passing_loss = np.full(lat.n, math.inf)  # the loss of every evaluated node passing the criteria
    has_other = bool(ev.other)
    # Lower bounds of every node's loss. Level-bounded metrics start from the loss without suppression, and
    # discernibility from its pairs that differ on at most three QIs (:mod:`.discernibility_bound`, counted
    # once); discernibility and AECS inherit bounds from the evaluated nodes below too. The records failing
    # the monotonic criteria at a node also fail at every node below it, so their suppression raises the
    # bounds below: per QI their observed cells (prec), their bits (entropy), the sum of n - fk over them (dm).
    dm_bound = _dm_bound(problem, ev) if metric_name == "dm" else None
    level_bounded = metric_name in LEVEL_BOUNDED or dm_bound is not None
    if metric_name in LEVEL_BOUNDED:
        base_bound = level_bounds(metric_name, ctx, lat.nodes)
    else:
        base_bound = dm_bound.at(lat.nodes) if dm_bound is not None else np.zeros(lat.n)
    bound = base_bound.copy()
    sup_cells = np.zeros((lat.n, lat.q)) if metric_name == "prec" else None
    sup_extra = np.zeros(lat.n)
    inherited = np.zeros(lat.n)
    keep_frac = 1.0 - lat.nodes / np.maximum(problem.heights - 1, 1)
    total_obs = float(ctx.observed.sum())

    deferring = [True]  # phase 1: the bound updates wait (see apply_deferred)
    # Phase 1 classifies only the nodes that could still win unless every node is wanted (fact 2): with a
    # bound from the levels alone, or from the class tables computed. (Discernibility without its bound from
    # the levels inherits its bounds from the k-minimal nodes below, whose exact sizes phase 2 counts.)
    banded = not k_minimal and (metric_name in BANDED or level_bounded)
    # Average class size has no bound from the levels alone, but every class table the search computes gives
    # one for its node and every node above (records / classes: classes only merge upwards): a start whose
    # bound, from its own table or one below it, is above the least loss found is not classified.
    class_bounded = banded and not level_bounded
    start_bound = base_bound if not class_bounded else np.zeros(lat.n)
    deferred: list[tuple[bool, int, Any]] = []
    # Discernibility's exact class sizes cost a complete scan per node, where classifying a node stops at k
    # matches per class: the passing nodes are completed in phase 2 only when they could win (the k-minimal
    # ones, whose bounds the nodes above inherit, and those whose bound is below the best loss). Phase 1 does
    # not read the bounds, and without a level-only bound no node is skipped there. On the bundled sample
    # (k = 3, 0 %) this completes the 382 k-minimal nodes instead of all 1,141 passing nodes classified.
    lazy = ev.sizes_can_wait
    noted: set[int] = set()  # the passing nodes phase 1 left without their sizes
    # And in phase 2 a node's count of sizes stops once its discernibility without suppression is shown above
    # the best loss so far (cut_short): on the bundled sample most nodes completed there lose by 1.6 times or
    # more. The k-minimal nodes are then not all known exactly, so they are listed only on request (k_minimal).
    cutting = lazy and not k_minimal
    cut: dict[int, float] = {}  # node -> its partial sum of records times matches, above the best loss
    # node -> its bound once its failing records were known (full): the discernibility without suppression
    # of a node below (inherited) plus the floor of the records failing there, each with fewer than k matches
    # (at least n - k + 1 each beyond them), above the best loss; left without its exact count
    floored: dict[int, float] = {}

    def finish(i: int, e: NodeEval, cap: float | None = None) -> NodeSummary | None:
        """Complete a node whose monotonic failing set is exact, record its summary and the bounds it gives;
        None when its discernibility proved above ``cap`` before its sizes were complete (:func:`cut_short`)."""
        e = ev.complete(e, cap)
        if e.cut:
            cut_short(i, e)
            return None
        s = _summary(ctx, metric_name, e, limit, crit, float(base_bound[i]) if metric_name in LEVEL_BOUNDED else None,
                     ev.semantics)
        known[i] = s
        if s.anonymous:
            passing_loss[i] = s.loss
            key = (s.loss, int(lat.level_sum[i]), i)
            if best_eval[0] is None or key < best_eval[0]:
                best_eval[:] = [key, e]
        if e.mono_small.any() and metric_name != "aecs":
            mono = NodeStats(e.levels, e.table.codes, e.table.count, e.mono_small, e.fk)
            if sup_cells is not None:
                item: Any = suppressed_observed(mono)
            elif metric_name == "entropy":
                item = suppression_bits(ctx, mono)
            else:
                sm = e.mono_small
                item = float((e.table.count[sm] * (n - e.fk[sm])).sum())
            if deferring[0]:
                deferred.append((False, i, item))
            else:
                raise_below(i, item)
        if metric_name not in LEVEL_BOUNDED:
            if dm_bound is not None and s.lower_bound < base_bound[i] - _tie_tolerance(s.lower_bound):
                raise RuntimeError("internal error: the discernibility bound of a node exceeds its count")
            if deferring[0]:
                deferred.append((True, i, s.lower_bound))
            else:
                inherit(lat.up(i), s.lower_bound)
        return s

    def cut_short(i: int, e: NodeEval) -> None:
        """A node whose sizes were cut short: it cannot win (its discernibility without suppression, at most
        its loss, is above the best but for ties), so it has no summary, and passes on bounds from what was
        counted (phase 2: at once). Its partial sizes are each at most the exact ones, so the sum of records
        times them bounds that discernibility, which every node above inherits (above the best too). A node
        whose failing records are known passed their floor down already: in phase 1 when it was noted, or in
        :func:`full`, which scans a node never classified before its count; otherwise its count was cut before
        they were known (NodeEvaluator.complete)."""
        cut[i] = float((e.table.count * e.fk).sum())
        inherit(lat.up(i), cut[i])

    def settle(nodes: Any) -> None:
        """The bounds of ``nodes`` (an index) from their parts, for every metric but Prec (whose bound adds the
        cells suppressed below): the larger of the bound from the levels and the one inherited from below,
        plus the floor of the records failing at the node or above."""
        bound[nodes] = np.maximum(base_bound[nodes], inherited[nodes]) + sup_extra[nodes]

    def inherit(up: np.ndarray, value: float) -> None:
        """The nodes ``up`` inherit ``value`` as a lower bound of their loss before suppression."""
        inherited[up] = np.maximum(inherited[up], value)
        settle(up)

    def raise_below(i: int, item: Any) -> None:
        """The suppression at node i raises the bounds of its down-set (failing nodes are never candidates:
        their bounds are not needed)."""
        down = lat.down(i, skip=lat.NOT)
        if sup_cells is not None:
            sup_cells[down] = np.maximum(sup_cells[down], item)
            if total_obs > 0:
                bound[down] = base_bound[down] + (sup_cells[down] * keep_frac[down]).sum(axis=1) / total_obs
        else:
            sup_extra[down] = np.maximum(sup_extra[down], item)
            settle(down)

    def apply_deferred() -> None:
        """The bound updates of phase 1, applied at once (compiled, over the boxes of the up- and
        down-sets) once every node is classified.

        Phase 1 never reads the bounds, and every update is a maximum (of the cells or bits suppressed
        below a node, of the lower bounds inherited from below), so the order in which they are applied
        does not matter; each bound is then the same expression of those maxima as when it was updated
        node by node. Only the nodes passing the monotonic criteria are raised downwards (the others
        are never candidates).
        """
        from ._lattice_kernel import raise_box, raise_box_rows

        for upward, i, item in deferred:
            v = lat.nodes[i]
            if upward:
                raise_box(v, lat._heights, lat.strides, True, lat.status, -1, inherited, float(item))
            elif sup_cells is not None:
                raise_box_rows(v, lat._heights, lat.strides, False, lat.status, lat.NOT, sup_cells, item)
            else:
                raise_box(v, lat._heights, lat.strides, False, lat.status, lat.NOT, sup_extra, float(item))
        deferred.clear()
        deferring[0] = False
        if sup_cells is not None:
            if total_obs > 0:
                bound[:] = base_bound + (sup_cells * keep_frac).sum(axis=1) / total_obs
        else:
            settle(slice(None))

    per_record = ev.suppression_floor_per_record if lazy else 0.0  # (with sizes that can wait: k alone)

    def full(i: int) -> NodeSummary | None:
        if i not in noted:  # a node noted in phase 1 is completed, not evaluated again
            ev.evaluations += 1
        levels = lat.levels[i]
        cap = _cut_cap(best_eval[0][0]) if cutting and best_eval[0] is not None else None
        table = ev.table(levels)
        if cap is not None and i not in noted:
            # A node tagged passing but never classified: its failing records first (the scan that stops at k),
            # whose floor often shows that it cannot win without its exact count (at 1 % on the bundled sample,
            # 120 of the 155 nodes completed in full here lost by their suppression alone). The scan stops once
            # more records fail than its bound leaves room for (their floor alone puts it above the cap); those
            # found so far raise the bounds below it, as its whole failing set would (they fail there too). At
            # k = 5 and 1 % on the sample all 1,199 such scans stopped: 0.72-0.76 s instead of 1.43-1.58 s.
            most = _records_within(cap, max(float(base_bound[i]), float(inherited[i])), per_record)
            e = ev._mono(levels, table, early=True, limit=most) if 0 <= most < limit else None
            if e is not None and e.mono_small is None:
                raise_below(i, (most + 1) * per_record)
                if float(bound[i]) > cap:
                    floored[i] = float(bound[i])
                    return None
            if e is None or e.mono_small is None:
                e = ev._mono(levels, table, early=False)
            if e.mono_small.any():
                raise_below(i, ev.suppression_floor(e))
            least = float(bound[i])  # a lower bound of its loss: see floored
            if least > cap:
                floored[i] = least
                return None
            return finish(i, e, cap)
        # with sizes that can wait, the exact count decides k itself (NodeEvaluator.complete)
        return finish(i, NodeEval(levels, table, None) if lazy else ev._mono(levels, table, early=False), cap)

    # Discernibility with its bound and sizes that can wait: a node whose failing records are more than the bounds
    # of its down-set leave room for cannot win, nor can any node below it (:meth:`_Lattice.narrowed_limit`).
    # Phase 1 classifies with that narrower limit once a ceiling is known, and the union of the failing records
    # of passing nodes above tells with it too: such a node is tagged failing, as one failing the user's limit
    # is (it is never a candidate). The least of the losses so claimed is checked against the optimum at the end
    # (``floor_least``). At k = 5 and 1 % on the bundled sample, with the bound from the pairs differing on two QIs
    # or fewer, 2,124 nodes were evaluated with the whole lattice's least bound and the union telling by the user's
    # limit; 1,450 with the down-set's, 485 told.
    narrowing = lazy and banded and dm_bound is not None and per_record > 0  # (k above n: no floor to divide by)
    floor_least = [math.inf]
    # Failing nodes told by the union of the failing records of passing nodes above (positive limits only).
    union = _FailingUnion(lat.q, ev.base.count, limit, 2 * lat.q) if ev.track_base else None

    def raise_start_bound(i: int, table: ClassTable) -> float:
        """Average class size's bound from node i's table, raised over its up-set (see class_bounded). The
        bounds stay monotone up the lattice (each raise covers a whole up-set), so when node i's own is as high
        already, so is every node's above it, and the walk over the up-set is spared."""
        from ._lattice_kernel import raise_box

        least = n / max(1, table.n_classes)
        if least > start_bound[i]:
            raise_box(lat.nodes[i], lat._heights, lat.strides, True, lat.status, -1, start_bound, least)
        return least

    def could_win(i: int, e: NodeEval) -> bool:
        """Whether a node passing in phase 1 could still beat the least loss found: its bound, from the levels
        and the floor of its own failing records, within the band (with sizes that can wait, such a node is
        counted at once: its loss lowers the ceiling of the band, which spares the paths above it)."""
        floor = ev.suppression_floor(e) if e.mono_small.any() else 0.0
        return float(base_bound[i]) + floor <= _band_ceiling(best_eval[0])

    def working_limit(i: int) -> int:
        """The records that may fail at node i, unclassified, for it or a node below it to win (see
        ``narrowing``); the least loss so claimed for the nodes below is recorded."""
        if not narrowing or best_eval[0] is None:
            return limit
        most, claimed = lat.narrowed_limit(i, base_bound, _band_ceiling(best_eval[0]), per_record, limit)
        floor_least[0] = min(floor_least[0], claimed)
        return most

    def classify(i: int, doomed: np.ndarray | None = None, most: int | None = None) -> bool:
        most = working_limit(i) if most is None else most
        e = ev.classify(lat.levels[i], doomed, most)
        if class_bounded:
            raise_start_bound(i, e.table)
        if e.mono_small is None:
            return False
        passed = int(e.table.count[e.mono_small].sum()) <= most
        if passed:
            if lazy and banded and could_win(i, e):
                finish(i, e, _cut_cap(best_eval[0][0]) if best_eval[0] is not None else None)
            elif lazy:
                noted.add(i)
                if e.mono_small.any():
                    deferred.append((False, i, ev.suppression_floor(e)))
            else:
                finish(i, e)
            ids = ev.failing_base(e) if union is not None else None
            if ids is not None:
                union.add(lat.levels[i], ids)
        return passed

    top = lat.n - 1
    if not classify(top):
        e = ev.evaluate(tuple(int(x) for x in lat.nodes[top]))
        failing = int(e.table.count[e.mono_small].sum())
        raise InfeasibleError(
            f"Even generalizing every quasi-identifier to its top level leaves {failing} record(s) failing "
            f"{_names(ev.mono)}, more than the {limit} allowed. Allow more suppression or relax the criteria."
        )
    lat.status[lat.up(top)] = lat.ANON

    # Phase 1: classify every node for the monotonic criteria (Flash-style paths, binary search or a
    # search from a guess of where the border crosses the path, tagging).
    if ev.mono:
        # Under category semantics every node costs a roll-up alike, and probing next to the border saves
        # evaluations. Under wildcard semantics a passing node costs a complete scan and a failing one
        # stops early; probing at the guess evaluated more passing nodes and took no less time on the
        # bundled sample, so the plain bisection stays there.
        guessing = not ev.wildcard

        def passes(i: int) -> bool:
            """Node i's status, classifying it (and tagging its up- or down-set) when unknown."""
            if lat.status[i] == lat.UNKNOWN:
                most = working_limit(i)
                told, doomed = union.tell(lat.levels[i], ev.scans_k, most) if union is not None else (False, None)
                if told:
                    lat.tag_down(i)
                elif classify(i, doomed, most):
                    lat.tag_up(i)
                else:
                    lat.tag_down(i)
            return lat.status[i] == lat.ANON

        crossing: list[float] = []
        order = np.lexsort((np.arange(lat.n), lat.level_sum))
        for start in order:
            if lat.status[start] != lat.UNKNOWN:
                continue
            ceiling = _band_ceiling(best_eval[0]) if banded else math.inf
            if start_bound[start] > ceiling:
                continue
            if class_bounded and ev.wildcard and math.isfinite(ceiling):  # its table (a roll-up) before its scan
                if raise_start_bound(int(start), ev.table(lat.levels[start])) > ceiling:
                    continue
            if progress is not None:
                done = (lat.status != lat.UNKNOWN) | (start_bound > ceiling)
                report(progress, 0.7 * float(done.mean()), "Classifying lattice nodes")
            path = _path_up(lat, int(start), balanced=ev.wildcard)

            guess = _guess_crossing(lat, path, crossing) if guessing else None
            first = _first_passing(len(path), lambda t, path=path: passes(path[t]), guess)
            if first < len(path):
                crossing.append(lat._frac[path[first]])
    else:
        lat.status[:] = lat.ANON

    # Phase 2: the optimum among the nodes passing the monotonic criteria, by increasing lower bound.
    if class_bounded:  # the class tables' bounds join those inherited (apply_deferred then sets every bound)
        inherited[:] = np.maximum(inherited, start_bound)
    apply_deferred()
    kmin = np.zeros(0, dtype=np.int64) if banded else lat.k_minimal()
    if cutting:  # the least generalized first: a low loss early cuts the others' counts shorter
        kmin = kmin[np.lexsort((kmin, (lat.nodes[kmin] / np.maximum(problem.heights - 1, 1)).sum(axis=1)))]
    for i in kmin:
        if int(i) not in known:
            full(int(i))
    report(progress, 0.75, "Comparing minimal nodes")
    best_id, best, tol = _tie_winner(passing_loss, lat.level_sum)
    anon_mask = lat.status == lat.ANON
    open_mask = anon_mask.copy()
    open_mask[list(known)] = False
    open_mask[list(cut)] = False
    # The open nodes still in the running. Bounds only rise and the best loss (with its tie band) only falls, so a
    # node whose bound is above the band once never comes back: each round looks at these alone, not at the
    # whole lattice (profiled on the sample's 72,000 nodes, discernibility at k = 5 and 1 %: the loop's own time
    # fell from 0.65 s to 0.30 s).
    alive = np.flatnonzero(open_mask)
    n_open0 = max(1, len(alive))
    while True:
        alive = alive[open_mask[alive]]
        if best_id >= 0:
            # Nodes that could still win: a bound below the best loss, or within the tie band and first by
            # the tie rule (fewer levels in all, then lattice order).
            alive = alive[bound[alive] <= best + tol]
            level = lat.level_sum[alive]
            first = (level < lat.level_sum[best_id]) | ((level == lat.level_sum[best_id]) & (alive < best_id))
            cand = alive[(bound[alive] < best - tol) | first]
        else:
            cand = alive
        if len(cand) == 0:
            break
        i = int(cand[np.lexsort((cand, lat.level_sum[cand], bound[cand]))[0]])
        open_mask[i] = False
        got = full(i)
        if got is not None and got.anonymous:
            best_id, best, tol = _tie_winner(passing_loss, lat.level_sum)
        if progress is not None:
            report(progress, 0.75 + 0.25 * (1 - len(alive) / n_open0), "Searching for the optimum")
    report(progress, 1.0, "Done")
    if best_id < 0:
        raise InfeasibleError(
            f"No generalization satisfies {_names(crit)} with at most {limit} record(s) suppressed, the suppressed "
            "records meeting the criteria as one group. Allow more suppression or relax the criteria."
        )
    if banded:
        _check_band(lat, start_bound, best)
    if floor_least[0] <= best + _tie_tolerance(best):
        raise RuntimeError("internal error: lattice nodes tagged failing by a narrower limit could beat the optimum")
    if cutting:
        _check_left(cut, best, "whose count was cut short")
        _check_left(floored, best, "left by the floor of their failing records")
    b = known[best_id]
    if best_eval[0][2] != best_id:
        # The exact least loss is a tie within rounding of a node first by the tie rule: its evaluation
        # (for the criteria report) is made again.
        levels = lat.levels[best_id]
        best_eval[1] = ev.complete(ev._mono(levels, ev.table(levels), early=False))
    summaries = [known[i] for i in sorted(known)]
    kmin_rows = [] if cutting else [known[int(i)] for i in kmin]
    return SearchResult(
        algorithm="optimal",
        qis=problem.qis,
        levels={qn: int(lv) for qn, lv in zip(problem.qis, b.levels, strict=True)},
        metric=metric_name,
        loss=float(b.loss),
        n_suppressed_records=int(b.n_small),
        n_records=n,
        k=_k_of(crit),
        max_suppression=float(max_suppression),
        nodes_evaluated=ev.evaluations,
        n_nodes=lat.n,
        seconds=time.perf_counter() - t0,
        nodes_inferred=0 if union is None else union.inferred,
        k_minimal=None if banded or cutting else (
            _frame(problem, kmin_rows, n).sort_values("loss", kind="stable").reset_index(drop=True)),
        evaluated=_frame(problem, summaries, n),
        hierarchies=problem.hierarchies,
        n_anonymous=None if has_other or banded else int(anon_mask.sum()),
        criteria=tuple(c.spec for c in crit),
        criteria_report=_criteria_report(crit, best_eval[1], limit, ev.semantics),
    )


def _dm_bound(problem: LatticeProblem, ev: NodeEvaluator):
    """Discernibility's bound from the levels (:mod:`.discernibility_bound`) over the evaluator's input table,
    where it pays: under wildcard semantics, where a node costs a scan and an exact count. None elsewhere, or
    when too costly to count. (Under category semantics a node's count is its roll-up: on Adult, 8 QIs at k =
    5, the bound took 0.1 s and spared no evaluation, 123 and 1,115 nodes at 0 and 1 % either way.)"""
    from .discernibility_bound import discernibility_bound

    if not ev.wildcard:
        return None
    return discernibility_bound(ev.base, problem.tables, category=False)


def _records_within(cap: float, least: float, per_record: float) -> int:
    """The failing records a node whose loss is at least ``least`` before suppression may have and stay within
    ``cap``, each adding at least ``per_record`` (see :meth:`NodeEvaluator.suppression_floor`); -1 when none, or
    without a floor to count by (k above the records)."""
    return int((cap - least) // per_record) if per_record > 0 and cap >= least else -1


def _band_ceiling(best_key: tuple | None) -> float:
    """The largest lower bound with which a node may still win, ties included (the tolerance of
    :func:`_tie_winner`), given the key (loss, level sum, id) of the best passing node so far."""
    return math.inf if best_key is None else _cut_cap(float(best_key[0]))


def _check_band(lat: _Lattice, start_bound: np.ndarray, best: float) -> None:
    """Run-time check of what makes a search that classifies only part of the lattice exact: every node
    left unclassified has a bound above the least loss found, ties included, so it could not have won.
    (Read off the final statuses and bounds, from the levels or the class tables, apart from the decisions
    that skipped the nodes.)"""
    unknown = lat.status == lat.UNKNOWN
    could_win = unknown & (start_bound <= best + _tie_tolerance(best))
    if could_win.any():
        raise RuntimeError(f"internal error: {int(could_win.sum())} lattice node(s) that could beat the "
                           "optimum were never classified")


def _cut_cap(least: float) -> float:
    """The lower bound above which a node cannot beat the least loss found so far, ties included: for a
    discernibility count cut short, its discernibility without suppression (its loss is at least that)."""
    return least + _tie_tolerance(least)


def _check_left(left: dict[int, float], best: float, why: str) -> None:
    """Run-time check of the nodes the search left without their exact count (``why`` says how, for the
    message): each node's lower bound lies above the least loss found, ties included, so it could not have
    won. The bounds are read off what the search left (the partial sums of the counts cut short; the floors
    of the nodes left by their failing records), apart from the caps it compared them with."""
    could_win = [i for i, least in left.items() if least <= best + _tie_tolerance(best)]
    if could_win:
        raise RuntimeError(f"internal error: {len(could_win)} lattice node(s) {why} could beat the optimum")


def _tie_tolerance(least: float) -> float:
    """Losses within this of the least are ties (1e-9 relative, absolute below 1): the same loss reached by
    roll-ups from different sources can differ in its last bits."""
    return 1e-9 * max(1.0, abs(least))


def _tie_winner(passing_loss: np.ndarray, level_sum: np.ndarray) -> tuple[int, float, float]:
    """The best passing node under the search's tie rule, its loss and the tie tolerance.

    Losses within 1e-9 relative of the least are ties (the same loss reached by roll-ups from different
    sources can differ in its last bits); among them the node with fewer levels in all wins, then the
    first in lattice order. Returns ``(-1, inf, 0)`` when no node passes yet.
    """
    least = float(passing_loss.min()) if len(passing_loss) else math.inf
    if not math.isfinite(least):
        return -1, math.inf, 0.0
    tol = _tie_tolerance(least)
    tied = np.flatnonzero(passing_loss <= least + tol)
    winner = int(tied[np.lexsort((tied, level_sum[tied]))[0]])
    return winner, float(passing_loss[winner]), tol


class _FailingUnion:
    """Failing nodes told without evaluating them: the union of the failing records of passing nodes above.

    **Why it is exact.** At a positive limit every monotonic criterion promises, record by record, that a
    record failing at a node Z also fails at every node Y below Z (:mod:`kanon_core.criteria.base`; the
    AND of such criteria keeps the promise, a union of shrinking sets shrinks). So the records failing at
    Y include the failing records of *every* evaluated node above it, and when the union of those sets
    exceeds the limit, Y fails: the evaluation would have said so. Flash's tagging uses one node at a
    time (a node above passing says nothing about Y); the union of two or more passing nodes' failing
    sets can exceed the limit although each is within it, which is how this tags nodes Flash would
    evaluate. The sets are the input classes failing at each evaluated passing node (at most the limit's
    records each), and a node's failing records are exactly the records of its failing input classes,
    so the count is exact.

    ``max_sets`` bounds the work per question: the sets are merged largest first (the failing sets of
    nodes nearest to Y are the largest and contain those of the nodes above them), stopping as soon as
    the limit is exceeded.

    The same count answers a narrower limit (:meth:`tell`'s ``limit``): the records failing at Y are at least
    the union's, so Y has more failing records than any number the union exceeds. The discernibility search
    asks with the failing records a node may have and still win, or let a node below it win
    (:meth:`_Lattice.narrowed_limit`); a single passing node's set can exceed that one.
    """

    def __init__(self, q: int, base_count: np.ndarray, limit: int, max_sets: int):
        self.lv = np.zeros((64, q), dtype=np.int16)
        self.cnt = np.zeros(64, dtype=np.int64)
        self.offsets = np.zeros(65, dtype=np.int64)
        self.flat = np.zeros(1024, dtype=np.int64)
        self.m = 0
        self.base_count = np.ascontiguousarray(base_count, dtype=np.int64)
        self.limit = int(limit)
        self.max_sets = int(max_sets)
        self.mark = np.zeros(len(base_count), dtype=np.bool_)
        self.out = np.empty(len(base_count), dtype=np.int64)
        self.inferred = 0

    def add(self, levels: tuple[int, ...], ids: np.ndarray) -> None:
        """The failing input classes ``ids`` of a passing node."""
        if len(ids) == 0:
            return
        m = self.m
        if m >= len(self.cnt):
            self.lv = np.vstack([self.lv, np.zeros_like(self.lv)])
            self.cnt = np.concatenate([self.cnt, np.zeros_like(self.cnt)])
            self.offsets = np.concatenate([self.offsets, np.zeros(len(self.cnt) - len(self.offsets) + 1, np.int64)])
        lo = int(self.offsets[m])
        hi = lo + len(ids)
        if hi > len(self.flat):
            self.flat = np.concatenate([self.flat, np.zeros(max(hi, 2 * len(self.flat)) - len(self.flat), np.int64)])
        self.flat[lo:hi] = ids
        self.offsets[m + 1] = hi
        self.lv[m] = levels
        self.cnt[m] = int(self.base_count[ids].sum())
        self.m = m + 1

    def union(self, levels: tuple[int, ...], stop_above: int) -> tuple[int, np.ndarray]:
        """Records and input classes of the union above ``levels`` (the merge stops once past ``stop_above``
        records when it is >= 0)."""
        from ._lattice_kernel import union_above

        total, n_out = union_above(self.lv, self.cnt, self.m, np.asarray(levels, dtype=np.int16), self.offsets,
                                   self.flat, self.base_count, self.max_sets, stop_above, self.mark, self.out)
        return int(total), self.out[:n_out]

    def tell(self, levels: tuple[int, ...], want_ids: bool, limit: int | None = None
             ) -> tuple[bool, np.ndarray | None]:
        """Whether the records failing at passing nodes above ``levels`` are more than the limit (the node
        fails), and otherwise, with ``want_ids``, the input classes known to fail there (a copy; None when
        there are none). Without ``want_ids`` the merge stops as soon as the limit is passed. ``limit``: a
        narrower one than the search's (the failing records a node may have and still win, see
        ``search_optimal``'s narrowing), under which the failing set of a single node above can be past it."""
        lim = self.limit if limit is None else min(self.limit, int(limit))
        if self.m < (1 if want_ids or lim < self.limit else 2):
            return False, None
        total, ids = self.union(levels, -1 if want_ids else lim)
        if total > lim:
            self.inferred += 1
            return True, None
        return False, (ids.copy() if want_ids and len(ids) else None)


def _names(criteria: Sequence[Criterion]) -> str:
    return " and ".join(c.spec for c in criteria)


def _path_up(lat: _Lattice, start: int, balanced: bool = False) -> list[int]:
    """A chain of unclassified nodes from ``start`` upwards.

    Each step adds the least relative height (ties: the lowest QI position): the QIs with the most levels
    are generalized first, which keeps the path close to the specific end of the lattice, where the optimum
    of monotone metrics lies. ``balanced``: each step generalizes instead the QI least generalized so far
    relative to its height (ties: the lowest QI position), so the path climbs through the middle of the
    lattice, every QI in turn, and the node where it crosses the border tags large up- and down-sets on both
    sides. On the bundled sample's 8-QI search (wildcard, k = 3), every node classified (``k_minimal=True``),
    the balanced paths need 2,201 evaluations at 1 % instead of 2,626 and 1,729 at 0 % instead of 2,030,
    with the same statuses, and the search takes 0.87-0.94 of its time. On Adult (category semantics, paths
    searched from a guess) they need 1,096 and 109 instead of 1,121 and 123, but the search took 1.02-1.03
    of its time: the search uses them where a node's scan is dear (wildcard semantics).
    """
    path = [start]
    cur = start
    status, unknown = lat.status, lat.UNKNOWN
    if not balanced:
        while True:
            succ = [s for s in lat.successors(cur) if status[s] == unknown]
            if not succ:
                return path
            cur = min(succ, key=lambda s: (lat._frac[s], s))
            path.append(cur)
    tops, strides = lat._tops, lat._strides
    while True:
        levels = lat.levels[cur]
        best, best_rel = -1, math.inf
        for j in range(lat.q):
            if levels[j] < tops[j]:
                rel = levels[j] / tops[j]
                if rel < best_rel and status[cur + strides[j]] == unknown:
                    best, best_rel = cur + strides[j], rel
        if best < 0:
            return path
        cur = best
        path.append(cur)


def _first_passing(n: int, passes, guess: int | None) -> int:
    """The first position on a chain of ``n`` nodes whose node passes (``n`` when none does).

    The statuses along a chain (each node a generalization of the one before) are monotone: failing
    nodes, then passing ones. Without a ``guess`` this is a binary search (Flash). With one, the first
    probe is at the guess and the search gallops away from it (steps 1, 2, 4, ...) until it crosses the
    border, then bisects what is left: when the border lies near the guess, two probes find it, and both
    probed nodes lie next to the border (the nodes a complete classification cannot do without).
    Invariant: every position below ``lo`` fails, every position above ``hi`` passes.
    """
    lo, hi = 0, n - 1
    if guess is not None and lo <= hi:
        mid = min(max(guess, lo), hi)
        up = not passes(mid)
        if up:
            lo = mid + 1
        else:
            hi = mid - 1
        step = 1
        while lo <= hi:
            nxt = mid + step if up else mid - step
            nxt = min(max(nxt, lo), hi)
            ok = passes(nxt)
            if ok:
                hi = nxt - 1
            else:
                lo = nxt + 1
            if ok == up:  # crossed the border: bisect between
                break
            mid = nxt
            step *= 2
    while lo <= hi:
        mid = (lo + hi) // 2
        if passes(mid):
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


def _guess_crossing(lat: _Lattice, path: list[int], crossing: list[float]) -> int | None:
    """Where the border probably crosses ``path``: its first node at least as general (relative height,
    as :func:`_path_up` measures it) as the first passing node of the last path searched; None before
    any crossing. Neighbouring paths cross the border at like heights, so the probes of
    :func:`_first_passing` land next to it: on Adult at 1 % the search evaluates 1,121 nodes instead of
    1,481 (at 0 %: 123 instead of 196)."""
    if not crossing:
        return None
    target = crossing[-1]
    for t, i in enumerate(path):
        if lat._frac[i] >= target - 1e-12:
            return t
    return len(path) - 1


def _check_k(k: int) -> int:
    if int(k) != k or k < 1:
        raise InputError("k must be a whole number of at least 1.")
    return int(k)


def evaluate_node(
    problem: LatticeProblem, levels: Sequence[int], k: int | None = None, max_suppression: float = 0.0,
    metric: str = "prec", criteria: Sequence[Criterion | str] | None = None,
) -> NodeSummary:
    """Loss and suppression of one chosen node (the officer's manual level choice)."""
    lv = problem.check_levels(levels)
    metric_name = check_metric(metric)
    crit = resolve_criteria(problem, k, criteria)
    limit = suppression_limit(problem.n_records, max_suppression)
    ev = NodeEvaluator(problem, crit, limit, need_fk=metric_name == "dm")
    return _summary(problem.metric_context(), metric_name, ev.evaluate(lv), limit, crit, semantics=ev.semantics)


def exhaustive_search(
    problem: LatticeProblem, k: int | None = None, max_suppression: float = 0.0, metric: str = "prec",
    criteria: Sequence[Criterion | str] | None = None,
) -> pd.DataFrame:
    """Every node evaluated (MinGen, Sweeney 2002): the reference for small lattices and for plots."""
    lat = _Lattice(problem.heights)
    metric_name = check_metric(metric)
    crit = resolve_criteria(problem, k, criteria)
    limit = suppression_limit(problem.n_records, max_suppression)
    ev = NodeEvaluator(problem, crit, limit, need_fk=metric_name == "dm")
    ctx = problem.metric_context()
    rows = [_summary(ctx, metric_name, ev.evaluate(lat.nodes[i]), limit, crit, semantics=ev.semantics)
            for i in range(lat.n)]
    return _frame(problem, rows, problem.n_records)


# -- Datafly -----------------------------------------------------------------------------------------------------
def datafly(
    problem: LatticeProblem,
    k: int | None,
    max_suppression: float | None = None,
    metric: str = "prec",
    progress: Progress | None = None,
    criteria: Sequence[Criterion | str] | None = None,
) -> SearchResult:
    """Sweeney's Datafly (Sweeney 2002): generalize the QI with the most distinct values until few remain.

    Stops when the records failing the criteria (k alone: in classes smaller than k) are within the
    limit: ``max_suppression`` as a fraction, or Sweeney's rule (at most k records) when None, and meet the
    criteria as the one group they form once suppressed (:func:`acceptable`). A heuristic: fast, satisfies
    the criteria, not minimal in general.
    """
    t0 = time.perf_counter()
    metric_name = check_metric(metric)
    crit = resolve_criteria(problem, k, criteria)
    k = _k_of(crit)
    n = problem.n_records
    _refuse_k_above_records(crit, n)
    limit = k if max_suppression is None else suppression_limit(n, max_suppression)
    ev = NodeEvaluator(problem, crit, limit, need_fk=metric_name == "dm")
    ctx = problem.metric_context()
    heights = problem.heights
    levels = [0] * len(problem.qis)
    present = [np.unique(problem.codes[:, j][problem.codes[:, j] >= 0]) for j in range(len(problem.qis))]
    summaries = []
    max_steps = int((heights - 1).sum())
    while True:
        e = ev.evaluate(levels)
        s = _summary(ctx, metric_name, e, limit, crit, semantics=ev.semantics)
        n_small = s.n_small
        summaries.append(s)
        report(progress, sum(levels) / max(1, max_steps), "Datafly: generalizing")
        if s.anonymous:
            break
        distinct = [len(np.unique(problem.tables[j][lv][present[j]])) if lv < heights[j] - 1 else -1
                    for j, lv in enumerate(levels)]
        j = int(np.argmax(distinct))
        if distinct[j] < 0:
            raise InfeasibleError(
                f"Even at the top levels {n_small} record(s) fail {_names(crit)}, more than the {limit} allowed."
                if n_small > limit else
                f"Even at the top levels the {n_small} record(s) failing {_names(crit)} would not meet the criteria "
                "as the one group their suppression makes (fewer than k of them, or not diverse enough)."
            )
        levels[j] += 1
    report(progress, 1.0, "Done")
    return SearchResult(
        algorithm="datafly",
        qis=problem.qis,
        levels={q: int(lv) for q, lv in zip(problem.qis, levels, strict=True)},
        metric=metric_name,
        loss=float(s.loss),
        n_suppressed_records=int(s.n_small),
        n_records=n,
        k=k,
        max_suppression=float(limit / n),
        nodes_evaluated=ev.evaluations,
        n_nodes=int(np.prod(heights)),
        seconds=time.perf_counter() - t0,
        k_minimal=_frame(problem, [], n),
        evaluated=_frame(problem, summaries, n),
        hierarchies=problem.hierarchies,
        criteria=tuple(c.spec for c in crit),
        criteria_report=_criteria_report(crit, e, limit, ev.semantics),
    )


# -- the trade-off curve ---------------------------------------------------------------------------------------
def tradeoff(
    problem: LatticeProblem,
    k: int | None,
    limits: Sequence[float] = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1),
    metric: str = "prec",
    progress: Progress | None = None,
    criteria: Sequence[Criterion | str] | None = None,
) -> pd.DataFrame:
    """The optimal loss for each suppression limit: one exact search per limit (a plot-ready table). Each
    search reports its own progress within its share, so a cancel stops the search under way."""
    rows = []
    n = max(1, len(limits))
    for i, lim in enumerate(limits):
        sub = scaled_progress(progress, i / n, (i + 1) / n, f"Trade-off, limit {100 * lim:g} %")
        try:
            r = search_optimal(problem, k, lim, metric, sub, criteria=criteria)
        except InfeasibleError:
            rows.append({"max_suppression": lim, "feasible": False})
            continue
        rows.append({"max_suppression": lim, "feasible": True, "loss": r.loss,
                     "n_suppressed": r.n_suppressed_records,
                     "pct_suppressed": 100.0 * r.n_suppressed_records / r.n_records,
                     "levels": ", ".join(f"{q}={lv}" for q, lv in r.levels.items()),
                     "nodes_evaluated": r.nodes_evaluated})
    report(progress, 1.0, "Done")
    return pd.DataFrame(rows)
