"""The levels of a categorical covariate or outcome (``formula._level_codes``) against a reference written with
Python sets and dicts: which values are levels (1, 1.0 and True are one, as in Python), how each level is
written (as its first record in the sample shows it), their order (numbers, texts, the suppressed level last)
and each record's level, including records outside the sample and empty cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import _sort_key
from kanon_core.utility.formula import SUPPRESSED_LEVEL, _level_codes, _plain

CELLS = st.one_of(st.integers(-3, 3), st.sampled_from([1.0, 2.5, True, False, "a", "b", "1", SUPPRESSED_LEVEL]),
                  st.none(), st.just(float("nan")))


def _reference(series: pd.Series, sample: np.ndarray) -> tuple[list, np.ndarray]:
    values = series.to_numpy(dtype=object)
    present = sorted({values[i] for i in np.flatnonzero(sample)},
                     key=lambda v: (v == SUPPRESSED_LEVEL, _sort_key(v)))
    index = {level: i for i, level in enumerate(present)}
    return [_plain(v) for v in present], np.array([index.get(x, -1) for x in values], dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(CELLS, st.booleans()), max_size=40), st.booleans())
def test_levels_match_sets_and_dicts(cells, sample_skips_empty):
    values = [v for v, _ in cells]
    sample = np.array([s for _, s in cells], dtype=bool)
    if sample_skips_empty:  # the usual case: the missing mask already took empty cells out of the sample
        sample &= np.array([v is not None and v == v for v in values], dtype=bool)
    series = pd.Series(values, dtype=object)
    levels, codes = _level_codes(series, sample)
    ref_levels, ref_codes = _reference(series, sample)
    assert [(type(v), v) for v in levels if v == v] == [(type(v), v) for v in ref_levels if v == v]
    assert len(levels) == len(ref_levels)
    np.testing.assert_array_equal(codes, ref_codes)
