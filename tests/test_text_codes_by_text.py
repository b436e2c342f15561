"""Codes compared with their column's type outside the recode step itself: in a text column "012" and "12"
(or "1" and "1.0") are two values, in a number column 12 and 12.0 are one.

Covers the recipe's pre-step check, the replay at scale's refusal of order-dependent merges, information
loss, and the hierarchy table the Recode page shows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kanon_app.hierarchy_ui import hierarchy_table
from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles, VariableMeta
from kanon_core.errors import InputError
from kanon_core.io import load_dataset
from kanon_core.recipe import Recipe, _absent_categories, check_step
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.recode import GeneralizeStep, RecodeStep
from kanon_core.utility.info_loss import information_loss
from tests.stderr_lines import without_progress


def _text(values: list[str], labels: dict | None = None) -> Dataset:
    """One text column "code" (read as written: "012" stays "012"), a quasi-identifier."""
    meta = {"code": VariableMeta(value_labels=labels)} if labels else {}
    return Dataset(pd.DataFrame({"code": pd.Series(values, dtype="str")}), meta=meta, roles=Roles(qis=("code",)))


def _numbers(values: list, dtype: str = "int64", labels: dict | None = None) -> Dataset:
    meta = {"code": VariableMeta(value_labels=labels)} if labels else {}
    return Dataset(pd.DataFrame({"code": pd.Series(values, dtype=dtype)}), meta=meta, roles=Roles(qis=("code",)))


# -- the recipe's check before a recode ------------------------------------------------------------------
def test_check_step_finds_no_text_code_that_only_shares_a_number():
    """"0013" and "013" are not cells of a text column holding "13": the recode would merge nothing, and the
    check says so as the step itself does (before, both read as 13 and passed)."""
    ds = _text(["12", "13", "14"])
    step = RecodeStep("code", merge=("0013", "013"))
    with pytest.raises(InputError, match="None of the values to merge occur"):
        step.apply(ds)
    assert check_step(step, ds) == (["none of the 2 categories to merge occur in code."], [])


def test_check_step_warns_of_the_text_code_that_is_absent():
    """A text column holding "012": the code "12" is absent, though it has the value of "012"."""
    ds = _text(["012", "13", "14"])
    problems, warnings = check_step(RecodeStep("code", merge=("12", "13")), ds)
    assert problems == []
    assert warnings == ["1 of the 2 categories to merge does not occur in code; the others are merged."]
    assert _absent_categories(ds, "code", ("12", "13")) == ["12"]
    problems, warnings = check_step(RecodeStep("code", merge=("1.0", "13")), _text(["1", "13"]))
    assert problems == [] and len(warnings) == 1


def test_check_step_accepts_what_the_recode_matches():
    """Codes written as the cells are found; a number in a text column still finds the codes of its value, as
    the recode matches it; in a number column 12.0 (or "12.0") is the cell 12."""
    assert check_step(RecodeStep("code", merge=("012", "12")), _text(["012", "12", "13"])) == ([], [])
    assert check_step(RecodeStep("code", merge=(12, 13)), _text(["012", "13"])) == ([], [])
    for merge in ((12.0, 13), ("12.0", "13"), ("12", 13.0)):
        assert check_step(RecodeStep("code", merge=merge), _numbers([12, 13, 14])) == ([], [])
        assert check_step(RecodeStep("code", merge=merge), _numbers([12.0, 13.0], "float64")) == ([], [])


# -- information loss ------------------------------------------------------------------------------------
def test_an_untreated_text_column_loses_nothing():
    """"012" and "12" released as they were each stand for themselves: LM 0, Prec 1 (before: both counted
    as one value released for two, LM 0.5 and Prec undefined)."""
    ds = _text(["012", "12", "13", "13"])
    res = information_loss(ds, ds, ["code"]).table.iloc[0]
    assert res["loss_metric"] == 0.0 and res["prec"] == 1.0


def test_merging_two_text_codes_costs_one_of_three_values():
    """Three original values: "12" stands for two of them after the merge, (2 - 1) / (3 - 1) for its two
    records, 0 for the two records of "13"."""
    ds = _text(["012", "12", "13", "13"])
    merged = RecodeStep("code", merge=("012", "12"), into="12").apply(ds)
    res = information_loss(ds, merged, ["code"]).table.iloc[0]
    assert res["loss_metric"] == pytest.approx(2 * 0.5 / 4)


def test_text_codes_find_their_own_hierarchy_rows():
    """"012" sits under "A", "12" and "13" under "B": every cell at level 1 of 2 (Prec 0.5), "A" standing for
    one value (LM 0), "B" for two of three ((2 - 1) / (3 - 1) for its three records)."""
    ds = _text(["012", "12", "13", "13"])
    h = Hierarchy((("012", "A", "*"), ("12", "B", "*"), ("13", "B", "*")), "code")
    out = GeneralizeStep.build({"code": 1}, {"code": h}).apply(ds)
    res = information_loss(ds, out, ["code"], {"code": h}).table.iloc[0]
    assert res["prec"] == pytest.approx(0.5)
    assert res["loss_metric"] == pytest.approx(3 * 0.5 / 4)


def test_numbers_compare_by_value_in_information_loss():
    """12 and 12.0 are one value: an integer column released as floats loses nothing; a hierarchy written
    with "12.0" is the row of 12, and labels read back as numbers are the hierarchy's labels."""
    ds = _numbers([12, 12, 13, 20])
    as_floats = ds.with_frame(ds.frame.astype({"code": "float64"}))
    res = information_loss(ds, as_floats, ["code"]).table.iloc[0]
    assert res["loss_metric"] == 0.0 and res["prec"] == 1.0
    h = Hierarchy((("12.0", "10", "*"), ("13", "10", "*"), ("20", "20", "*")), "code")
    read_back = ds.with_frame(pd.DataFrame({"code": pd.Series([10, 10, 10, 20], dtype="int64")}))
    res = information_loss(ds, read_back, ["code"], {"code": h}).table.iloc[0]
    assert res["prec"] == pytest.approx(1 - 3 * 0.5 / 4)  # 20 released as itself: level 0
    assert res["loss_metric"] == pytest.approx(3 * 0.5 / 4)


