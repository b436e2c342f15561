"""l-diversity of a sensitive variable per class: distinct, entropy and recursive (c,l), on the class table.

k-anonymity hides *who* a record is; l-diversity (Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam
2007) asks whether the records an intruder narrows someone down to still differ on the sensitive
variable S. If every record of a class has the same diagnosis, finding the class reveals the diagnosis.

Three readings, as sdcMicro's ``ldiversity`` computes them (its C++ ``compute_group_ldiversity``):

* **distinct l**: the number of distinct values of S in the class;
* **entropy l**: exp(H), H the entropy (natural log) of S's distribution in the class: the number of
  equally frequent values that would be as uncertain; it is at most distinct l;
* **recursive (c,l)**: with the observed values' counts sorted r1 >= r2 >= ... >= rm, a class is
  recursive (c,l)-diverse when r1 < c (rl + ... + rm): the most frequent value is not too frequent
  compared with the rarer ones. The figure is the largest such l (at least 1), which is what sdcMicro
  reports (its ``l_recurs_c`` defaults to 2; c <= 0 is taken as 1, as sdcMicro does).

**Missing sensitive values.** As in sdcMicro (a declared missing code), the missing values of a class
count together as *one* further value for distinct and entropy l — but only when the class also has an
observed value — and their share enters the entropy. Recursive (c,l) looks at observed values only. A
class whose sensitive values are all missing has distinct l = 0, entropy l = 1 (sdcMicro's exp(0)) and
recursive l = 0 (sdcMicro leaves this case undefined). An empty cell and a declared missing code of S are
missing; nothing else is.

**Classes under the two missing-value semantics of the quasi-identifiers.** Under ``category`` a class is
its records (sdcMicro groups identical keys, missing equal to missing). Under ``wildcard`` a record's
class is every record that matches it (agreeing wherever both are observed), and matching is not
transitive. The value counts of a class are then the sums over its *matching classes*: one sparse
product of the class table with itself (:func:`matched_value_counts`), never a pass over records. Every
matching record counts in full (sdcMicro's ``alpha`` weighs class sizes, not which values a record could
have).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from ..classtable import ClassTable, SensitiveCounts
from ..dataset import MissingSemantics, check_semantics
from ..errors import InputError
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


def matching_sum(table: ClassTable, per_class: sp.csr_matrix, missing: MissingSemantics) -> sp.csr_matrix:
    """For every class, the sum of ``per_class`` rows over the classes it matches (itself included).

    Under ``category`` semantics a class matches only itself. Under ``wildcard`` semantics two classes
    match when their codes agree on every QI observed in both. Classes are grouped by missing pattern;
    for each pair of patterns (A, B) the classes join on the QIs observed in both, as a product of two
    sparse indicator matrices (A's classes × keys, keys × B's classes), so the pairs of matching classes
    are never listed one by one. Cost ~ P² sparse products for P missing patterns.
    """
    check_semantics(missing)
    per_class = sp.csr_matrix(per_class)
    codes = table.codes
    if missing == "category" or not (codes < 0).any():
        return per_class
    miss = codes < 0
    pat_id, _ = group_ids(miss.astype(np.int32))
    patterns = [np.flatnonzero(pat_id == p) for p in range(int(pat_id.max()) + 1)]
    observed = [~miss[rows[0]] for rows in patterns]
    out = per_class.copy().astype(np.float64)  # every class matches itself (the A == B join is identity)
    for a in range(len(patterns)):
        for b in range(a + 1, len(patterns)):
            rows_a, rows_b = patterns[a], patterns[b]
            common = observed[a] & observed[b]
            if common.any():
                keys = np.vstack([codes[rows_a][:, common], codes[rows_b][:, common]])
                kid, _ = group_ids(keys)
            else:  # nothing observed in common: every class of A matches every class of B
                kid = np.zeros(len(rows_a) + len(rows_b), dtype=np.int64)
            n_keys = int(kid.max()) + 1
            ka, kb = kid[: len(rows_a)], kid[len(rows_a):]
            ga = sp.csr_matrix((np.ones(len(rows_a)), (np.arange(len(rows_a)), ka)), shape=(len(rows_a), n_keys))
            gb = sp.csr_matrix((np.ones(len(rows_b)), (np.arange(len(rows_b)), kb)), shape=(len(rows_b), n_keys))
            sum_b = gb.T @ per_class[rows_b]  # keys × columns
            sum_a = ga.T @ per_class[rows_a]
            out = out + _scatter(ga @ sum_b, rows_a, out.shape) + _scatter(gb @ sum_a, rows_b, out.shape)
    out = sp.csr_matrix(out)
    out.eliminate_zeros()
    return out


def _scatter(block: sp.spmatrix, rows: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    coo = sp.coo_matrix(block)
    return sp.csr_matrix((coo.data, (rows[coo.row], coo.col)), shape=shape)


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
    obs = counts[:, :-1]
    n_obs = np.diff(sp.csr_matrix(obs).indptr).astype(np.float64)
    missing_n = np.asarray(counts[:, -1].todense()).reshape(-1)
    return n_obs + ((missing_n > 0) & (n_obs > 0))


def _entropy(counts: sp.csr_matrix, c: float | None) -> np.ndarray:
    n = counts.shape[0]
    total = np.asarray(counts.sum(axis=1)).reshape(-1)
    obs = sp.csr_matrix(counts[:, :-1])
    rows, vals = _rows(obs)
    has_obs = np.bincount(rows, minlength=n) > 0
    missing_n = np.asarray(counts[:, -1].todense()).reshape(-1)
    h = np.zeros(n)
    p = vals / total[rows]
    np.add.at(h, rows, -p * np.log(p))
    use_miss = has_obs & (missing_n > 0)
    pm = missing_n[use_miss] / total[use_miss]
    h[use_miss] -= pm * np.log(pm)
    return np.exp(h)


def _recursive(counts: sp.csr_matrix, c: float | None) -> np.ndarray:
    c = 2.0 if c is None else float(c)
    if c <= 0:
        c = 1.0
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
                        c: float | None = None) -> np.ndarray:
    """l per class of ``table`` for sensitive variable ``sensitive`` (float64, one value per class).

    ``kind`` is ``distinct``, ``entropy`` or ``recursive`` (then ``c`` is the constant of recursive (c,l),
    default 2 as in sdcMicro). Under ``wildcard`` semantics the counts are those of every record matching
    the class; see the module docstring for how missing sensitive values count.
    """
    if kind not in L_DIVERSITY_KINDS:
        raise InputError(f"The l-diversity kind must be one of {', '.join(L_DIVERSITY_KINDS)}.")
    if c is not None and kind != "recursive":
        raise InputError("The constant c applies to recursive (c,l)-diversity only.")
    counts = matched_value_counts(table, sensitive, check_semantics(missing))
    return L_DIVERSITY_KINDS[kind](counts, c)
