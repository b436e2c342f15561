"""The class table: a file's sufficient statistic for disclosure risk, computed once, aggregated first.

A *class* here is a distinct combination of quasi-identifier codes, missing patterns included (a missing
cell is code -1, as in :class:`~kanon_core.dataset.QIMatrix`). The table holds, per class, its record
count and weight sum, and per sensitive variable the counts of its values in the class. Almost
everything kanon measures depends on the records only through this table:

* fk/Fk under both missing semantics (category: a class's own count; wildcard: the counts of the classes
  whose codes match, which is a join of the table with itself, never of the records);
* the individual risk of Benedetti & Franconi (a function of fk and Fk);
* l-diversity and t-closeness (the sensitive value counts of a class, or of its matching classes);
* the generalization lattice: recoding a QI maps codes to coarser codes, so a node's table is the
  parent's table with its codes mapped and equal rows merged (:meth:`ClassTable.generalize`), which is
  the roll-up ARX's Flash relies on (Kohlmayer et al. 2012);
* MINUCs, which are computed per distinct row already.

The table is small when the file is large: a census of tens of millions of people has a few million
classes at most on ten QIs. An out-of-core engine (DuckDB, Polars or Spark) can therefore compute it with
one ``GROUP BY`` and hand back only the table (:meth:`ClassTable.from_aggregate`); the in-memory path
(:meth:`ClassTable.from_codes`) also keeps each record's class (:attr:`ClassTable.record_class`) so that
per-record results can be broadcast back in input order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dataset import MISSING_CODE, Dataset, MissingSemantics, check_semantics
from .errors import InputError
from .risk.keys import group_ids


@dataclass(frozen=True)
class SensitiveCounts:
    """How often each value of one sensitive variable occurs in each class (a sparse table).

    ``class_index``, ``value_code`` and ``count`` are parallel arrays sorted by class then code, one entry
    per (class, value) pair that occurs. ``value_code`` indexes ``values`` (sorted as the data set encodes
    them, so numbers are in increasing order); -1 is a missing sensitive value. ``numeric`` holds the
    values as floats when every value is a number (the ordered distance of t-closeness needs them).
    """

    name: str
    values: tuple[Any, ...]
    class_index: np.ndarray
    value_code: np.ndarray
    count: np.ndarray
    numeric: np.ndarray | None = None

    @property
    def n_values(self) -> int:
        return len(self.values)

    def dense(self, n_classes: int, include_missing: bool = False) -> np.ndarray:
        """The (classes × values) count matrix; with ``include_missing`` a last column counts missing."""
        width = self.n_values + (1 if include_missing else 0)
        out = np.zeros((n_classes, width), dtype=np.int64)
        keep = self.value_code >= 0
        np.add.at(out, (self.class_index[keep], self.value_code[keep]), self.count[keep])
        if include_missing:
            miss = ~keep
            np.add.at(out, (self.class_index[miss], np.full(int(miss.sum()), width - 1)), self.count[miss])
        return out

    def regroup(self, new_class_of: np.ndarray) -> SensitiveCounts:
        """The same counts after classes were merged (``new_class_of[old] = new``)."""
        return _sparse_counts(self.name, self.values, new_class_of[self.class_index], self.value_code,
                              self.count, self.numeric)


@dataclass(frozen=True)
class ClassTable:
    """Distinct QI combinations with their record counts, weight sums and sensitive value counts.

    ``codes`` is (n_classes, n_qis) int32 with -1 for missing, each row distinct; ``count`` the records of
    each class (all >= 1); ``weight`` their summed sampling weights (None without a weight).
    ``values[j]`` are the values behind the codes of QI j (sorted as :func:`~kanon_core.dataset.
    encode_column` sorts them) and ``labels[j]`` their display labels. ``record_class`` maps each record,
    in input order, to its class; it exists only when the table was built from the records in memory.
    """

    qis: tuple[str, ...]
    codes: np.ndarray
    count: np.ndarray
    weight: np.ndarray | None = None
    values: tuple[tuple[Any, ...], ...] = ()
    labels: tuple[tuple[str, ...], ...] = ()
    sensitive: Mapping[str, SensitiveCounts] = field(default_factory=dict)
    record_class: np.ndarray | None = None

    def __post_init__(self) -> None:
        codes = np.ascontiguousarray(self.codes, dtype=np.int32)
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "count", np.asarray(self.count, dtype=np.int64))
        if self.weight is not None:
            object.__setattr__(self, "weight", np.asarray(self.weight, dtype=np.float64))
        if codes.ndim != 2 or codes.shape[1] != len(self.qis):
            raise InputError("The class table's codes and QI names do not agree.")
        if len(self.count) != codes.shape[0] or (self.weight is not None and len(self.weight) != codes.shape[0]):
            raise InputError("The class table's counts do not match its classes.")

    # -- sizes ------------------------------------------------------------------------------------------
    @property
    def n_classes(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_records(self) -> int:
        return int(self.count.sum())

    @property
    def weight_sum(self) -> np.ndarray:
        """Weight per class, or the record count as float when the file has no weight."""
        return self.count.astype(np.float64) if self.weight is None else self.weight

    def class_sizes(self, missing: MissingSemantics = "wildcard", alpha: float = 1.0,
                    wildcard_split: bool | None = None, method: str = "auto"):
        """fk and Fk of every *class* (a :class:`~kanon_core.risk.classes.ClassSizes` indexed by class).

        Under category semantics a class's size is its own count; under wildcard semantics it sums the
        counts of every class that agrees with it wherever both are observed (the exact kernels of
        :mod:`kanon_core.risk.classes`, run on the table). ``Fk`` is None without weights.
        """
        from .risk.classes import class_sizes_of_table

        return class_sizes_of_table(self, check_semantics(missing), alpha, wildcard_split, method)

    def per_record(self, per_class: np.ndarray) -> np.ndarray:
        """Broadcast a per-class array to the records, in input order (in-memory tables only)."""
        if self.record_class is None:
            raise InputError("This class table was aggregated out of memory: it has no per-record index.")
        return np.asarray(per_class)[self.record_class]

    # -- derivations ----------------------------------------------------------------------------------------
    def generalize(self, lookups: Sequence[np.ndarray | None],
                   labels: Sequence[Sequence[str] | None] | None = None) -> ClassTable:
        """The table after recoding every QI through its lookup (``lookups[j][c]`` = new code of code c).

        A ``None`` lookup keeps that QI as is. Missing codes stay missing (a recode never invents a value).
        Equal rows are merged, their counts, weights and sensitive counts summed; ``record_class`` is
        carried through, so per-record results of the generalized table still broadcast.
        """
        if len(lookups) != len(self.qis):
            raise InputError("One lookup per quasi-identifier is needed.")
        cols = []
        for j, table in enumerate(lookups):
            col = self.codes[:, j]
            if table is not None:
                col = through_lookup(col, table)
            cols.append(col)
        mapped_codes = np.column_stack(cols) if cols else np.empty((self.n_classes, 0), np.int32)
        gid, _ = group_ids(mapped_codes)
        if labels is None:  # codes changed meaning: the old values and labels no longer name them
            return self._merge(gid, mapped_codes, values=(), labels=())
        new_labels = tuple(tuple(lab) if lab is not None else (self.labels[j] if self.labels else ())
                           for j, lab in enumerate(labels))
        return self._merge(gid, mapped_codes, values=(), labels=new_labels)

    def project(self, qis: Sequence[str]) -> ClassTable:
        """The table on a subset of the QIs (classes merged where they now agree)."""
        idx = [self._qi_index(q) for q in qis]
        sub = self.codes[:, idx]
        gid, _ = group_ids(sub)
        return self._merge(gid, sub, qis=tuple(qis),
                           values=tuple(self.values[i] for i in idx) if self.values else (),
                           labels=tuple(self.labels[i] for i in idx) if self.labels else ())

    def pool(self, members: np.ndarray) -> ClassTable:
        """The table with the classes flagged in ``members`` merged into class 0, blank on every QI (the records
        a release blanks together), and the others, if any, into class 1 (whose codes mean nothing): counts,
        weights and sensitive counts summed, so a criterion can judge the blanked records as one class beside
        the whole file."""
        members = np.asarray(members, dtype=bool)
        if len(members) != self.n_classes or not members.any():
            raise ValueError("one flag per class is needed, and at least one class to pool")
        gid = np.where(members, 0, 1).astype(np.int64)
        codes = np.where(members[:, None], MISSING_CODE, 0) * np.ones((1, len(self.qis)), dtype=np.int32)
        return self._merge(gid, codes.astype(np.int32), values=(), labels=())

    def blank(self, members: np.ndarray) -> ClassTable:
        """The table as a release shows it once the classes flagged in ``members`` are blanked on every QI: they
        become one class, blank everywhere (with any class that was blank already), and the other classes stay
        as they are (the release itself, where :meth:`pool` pools the others too)."""
        members = np.asarray(members, dtype=bool)
        if len(members) != self.n_classes or not members.any():
            raise ValueError("one flag per class is needed, and at least one class to blank")
        codes = self.codes.copy()
        codes[members] = MISSING_CODE
        gid, _ = group_ids(codes)
        return self._merge(gid.astype(np.int64), codes)

    def _qi_index(self, qi: str) -> int:
        try:
            return self.qis.index(qi)
        except ValueError:
            raise InputError(f"'{qi}' is not a quasi-identifier of this class table.") from None

    def _merge(self, gid: np.ndarray, merged_codes: np.ndarray, qis: tuple[str, ...] | None = None,
               values: tuple | None = None, labels: tuple | None = None) -> ClassTable:
        """Classes merged by ``gid`` (old class -> new class), each new class taking ``merged_codes``."""
        n_new = int(gid.max()) + 1 if len(gid) else 0
        first = np.zeros(n_new, dtype=np.int64)
        first[gid[::-1]] = np.arange(len(gid) - 1, -1, -1)
        count = np.bincount(gid, weights=self.count, minlength=n_new).astype(np.int64)
        weight = None if self.weight is None else np.bincount(gid, weights=self.weight, minlength=n_new)
        return ClassTable(
            qis=self.qis if qis is None else qis, codes=merged_codes[first], count=count, weight=weight,
            values=self.values if values is None else values, labels=self.labels if labels is None else labels,
            sensitive={k: s.regroup(gid) for k, s in self.sensitive.items()},
            record_class=None if self.record_class is None else gid[self.record_class],
        )

    # -- builders ---------------------------------------------------------------------------------------------
    @classmethod
    def from_codes(cls, codes: np.ndarray, qis: Sequence[str] | None = None, weights: np.ndarray | None = None,
                   sensitive: Mapping[str, tuple[Any, ...]] | None = None,
                   values: Sequence[Sequence[Any]] = (), labels: Sequence[Sequence[str]] = ()) -> ClassTable:
        """Aggregate records held in memory: ``codes`` (n, q) int with -1 missing, one row a record.

        ``sensitive`` maps a name to (per-record value codes with -1 missing, the values behind them), and
        optionally the variable's value labels: numbers with labels are coded categories, whose order is not
        an order of amounts (:func:`_ordered_numbers`).
        """
        codes = np.ascontiguousarray(codes, dtype=np.int32)
        if codes.ndim != 2:
            raise InputError("codes must be a 2-D array")
        n, q = codes.shape
        names = tuple(qis) if qis is not None else tuple(f"q{j}" for j in range(q))
        if n == 0:
            return cls(names, codes, np.zeros(0, np.int64), None if weights is None else np.zeros(0),
                       tuple(map(tuple, values)), tuple(map(tuple, labels)), {}, np.zeros(0, np.int64))
        gid, mult = group_ids(codes)
        first = np.zeros(len(mult), dtype=np.int64)
        first[gid[::-1]] = np.arange(n - 1, -1, -1)
        w = None if weights is None else np.bincount(gid, weights=np.asarray(weights, np.float64),
                                                      minlength=len(mult))
        sens = {}
        for name, spec in (sensitive or {}).items():
            scodes, svalues = np.asarray(spec[0], dtype=np.int32), tuple(spec[1])
            if len(scodes) != n:
                raise InputError(f"Sensitive variable '{name}' does not have one value per record.")
            sens[name] = _sparse_counts(name, svalues, gid, scodes, np.ones(n, np.int64),
                                        _ordered_numbers(svalues, spec[2] if len(spec) > 2 else None))
        return cls(names, codes[first], mult, w, tuple(map(tuple, values)), tuple(map(tuple, labels)),
                   sens, gid)

    @classmethod
    def from_dataset(cls, ds: Dataset, qis: Sequence[str] | None = None, weighted: bool = True,
                     sensitive: Sequence[str] = ()) -> ClassTable:
        """The class table of an in-memory data set on its QIs (default: the QI role)."""
        qm = ds.qi_matrix(qis)
        sens = {}
        for s in sensitive:
            if s not in ds.frame.columns:
                raise InputError(f"Sensitive variable '{s}' is not a variable of the data.")
            scodes, svalues, _ = ds._encoded(s)
            sens[s] = (scodes, svalues, ds.meta_of(s).value_labels)
        return cls.from_codes(qm.codes, qm.names, ds.weights() if weighted else None, sens,
                              qm.values, qm.labels)

    @classmethod
    def from_aggregate(cls, qis: Sequence[str], distinct_values: Sequence[Sequence[Any]], count: np.ndarray,
                       weight: np.ndarray | None = None,
                       value_labels: Mapping[str, Mapping[Any, str]] | None = None) -> ClassTable:
        """A table from an engine's ``GROUP BY``: one row per distinct raw combination (None = missing).

        ``distinct_values[j]`` is the column of QI j's raw values over the aggregated rows. The values are
        encoded exactly as :meth:`Dataset.qi_matrix` encodes a full column (sorted, missing = -1), so the
        codes equal those of the in-memory path on the same file. Rows that become equal after encoding
        (an engine that told apart 1 and 1.0, say) are merged.
        """
        import pandas as pd

        from .dataset import encode_column

        count = np.asarray(count, dtype=np.int64)
        cols, vals, labs = [], [], []
        for j, q in enumerate(qis):
            series = pd.Series(list(distinct_values[j]), dtype=object)
            c, v, lab = encode_column(series, (), (value_labels or {}).get(q))
            cols.append(c)
            vals.append(v)
            labs.append(lab)
        codes = np.column_stack(cols) if cols else np.empty((len(count), 0), np.int32)
        raw = cls(tuple(qis), codes, count, weight, tuple(vals), tuple(labs), {}, None)
        gid, _ = group_ids(raw.codes)
        if int(gid.max(initial=-1)) + 1 == raw.n_classes:
            return raw
        return raw._merge(gid, raw.codes)


def through_lookup(codes: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """``codes`` recoded through ``lookup`` (``lookup[c]`` the new code of code c) as int32, missing codes
    (< 0) kept missing. Only observed codes are looked up: a QI missing in every record has an empty lookup."""
    codes = np.asarray(codes)
    observed = codes >= 0
    out = np.full(codes.shape, MISSING_CODE, dtype=np.int32)
    out[observed] = np.asarray(lookup)[codes[observed]]
    return out


def _ordered_numbers(values: tuple[Any, ...], value_labels: Mapping[Any, str] | None) -> np.ndarray | None:
    """The values as amounts (:attr:`SensitiveCounts.numeric`, which makes t-closeness's ``auto`` distance the
    ordered one), or None: for texts, and for numbers with value labels, which are codes of categories (an
    occupation coded 1 to 9): the ordered distance never exceeds the equal one, so reading codes as amounts
    would call a class that discloses everyone's occupation close."""
    return None if value_labels else _numeric(values)


def _numeric(values: tuple[Any, ...]) -> np.ndarray | None:
    if values and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                      for v in values):
        return np.asarray(values, dtype=np.float64)
    return None


def _sparse_counts(name: str, values: tuple[Any, ...], class_index: np.ndarray, value_code: np.ndarray,
                   count: np.ndarray, numeric: np.ndarray | None) -> SensitiveCounts:
    """Sum ``count`` over equal (class, value) pairs and sort them by class then value."""
    if len(class_index) == 0:
        empty = np.zeros(0, np.int64)
        return SensitiveCounts(name, values, empty, empty.astype(np.int32), empty, numeric)
    pair = np.column_stack([np.asarray(class_index, np.int64), np.asarray(value_code, np.int64)])
    uniq, inverse = np.unique(pair, axis=0, return_inverse=True)
    summed = np.bincount(inverse.reshape(-1), weights=count, minlength=len(uniq)).astype(np.int64)
    return SensitiveCounts(name, values, uniq[:, 0].astype(np.int64), uniq[:, 1].astype(np.int32), summed,
                           numeric)
