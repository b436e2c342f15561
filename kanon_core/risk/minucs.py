"""MINUCs: every minimal unsafe combination of every record, exactly.

Definition (Willenborg & de Waal; Wilson et al., RTI for k = 2, where MINUCs are SUDA's minimal sample uniques).
For a threshold k, a set S of quasi-identifiers is a *minimal unsafe combination* of record r when r's
values on S occur in fewer than k records while r's values on every proper subset of S occur in at least
k records. Under ``wildcard`` semantics r's missing QIs never belong to its combinations and another
record's missing value matches anything; under ``category`` semantics missing is a value.

Method (no frequency tables, no itemset lattice). Identical rows are collapsed first. For a row r and
another row s let D(r, s) be the set of QIs on which they disagree (both observed and different under
wildcard semantics). s agrees with r on S exactly when S and D(r, s) are disjoint, so

    count(r, S) = m0 + #{s : D(r, s) ≠ ∅, D(r, s) ∩ S = ∅},

with m0 the records agreeing with r everywhere (r included). S is unsafe iff the records it fails to
separate from r weigh at most b = k - 1 - m0. For k = 2 (b = 0, r unique) S is unsafe iff it *hits*
every non-empty D(r, s): r's MINUCs are the minimal transversals of the hypergraph {D(r, s)}, and only
its inclusion-minimal edges matter. For k > 2 they are the minimal "partial" transversals that leave at
most b of weight unhit; :func:`~kanon_core.risk._minuc_kernel._reduce_family` shrinks the edge family
without changing which sets are unsafe, and a depth-first search in the style of MMCS (Murakami & Uno,
2014) enumerates them, each exactly once, pruning any branch in which a chosen QI has lost all its
critical edges (it could never be needed again). The search runs on the row's QIs relabeled rarest first
(fewest edges holding them), which shapes its tree but not the sets it finds, and maps them back
(:func:`~kanon_core.risk._minuc_kernel._relabel_rare_first`).

Why this rather than SUDA2's recursion over item subtables (Manning, Haglin & Keane, 2008)? Both find the
same sets; this one needs no special-row check, handles missing values and any k natively, works on
19-bit masks in registers, parallelises over records, and its cost is one vectorised pass over the rows
per record plus output-sensitive enumeration. The cost grows with the square of the number of distinct
rows, so a class table of millions of classes with few QIs is searched by counting every QI subset on it
instead (:mod:`~kanon_core.risk.minucs_by_subsets`; :func:`summarize_minucs_of_table` chooses).

Results are stored per distinct row in CSR form (offsets + bit masks; bit j = ``names[j]``), 4 bytes per
MINUC up to 32 QIs, and expanded per record only on demand. The kernel also tallies each row's MINUCs by
size and by QI, and flags the distinct QI sets, while the row's masks are still in cache: every count the
MINUCs page and the report show comes from those tallies, so :func:`summarize_minucs` (the report's
search) drops the masks row by row and :func:`find_minucs` (the page's, whose record view, filter and SUDA
scores need them) keeps them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from math import comb
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from .. import threads
from ..dataset import MissingSemantics, QIMatrix, check_semantics
from ..errors import InputError, fewer_records_than_k
from ..progress import Progress, report
from .keys import group_ids

if TYPE_CHECKING:
    from ..classtable import ClassTable
    from .minucs_by_subsets import MinucMethod
    from .minucs_carry import CarryPlan

MAX_QIS = 64


@dataclass(frozen=True)
class Collapsed:
    """Distinct QI rows, how many records each stands for, and the row of every record."""

    rows: np.ndarray  # (n_rows, q) int32
    mult: np.ndarray  # (n_rows,) int64
    row_of_record: np.ndarray  # (n_records,) int64


def collapse(codes: np.ndarray) -> Collapsed:
    """Identical rows have identical MINUCs: work on distinct rows (in order of first appearance)."""
    gid, counts = group_ids(codes)
    n = len(gid)
    first = np.full(len(counts), n, dtype=np.int64)
    np.minimum.at(first, gid, np.arange(n))
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return Collapsed(rows=np.ascontiguousarray(codes[first[order]]), mult=counts[order].astype(np.int64),
                     row_of_record=rank[gid].astype(np.int64))


@dataclass(frozen=True, eq=False)
class MinucRows:
    """A file's distinct QI rows and each one's class size on all its QIs under one missing-value semantics:
    where every MINUC search and estimate of these records starts, whatever k and the size limit.

    The MINUCs page makes it once per version and hands it to the estimate and to the search, which would
    otherwise each compute it (a wildcard class size count: about a tenth of a second on the bundled sample).
    Whoever is handed one checks that it was made from the very codes and semantics it was given
    (:meth:`fits`), and computes its own otherwise.
    """

    codes: np.ndarray
    missing: str
    col: Collapsed
    fk: np.ndarray  # per distinct row: its records' class size on all QIs

    def fits(self, codes: np.ndarray, missing: str) -> bool:
        """Whether these rows were made from ``codes`` (the same values) under ``missing``."""
        return (self.missing == missing and self.codes.shape == codes.shape
                and (self.codes is codes or np.array_equal(self.codes, codes)))


def minuc_rows(codes: np.ndarray | QIMatrix, missing: MissingSemantics = "wildcard") -> MinucRows:
    """The :class:`MinucRows` of ``codes`` (integer QI codes, -1 = missing, or a :class:`QIMatrix`)."""
    if isinstance(codes, QIMatrix):
        codes = codes.codes
    check_semantics(missing)
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    if codes.ndim != 2:
        raise InputError("Codes must be a 2-D array (records x quasi-identifiers).")
    col = collapse(codes)
    return MinucRows(codes, missing, col, _row_class_sizes(codes, col, missing))


def _names_or_default(names: Sequence[str] | None, q: int) -> tuple[str, ...]:
    """The QI names given, or q0, q1, ... for codes given without names."""
    return tuple(names) if names is not None else tuple(f"q{j}" for j in range(q))


def _rows_of(codes: np.ndarray, missing: MissingSemantics, rows: MinucRows | None) -> tuple[Collapsed, np.ndarray]:
    """The distinct rows of ``codes`` and their class sizes: ``rows``' when they fit, else computed."""
    if rows is not None and rows.fits(codes, missing):
        return rows.col, rows.fk
    col = collapse(codes)
    return col, _row_class_sizes(codes, col, missing)


