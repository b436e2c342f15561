"""A coded variable whose hierarchy is written with its value labels: the search matches the codes by their
labels (:meth:`Hierarchy.match`), and every engine's release must then map the codes with the same tables.

The out-of-core engines rebuilt each QI as a bare column without its labels and matched it again: the search
accepted the hierarchy, then the release failed ("2 value(s) of variable 'sex' are not in its hierarchy", exit 2)
where the in-memory engine wrote the file."""

from __future__ import annotations

import json

import pandas as pd

from kanon_core.cli import main


def _labelled_codes(tmp_path):
    """sex coded 1/2/3 (labels Male/Female/Other, 'Other' rare), age 20-29; hierarchies written with the labels."""
    rows = ["sex,age"]
    for i in range(60):
        rows.append(f"{1 + i % 2},{20 + i % 2}")
    rows.append("3,21")
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "d.labels.json").write_text(json.dumps(
        {"sex": {"label": "Sex", "value_labels": {"1": "Male", "2": "Female", "3": "Other"}}}), encoding="utf-8")
    hier = tmp_path / "h"
    hier.mkdir()
    (hier / "sex.csv").write_text("Male;Male;*\nFemale;Not male;*\nOther;Not male;*\n", encoding="utf-8")
    (hier / "age.csv").write_text("20;20-21;*\n21;20-21;*\n", encoding="utf-8")
    return data, hier


def test_every_engine_writes_the_release_of_codes_matched_by_their_labels(tmp_path):
    data, hier = _labelled_codes(tmp_path)
    written, levels = {}, {}
    for engine in ("pandas", "duckdb", "polars"):
        out, report = tmp_path / f"{engine}.csv", tmp_path / f"{engine}.json"
        rc = main(["generalize", str(data), "--qi", "sex,age", "--hierarchies", str(hier), "--k", "3",
                   "--max-suppression", "0", "--engine", engine, "-o", str(out), "--json", str(report)])
        assert rc == 0, engine
        levels[engine] = json.loads(report.read_text(encoding="utf-8"))["levels"]
        written[engine] = out.read_bytes()
    assert levels["pandas"] == levels["duckdb"] == levels["polars"] == {"sex": 1, "age": 0}
    assert written["duckdb"] == written["pandas"] == written["polars"]
    released = pd.read_csv(tmp_path / "pandas.csv", dtype=str, keep_default_na=False)
    assert set(released["sex"]) == {"Male", "Not male"}
    assert len(released) == 61
