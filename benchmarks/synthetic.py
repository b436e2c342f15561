"""A seeded synthetic stand-in for the ELS:2002 extract of Wilson et al., RTI (11,204 records x 19 QIs).

The real file is confidential, so benchmarks use a table with the same shape: the 19 category counts of
Wilson et al.'s Table 1, skewed marginals (a few common categories, long tails of rare ones) and correlated
blocks (race and language of student and parent; parents' education, occupations and income; school
characteristics). The skew is tuned so that about as many records are non-unique on all 19 QIs as in
Wilson et al., RTI (56 of 11,204; 45 here with seed 0). Correlation matters: it makes the frequency tables sparse in the same way real survey
data is, which drives the number of minimal unsafe combinations far more than the raw dimensions.

Generation: each block has a standard-normal latent factor; a variable is ``loading * factor + noise``
cut at the quantiles of a skewed (geometric-like) marginal, so the categories are ordered along the
factor; nominal variables then get their codes shuffled. Parents' highest education is the maximum of
mother's and father's, as in the survey. Everything derives from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

NAMES: tuple[str, ...] = (
    "BYSEX", "BYRACE", "BYHOMLNG", "BYSTLNG2", "BYPARACE", "BYPARLNG", "BYPLANG", "BYFCOMP", "BYPARED",
    "BYMOTHED", "BYFATHED", "BYGPARED", "BYOCCUM", "BYOCCUF", "BYINCOME", "BYSCTRL", "BYURBAN", "BYREGION",
    "BYDOB_P",
)
CARDINALITIES: tuple[int, ...] = (2, 7, 6, 5, 7, 6, 5, 9, 8, 8, 8, 8, 17, 17, 13, 3, 3, 4, 6)

# (block, loading on the block factor, decay of the marginal, nominal?) per variable
_SPEC: tuple[tuple[int, float, float, bool], ...] = (
    (0, 0.0, 0.08, True),   # sex: its own block, near-balanced
    (1, 0.85, 0.72, True),  # student race
    (1, 0.80, 1.12, True),  # student's native language
    (1, 0.75, 1.28, False),  # student's English fluency
    (1, 0.90, 0.72, True),  # parent race
    (1, 0.85, 1.12, True),  # parent's native language
    (1, 0.80, 1.28, False),  # parent's English fluency
    (2, 0.35, 0.64, True),  # family composition
    (3, 0.0, 0.0, False),   # parents' highest education: max(mother, father), see below
    (3, 0.75, 0.4, False),  # mother's education
    (3, 0.75, 0.4, False),  # father's education
    (3, 0.60, 0.4, False),  # grandparents' education
    (3, 0.55, 0.288, True),  # mother's occupation
    (3, 0.55, 0.288, True),  # father's occupation
    (3, 0.65, 0.192, False),  # income
    (4, 0.60, 1.76, True),  # school control
    (4, 0.50, 0.48, True),  # urbanicity
    (4, 0.45, 0.32, True),  # region
    (5, 0.0, 0.88, False),  # year/month of birth
)
_PARED, _MOTHED, _FATHED = 8, 9, 10


def _skewed_marginal(rng: np.random.Generator, n_cat: int, decay: float) -> np.ndarray:
    """Probabilities proportional to exp(-decay * rank), jittered so no two variables are identical."""
    p = np.exp(-decay * np.arange(n_cat)) * rng.uniform(0.7, 1.3, n_cat)
    return p / p.sum()


def make_els_like(n: int = 11204, seed: int = 0) -> np.ndarray:
    """Integer codes (n, 19), int32, no missing values; column j has ``CARDINALITIES[j]`` categories."""
    rng = np.random.default_rng(seed)
    n_blocks = 1 + max(b for b, *_ in _SPEC)
    factors = rng.standard_normal((n, n_blocks))
    out = np.empty((n, len(_SPEC)), dtype=np.int32)
    for j, (block, loading, decay, nominal) in enumerate(_SPEC):
        if j == _PARED:
            continue
        k = CARDINALITIES[j]
        latent = loading * factors[:, block] + np.sqrt(1.0 - loading**2) * rng.standard_normal(n)
        cuts = np.quantile(latent, np.cumsum(_skewed_marginal(rng, k, decay))[:-1])
        codes = np.searchsorted(cuts, latent).astype(np.int32)
        if nominal:
            codes = rng.permutation(k).astype(np.int32)[codes]
        out[:, j] = codes
    out[:, _PARED] = np.maximum(out[:, _MOTHED], out[:, _FATHED])
    return out


def many_levels_frame(records: int, levels: int, seed: int = 11) -> pd.DataFrame:
    """A file with a postcode-like text code of ``levels`` categories (``P000000``...) among ``records``
    records, every code at least once and the other records' codes drawn uniformly, beside ``sex`` (2 codes),
    ``region`` (8), a ``score`` and a weight ``wgt``: the pages and builders on a QI of very many categories
    (``bench_many_levels.py``, and the dashboard's tests of such a file)."""
    if records < levels:
        raise ValueError("records must be at least levels")
    rng = np.random.default_rng(seed)
    codes = np.concatenate([np.arange(levels), rng.integers(0, levels, records - levels)])
    rng.shuffle(codes)
    return pd.DataFrame({"postcode": pd.Series([f"P{c:06d}" for c in codes], dtype=object),
                         "sex": rng.integers(1, 3, records), "region": rng.integers(1, 9, records),
                         "score": np.round(rng.normal(50, 10, records), 1), "wgt": rng.uniform(1, 3, records)})
