"""Whole-number codes beyond 2^53 (identifiers, long area codes) keep their own rows in every hierarchy.

A double holds every whole number up to 2^53; beyond it, 2^53 + 1 and 2^53 share one. The hierarchy builders
made a code's row text through a float, so the row of 2^53 + 1 read "9007199254740992": the code then matched
no row, or, beside a record coded 2^53, shared its row. Builders that keep codes as texts (masking, grouping,
the automatic frequency grouping) now write their digits; builders that compute in doubles (intervals,
quantiles, capacity bins, top and bottom codes) refuse such codes by count, naming no value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.exact_numbers import count_beyond_double
from kanon_core.treat import hierarchy as h
from kanon_core.treat.default_hierarchy import default_hierarchy

BIG = 2**53
CODES = [BIG + 1, BIG, BIG + 2, -(BIG + 3), 5]


def _originals(hier: h.Hierarchy) -> list[str]:
    return [row[0] for row in hier.rows]


@pytest.mark.parametrize("values", [CODES, pd.Series(CODES, dtype="int64"), pd.Series(CODES, dtype=object),
                                    np.array(CODES, dtype=np.int64)], ids=["list", "int64", "object", "array"])
def test_masking_and_grouping_keep_the_digits_of_each_code(values):
    want = sorted(str(c) for c in CODES)
    assert sorted(_originals(h.masking_hierarchy(values))) == want
    grouped = h.grouping_hierarchy(values, [{BIG + 1: "long", BIG + 2: "long"}])
    assert sorted(_originals(grouped)) == want
    # the mapping reaches 2^53 + 1 and 2^53 + 2, not their float neighbour 2^53
    level1 = {row[0]: row[1] for row in grouped.rows}
    assert level1[str(BIG + 1)] == level1[str(BIG + 2)] == "long" and level1[str(BIG)] == str(BIG)


@pytest.mark.parametrize("build", [
    lambda v: h.interval_hierarchy(v, [10]),
    lambda v: h.cut_hierarchy(v, [[6]]),
    lambda v: h.quantile_hierarchy(v, [2]),
    lambda v: h.greedy_binning_hierarchy(v, [2]),
    lambda v: h.top_bottom_hierarchy(v, top=6),
], ids=["interval", "cut", "quantile", "capacity bins", "top code"])
def test_builders_in_doubles_refuse_codes_beyond_2_53_by_count(build):
    with pytest.raises(InputError) as err:
        build(pd.Series(CODES, dtype="int64"))
    text = str(err.value)
    assert "3 whole number(s) beyond 2^53" in text
    assert not any(str(abs(c))[:6] in text for c in CODES[:4])  # no value named
    build(pd.Series([BIG, -BIG, 5, 7], dtype="int64"))  # 2^53 itself is exact: accepted


def test_the_automatic_hierarchy_of_long_codes_generalizes_each_record_by_its_own_row():
    codes = [BIG + 1] * 3 + [BIG] * 2 + [BIG + 2] * 4 + [7] * 5 + [9] * 6
    ds = Dataset(frame=pd.DataFrame({"id": pd.Series(codes, dtype="int64")}), roles=Roles(qis=("id",)))
    hier = default_hierarchy(ds, "id", scale="ordinal")  # ordinal asked: the codes are still grouped as texts
    assert sorted(_originals(hier)) == sorted({str(c) for c in codes})
    qm = ds.qi_matrix(["id"])
    tables = hier.tables(qm.values[0])
    # level 0 keeps every code apart: five records' codes are not merged with their float neighbours
    level0 = [tables.labels[0][g] for g in tables.table[0][qm.codes[:, 0]]]
    assert level0 == [str(c) for c in codes]


def test_count_beyond_double_counts_every_kind_of_column():
    assert count_beyond_double(pd.Series([BIG + 1, -(BIG + 1), BIG, None], dtype="Int64")) == 2
    assert count_beyond_double(pd.Series([2**64 - 1, 1], dtype="uint64")) == 1
    assert count_beyond_double(pd.Series([2**70, "x", np.int64(BIG + 5), True, 1.5e300], dtype=object)) == 2
    assert count_beyond_double(pd.Series([1e300, -1e300])) == 0  # decimals are doubles already
