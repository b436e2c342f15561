"""The dashboard opens a large file out of core: the Data page's summary and the Risk page's figures come
from the engine and equal the in-memory path's on the same file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Roles
from kanon_core.io import load_dataset
from kanon_core.risk.summary import risk_summary
from tests.app.helpers import frame_with, metric, open_page


def test_data_and_risk_pages_on_a_large_parquet_file(tmp_path):
    rng = np.random.default_rng(8)
    n = 5000
    frame = pd.DataFrame({"region": rng.choice(["NA", "north", "south", None], n),
                          "age": rng.integers(18, 30, n), "sex": rng.choice([1, 2], n)})
    path = tmp_path / "census.parquet"
    pq.write_table(__import__("pyarrow").Table.from_pandas(frame, preserve_index=False), path)

    at = open_page("data.py")
    at.text_input(key="w_big_path").set_value(str(path)).run()
    at.button(key="w_big_open").click().run()
    assert not at.exception
    summary = frame_with(at, "distinct")
    assert list(summary["variable"]) == ["region", "age", "sex"]
    assert summary.set_index("variable").loc["region", "missing"] == int(frame["region"].isna().sum())
    at.multiselect(key="w_big_qis").set_value(["region", "age", "sex"]).run()
    assert not at.exception

    at.switch_page("pages/risk.py").run()
    assert not at.exception
    ds = load_dataset(path, roles=Roles(qis=("region", "age", "sex")))
    ref = risk_summary(ds.qi_matrix(), 3, "wildcard")
    assert metric(at, "Records") == f"{n:,}"
    assert metric(at, "Records below k = 3") == f"{ref.n_violating:,}"
    assert metric(at, "k achieved") == str(ref.k_achieved)
    assert any("class table" in i.value for i in at.info)


def _masked_reference(fk, count, table):
    """The Risk page's figures of a class table with one mask per threshold (the definition)."""
    whole = np.floor(fk)
    bins = [(i, i, str(i)) for i in range(1, 11)] + [(11, 20, "11-20"), (21, 50, "21-50"), (51, 100, "51-100")]
    dist = [{"class_size": lab, "records": int(count[(whole >= lo) & (whole <= hi)].sum())} for lo, hi, lab in bins]
    dist.append({"class_size": ">100", "records": int(count[whole > 100].sum())})
    per_qi = []
    for j, name in enumerate(table.qis):
        col = table.codes[:, j]
        obs = col >= 0
        counts = np.bincount(col[obs], weights=count[obs], minlength=len(table.values[j])).astype(np.int64)
        per_qi.append({"variable": name, "distinct": int((counts > 0).sum()), "singletons": int((counts == 1).sum()),
                       "missing": int(count[~obs].sum()),
                       "smallest_category": int(counts[counts > 0].min()) if (counts > 0).any() else 0})
    return dist, per_qi


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 4), st.integers(1, 12), st.floats(0.0, 1.0), st.integers(0, 2**31 - 1))
def test_one_pass_risk_figures_equal_one_mask_per_threshold(n, q, k, alpha, seed):
    """Violations by k, the size distribution and per-variable counts of a class table, computed in one pass
    (kanon_core.engines.risk), equal the masks of their definition, also for fractional sizes (alpha < 1)."""
    from kanon_core.classtable import ClassTable
    from kanon_core.engines.risk import (
        HEADLINE,
        headline_of_table,
        per_qi_of,
        risk_of_table,
        size_distribution_of,
        violations_of,
    )

    rng = np.random.default_rng(seed)
    codes = rng.integers(-1, 3, (n, q))
    table = ClassTable.from_codes(codes, values=[tuple(range(3))] * q)
    table = ClassTable(table.qis, table.codes, table.count * rng.integers(1, 150, table.n_classes), None,
                       table.values, (), {}, None)
    sizes = table.class_sizes("wildcard", alpha, wildcard_split=True)
    fk, count = sizes.fk, table.count
    dist, per_qi = _masked_reference(fk, count, table)
    assert size_distribution_of(fk, count) == dist
    assert per_qi_of(table) == per_qi
    ks = [*range(2, 11), k]
    assert violations_of(fk, count, ks) == {kk: int(count[fk < kk].sum()) for kk in ks}
    given_sizes = risk_of_table(table, k, "wildcard", alpha, sizes=sizes, per_qi=per_qi).payload
    assert given_sizes == risk_of_table(table, k, "wildcard", alpha).payload
    # the Risk page's first figures are those of the summary, by their definitions
    head = headline_of_table(table, k, sizes)
    assert head == {key: given_sizes[key] for key in HEADLINE}
    assert head == {"n_records": int(count.sum()), "n_classes": len(count),
                    "k_achieved": int(np.floor(fk.min())), "n_violating": int(count[fk < k].sum())}