@dataclass(frozen=True, eq=False, kw_only=True)
class MinucSummary:
    """The counts of all MINUCs (up to ``max_size`` when given) of every record, without the MINUCs.

    What the MINUCs page's figures and the report need (totals, counts by size, per record, per QI and
    per value) is tallied by the kernel row by row while it enumerates, so a search that only reports
    counts (:func:`summarize_minucs`) never stores the tens of millions of masks. ``row_sizes[i, s]``
    counts distinct row i's MINUCs of size s + 1, ``row_qis[i, j]`` those containing QI ``names[j]``;
    record r has the counts of row ``row_of_record[r]``. ``combinations`` are the distinct sets of QIs
    (bit masks, ascending) that are a MINUC of some record, flagged by the kernel up to
    ``STAMP_MAX_BITS`` QIs (None above: read them off the masks); the minimal violating QI sets are the
    minimal ones among them. ``complete`` is False when ``max_size`` may have cut some larger MINUCs off.
    ``method`` says how they were found: ``pairs`` (every row against every row) or ``subsets`` (every QI
    subset counted, :mod:`~kanon_core.risk.minucs_by_subsets`).
    """

    names: tuple[str, ...]
    k: int
    missing: MissingSemantics
    max_size: int | None
    n_records: int
    rows: np.ndarray = field(repr=False)
    row_mult: np.ndarray = field(repr=False)
    row_of_record: np.ndarray = field(repr=False)
    row_sizes: np.ndarray = field(repr=False)
    row_qis: np.ndarray = field(repr=False)
    combinations: np.ndarray | None = field(default=None, repr=False)
    complete: bool = True
    seconds: float = 0.0
    method: str = "pairs"
    rows_carried: int = 0
    """Distinct rows whose MINUCs were carried over from an earlier search of the same records, not searched
    (:mod:`~kanon_core.risk.minucs_carry`)."""
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # -- sizes -------------------------------------------------------------------------------------------
    @property
    def n_qis(self) -> int:
        return len(self.names)

    @property
    def row_counts(self) -> np.ndarray:
        """MINUCs of each distinct row."""
        if "row_counts" not in self._cache:
            self._cache["row_counts"] = self.row_sizes.sum(axis=1)
        return self._cache["row_counts"]

    @property
    def per_record_counts(self) -> np.ndarray:
        """Number of MINUCs of each record."""
        return self.row_counts[self.row_of_record]

    @property
    def total(self) -> int:
        """MINUCs over all records (a combination shared by several records counts once per record)."""
        return int((self.row_counts * self.row_mult).sum())

    # -- summaries ---------------------------------------------------------------------------------------
    def row_size_counts(self) -> np.ndarray:
        """(n_rows, q) counts of MINUCs of each size (column j = size j + 1) per distinct row."""
        return self.row_sizes

    def counts_by_size(self) -> np.ndarray:
        """(n_records, q) counts of MINUCs of each size per record, in input order (column j = size j+1)."""
        return self.row_sizes[self.row_of_record]

    def totals_by_size(self) -> dict[int, int]:
        """Total MINUCs over records, by size (every size 1..q present, zeros included)."""
        per_size = (self.row_sizes * self.row_mult[:, None]).sum(axis=0)
        return {s + 1: int(per_size[s]) for s in range(self.n_qis)}

    def records_with_minucs(self) -> int:
        return int(self.row_mult[self.row_counts > 0].sum())

    def smallest_size(self) -> np.ndarray:
        """Per record: size of its smallest MINUC (0 when it has none)."""
        if "smallest" not in self._cache:
            has = self.row_sizes > 0
            self._cache["smallest"] = np.where(has.any(axis=1), has.argmax(axis=1) + 1, 0).astype(np.int64)
        return self._cache["smallest"][self.row_of_record]

    def variable_contributions(self) -> pd.DataFrame:
        """Per QI: MINUCs containing it (over records), their share of all MINUCs, records concerned.

        Shares add up to more than 100 % because a MINUC of size m counts for each of its m QIs.
        """
        per_var = (self.row_qis * self.row_mult[:, None]).sum(axis=0)
        records = ((self.row_qis > 0) * self.row_mult[:, None]).sum(axis=0)
        total = max(self.total, 1)
        return pd.DataFrame({
            "variable": list(self.names),
            "minucs": per_var.astype(np.int64),
            "share_percent": np.round(100.0 * per_var / total, 3),
            "records": records.astype(np.int64),
        }).sort_values(["minucs", "variable"], ascending=[False, True], ignore_index=True)

    def _value_offsets(self) -> np.ndarray:
        """Start of each QI's codes in a flat array over (QI, code + 1; 0 = missing)."""
        q = self.n_qis
        card = self.rows.max(axis=0).astype(np.int64) + 2 if len(self.rows) else np.ones(q, np.int64)
        return np.concatenate([[0], np.cumsum(card)]).astype(np.int64)

    def value_counts(self) -> list[np.ndarray]:
        """Per QI, an array over its codes (index code + 1; 0 = missing) of the MINUCs (over records)
        containing that value: the row's MINUCs containing the QI, times its records, at the row's code."""
        offset = self._value_offsets()
        flat = np.zeros(offset[-1], dtype=np.float64)
        for j in range(self.n_qis):
            np.add.at(flat, offset[j] + self.rows[:, j].astype(np.int64) + 1,
                      (self.row_qis[:, j] * self.row_mult).astype(np.float64))
        return [flat[offset[j]:offset[j + 1]] for j in range(self.n_qis)]

    def value_contributions(self, qm: QIMatrix | ClassTable | None = None, top: int | None = None) -> pd.DataFrame:
        """Per (QI, value): the MINUCs (over records) that contain that value of that QI (labelled by ``qm``'s
        labels: the records' QI matrix, or the class table the search ran on).

        This is what an officer recodes first: a rare category sitting in many MINUCs.
        """
        counts = self.value_counts()
        total = max(self.total, 1)
        out = pd.DataFrame([(self.names[j], label, code, int(round(v)), round(100.0 * v / total, 3))
                            for j, code, label, v in self.value_rows(counts, qm)],
                           columns=["variable", "value", "code", "minucs", "share_percent"])
        out = out.sort_values(["minucs", "variable", "code"], ascending=[False, True, True], ignore_index=True)
        return out if top is None else out.head(top)

    def value_rows(self, counts: list[np.ndarray], qm: QIMatrix | ClassTable | None):
        for j, arr in enumerate(counts):
            for c in np.flatnonzero(arr).tolist():
                code = int(c) - 1
                if qm is not None and code >= 0:
                    label = qm.labels[j][code]
                else:
                    label = "(missing)" if code < 0 else str(code)
                yield j, code, label, float(arr[c])

    def record_ranking(self, top: int | None = None) -> pd.DataFrame:
        """Records ranked by risk: smallest MINUC first, then most MINUCs."""
        cnt = self.per_record_counts
        small = self.smallest_size()
        idx = np.flatnonzero(cnt > 0)
        order = np.lexsort((idx, -cnt[idx], small[idx]))
        idx = idx[order]
        if top is not None:
            idx = idx[:top]
        by_size = self.row_sizes[self.row_of_record[idx]]
        data = {"record": idx, "minucs": cnt[idx], "smallest": small[idx]}
        for s in range(min(self.n_qis, 6)):
            data[f"size{s + 1}"] = by_size[:, s]
        return pd.DataFrame(data)

    def _json_counts(self, distinct: int | None = None) -> dict:
        """The JSON of the counts; ``distinct`` (the MINUCs as distinct (QIs, values) pairs) when known."""
        contrib = self.variable_contributions()
        return {
            "qis": list(self.names),
            "k": self.k,
            "missing": self.missing,
            "max_size": self.max_size,
            "complete": self.complete,
            "method": self.method,
            "n_records": self.n_records,
            "total": self.total,
            **({} if distinct is None else {"distinct": distinct}),
            "records_with_minucs": self.records_with_minucs(),
            "by_size": {str(s): v for s, v in self.totals_by_size().items()},
            "variable_contributions": {r.variable: {"minucs": int(r.minucs), "share_percent": float(r.share_percent),
                                                    "records": int(r.records)} for r in contrib.itertuples()},
        }

    def to_json(self) -> dict:
        return {**self._json_counts(), "seconds": round(self.seconds, 4)}


