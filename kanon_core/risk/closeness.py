"""t-closeness per class: the Earth Mover's Distance between a class's distribution of S and the file's.

l-diversity counts values; t-closeness (Li, Li & Venkatasubramanian 2007) asks how much finding the class
*changes* what an intruder believes about a person's sensitive value S. The belief before is S's
distribution over the whole file (Q), after it is the distribution in the class (P); the distance between
them is the Earth Mover's Distance (the least total probability mass times distance moved to turn P into
Q). A class is t-close when the distance is at most t. Two ground distances, as ARX implements them
(``EqualDistanceTCloseness`` and ``OrderedDistanceTCloseness``, Prasser & Kohlmayer):

* **equal** (categories): every two values are at distance 1, so EMD = ½ Σ |p_i − q_i| (the total
  variation distance);
* **ordered** (numbers, or any ordered variable): values sorted, the i-th and j-th at distance
  |i − j| / (m − 1) with m the number of distinct values of S in the file, so
  EMD = Σ_i |Σ_{j ≤ i} (p_j − q_j)| / (m − 1). Only the rank of a value matters, not its size (Li et al.).

``distance="auto"`` takes ``ordered`` when every value of S is a number without value labels (an amount),
else ``equal``: numbers with value labels are codes of categories (an occupation coded 1 to 9), and since the
ordered distance never exceeds the equal one, reading them as amounts would pass classes that disclose.

**Missing sensitive values** are left out of both distributions: a missing value says nothing about
anyone's S, so P and Q are the distributions of the observed values. A class whose values of S are all
missing has distance 0 (nothing is learnt from it). Under ``wildcard`` semantics the class of a record is
every record matching it, as in :mod:`kanon_core.risk.diversity`; Q is always the file's distribution
(every record once).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from ..classtable import ClassTable
from ..dataset import MissingSemantics, check_semantics
from ..errors import InputError
from .diversity import matched_value_counts, sensitive_of


def _equal(p_counts: sp.csr_matrix, q: np.ndarray) -> np.ndarray:
    """½ Σ|p − q|, written as ½ (1 + Σ_{i in P} (|p_i − q_i| − q_i)) so only P's values are visited (ARX)."""
    n = p_counts.shape[0]
    mat = sp.csr_matrix(p_counts)
    mat.eliminate_zeros()
    total = np.asarray(mat.sum(axis=1)).reshape(-1)
    rows = np.repeat(np.arange(n), np.diff(mat.indptr))
    p = mat.data / total[rows]
    qi = q[mat.indices]
    acc = np.ones(n)
    np.add.at(acc, rows, np.abs(p - qi) - qi)
    out = acc / 2.0
    out[total == 0] = 0.0
    return np.clip(out, 0.0, 1.0)


def _ordered(p_counts: sp.csr_matrix, q: np.ndarray) -> np.ndarray:
    """Σ_i |F_P(i) − F_Q(i)| / (m − 1) with F the cumulative distributions, on the sparse counts.

    F_P is constant between two values the class holds, and F_Q increases, so each such stretch is split
    where F_Q passes F_P's level and both parts are summed from prefix sums of F_Q: the cost is about the
    class table's stored entries times log m, never classes × values.
    """
    m = len(q)
    n = p_counts.shape[0]
    out = np.zeros(n)
    if m <= 1:
        return out
    mat = sp.csr_matrix(p_counts, dtype=np.float64)
    mat.eliminate_zeros()
    mat.sort_indices()
    nnz = np.diff(mat.indptr)
    used = np.flatnonzero(nnz > 0)
    if not len(used):
        return out
    sub = mat[used]
    sub.sort_indices()
    k = np.diff(sub.indptr)
    total = np.asarray(sub.sum(axis=1)).reshape(-1)
    p = sub.data / np.repeat(total, k)
    cp = np.cumsum(p)
    offset = np.r_[0.0, cp[sub.indptr[1:-1] - 1]]
    level = cp - np.repeat(offset, k)  # F_P just after each value the class holds
    heads = sub.indptr[:-1]
    starts = np.insert(sub.indices.astype(np.int64), heads, 0)
    ends = np.insert(sub.indices.astype(np.int64), sub.indptr[1:], m)
    vals = np.insert(level, heads, 0.0)
    fq = np.cumsum(q)
    sq = np.r_[0.0, np.cumsum(fq)]  # sq[i] = F_Q(0) + ... + F_Q(i - 1)
    split = np.clip(np.searchsorted(fq, vals, side="left"), starts, ends)
    below = vals * (split - starts) - (sq[split] - sq[starts])
    above = (sq[ends] - sq[split]) - vals * (ends - split)
    seg_row = np.repeat(np.arange(len(used)), k + 1)
    out[used] = np.bincount(seg_row, weights=below + above, minlength=len(used)) / (m - 1)
    return np.clip(out, 0.0, 1.0)


T_CLOSENESS_DISTANCES: dict[str, Callable[[sp.csr_matrix, np.ndarray], np.ndarray]] = {
    "equal": _equal, "ordered": _ordered}
"""The ground distances by name; each maps (class counts over the file's values, Q) to EMD per class."""


def resolve_distance(table: ClassTable, sensitive: str, distance: str) -> str:
    """``auto`` becomes ``ordered`` for S of amounts (numbers without value labels) and ``equal`` otherwise;
    other names are checked."""
    if distance == "auto":
        return "ordered" if sensitive_of(table, sensitive).numeric is not None else "equal"
    if distance not in T_CLOSENESS_DISTANCES:
        raise InputError(f"The t-closeness distance must be auto or one of {', '.join(T_CLOSENESS_DISTANCES)}.")
    return distance


def t_closeness_classes(table: ClassTable, sensitive: str, missing: MissingSemantics,
                        distance: str = "auto", counts: sp.csr_matrix | None = None) -> np.ndarray:
    """EMD per class of ``table`` between its distribution of ``sensitive`` and the file's (0..1).

    See the module docstring for the distances, missing sensitive values and the wildcard classes.
    ``counts`` may pass :func:`~kanon_core.risk.diversity.matched_value_counts` computed once.
    """
    check_semantics(missing)
    distance = resolve_distance(table, sensitive, distance)
    sens = sensitive_of(table, sensitive)
    if counts is None:
        counts = matched_value_counts(table, sensitive, missing)
    obs = sp.csr_matrix(counts[:, :-1])
    # the file's distribution over the values it holds (values seen only in other versions drop out)
    keep = sens.value_code >= 0
    file_counts = np.bincount(sens.value_code[keep], weights=sens.count[keep], minlength=sens.n_values)
    present = np.flatnonzero(file_counts > 0)
    if len(present) == 0:
        return np.zeros(table.n_classes)
    q = file_counts[present] / file_counts[present].sum()
    return T_CLOSENESS_DISTANCES[distance](obs[:, present], q)


def worst_class(values: np.ndarray, table: ClassTable) -> dict:
    """The largest distance and how many classes and records reach it (for JSON and the report)."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return {"t": 0.0, "classes": 0, "records": 0}
    top = float(values.max())
    at = np.isclose(values, top, rtol=0, atol=1e-12)
    return {"t": top, "classes": int(at.sum()), "records": int(table.count[at].sum())}
