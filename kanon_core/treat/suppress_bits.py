"""Small compiled helpers on QI-position bitmasks shared by the suppression solvers.

A set of QI positions is a ``uint64`` bitmask (bit ``v`` = QI ``v``), the representation the MINUC
engine also uses; hence at most 64 quasi-identifiers.
"""

from __future__ import annotations

import numba
import numpy as np

MAX_QIS = 64


@numba.njit(cache=True, inline="always")
def popcount(x):  # pragma: no cover - compiled
    """Bits set in ``x`` (branch-free SWAR count: no loop over the bits)."""
    x = np.uint64(x)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True)
def mask_cost(mask, costs):  # pragma: no cover - compiled
    """Total cost of the positions in ``mask``."""
    total = 0.0
    m = np.uint64(mask)
    v = 0
    while m:
        if m & np.uint64(1):
            total += costs[v]
        m >>= np.uint64(1)
        v += 1
    return total


def masks_to_bool(masks: np.ndarray, q: int) -> np.ndarray:
    """(n,) uint64 masks -> (n, q) bool matrix."""
    masks = np.asarray(masks, dtype=np.uint64)
    bits = np.uint64(1) << np.arange(q, dtype=np.uint64)
    return (masks[:, None] & bits[None, :]) != 0


def bool_to_masks(mat: np.ndarray) -> np.ndarray:
    """(n, q) bool matrix -> (n,) uint64 masks."""
    mat = np.asarray(mat, dtype=bool)
    bits = np.uint64(1) << np.arange(mat.shape[1], dtype=np.uint64)
    return (mat.astype(np.uint64) * bits[None, :]).sum(axis=1, dtype=np.uint64) if mat.size else np.zeros(
        mat.shape[0], np.uint64)


def observed_masks(codes: np.ndarray) -> np.ndarray:
    """Bitmask of the non-missing positions of every row."""
    return bool_to_masks(np.asarray(codes) >= 0)
