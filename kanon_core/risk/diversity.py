"""l-diversity of a sensitive variable per class: distinct, entropy and recursive (c,l), on the class table.

k-anonymity hides *who* a record is; l-diversity (Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam
2007) asks whether the records an intruder narrows someone down to still differ on the sensitive
variable S. If every record of a class has the same diagnosis, finding the class reveals the diagnosis.

Three readings, as sdcMicro's ``ldiversity`` computes them (its C++ ``compute_group_ldiversity``) on
observed values:

* **distinct l**: the number of distinct values of S in the class;
* **entropy l**: exp(H), H the entropy (natural log) of S's distribution in the class: the number of
  equally frequent values that would be as uncertain; it is at most distinct l;
* **recursive (c,l)**: with the observed values' counts sorted r1 >= r2 >= ... >= rm, a class is
  recursive (c,l)-diverse when r1 < c (rl + ... + rm): the most frequent value is not too frequent
  compared with the rarer ones. The figure is the largest such l (at least 1), which is what sdcMicro
  reports (its ``l_recurs_c`` defaults to 2). sdcMicro reads c <= 0 as 1; kanon refuses a c that is not a
  finite number above 0, as its l-diversity criterion does.

**Missing sensitive values** are left out of all three, as the published definitions (over the values of
S) and t-closeness (:mod:`kanon_core.risk.closeness`) leave them out: a class whose observed values are HIV,
HIV, HIV and one missing value tells the intruder HIV for every record whose value is shown, so it is
1-diverse. sdcMicro's ``ldiversity`` counts a class's missing values as one further value for distinct and
entropy l (2 here, and 1.75 by entropy), which would let a single refusal make a class pass l = 2; kanon
does not follow it there (on files without missing sensitive values the two agree). A class whose sensitive
values are all missing shows no value: l = 0 by all three readings (it fails every l >= 1). An empty cell
and a declared missing code of S are missing; nothing else is.

**Classes under the two missing-value semantics of the quasi-identifiers.** Under ``category`` a class is
its records (sdcMicro groups identical keys, missing equal to missing). Under ``wildcard`` a record's
class is every record that matches it (agreeing wherever both are observed), and matching is not
transitive. The value counts of a class are then the sums over its *matching classes*: one sparse
product of the class table with itself (:func:`matched_value_counts`), never a pass over records. Every
matching record counts in full (sdcMicro's ``alpha`` weighs class sizes, not which values a record could
have).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np
import scipy.sparse as sp

from ..classtable import ClassTable, SensitiveCounts
from ..dataset import MissingSemantics, check_semantics
from ..errors import InputError
from ._wildcard_kernel import clashes
from .keys import group_ids


def sensitive_of(table: ClassTable, sensitive: str) -> SensitiveCounts:
    """The sensitive value counts of ``table`` for ``sensitive`` (a clear error when not carried)."""
    try:
        return table.sensitive[sensitive]
    except KeyError:
        raise InputError(f"The class table carries no counts for sensitive variable '{sensitive}'; build it "
                         "with that variable as sensitive.") from None


def value_count_matrix(sens: SensitiveCounts, n_classes: int) -> sp.csr_matrix:
    """Sparse (classes × (values + 1)) counts of S; the last column counts missing values."""
    col = np.where(sens.value_code >= 0, sens.value_code, sens.n_values).astype(np.int64)
    mat = sp.coo_matrix((sens.count.astype(np.float64), (sens.class_index, col)),
                        shape=(n_classes, sens.n_values + 1))
    return mat.tocsr()


def matching_sum(table: ClassTable, per_class: sp.csr_matrix, missing: MissingSemantics,
                 method: str = "auto") -> sp.csr_matrix:
    """For every class, the sum of ``per_class`` rows over the classes it matches (itself included).

    Under ``category`` semantics a class matches only itself. Under ``wildcard`` semantics two classes
    match when their codes agree on every QI observed in both; distinct complete classes never match, so
    only pairs with at least one incomplete class are looked for. With few missing patterns, one join per
    pair of patterns (:func:`_matching_sum_by_patterns`); otherwise a compiled scan (numba) lists, for a
    block of incomplete classes at a time, the classes each one matches (each unordered pair once); the
    block's pairs become a sparse matrix M and the sums are ``M @ per_class`` and ``M.T @ per_class``.
    Memory stays bounded by the block, time is about (incomplete classes) × (classes) × (QIs).
    ``method`` forces ``patterns`` or ``scan`` (``auto`` chooses by estimated cost); both give the same sums.
    """
    if method not in ("auto", "patterns", "scan"):
        raise InputError("The matching method must be auto, patterns or scan.")
    check_semantics(missing)
    per_class = sp.csr_matrix(per_class, dtype=np.float64)
    codes = table.codes
    if missing == "category" or not (codes < 0).any():
        return per_class
    n = table.n_classes
    miss = codes < 0
    pat_id, _ = group_ids(miss.astype(np.int32))
    n_patterns = int(pat_id.max()) + 1
    n_incomplete = int(miss.any(axis=1).sum())
    # rough seconds: a sparse join per pattern pair, against the compiled scan's comparisons
    cost_pairs = n_patterns * (n_patterns - 1) / 2 * 2e-3 + n_patterns * n * codes.shape[1] * 5e-8
    cost_scan = n_incomplete * n * codes.shape[1] * 1e-9
    if method == "patterns" or (method == "auto" and cost_pairs < cost_scan):
        return _matching_sum_by_patterns(codes, per_class, pat_id, n_patterns)
    code_type = np.int16 if int(codes.max(initial=0)) < np.iinfo(np.int16).max else np.int32
    cols = np.ascontiguousarray(codes.T, dtype=code_type)
    has_miss = (codes < 0).any(axis=1)
    miss_rows = np.flatnonzero(has_miss)
    out = per_class.copy()
    block = 256
    for start in range(0, len(miss_rows), block):
        rows = miss_rows[start: start + block]
        pa, pb = _match_pairs(cols, has_miss, rows.astype(np.int64))
        if not len(pa):
            continue
        m = sp.csr_matrix((np.ones(len(pa)), (pa, pb)), shape=(n, n))
        out = out + m @ per_class + m.T @ per_class
    out = sp.csr_matrix(out)
    out.eliminate_zeros()
    return out


def _matching_sum_by_patterns(codes: np.ndarray, per_class: sp.csr_matrix, pat_id: np.ndarray,
                              n_patterns: int) -> sp.csr_matrix:
    """The same sums by a join per pair of missing patterns (best when patterns are few).

    Classes of patterns A and B match when they agree on the QIs observed in both, so each pair of
    patterns is a join on those QIs, done as a product of sparse indicator matrices (A's classes × keys,
    keys × B's classes): the matching pairs themselves are never listed. Classes of one pattern match only
    themselves (distinct classes differ on an observed QI).
    """
    miss = codes < 0
    patterns = [np.flatnonzero(pat_id == p) for p in range(n_patterns)]
    observed = [~miss[rows[0]] for rows in patterns]
    out = per_class.copy()
    for a in range(n_patterns):
        for b in range(a + 1, n_patterns):
            rows_a, rows_b = patterns[a], patterns[b]
            common = observed[a] & observed[b]
            if common.any():
                kid, _ = group_ids(np.vstack([codes[rows_a][:, common], codes[rows_b][:, common]]))
            else:  # nothing observed in common: every class of A matches every class of B
                kid = np.zeros(len(rows_a) + len(rows_b), dtype=np.int64)
            n_keys = int(kid.max()) + 1
            ka, kb = kid[: len(rows_a)], kid[len(rows_a):]
            ga = sp.csr_matrix((np.ones(len(rows_a)), (rows_a, ka)), shape=(codes.shape[0], n_keys))
            gb = sp.csr_matrix((np.ones(len(rows_b)), (rows_b, kb)), shape=(codes.shape[0], n_keys))
            out = out + ga @ (gb.T @ per_class) + gb @ (ga.T @ per_class)
    out = sp.csr_matrix(out)
    out.eliminate_zeros()
    return out


@numba.njit(cache=True, nogil=True)
def _match_pairs(cols, has_miss, rows):  # pragma: no cover - compiled
    """Pairs (a, b), a in ``rows`` (classes with a missing code), b matching a; each unordered pair once.

    b is any other class that agrees with a wherever both are observed, except an incomplete b with a
    smaller index (that pair is listed when b's turn comes).
    """
    q, n = cols.shape
    cap = max(1024, 4 * len(rows))
    pa = np.empty(cap, dtype=np.int64)
    pb = np.empty(cap, dtype=np.int64)
    k = 0
    clash = np.empty(n, dtype=np.uint8)
    for a in rows:
        clashes(cols, a, clash)
        for b in range(n):
            if clash[b] or b == a or (has_miss[b] and b < a):
                continue
            if k == cap:
                cap *= 2
                npa = np.empty(cap, dtype=np.int64)
                npb = np.empty(cap, dtype=np.int64)
                npa[:k] = pa[:k]
                npb[:k] = pb[:k]
                pa, pb = npa, npb
            pa[k] = a
            pb[k] = b
            k += 1
    return pa[:k], pb[:k]


def matched_value_counts(table: ClassTable, sensitive: str, missing: MissingSemantics) -> sp.csr_matrix:
    """The counts of S's values (last column: missing) among the records each class's records match."""
    sens = sensitive_of(table, sensitive)
    return matching_sum(table, value_count_matrix(sens, table.n_classes), missing)


def _rows(mat: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Row index and value of every stored positive entry of a CSR matrix."""
    mat = sp.csr_matrix(mat)
    mat.eliminate_zeros()
    rows = np.repeat(np.arange(mat.shape[0]), np.diff(mat.indptr))
    return rows, mat.data.astype(np.float64)


def _distinct(counts: sp.csr_matrix, c: float | None) -> np.ndarray:
    obs = sp.csr_matrix(counts[:, :-1])
    obs.eliminate_zeros()
    return np.diff(obs.indptr).astype(np.float64)


def _entropy(counts: sp.csr_matrix, c: float | None) -> np.ndarray:
    n = counts.shape[0]
    obs = sp.csr_matrix(counts[:, :-1])
    rows, vals = _rows(obs)
    total = np.bincount(rows, weights=vals, minlength=n)
    h = np.zeros(n)
    p = vals / total[rows]
    np.add.at(h, rows, -p * np.log(p))
    return np.where(total > 0, np.exp(h), 0.0)  # no value shown: no diversity shown (as distinct and recursive)


def check_recursive_c(c: float | None) -> float:
    """The constant c of recursive (c,l)-diversity as a float, refused unless given, finite and above 0 (a NaN
    fails every comparison of the definition: every class would read as l = 1)."""
    if c is None or not (math.isfinite(float(c)) and float(c) > 0):
        raise InputError("Recursive (c,l)-diversity needs a finite constant c above 0.")
    return float(c)


def _recursive(counts: sp.csr_matrix, c: float | None) -> np.ndarray:
    c = check_recursive_c(2.0 if c is None else c)
    n = counts.shape[0]
    rows, vals = _rows(sp.csr_matrix(counts[:, :-1]))
    out = np.zeros(n)
    if not len(rows):
        return out
    order = np.lexsort((-vals, rows))  # by class, most frequent first
    rows, vals = rows[order], vals[order]
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    # tail[j] = vals[j] + ... + last value of its class
    rev_cum = np.cumsum(vals[::-1])[::-1]
    ends = np.r_[starts[1:], len(vals)]
    end_of = np.repeat(ends, ends - starts)
    tail = rev_cum - np.r_[rev_cum[1:], 0.0][end_of - 1]
    first = np.repeat(starts, ends - starts)
    r1 = vals[first]
    pos = np.arange(len(vals)) - first  # 0 for the most frequent value
    ok = (pos >= 1) & (r1 < c * tail)  # position l - 1 satisfies r1 < c (r_l + ... + r_m)
    out[rows[starts]] = 1.0
    np.add.at(out, rows[ok], 1.0)
    return out


L_DIVERSITY_KINDS: dict[str, Callable[[sp.csr_matrix, float | None], np.ndarray]] = {
    "distinct": _distinct, "entropy": _entropy, "recursive": _recursive}
"""The l-diversity readings by name (distinct, entropy, recursive); each maps matched counts to l per class."""


def l_diversity_classes(table: ClassTable, sensitive: str, missing: MissingSemantics, kind: str = "distinct",
                        c: float | None = None, counts: sp.csr_matrix | None = None) -> np.ndarray:
    """l per class of ``table`` for sensitive variable ``sensitive`` (float64, one value per class).

    ``kind`` is ``distinct``, ``entropy`` or ``recursive`` (then ``c`` is the constant of recursive (c,l),
    default 2 as in sdcMicro). Under ``wildcard`` semantics the counts are those of every record matching
    the class; see the module docstring for how missing sensitive values count. ``counts`` may pass
    :func:`matched_value_counts` of the same table, variable and semantics, computed once for several kinds.
    """
    if kind not in L_DIVERSITY_KINDS:
        raise InputError(f"The l-diversity kind must be one of {', '.join(L_DIVERSITY_KINDS)}.")
    if c is not None and kind != "recursive":
        raise InputError("The constant c applies to recursive (c,l)-diversity only.")
    if counts is None:
        counts = matched_value_counts(table, sensitive, check_semantics(missing))
    return L_DIVERSITY_KINDS[kind](counts, c)
