"""SPSS missing ranges (``-9 THRU -7``, ``LO THRU -1``) are missing, as discrete user-missing values are.

A range was dropped on reading (only ranges of one value were kept), so its values were counted as categories:
risk, estimates and releases differed from those of the same file declaring the values one by one. A range is
read as the distinct values of the column inside it (:func:`kanon_core.io.spss_missing_codes`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyreadstat
import pytest

from kanon_core.cli import main
from kanon_core.export import write_release
from kanon_core.io import load_dataset, spss_missing_codes

A = [1.0, 1.0, 2.0, 2.0, -9.0, -8.0, -7.0, 3.0, 3.0, -8.0, 2.0, 1.0]
FRAME = pd.DataFrame({"a": A, "b": [1.0, 2.0] * 6, "w": [1.0, 2.0, 1.5, 3.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.5, 1.0, 2.0]})


def _sav(path: Path, ranges: list, frame: pd.DataFrame = FRAME) -> Path:
    pyreadstat.write_sav(frame, str(path), missing_ranges={"a": ranges})
    return path


def _json(capsys, *args: str) -> object:
    """The command's JSON output, without its run time."""
    assert main(list(args)) == 0
    out = json.loads(capsys.readouterr().out)
    if isinstance(out, dict):
        out.pop("seconds", None)
    return out


def test_a_range_declares_the_values_inside_it(tmp_path):
    ds = load_dataset(_sav(tmp_path / "r.sav", [{"lo": -9.0, "hi": -7.0}]))
    assert ds.meta_of("a").missing_codes == (-9, -8, -7)
    assert ds.missing_mask("a").tolist() == [v < 0 for v in A]


def test_range_and_discrete_declarations_give_the_same_risk_and_estimates(tmp_path, capsys):
    ranged = _sav(tmp_path / "r.sav", [{"lo": -9.0, "hi": -7.0}])
    listed = _sav(tmp_path / "d.sav", [-9.0, -8.0, -7.0])
    assert load_dataset(ranged).meta == load_dataset(listed).meta
    for command in (["risk", "--qi", "a,b", "--k", "2"], ["risk", "--qi", "a,b", "--k", "3", "--missing", "category"],
                    ["estimate", "--var", "a", "--weight", "w"]):
        got = [_json(capsys, command[0], str(p), *command[1:]) for p in (ranged, listed)]
        assert got[0] == got[1], command
    risk = _json(capsys, "risk", str(ranged), "--qi", "a,b", "--k", "2")
    # before, -9, -8 and -7 were categories: (-9, 1) and (-7, 1) were unique records
    assert risk["n_violating"] == 0 and risk["k_achieved"] == 3
    levels = [row["level"] for row in _json(capsys, "estimate", str(ranged), "--var", "a", "--weight", "w")]
    assert levels == [1, 2, 3]


def test_a_range_over_floats_declares_the_values_present_in_it(tmp_path):
    frame = FRAME.assign(a=[1.5, 1.5, 2.0, 2.0, -9.25, -8.5, -1.0, 3.0, 3.0, -8.5, -0.5, 1.5])
    ds = load_dataset(_sav(tmp_path / "f.sav", [{"lo": -1e300, "hi": -1.0}], frame))  # LO THRU -1
    assert ds.meta_of("a").missing_codes == (-9.25, -8.5, -1.0)
    assert ds.missing_mask("a").tolist() == [v <= -1 for v in frame["a"]]  # -0.5 is above the range


def test_a_range_and_a_discrete_value_together(tmp_path):
    """SPSS allows one range and one discrete value per variable."""
    frame = FRAME.assign(a=[*A[:-1], 99.0])
    ds = load_dataset(_sav(tmp_path / "m.sav", [{"lo": -9.0, "hi": -8.0}, 99.0], frame))
    assert set(ds.meta_of("a").missing_codes) == {-9, -8, 99}
    assert ds.missing_mask("a").tolist() == [v in (-9.0, -8.0, 99.0) for v in frame["a"]]


def test_values_of_a_range_the_column_does_not_hold_are_not_declared():
    column = pd.Series([1.0, -8.0, float("nan"), -8.0, 4.0])
    assert spss_missing_codes(column, [{"lo": -9.0, "hi": -7.0}]) == [-8.0]
    assert spss_missing_codes(column, [{"lo": -9.0, "hi": -9.0}]) == [-9.0]  # a discrete value is kept as it is
    assert spss_missing_codes(pd.Series(["a", "b"]), [{"lo": 1.0, "hi": 5.0}]) == []


@pytest.mark.parametrize("fmt", [".sav", ".csv"])
def test_a_release_keeps_the_range_values_missing(tmp_path, fmt):
    ds = load_dataset(_sav(tmp_path / "r.sav", [{"lo": -9.0, "hi": -7.0}]))
    write_release(ds, tmp_path / f"out{fmt}")
    back = load_dataset(tmp_path / f"out{fmt}")
    assert back.missing_mask("a").tolist() == ds.missing_mask("a").tolist() == [v < 0 for v in A]
