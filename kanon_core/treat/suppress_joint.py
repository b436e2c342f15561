"""Joint improvement under wildcard semantics: give back suppressed values nobody needs.

Why record-wise solutions are k-anonymous, and why they can be improved jointly
------------------------------------------------------------------------------
Under ``wildcard`` semantics record r is matched by s when, on every QI, their values are equal or one of
them is missing; fk(r) counts the records matching r (r included).

*Claim.* Let every record r be given a suppression set T(r) that hits all of its MINUCs for threshold k
computed on the input, i.e. its retained set R(r) occurs at least k times in the input. Then the output
is k-anonymous under wildcard semantics, for every k >= 2.

*Proof.* Let s be one of the >= k input records agreeing with r on R(r) (equal or missing on every
position of R(r); s = r included). In the output, r is missing outside R(r), so r and s can only clash
on positions of R(r); there s's input value was equal to r's or missing, and suppression only turns
values into missing, so s's output value is still equal to r's or missing. Hence s matches r in the
output, and fk(r) >= k. In words: suppression never lowers another record's count, it can only add
matches. []

The same argument shows the converse slack: a suppressed cell of s also matches r's value there, so
records can reach k *thanks to other records' suppressions*, which the record-wise model (seed 000)
ignores. Example, k = 2: rows (1, 1) and (2, 2). Record-wise, each needs both values suppressed (cost
4); jointly, (*, 1) and (2, *) match each other (cost 2). Taken to the extreme, k - 1 fully suppressed
rows match everyone, so the *joint* optimum under wildcard semantics is degenerate (at most (k - 1) x
number of QIs cells) and is not what a disclosure officer means by optimal; the record-wise optimum is.

This pass therefore starts from the record-wise solution and only *releases* suppressed cells
(restores the original value) when every count stays >= k, exactly: restoring cell (i, v) removes the
matches between i and the records s that matched i and hold a different observed value on v; nothing
else changes (matching is pairwise). So a release is accepted iff fk(i) - |lost| >= k and fk(s) - 1 >= k
for each lost s. Cells are visited once, costliest first (ties by record, then QI); a rejected cell can
never become releasable later, because releases only lower counts. The result is verified afterwards by
an independent recount like every run.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def release_cells(X, orig, cell_i, cell_v, fk, k, released):  # pragma: no cover - compiled
    """Try to restore each listed cell in order; updates X, fk and ``released`` in place."""
    n, q = X.shape
    lost = np.empty(n, dtype=np.int64)
    total = 0
    for t in range(cell_i.shape[0]):
        i = cell_i[t]
        v = cell_v[t]
        val = orig[i, v]
        nl = 0
        ok = True
        for j in range(n):
            if j == i:
                continue
            y = X[j, v]
            if y < 0 or y == val:
                continue
            match = True
            for w in range(q):
                a = X[i, w]
                b = X[j, w]
                if a >= 0 and b >= 0 and a != b:
                    match = False
                    break
            if match:
                if fk[j] - 1 < k:
                    ok = False
                    break
                lost[nl] = j
                nl += 1
        if not ok or fk[i] - nl < k:
            continue
        X[i, v] = val
        fk[i] -= nl
        for a in range(nl):
            fk[lost[a]] -= 1
        released[t] = True
        total += 1
    return total


def release_pass(out_codes: np.ndarray, orig: np.ndarray, suppressed: np.ndarray, costs: np.ndarray,
                 fk: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """Return (new output codes, number of released cells); inputs are not modified."""
    X = np.ascontiguousarray(out_codes, dtype=np.int32).copy()
    ii, vv = np.nonzero(suppressed)
    order = np.lexsort((vv, ii, -costs[vv]))
    ii, vv = ii[order].astype(np.int64), vv[order].astype(np.int64)
    released = np.zeros(len(ii), dtype=np.bool_)
    fk = np.asarray(fk, dtype=np.int64).copy()
    n_rel = release_cells(X, np.ascontiguousarray(orig, dtype=np.int32), ii, vv, fk, int(k), released)
    return X, int(n_rel)
