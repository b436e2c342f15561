"""Brute-force references for the protection models of local suppression (pure python, no kanon code).

A released cell is one of: the input value, *suppressed* (declared as such in the release), or missing in
the input. The three models and the intruder's count are written out cell by cell from their
definitions, so the tests compare kanon's solvers and checkers with something that shares nothing with
them.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

SUP = "S"  # a suppressed cell


def released_rows(codes: np.ndarray, mask: np.ndarray) -> list[tuple]:
    return [tuple(SUP if mask[i, j] else int(codes[i, j]) for j in range(codes.shape[1]))
            for i in range(codes.shape[0])]


def _same_class(a: tuple, b: tuple, wildcard: bool) -> bool:
    """Strict model: same suppressed QIs and equal values; under wildcard semantics a cell missing in the
    input matches anything, a suppressed cell included (it may stand for any value)."""
    for x, y in zip(a, b, strict=True):
        if wildcard and (x == -1 or y == -1):
            continue
        if x == y:
            continue
        return False
    return True


def strict_counts(codes: np.ndarray, mask: np.ndarray, missing: str, alpha: float = 1.0) -> list[float]:
    """Class sizes of the strict model; under wildcard semantics sdcMicro's alpha weighs a record with a
    missing input cell and another key (a suppressed cell is a value here, not a missing one)."""
    rows = released_rows(codes, mask)
    wild = missing == "wildcard"
    return [sum((1.0 if (s == r or -1 not in s or not wild) else alpha) for s in rows if _same_class(r, s, wild))
            for r in rows]


def release_counts(codes: np.ndarray, mask: np.ndarray, alpha: float = 1.0) -> list[float]:
    """sdcMicro's rule on the release: blanks (suppressed or missing) match anything; alpha for records
    with a blank and a different key."""
    rows = [tuple(-1 if c == SUP else c for c in r) for r in released_rows(codes, mask)]
    out = []
    for r in rows:
        total = 0.0
        for s in rows:
            if all(x == y or x == -1 or y == -1 for x, y in zip(r, s, strict=True)):
                total += 1.0 if (s == r or -1 not in s) else alpha
        out.append(total)
    return out


def consistent(person: tuple, released: tuple, wildcard: bool) -> bool:
    """A released record could be this person (whose input values are ``person``)."""
    for x, y in zip(person, released, strict=True):
        if y == SUP or x == y:
            continue
        if wildcard and (x == -1 or y == -1):
            continue
        return False
    return True


def record_counts(codes: np.ndarray, mask: np.ndarray, missing: str) -> list[int]:
    """Wilson et al.: for each released record, the input records consistent with it."""
    people = [tuple(int(c) for c in r) for r in codes]
    wild = missing == "wildcard"
    return [sum(consistent(p, rel, wild) for p in people) for rel in released_rows(codes, mask)]


def findable(codes: np.ndarray, mask: np.ndarray, k: int, missing: str) -> int:
    people = [tuple(int(c) for c in r) for r in codes]
    rel = released_rows(codes, mask)
    wild = missing == "wildcard"
    return sum(sum(consistent(p, s, wild) for s in rel) < k for p in people)


COUNTS = {
    "strict": lambda codes, mask, missing, alpha: strict_counts(codes, mask, missing, alpha),
    "release": lambda codes, mask, missing, alpha: release_counts(codes, mask, alpha),
    "record": lambda codes, mask, missing, alpha: record_counts(codes, mask, missing),
}


def brute_force_optimum(model: str, codes: np.ndarray, costs: np.ndarray, protected: np.ndarray, k: int,
                        missing: str, alpha: float = 1.0) -> float | None:
    """The cheapest set of suppressible cells meeting ``model`` at k, over all cell subsets (None: none)."""
    n, q = codes.shape
    cells = [(i, j) for i in range(n) for j in range(q) if codes[i, j] >= 0 and not protected[j]]
    count = COUNTS[model]
    best = None
    for size in range(len(cells) + 1):
        for chosen in combinations(cells, size):
            cost = float(sum(costs[j] for _, j in chosen))
            if best is not None and cost >= best:
                continue
            mask = np.zeros((n, q), dtype=bool)
            for i, j in chosen:
                mask[i, j] = True
            if min(count(codes, mask, missing, alpha)) >= k - 1e-9:
                best = cost
    return best
