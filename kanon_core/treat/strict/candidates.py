"""Candidate classes for strict local suppression, with the per-record charge bound that prunes them.

Notation (:mod:`.solve` has the model). Rows are the distinct records of the file (``mult`` copies
each). A *pattern* P is a set of free QIs; a record using P releases its values off P and a suppressed
marker on P, so it can only share a class with records that use the same P and agree with it off P.
Cells missing in the input cannot be suppressed (the release shows them as missing, not suppressed), so
a record can use P only if it is observed on all of P.

The charge bound. Take a record u using P in an optimal release; its class G has |G| >= k records, all
using P and agreeing with u off P, and costs |G|·c(P). Split that cost equally among G's *unsafe*
records (those that must move because their input class is below k): each gets c(P)·|G|/j with
j <= a_P(u), the number of unsafe records able to join u's class. So every unsafe copy of u is charged

    charge_P(u) = c(P) · max(1, k / a_P(u))      (and only patterns with N_P(u) >= k are possible),

where N_P(u) counts all records able to join. Charges of different unsafe records come from disjoint
shares of the classes' costs, so  cost >= Σ_u mult_u · min_P charge_P(u) =: LB.  It generalises the
record-wise bound of Wilson et al. (RTI), which is the case a_P(u) >= k.

Pruning. A release in which one copy of u uses P costs at least LB - lb_u + charge_P(u). When that is
not below the best known cost UB, no better release uses (u, P), and the pair is dropped. What is left
contains every release cheaper than UB, so the integer programme over it (or UB itself) is optimal.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ...risk.keys import pack_rows

FULL_ENUMERATION_MAX = 12
"""With at most this many free QIs every pattern is enumerated (4,095 at 12)."""
SMALL_PATTERN_SIZE = 3
"""Beyond that, patterns of up to this many QIs first; larger ones only when the bounds need them."""
PATTERN_LIMIT = 60_000
"""More candidate patterns than this and the search stops proving (the gap is reported)."""


@dataclass
class Pairs:
    """Feasible (row, pattern) pairs: row index, pattern index, class id under the pattern, charge."""

    row: np.ndarray
    pattern: np.ndarray
    group: np.ndarray
    charge: np.ndarray

    def take(self, keep: np.ndarray) -> Pairs:
        return Pairs(self.row[keep], self.pattern[keep], self.group[keep], self.charge[keep])

    def __len__(self) -> int:
        return len(self.row)


def bits(mask: int) -> list[int]:
    return [v for v in range(64) if (mask >> v) & 1]


def pattern_cost(mask: int, costs: np.ndarray) -> float:
    return float(sum(costs[v] for v in bits(mask)))


def small_patterns(free: list[int]) -> list[int]:
    """All patterns when few QIs are free, else the small ones and the all-free pattern."""
    if len(free) <= FULL_ENUMERATION_MAX:
        sizes = range(1, len(free) + 1)
    else:
        sizes = range(1, SMALL_PATTERN_SIZE + 1)
    out = [sum(1 << v for v in c) for r in sizes for c in combinations(free, r)]
    full = sum(1 << v for v in free)
    if full not in out:
        out.append(full)
    return out


def patterns_below(free: list[int], costs: np.ndarray, budget: float, limit: int) -> list[int] | None:
    """Every pattern of free QIs cheaper than ``budget`` (depth-first), or None past ``limit`` of them."""
    order = sorted(free, key=lambda v: costs[v])
    out: list[int] = []

    def walk(start: int, mask: int, cost: float) -> bool:
        for i in range(start, len(order)):
            v = order[i]
            c = cost + float(costs[v])
            if c >= budget:
                break  # sorted by cost: every later QI is at least as dear
            out.append(mask | (1 << v))
            if len(out) > limit or not walk(i + 1, mask | (1 << v), c):
                return False
        return True

    return out if walk(0, 0, 0.0) else None


def cheapest_outside(free: list[int], costs: np.ndarray, size: int) -> float:
    """The cost of the cheapest pattern with more than ``size`` QIs (a bound for patterns not listed)."""
    if len(free) <= size:
        return float("inf")
    return float(np.sort(costs[free])[: size + 1].sum())


def evaluate(uniq: np.ndarray, able_cells: np.ndarray, cell_costs: np.ndarray, mult: np.ndarray,
             unsafe: np.ndarray, patterns: list[int], k: int, share: bool = True) -> Pairs:
    """Charges of every unsafe row under every pattern where its class can reach k.

    ``able_cells`` says which cells a row may have suppressed, ``cell_costs`` what each costs (0 for a
    cell missing in the input that is only marked, see :func:`.solve.solve_strict`). ``share`` applies
    the k / a_P(u) factor, valid when all members of a class pay the same.
    """
    n_u, q = uniq.shape
    rows_out, pats_out, groups_out, charges_out = [], [], [], []
    unsafe_mult = np.where(unsafe, mult, 0)
    unsafe_rows = np.flatnonzero(unsafe)
    for p_idx, mask in enumerate(patterns):
        cols = bits(mask)
        keep_cols = [v for v in range(q) if not (mask >> v) & 1]
        able = able_cells[:, cols].all(axis=1)
        key = pack_rows(uniq[:, keep_cols])
        key = np.where(able, key, -1)
        _, inv = np.unique(key, return_inverse=True)
        inv = inv.reshape(-1)
        total = np.bincount(inv, weights=mult)
        unsafe_total = np.bincount(inv, weights=unsafe_mult)
        u = unsafe_rows[able[unsafe_rows]]
        g = inv[u]
        ok = total[g] >= k
        u, g = u[ok], g[ok]
        if len(u) == 0:
            continue
        c = cell_costs[u][:, cols].sum(axis=1)
        charge = c * np.maximum(1.0, k / unsafe_total[g]) if share else c
        rows_out.append(u)
        pats_out.append(np.full(len(u), p_idx, dtype=np.int64))
        groups_out.append(g.astype(np.int64))
        charges_out.append(charge)
    if not rows_out:
        e = np.zeros(0, dtype=np.int64)
        return Pairs(e, e, e, np.zeros(0))
    return Pairs(np.concatenate(rows_out), np.concatenate(pats_out), np.concatenate(groups_out),
                 np.concatenate(charges_out))


def row_minimum(pairs: Pairs, n_rows: int, default: np.ndarray) -> np.ndarray:
    """Per row, the smallest charge among its pairs, capped by ``default`` (inf where it has none)."""
    best = np.full(n_rows, np.inf)
    np.minimum.at(best, pairs.row, pairs.charge)
    return np.minimum(best, default)


def class_members(uniq: np.ndarray, able_cells: np.ndarray, mask: int, rows: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Class ids under pattern ``mask`` (as in :func:`evaluate`) for all rows; -1 where a row cannot join."""
    q = uniq.shape[1]
    cols = bits(mask)
    keep_cols = [v for v in range(q) if not (mask >> v) & 1]
    able = able_cells[:, cols].all(axis=1)
    key = np.where(able, pack_rows(uniq[:, keep_cols]), -1)
    _, inv = np.unique(key, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    return np.where(able, inv, -1), inv[rows]