@dataclass(frozen=True, eq=False, kw_only=True)
class MinucResult(MinucSummary):
    """All MINUCs (up to ``max_size`` when given) of every record, stored per distinct row, with the
    counts of :class:`MinucSummary`.

    ``row_masks[row_offsets[i]:row_offsets[i + 1]]`` are the MINUCs of distinct row i as bit masks over
    ``names`` (uint32 up to 32 QIs, else uint64); record r has the MINUCs of row ``row_of_record[r]``.
    """

    row_offsets: np.ndarray = field(repr=False)
    row_masks: np.ndarray = field(repr=False)

    @property
    def n_distinct(self) -> int:
        """MINUCs as (combination of QIs, values) pairs: shared ones counted once."""
        return int(len(self.row_masks))

    @property
    def offsets(self) -> np.ndarray:
        """CSR offsets per record: record i's MINUCs are ``mask[offsets[i]:offsets[i + 1]]``."""
        return np.concatenate([[0], np.cumsum(self.per_record_counts)]).astype(np.int64)

    @property
    def record(self) -> np.ndarray:
        """One entry per (record, MINUC): the record's index (expanded; can be large)."""
        return np.repeat(np.arange(self.n_records, dtype=np.int64), self.per_record_counts)

    @property
    def mask(self) -> np.ndarray:
        """One entry per (record, MINUC): the MINUC's bit mask (uint64), aligned with :attr:`record`."""
        cnt = self.per_record_counts
        starts = self.row_offsets[self.row_of_record]
        total = int(cnt.sum())
        if total == 0:
            return np.zeros(0, dtype=np.uint64)
        rec_start = np.repeat(starts - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
        return self.row_masks[rec_start + np.arange(total)].astype(np.uint64)

    def value_tally(self, size_weights: np.ndarray) -> list[np.ndarray]:
        """Per QI, an array over its codes (index code + 1; 0 = missing) of MINUCs containing that value,
        each counted with ``size_weights[size]`` times its records (SUDA's weights need the masks; with
        all weights 1 this is :meth:`value_counts`)."""
        from ._minuc_summary import value_counts

        offset = self._value_offsets()
        flat = value_counts(self.rows, self.row_mult, self.row_offsets, self.row_masks, offset,
                            np.asarray(size_weights, dtype=np.float64))
        return [flat[offset[j]:offset[j + 1]] for j in range(self.n_qis)]

    def masks_of(self, record: int) -> np.ndarray:
        """The MINUCs of one record (bit masks)."""
        r = int(self.row_of_record[record])
        return self.row_masks[self.row_offsets[r]:self.row_offsets[r + 1]]

    def combinations_of(self, record: int) -> list[tuple[str, ...]]:
        """The MINUCs of one record as tuples of QI names, smallest first."""
        out = [tuple(self.names[j] for j in range(self.n_qis) if (int(m) >> j) & 1) for m in self.masks_of(record)]
        return sorted(out, key=lambda c: (len(c), c))

    def count_containing(self, variables: Sequence[str]) -> np.ndarray:
        """Per record: its MINUCs that contain every one of ``variables`` (the explorer's filter)."""
        unknown = [v for v in variables if v not in self.names]
        if unknown:
            raise InputError(f"Not among the searched quasi-identifiers: {', '.join(unknown)}.")
        from ._minuc_summary import count_containing

        sel = np.uint64(sum(1 << self.names.index(v) for v in variables))
        per_row = count_containing(self.row_offsets, self.row_masks, sel)
        return per_row[self.row_of_record].astype(np.int64)

    def record_view(self, record: int, qm: QIMatrix | None = None, limit: int = 200) -> pd.DataFrame:
        """One record's MINUCs as a table: a row per MINUC (smallest first), the record's value in the
        columns of the QIs the MINUC contains and an empty cell elsewhere."""
        masks = self.masks_of(record)
        order = np.lexsort((masks, popcount(masks)))[:limit]
        row = self.rows[self.row_of_record[record]]
        labels = [(qm.labels[j][c] if qm is not None and c >= 0 else ("(missing)" if c < 0 else str(c)))
                  for j, c in enumerate(row.tolist())]
        data = []
        for m in masks[order].tolist():
            data.append([labels[j] if (m >> j) & 1 else "" for j in range(self.n_qis)] + [bin(m).count("1")])
        return pd.DataFrame(data, columns=list(self.names) + ["size"])

    def to_json(self) -> dict:
        return {**self._json_counts(self.n_distinct), "seconds": round(self.seconds, 4)}

    def counts_only(self) -> MinucSummary:
        """The counts without the MINUCs (what :func:`summarize_minucs` gives): the list's memory is freed."""
        kept = {f.name: getattr(self, f.name) for f in fields(MinucSummary) if f.name != "_cache"}
        return MinucSummary(**kept)


def popcount(masks: np.ndarray) -> np.ndarray:
    """Bits set per mask (vectorised)."""
    x = np.asarray(masks, dtype=np.uint64).copy()
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def _check(codes: np.ndarray, k: int, missing: str, max_size: int | None,
           n_records: int | None = None) -> tuple[np.ndarray, int]:
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise InputError("Codes must be a 2-D array (records x quasi-identifiers).")
    n, q = codes.shape
    n = n if n_records is None else int(n_records)
    if q == 0:
        raise InputError("Choose at least one quasi-identifier.")
    if q > MAX_QIS:
        raise InputError(f"At most {MAX_QIS} quasi-identifiers can be searched at once (got {q}).")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise InputError("k must be a whole number of at least 2.")
    if n < k:
        raise InputError(fewer_records_than_k(n, k))
    if max_size is not None and (not isinstance(max_size, (int, np.integer)) or max_size < 1):
        raise InputError("The maximum MINUC size must be a whole number of at least 1.")
    check_semantics(missing)
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    if (codes < -1).any():
        raise InputError("Codes must be >= 0, or -1 for missing.")
    return codes, (q if max_size is None else min(int(max_size), q))


def find_minucs(codes: np.ndarray | QIMatrix, k: int = 2, missing: MissingSemantics = "wildcard",
                max_size: int | None = None, progress: Progress | None = None,
                names: Sequence[str] | None = None, workers: int | None = None,
                method: MinucMethod = "auto", carry: CarryPlan | None = None,
                rows: MinucRows | None = None) -> MinucResult:
    """Every MINUC of every record for threshold ``k`` (k = 2: minimal sample uniques).

    ``codes`` are integer QI codes (-1 = missing) or a :class:`QIMatrix`. ``max_size`` limits the size of
    the MINUCs searched (the result says whether it may have cut some off). ``method``: ``pairs`` compares
    distinct records pairwise, split into chunks run on ``workers`` threads (default: all cores);
    ``subsets`` counts every QI subset on the distinct records (:mod:`~kanon_core.risk.minucs_by_subsets`:
    many records, few QIs); ``auto`` the one forecast cheaper. ``progress`` is updated as the search goes
    and can cancel it. ``carry`` (:func:`~kanon_core.risk.minucs_carry.plan_carry`): the records whose
    MINUCs an earlier search of the same records holds, taken from it instead of searched again (with the
    pairwise search; the result says how many distinct rows in ``rows_carried``). ``rows``
    (:func:`minuc_rows`): the distinct rows and class sizes of these codes, made already (checked, not
    trusted).
    """
    return cast(MinucResult, _search(codes, k, missing, max_size, progress, names, workers, keep=True,
                                     method=method, carry=carry, rows=rows))


def summarize_minucs(codes: np.ndarray | QIMatrix, k: int = 2, missing: MissingSemantics = "wildcard",
                     max_size: int | None = None, progress: Progress | None = None,
                     names: Sequence[str] | None = None, workers: int | None = None,
                     method: MinucMethod = "auto", carry: CarryPlan | None = None,
                     rows: MinucRows | None = None) -> MinucSummary:
    """The counts of :func:`find_minucs` (totals, by size, per record, per QI, per value) without the
    MINUCs themselves: the same search, tallied row by row and the masks dropped. For the report and
    anything else that shows only counts (15 million MINUCs at k = 3 on the sample need no 60 MB list).
    ``carry`` and ``rows`` as in :func:`find_minucs`.
    """
    return _search(codes, k, missing, max_size, progress, names, workers, keep=False, method=method, carry=carry,
                   rows=rows)


def summarize_minucs_of_table(table: ClassTable, k: int = 2, missing: MissingSemantics = "wildcard",
                              max_size: int | None = None, progress: Progress | None = None,
                              workers: int | None = None, method: MinucMethod = "auto") -> MinucSummary:
    """The counts of :func:`summarize_minucs` for a class table: its distinct rows with their record counts
    (a file too large for memory, aggregated by an engine). The search already works on distinct rows with
    multiplicities (identical records have identical MINUCs, and a combination's frequency is the sum of
    the counts of the rows that match it), so the table is searched as it is. Every count over records
    (totals, by size, by QI and value, records concerned, the violating QI sets) equals the records' own;
    a "record" of the per-record views is a class here (``row_of_record`` is the identity).

    ``method``: ``pairs`` compares every class below k with every class (cost: their product), ``subsets``
    counts every QI subset on the table (:mod:`~kanon_core.risk.minucs_by_subsets`; cost: subsets x
    classes), ``auto`` the cheaper by :func:`choose_method`. Both give the same counts; ``complete`` may
    differ, as each says "a larger MINUC may exist" from what it looked at.
    """
    codes, _ = _check(table.codes, k, missing, max_size, table.n_records)
    col, fk = _table_rows(table, codes, missing)
    return _search(codes, k, missing, max_size, progress, table.qis, workers, keep=False,
                   prepared=(col, fk, table.n_records), method=method)


def _table_rows(table: ClassTable, codes: np.ndarray, missing: MissingSemantics) -> tuple[Collapsed, np.ndarray]:
    """A class table as the search's distinct rows (each its own class) with their class sizes."""
    col = Collapsed(rows=codes, mult=np.asarray(table.count, dtype=np.int64),
                    row_of_record=np.arange(table.n_classes, dtype=np.int64))
    return col, np.rint(np.asarray(table.class_sizes(missing).fk, dtype=np.float64)).astype(np.int64)


def _search(codes: np.ndarray | QIMatrix, k: int, missing: MissingSemantics, max_size: int | None,
            progress: Progress | None, names: Sequence[str] | None, workers: int | None,
            keep: bool, prepared: tuple[Collapsed, np.ndarray, int] | None = None,
            method: str = "pairs", carry: CarryPlan | None = None, rows: MinucRows | None = None
            ) -> MinucSummary:
    """The search of :func:`find_minucs` (``keep``: with the masks), :func:`summarize_minucs` and
    :func:`summarize_minucs_of_table`; ``prepared`` gives the distinct rows (a class table's classes), their
    class sizes and the number of records. ``method`` other than ``pairs`` may hand the distinct rows to the
    subset search (:func:`~kanon_core.risk.minucs_by_subsets.pick_method`). ``carry``: the rows whose MINUCs
    an earlier search of the same records already holds (:mod:`~kanon_core.risk.minucs_carry`); the others
    are searched. ``rows``: this file's :class:`MinucRows`, used when they fit (else computed)."""
    from .minucs_by_subsets import pick_method, search_subsets

    t0 = time.perf_counter()
    if isinstance(codes, QIMatrix):
        names = codes.names
        codes = codes.codes
    codes, limit = _check(codes, k, missing, max_size, None if prepared is None else prepared[2])
    q = codes.shape[1]
    names = _names_or_default(names, q)
    if len(names) != q:
        raise InputError("Give one name per quasi-identifier column.")
    report(progress, 0.0, "Collapsing identical records")
    if prepared is None:
        col, fk = _rows_of(codes, missing, rows)
        n_records = len(codes)
    else:
        col, fk, n_records = prepared
    if method != "pairs" and pick_method(method, len(col.mult), int((fk < k).sum()), q, limit) == "subsets":
        return search_subsets(names, n_records, limit, col, fk, int(k), missing, progress, t0, workers, keep)
    cols, bitvals = kernel_inputs(col.rows)
    n_rows = len(col.mult)
    category = missing == "category"
    carried_from, prior = None, None
    if carry is not None:
        carried_from = _carried_rows(carry, names, int(k), missing, limit, col)
        if carried_from is not None and _spot_check(carry, carried_from, cols, col.mult, fk, int(k), category,
                                                    limit, bitvals):
            prior = carry.prior
        else:
            carried_from = None
    searched = np.arange(n_rows, dtype=np.int64) if carried_from is None else np.flatnonzero(carried_from < 0)
    report(progress, 0.01, f"Searching {len(searched):,} of {n_rows:,} distinct records"
           if carried_from is not None else f"Searching {n_rows:,} distinct records")
    results = _run_rows(cols, col.mult, fk, int(k), category, limit, searched, bitvals, keep, workers, progress)
    found = _Found.of(results, q)
    if prior is not None:  # (rows carried, and the spot check agreed)
        found = found.with_carried(prior, carried_from, searched, keep)
    complete = bool(found.complete) or limit >= q
    combos = found.combinations()
    common = dict(names=names, k=int(k), missing=missing, max_size=None if limit >= q else limit,
                  n_records=n_records, rows=col.rows, row_mult=col.mult, row_of_record=col.row_of_record,
                  row_sizes=found.sizes, row_qis=found.qis, combinations=combos, complete=complete,
                  rows_carried=n_rows - len(searched))
    report(progress, 1.0, "MINUC search done")
    if not keep:
        return MinucSummary(**common, seconds=time.perf_counter() - t0)
    masks = found.masks
    if q <= 32:  # 4 bytes per MINUC (the kernel writes them so): tens of millions stay in a few hundred MB
        masks = masks.astype(np.uint32, copy=False)
    offsets = np.concatenate([[0], np.cumsum(found.counts)]).astype(np.int64)
    return MinucResult(**common, row_offsets=offsets, row_masks=masks, seconds=time.perf_counter() - t0)


def _run_rows(cols: np.ndarray, mult: np.ndarray, fk: np.ndarray, k: int, category: bool, limit: int,
              which: np.ndarray, bitvals: np.ndarray, keep: bool, workers: int | None,
              progress: Progress | None) -> list:
    """The kernel on the distinct rows ``which`` (against every row), in chunks on ``workers`` threads:
    its results per chunk, in the order of ``which``."""
    from ._minuc_kernel import minucs_of_rows

    chunks = _chunks(len(which))
    results: list = [None] * len(chunks)
    done = 0
    with ThreadPoolExecutor(max_workers=threads.workers(workers), thread_name_prefix="kanon-minucs") as pool:
        submitted = threads.submit_all(pool, lambda span: minucs_of_rows(
            cols, mult, fk, k, category, limit, which[span[0]:span[1]], bitvals, keep), chunks)
        futures = {fut: i for i, fut in enumerate(submitted)}
        try:
            for fut in _as_completed(futures):
                results[futures[fut]] = fut.result()
                done += 1
                report(progress, 0.01 + 0.98 * done / len(chunks),
                       f"MINUC search: {done} of {len(chunks)} parts of the file")
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return results


@dataclass(frozen=True)
class _Found:
    """The kernel's results of one search, per distinct row in the order searched (or, once carried rows
    are merged in, of every row): MINUCs per row, their masks (when kept), completeness, tallies by size
    and by QI, and a flag per possible QI set that is some row's MINUC (None above STAMP_MAX_BITS QIs,
    where the kernel flags none)."""

    counts: np.ndarray
    masks: np.ndarray
    complete: bool
    sizes: np.ndarray
    qis: np.ndarray
    flags: np.ndarray | None

    @classmethod
    def of(cls, results: list, q: int) -> _Found:
        from ._minuc_kernel import STAMP_MAX_BITS

        def joined(i: int, empty: np.ndarray) -> np.ndarray:
            return np.concatenate([r[i] for r in results]) if results else empty

        flags = None
        if q <= STAMP_MAX_BITS:  # each part's flagged masks, united in a table of 2^q flags
            flags = np.zeros(1 << q, dtype=np.uint8)
            for r in results:
                flags[r[5]] = 1
        return cls(counts=joined(0, np.zeros(0, np.int64)), masks=join_masks([r[1] for r in results]),
                   complete=all(bool(r[2].all()) for r in results), sizes=joined(3, np.zeros((0, q), np.int64)),
                   qis=joined(4, np.zeros((0, q), np.int64)), flags=flags)

    def combinations(self) -> np.ndarray | None:
        """The distinct QI sets that are a MINUC of some row, ascending (None above STAMP_MAX_BITS QIs)."""
        return None if self.flags is None else np.flatnonzero(self.flags).astype(np.uint64)

    def with_carried(self, prior: MinucResult, carried_from: np.ndarray, searched: np.ndarray,
                     keep: bool) -> _Found:
        """Every row's results: the searched rows' from this search, the others' from ``prior``'s rows
        ``carried_from`` (>= 0 where carried). The carried rows' QI sets are flagged in this search's table."""
        from ._minuc_summary import copy_ranges, flag_ranges

        n_rows, q = len(carried_from), self.sizes.shape[1]
        carried = np.flatnonzero(carried_from >= 0)
        src = carried_from[carried]
        sizes = np.zeros((n_rows, q), dtype=np.int64)
        qis = np.zeros((n_rows, q), dtype=np.int64)
        counts = np.zeros(n_rows, dtype=np.int64)
        sizes[searched], qis[searched], counts[searched] = self.sizes, self.qis, self.counts
        sizes[carried], qis[carried] = prior.row_sizes[src], prior.row_qis[src]
        counts[carried] = prior.row_counts[src]
        if self.flags is not None:
            flag_ranges(prior.row_masks, prior.row_offsets[src], counts[carried], self.flags)
        masks = self.masks
        if keep:
            offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            masks = np.empty(int(offsets[-1]), dtype=prior.row_masks.dtype)
            copy_ranges(prior.row_masks, prior.row_offsets[src], counts[carried], masks, offsets[carried])
            own = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
            copy_ranges(self.masks.astype(masks.dtype, copy=False), own[:-1], self.counts, masks, offsets[searched])
        return _Found(counts=counts, masks=masks, complete=self.complete, sizes=sizes, qis=qis, flags=self.flags)


def _carried_rows(carry: CarryPlan, names: tuple[str, ...], k: int, missing: MissingSemantics, limit: int,
                  col: Collapsed) -> np.ndarray | None:
    """Per distinct row: the prior's row whose MINUCs it keeps, or -1 to search it (None: carry nothing, as
    the prior answers another question: QIs ``names``, ``k``, semantics, size ``limit``). A row is carried
    only when all its records keep the same prior row and that row has as many records (which
    :mod:`~kanon_core.risk.minucs_carry` proves; checked here, not assumed)."""
    q = col.rows.shape[1]
    if not carry.serves(names, k, missing, None if limit >= q else limit):
        return None
    if carry.n_records != len(col.row_of_record):
        return None
    n_rows = len(col.mult)
    prior_row = carry.prior_row
    lo = np.full(n_rows, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n_rows, -2, dtype=np.int64)
    np.minimum.at(lo, col.row_of_record, prior_row)
    np.maximum.at(hi, col.row_of_record, prior_row)
    out = np.where((lo == hi) & (lo >= 0), lo, -1)
    ok = out >= 0
    ok[ok] = carry.prior.row_mult[out[ok]] == col.mult[ok]
    return np.where(ok, out, -1).astype(np.int64)


def _spot_check(carry: CarryPlan, carried_from: np.ndarray, cols: np.ndarray, mult: np.ndarray,
                fk: np.ndarray, k: int, category: bool, limit: int, bitvals: np.ndarray) -> bool:
    """Re-search up to SPOT_CHECK_ROWS carried rows that have MINUCs now or had them (spread over the file)
    and compare their MINUCs with the carried ones: a run-time check of the carrying argument, by the search
    itself."""
    from ._minuc_kernel import minucs_of_rows
    from .minucs_carry import SPOT_CHECK_ROWS

    prior = carry.prior
    rows = np.flatnonzero(carried_from >= 0)
    rows = rows[(prior.row_counts[carried_from[rows]] > 0) | (fk[rows] < k)]
    if len(rows) == 0:
        return True
    rows = rows[np.linspace(0, len(rows) - 1, min(SPOT_CHECK_ROWS, len(rows))).astype(np.int64)]
    counts, masks = minucs_of_rows(cols, mult, fk, k, category, limit, rows, bitvals, True)[:2]
    start = 0
    for row, n in zip(rows.tolist(), counts.tolist()):
        src = int(carried_from[row])
        old = prior.row_masks[prior.row_offsets[src]:prior.row_offsets[src + 1]].astype(np.uint64)
        if not np.array_equal(np.sort(old), np.sort(masks[start:start + n].astype(np.uint64))):
            return False
        start += n
    return True


PARALLEL_JOIN_MASKS = 1_000_000
"""MINUCs from which the chunks' masks are joined on two threads (:func:`join_masks`)."""


def join_masks(parts: Sequence[np.ndarray], parallel_from: int = PARALLEL_JOIN_MASKS) -> np.ndarray:
    """The chunks' masks one after the other, as ``np.concatenate`` gives them.

    From ``parallel_from`` masks on, two threads copy the two halves of the chunks into the result: its
    memory is new, and the first write to each page of it, not the copy, is most of the time (on the
    bundled sample's 15.3M MINUCs, 61 MB, the time after the search had a median of 0.11 s instead of
    0.165 s over 18 searches each, alternated in fresh processes)."""
    if not parts:
        return np.zeros(0, np.uint64)
    sizes = np.array([len(p) for p in parts], dtype=np.int64)
    ends = np.cumsum(sizes)
    total = int(ends[-1])
    if total < parallel_from or len(parts) < 2:
        return np.concatenate(parts)
    out = np.empty(total, dtype=parts[0].dtype)
    half = int(np.searchsorted(ends, total // 2))

    def copy(span: tuple[int, int]) -> None:
        for i in range(*span):
            out[ends[i] - sizes[i]:ends[i]] = parts[i]

    threads.map_workers(copy, [(0, half), (half, len(parts))])
    return out


def kernel_inputs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column-major codes and bit values in the narrowest types that fit (see ``_disagreements``)."""
    q = rows.shape[1]
    code_type = np.int16 if (rows.size == 0 or int(rows.max()) < np.iinfo(np.int16).max) else np.int32
    mask_type = np.uint32 if q <= 32 else np.uint64
    cols = np.ascontiguousarray(rows.T, dtype=code_type)
    bitvals = (np.uint64(1) << np.arange(q, dtype=np.uint64)).astype(mask_type)
    return cols, bitvals


def _row_class_sizes(codes: np.ndarray, col: Collapsed, missing: MissingSemantics) -> np.ndarray:
    """Class size of each distinct row on all its QIs (exact, either semantics)."""
    from .classes import compute_class_sizes

    fk_row = np.zeros(len(col.mult), dtype=np.int64)
    fk_row[col.row_of_record] = compute_class_sizes(codes, missing).fk
    return fk_row


def _chunks(n_rows: int) -> list[tuple[int, int]]:
    """Small enough chunks for responsive progress and balanced threads, large enough to amortise."""
    size = max(16, min(512, n_rows // 64 or 1))
    return [(lo, min(n_rows, lo + size)) for lo in range(0, n_rows, size)]


def _as_completed(futures):
    from concurrent.futures import as_completed

    return as_completed(futures)


SAMPLE_WORK = 200_000_000
"""Most class comparisons the MINUC estimate of a class table makes (sampled classes x classes)."""

RESPONSIVE_ESTIMATE_SECONDS = 0.6
"""A work budget (CPU seconds of the estimating thread) for an estimate made while a page waits for it
(``budget_seconds``): the bundled sample's 19 QIs at k = 3 take about 0.1-0.16 s, 40 QIs can take minutes."""

SIZE_STEP_GROWTH = 3.0
"""Least factor by which the next size's search of a row is assumed to cost more than the last one's, when the
estimate decides whether it still fits in its budget (measured: 1.5 to 4 per size on 40 QIs)."""


@dataclass(frozen=True)
class CostBound:
    """What an estimate stopped by its work budget knows for sure: the full estimate (the same sample searched
    to the end) would be at least these values.

    They are extrapolated as the estimate is, from the part of the sample searched: a row whose search was cut
    at a size contributes the MINUCs up to that size (all of them MINUCs of the full search) and the time of
    that cut search (part of the full search's work), a row not searched contributes nothing. So each is a
    lower bound of the estimate, never an estimate itself."""

    seconds: float
    minucs: float
    memory_bytes: float
    rows_searched: int
    """Sampled distinct rows searched to the end within the budget."""
    budget_seconds: float


@dataclass(frozen=True)
class CostEstimate:
    """A forecast of a MINUC run, from a timed sample of records (shown before a long run).

    ``at_least`` is None when the sample was searched to the end. Otherwise the estimator's work budget ran
    out first: every figure that depends on the unfinished part (a pairwise search's time and MINUCs, the
    memory of the masks kept) is unknown and set to infinity, so that any threshold reads the search as too
    long, and ``at_least`` holds what can be said instead ("at least")."""

    n_records: int
    n_distinct_rows: int
    sampled_rows: int
    seconds: float
    minucs: float
    memory_bytes: float
    method: str = "pairs"
    at_least: CostBound | None = None


def estimate_cost(codes: np.ndarray | QIMatrix, k: int = 2, missing: MissingSemantics = "wildcard",
                  max_size: int | None = None, sample: int = 200, seed: int = 0,
                  method: MinucMethod = "auto", keep: bool = True, carry: CarryPlan | None = None,
                  rows: MinucRows | None = None, budget_seconds: float | None = None) -> CostEstimate:
    """The forecast of :func:`find_minucs` (``keep``: every MINUC kept) or :func:`summarize_minucs` with the
    method it would use: time, MINUCs (from a timed search of a random sample of distinct rows) and memory.
    With ``carry`` (as the search would take it) the time is that of the rows searched again, sampled among
    them, and the carried rows' MINUCs are counted as they are; ``rows`` as in :func:`find_minucs`.

    ``budget_seconds`` bounds the timed search of the sample, for a caller that waits for the estimate (a
    page being drawn): with 40 QIs a single row can have millions of MINUCs and the sample take minutes. Within
    the budget the estimate is the one made without it; beyond, it says only what is known
    (:attr:`CostEstimate.at_least`). The budget is checked between searches, kept short by searching the first
    row size by size; a later row far costlier than the rows before it can overrun it by its own search."""
    names = None
    if isinstance(codes, QIMatrix):
        names, codes = codes.names, codes.codes
    codes, limit = _check(codes, k, missing, max_size)
    _check_budget(budget_seconds)
    col, fk = _rows_of(codes, missing, rows)
    carried_from = None
    if carry is not None:
        carried_from = _carried_rows(carry, _names_or_default(names, codes.shape[1]), int(k), missing, limit, col)
    return _estimate_for(col, fk, k, missing, limit, sample, seed, len(codes), method, keep,
                         None if carried_from is None else (carry, carried_from), budget_seconds)


def estimate_cost_of_table(table: ClassTable, k: int = 2, missing: MissingSemantics = "wildcard",
                           max_size: int | None = None, sample: int = 200, seed: int = 0,
                           method: MinucMethod = "auto", budget_seconds: float | None = None) -> CostEstimate:
    """:func:`estimate_cost` of :func:`summarize_minucs_of_table` with the method it would use, shown before
    a search of a census class table (``budget_seconds`` as there)."""
    codes, limit = _check(table.codes, k, missing, max_size, table.n_records)
    _check_budget(budget_seconds)
    col, fk = _table_rows(table, codes, missing)
    return _estimate_for(col, fk, k, missing, limit, sample, seed, table.n_records, method, keep=False,
                         budget_seconds=budget_seconds)


def _check_budget(budget_seconds: float | None) -> None:
    if budget_seconds is not None and not budget_seconds >= 0:  # (NaN too)
        raise InputError("The estimate's time budget must be a number of seconds of at least 0.")


def _estimate_for(col: Collapsed, fk: np.ndarray, k: int, missing: MissingSemantics, limit: int, sample: int,
                  seed: int, n_records: int, method: str, keep: bool,
                  carried: tuple[CarryPlan, np.ndarray] | None = None,
                  budget_seconds: float | None = None) -> CostEstimate:
    """The forecast for the method ``method`` resolves to. The MINUCs are extrapolated from a timed pairwise
    search of a sample of distinct rows; the time of the subset search from one timed projection of the whole
    table (:func:`~kanon_core.risk.minucs_by_subsets.estimate_seconds`). Memory: what the search keeps (the
    masks only when ``keep``; the per-row tallies; the subset search's flags). ``carried``: the carry plan and
    each row's prior row (-1: searched), for a pairwise search that carries rows over. Figures that do not
    come from the sampled search stay known when the budget stops it."""
    from .minucs_by_subsets import bits_needed, estimate_seconds, pick_method

    q = col.rows.shape[1]
    n_unsafe = int((fk < k).sum())
    chosen = pick_method(method, len(col.mult), n_unsafe, q, limit)
    # each sampled row is compared with every row: at most SAMPLE_WORK comparisons (a census table of
    # 3.5M classes samples 57 classes: about a second)
    sample = min(sample, max(20, SAMPLE_WORK // max(len(col.mult), 1)))
    est = _estimate(col, fk, k, missing, limit, sample, seed, n_records, carried, budget_seconds)
    if not keep:  # the search drops the masks: what it holds does not depend on the MINUCs
        est = _with_known(est, memory_bytes=float(len(col.mult) * q * (16 + 4) + len(col.row_of_record) * 8))
    if chosen == "pairs":
        return est
    est = _with_known(est, seconds=estimate_seconds(col.rows, col.mult, fk < k, limit))
    flags = bits_needed(n_unsafe, q, limit)
    bound = est.at_least
    return replace(est, method=chosen, memory_bytes=float(est.memory_bytes + flags),
                   at_least=None if bound is None else replace(bound, memory_bytes=float(bound.memory_bytes + flags)))


def _with_known(est: CostEstimate, **known: float) -> CostEstimate:
    """``est`` with figures found without the sampled search: the same whether or not the budget stopped it."""
    bound = None if est.at_least is None else replace(est.at_least, **known)
    return replace(est, at_least=bound, **known)


def _estimate(col: Collapsed, fk: np.ndarray, k: int, missing: MissingSemantics, limit: int, sample: int,
              seed: int, n_records: int, carried: tuple[CarryPlan, np.ndarray] | None = None,
              budget_seconds: float | None = None) -> CostEstimate:
    """The timed search of a random sample of the distinct rows to search, extrapolated to them; the rows
    ``carried`` over (plan, prior row per row or -1) add their MINUCs as counted, and no time. When
    ``budget_seconds`` stops the sampled search, the same extrapolation of what it found is the bound."""
    n_rows = len(col.mult)
    among = np.arange(n_rows, dtype=np.int64) if carried is None else np.flatnonzero(carried[1] < 0)
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(among, size=min(sample, len(among)), replace=False)).astype(np.int64)
    searched = _search_sample(col, fk, int(k), missing == "category", limit, pick, budget_seconds)
    cnt = searched.counts
    found = float((cnt * col.mult[pick]).sum())
    scale = len(among) / max(len(pick), 1)
    cores = max(1, os.cpu_count() or 1)
    minucs = found * scale
    masks_found = float(cnt.sum()) * scale
    if carried is not None:  # the carried rows' MINUCs are known: counted, not extrapolated
        plan, prior_of = carried
        kept = np.flatnonzero(prior_of >= 0)
        per_row = plan.prior.row_counts[prior_of[kept]]
        minucs += float((per_row * col.mult[kept]).sum())
        masks_found += float(per_row.sum())
    # what find_minucs keeps: the masks once per distinct row (4 bytes each up to 32 QIs), its offsets, the
    # rows' tallies by size and by QI, and each record's row
    q = col.rows.shape[1]
    masks = masks_found * (4 if q <= 32 else 8)
    memory = masks + n_rows * (8 + 16 * q + 4 * q) + len(col.row_of_record) * 8
    est = CostEstimate(n_records=n_records, n_distinct_rows=n_rows, sampled_rows=len(pick),
                       seconds=searched.seconds * scale / cores, minucs=minucs, memory_bytes=memory)
    if searched.finished == len(pick):
        return est
    bound = CostBound(seconds=est.seconds, minucs=est.minucs, memory_bytes=est.memory_bytes,
                      rows_searched=searched.finished, budget_seconds=float(budget_seconds or 0.0))
    unknown = float("inf")
    return replace(est, seconds=unknown, minucs=unknown, memory_bytes=unknown, at_least=bound)


@dataclass(frozen=True)
class _SampleSearch:
    """The pairwise search of the sampled rows: MINUCs per row, its seconds, and how many rows (a prefix of the
    sample) were searched to the end. A row not finished has the MINUCs up to the size its search was cut at
    and, in ``seconds``, the time of that cut search; a row not reached has none."""

    counts: np.ndarray
    seconds: float
    finished: int


def _search_sample(col: Collapsed, fk: np.ndarray, k: int, category: bool, limit: int, pick: np.ndarray,
                   budget_seconds: float | None) -> _SampleSearch:
    """Search the rows ``pick`` for MINUCs up to size ``limit``: in one timed search without a budget, else in
    searches each predicted to fit in what is left of ``budget_seconds`` (:func:`_search_within`)."""
    from ._minuc_kernel import minucs_of_rows

    cols, bitvals = kernel_inputs(col.rows)

    def run(which: np.ndarray, size: int) -> tuple[np.ndarray, bool, float]:
        """MINUCs per row of ``which`` up to ``size``, whether no search was cut by the size, seconds taken."""
        t = time.perf_counter()
        cnt, _, complete = minucs_of_rows(cols, col.mult, fk, k, category, size, which, bitvals, False)[:3]
        return cnt, bool(complete.all()), time.perf_counter() - t

    with threads.worker_slot():
        if budget_seconds is None:
            minucs_of_rows(cols, col.mult, fk, k, category, limit, pick[:1], bitvals, False)  # compile first
            cnt, _, seconds = run(pick, limit)
            return _SampleSearch(cnt, seconds, len(pick))
        run(pick[:0], limit)  # compile first, searching nothing: the budget is for the search
        return _search_within(run, fk[pick] < k, limit, pick, budget_seconds)


def _budget_clock() -> float:
    """The clock of an estimate's budget: the CPU time of this thread, which runs the sampled search (the
    kernel releases no work to others), so that a server busy with other work does not spend the budget
    waiting; the page's wait is then at most the budget times the load."""
    return time.thread_time()


_Run = Callable[[np.ndarray, int], tuple[np.ndarray, bool, float]]
"""A search of some sampled rows up to a size: MINUCs per row, whether no row was cut by the size, seconds."""


def _search_within(run: _Run, unsafe: np.ndarray, limit: int, pick: np.ndarray,
                   budget_seconds: float) -> _SampleSearch:
    """The sample's search within ``budget_seconds``, its rows in order: up to the first row below k (those
    at or above k cost nothing) size by size (:func:`_search_by_size`), which measures what a row costs
    without risking minutes on one search; then the others in searches of doubling numbers of rows below k,
    each as many as fit in the time left at the costliest rate seen. Stops when the time is spent."""
    deadline = _budget_clock() + budget_seconds
    counts = np.zeros(len(pick), dtype=np.int64)
    if not len(pick):  # every row carried over: nothing to search
        return _SampleSearch(counts, 0.0, 0)
    below = np.cumsum(unsafe)  # rows below k among the first i + 1
    end = int(np.searchsorted(below, 1)) + 1 if below[-1] else len(pick)
    counts[:end], seconds, whole = _search_by_size(run, pick[:end], limit, deadline)
    if not whole:
        return _SampleSearch(counts, seconds, end - 1)
    done, worst = end, seconds
    while done < len(pick) and _budget_clock() < deadline:
        searched = int(below[done - 1])
        fits = int((deadline - _budget_clock()) / worst) if worst > 0 else searched
        n = max(1, min(searched, fits))  # rows below k in this search
        end = min(len(pick), int(np.searchsorted(below, searched + n)) + 1)
        cnt, _, t = run(pick[done:end], limit)
        counts[done:end] = cnt
        seconds += t
        worst = max(worst, t / n)
        done = end
    return _SampleSearch(counts, seconds, done)


def _search_by_size(run: _Run, which: np.ndarray, limit: int, deadline: float) -> tuple[np.ndarray, float, bool]:
    """Search ``which`` for MINUCs up to size 1, 2, ... until no search is cut by its size (or ``limit`` is
    reached): the MINUCs per row and the seconds of the last search, and True. False instead when the next size
    is predicted (at least ``SIZE_STEP_GROWTH`` times the last, or the last growth) not to end by ``deadline``:
    the MINUCs and seconds are then those of the search cut at the last size."""
    size, last = 1, 0.0
    while True:
        cnt, whole, t = run(which, min(size, limit))
        if whole or size >= limit:
            return cnt, t, True
        growth = max(SIZE_STEP_GROWTH, t / last if last > 0 else 0.0)
        if _budget_clock() + t * growth > deadline:
            return cnt, t, False
        size, last = size + 1, t


def n_subsets(q: int, max_size: int | None = None) -> int:
    """Number of QI subsets up to ``max_size`` (what a naive search would tabulate)."""
    return sum(comb(q, s) for s in range(1, (max_size or q) + 1))
