"""The dashboard opens a large file out of core: the Data page's summary and the Risk page's figures come
from the engine and equal the in-memory path's on the same file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

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