# -- the hierarchy table of the Recode page ----------------------------------------------------------------
def test_hierarchy_table_labels_each_text_code_with_its_own_label():
    ds = _text(["012", "12", "13"], labels={"012": "A", "12": "B"})
    h = Hierarchy((("012", "x", "*"), ("12", "x", "*"), ("13", "y", "*")), "code")
    assert hierarchy_table(h, ds, "code")["label"].tolist() == ["A", "B", "13"]
    assert hierarchy_table(h, _text(["012", "12", "13"]), "code")["label"].tolist() == ["012", "12", "13"]


def test_hierarchy_table_labels_numbers_by_value():
    h = Hierarchy((("12", "x", "*"), ("13.0", "x", "*")), "code")
    for ds in (_numbers([12, 13], labels={12: "twelve"}), _numbers([12.0, 13.0], "float64", labels={12: "twelve"})):
        assert hierarchy_table(h, ds, "code")["label"].tolist() == ["twelve", "13"]


# -- a merge replayed at scale -----------------------------------------------------------------------------
ENGINES = ("duckdb", "polars")


def _apply(folder: Path, recipe: Recipe, data: Path, out: Path, engine: str) -> tuple[int, dict | None]:
    rpath = folder / "recipe.json"
    recipe.save(rpath)
    js = out.with_suffix(".json")
    code = main(["apply", str(rpath), str(data), "-o", str(out), "--engine", engine, "--json", str(js)])
    return code, json.loads(js.read_text()) if code == 0 else None


def _write(folder: Path, codes: list[str]) -> Path:
    data = folder / "d.csv"
    data.write_text("code,sex\n" + "".join(f"{c},{i % 2}\n" for i, c in enumerate(codes)), encoding="utf-8")
    return data


@pytest.mark.parametrize("engine", ENGINES)
def test_merging_a_text_code_at_scale_equals_in_memory(tmp_path, engine):
    """Merging "012" and "13" in a column also holding "12": each text names one category, so the merged
    value does not depend on the order of the records, and the engine's release is the in-memory one
    (before, "12" was taken for a second way of writing "012" and the recipe was refused)."""
    data = _write(tmp_path, ["12", "012", "13", "12", "14", "012", "13", "14"])
    recipe = Recipe(steps=(RecodeStep("code", merge=("012", "13")),), roles=Roles(qis=("code", "sex")))
    assert _apply(tmp_path, recipe, data, tmp_path / "ref.csv", "pandas")[0] == 0
    code, got = _apply(tmp_path, recipe, data, tmp_path / "got.csv", engine)
    assert code == 0 and got is not None
    assert (tmp_path / "ref.csv").read_bytes() == (tmp_path / "got.csv").read_bytes()
    # "13" joins "012" (the smaller code, as the recode takes it); "12" stays a category of its own
    assert load_dataset(tmp_path / "got.csv").frame["code"].tolist() == [
        "12", "012", "012", "12", "14", "012", "012", "14"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_number_matching_two_text_codes_is_still_refused_at_scale(tmp_path, capsys, engine):
    """The number 12 finds both "012" and "12": which one the merged value keeps depends on the record order."""
    data = _write(tmp_path, ["12", "012", "13", "14"])
    recipe = Recipe(steps=(RecodeStep("code", merge=(12, 13)),), roles=Roles(qis=("code", "sex")))
    capsys.readouterr()
    code, _ = _apply(tmp_path, recipe, data, tmp_path / "got.csv", engine)
    assert code == 2
    err = without_progress(capsys.readouterr().err)
    assert [line for line in err if "error" in line] == err[-1:]
    assert err[-1].startswith("kanon apply: error: ") and "written in more than one way in code" in err[-1]


@pytest.mark.parametrize("engine", ENGINES)
def test_merging_numbers_by_value_at_scale_equals_in_memory(tmp_path, engine):
    """A number column: the recipe's "12.0" is the value 12."""
    data = _write(tmp_path, ["12", "13", "14", "12", "13", "20"])
    recipe = Recipe(steps=(RecodeStep("code", merge=("12.0", 13)),), roles=Roles(qis=("code", "sex")))
    assert _apply(tmp_path, recipe, data, tmp_path / "ref.csv", "pandas")[0] == 0
    code, _ = _apply(tmp_path, recipe, data, tmp_path / "got.csv", engine)
    assert code == 0
    assert (tmp_path / "ref.csv").read_bytes() == (tmp_path / "got.csv").read_bytes()
    assert load_dataset(tmp_path / "got.csv").frame["code"].tolist() == [12, 12, 14, 12, 12, 20]
