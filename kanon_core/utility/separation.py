"""Which logistic-regression coefficients are infinite: complete and quasi-complete separation.

The maximum-likelihood estimate of a logistic regression exists exactly when no direction ``b != 0``
satisfies ``s_i x_i' b >= 0`` for every record, with ``s_i = +1`` for an event and ``-1`` otherwise
(Albert & Anderson 1984): along such a direction the likelihood never stops increasing, so the
iterations run away and the software reports whatever estimate it stopped at -- the "beta = 23,
p = 1e-72" of a category whose two records both have the outcome. These directions form a convex cone
C; a coefficient is infinite when some element of C moves it, i.e. when it is non-zero somewhere in C
(Konis 2007, the linear programmes behind R's ``detectseparation``).

With the columns of X linearly independent (aliased columns removed first) C is pointed. Two steps:

1. whether C is more than {0}: the linear programme ``max sum_i s_i x_i' b`` over C and the box
   ``-1 <= b <= 1`` has a positive optimum exactly then (the usual case, no separation, stops here);
2. which records can be separated (the set S of rows with ``s_i x_i' b > 0`` for some b in C): the same
   programme with the objective summed over the rows not yet in S, repeated; each optimum adds the rows
   its solution makes positive, and a zero optimum proves that no further row is separable (every term
   of the sum is >= 0 on C). C is a cone, so the sum of directions separating different rows separates
   all of them at once; C therefore spans the subspace ``L = {b : x_i' b = 0 for i not in S}`` (a
   direction strict on all of S has a neighbourhood in L inside C), and coefficient j is infinite exactly
   when ``e_j`` is not orthogonal to L -- a null-space computation, not one programme per coefficient.

Before any programme, the fit itself usually proves that there is no separation. By Stiemke's theorem
C = {0} exactly when some *strictly positive* multipliers ``l_i`` give ``sum_i l_i s_i x_i = 0``; the
score equations of the fit, ``sum_i w_i x_i (y_i - mu_i) = 0``, are such a sum with
``l_i = w_i |y_i - mu_i|``, up to the fit's convergence error. :func:`no_separation_certificate` removes
that error exactly (the least-norm correction) and checks the multipliers stay positive: if they do,
there is no separation and no programme runs; if not (fitted probabilities at 0 or 1), the programmes
decide.

Records with identical ``s_i x_i`` give one constraint, so categorical models need few rows. Weights
play no part: only which records are in the fit matters, as in R.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

SUPPORT_TOL = 1e-6
"""A coefficient moves in a direction of the cone when its (column-scaled, box-bounded) value exceeds this."""


def no_separation_certificate(a: np.ndarray, multipliers: np.ndarray) -> bool:
    """True when strictly positive ``l`` with ``a' l = 0`` exist near ``multipliers`` -- proof that the cone
    ``a b >= 0`` is {0} (Stiemke). The least-norm ``c`` with ``a' c = a' multipliers`` is subtracted; the
    result must stay positive with a margin far above rounding."""
    lam = np.asarray(multipliers, dtype=np.float64)
    if lam.shape[0] != a.shape[0] or not (lam > 0).all():
        return False
    try:
        c = a @ np.linalg.solve(a.T @ a, a.T @ lam)
    except np.linalg.LinAlgError:
        return False
    return bool((lam - np.abs(c) > CERTIFICATE_MARGIN * lam.max()).all())


CERTIFICATE_MARGIN = 1e-9
"""Relative margin by which the corrected multipliers must stay positive for the certificate to count."""


def infinite_coefficients(x: np.ndarray, y: np.ndarray, multipliers: np.ndarray | None = None) -> np.ndarray:
    """Boolean per column of ``x``: its maximum-likelihood estimate is infinite (separation).

    ``x`` holds the records used (n x p, full column rank) and ``y`` their 0/1 outcomes. ``multipliers``
    (``w_i |y_i - mu_i|`` at a fit) let :func:`no_separation_certificate` skip the linear programmes.
    """
    x = np.asarray(x, dtype=np.float64)
    p = x.shape[1]
    infinite = np.zeros(p, dtype=bool)
    if p == 0 or x.shape[0] == 0:
        return infinite
    a = (2.0 * np.asarray(y, dtype=np.float64) - 1.0)[:, None] * x
    if multipliers is not None and no_separation_certificate(a, multipliers):
        return infinite
    scale = np.abs(a).max(axis=0)
    scale[scale == 0] = 1.0
    a = np.unique(a / scale, axis=0)
    a_ub, b_ub = -a, np.zeros(a.shape[0])
    bounds = [(-1.0, 1.0)] * p

    def solve(c: np.ndarray) -> np.ndarray | None:
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
        return res.x if res.status == 0 else None

    separable = np.zeros(a.shape[0], dtype=bool)
    while True:  # step 2: each programme finds new separable rows, or proves there are none left
        objective = a[~separable].sum(axis=0)
        b = solve(-objective)
        if b is None or float(objective @ b) <= SUPPORT_TOL:
            break
        new = (a @ b > SUPPORT_TOL) & ~separable
        if not new.any():  # only rounding-level gains left
            break
        separable |= new
    if not separable.any():
        return infinite
    rest = a[~separable]
    if rest.shape[0] == 0:
        return np.ones(p, dtype=bool)
    # vt is p x p either way; full_matrices only when there are fewer rows than columns (U stays small)
    _, sv, vt = np.linalg.svd(rest, full_matrices=rest.shape[0] < p)
    rank = int((sv > max(rest.shape) * np.finfo(float).eps * sv.max()).sum()) if sv.size and sv.max() > 0 else 0
    null = vt[rank:]  # orthonormal basis of L, one row per basis vector
    return np.linalg.norm(null, axis=0) > SUPPORT_TOL
