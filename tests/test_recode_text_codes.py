"""Text codes stay text through recoding: ``"012"`` and ``"12"`` are two categories for ``kanon recode --merge``,
for hierarchies and their matching, and are never top-coded as numbers; bounds and k must be usable numbers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.dataset import Dataset
from kanon_core.errors import InputError
from kanon_core.io import load_dataset
from kanon_core.steps import step_from_dict
from kanon_core.treat.hierarchy import Hierarchy, masking_hierarchy
from kanon_core.treat.recode import GeneralizeStep, RecodeStep

CODES = ["012", "12", "007", "7", "012"]


def write_codes(tmp_path, codes=CODES, name="codes.csv"):
    """A CSV whose column ``code`` is read as text (leading zeros), with a numeric ``age`` beside it."""
    path = tmp_path / name
    lines = ["code,age"] + [f"{c},{30 + 10 * i}" for i, c in enumerate(codes)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert load_dataset(path).frame["code"].tolist() == list(codes)  # the premise: text, as written
    return path


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kanon recode: error:"), err
    return err[0]


# -- 1. merge matches text codes as written --------------------------------------------------------------------------
def test_cli_merge_of_text_codes_leaves_other_spellings_alone(tmp_path):
    path = write_codes(tmp_path)
    out, step_file = tmp_path / "m.csv", tmp_path / "step.json"
    rc = main(["recode", str(path), "--column", "code", "--merge", "012,007", "-o", str(out), "--step", str(step_file),
               "--json", str(tmp_path / "r.json")])
    assert rc == 0
    released = load_dataset(out).frame["code"].tolist()
    assert released == ["007", "12", "007", "7", "007"]  # "12" and "7" are other categories
    saved = json.loads(step_file.read_text())
    assert saved["merge"] == ["012", "007"]  # the column's own values, as text
    # the saved step replays to the same release
    assert step_from_dict(saved).apply(load_dataset(path)).frame["code"].tolist() == released


def test_cli_saved_merge_holds_the_columns_own_values(tmp_path):
    """Texts of a text column stay texts (the value to merge into too); a numeric column's are numbers."""
    path = write_codes(tmp_path)
    out, step_file = tmp_path / "m.csv", tmp_path / "step.json"
    rc = main(["recode", str(path), "--column", "code", "--merge", "12,7", "--into", "0", "-o", str(out),
               "--step", str(step_file), "--json", str(tmp_path / "r.json")])
    assert rc == 0
    assert load_dataset(out).frame["code"].tolist() == ["012", "0", "007", "0", "012"]
    saved = json.loads(step_file.read_text())
    assert saved["merge"] == ["12", "7"] and saved["into"] == "0"
    rc = main(["recode", str(path), "--column", "age", "--merge", "40,50.0", "-o", str(out), "--step", str(step_file),
               "--json", str(tmp_path / "r.json")])
    assert rc == 0
    assert load_dataset(out).frame["age"].tolist() == [30, 40, 40, 60, 70]
    assert json.loads(step_file.read_text())["merge"] == [40, 50]


def test_core_merge_of_text_matches_text_exactly():
    ds = Dataset(pd.DataFrame({"code": CODES}))
    out = RecodeStep(column="code", merge=("12", "7"), into="x").apply(ds)
    assert out.frame["code"].tolist() == ["012", "x", "007", "x", "012"]
    with pytest.raises(InputError, match="None of the values"):
        RecodeStep(column="code", merge=("0012", "07")).apply(ds)


# -- 2. no top/bottom coding of text codes -----------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--top", "--bottom"])
def test_cli_top_or_bottom_code_of_digit_text_is_refused(tmp_path, capsys, option):
    path = write_codes(tmp_path, ["012", "0099", "5"])
    out, step_file = tmp_path / "t.csv", tmp_path / "step.json"
    rc = main(["recode", str(path), "--column", "code", option, "12", "-o", str(out), "--step", str(step_file)])
    assert rc == 2
    line = one_error_line(capsys)
    assert "'code'" in line and "numeric" in line
    assert not any(v in line for v in ("012", "0099"))
    assert not out.exists() and not step_file.exists()


def test_core_top_code_of_digit_text_is_refused():
    ds = Dataset(pd.DataFrame({"code": ["012", "0099", "5"]}))
    with pytest.raises(InputError, match="'code'"):
        RecodeStep(column="code", top=12).apply(ds)


# -- 3. hierarchies keep text codes apart ----------------------------------------------------------------------
def test_cli_generalize_with_rows_012_and_12_keeps_them_apart(tmp_path):
    path = write_codes(tmp_path, ["012", "012", "12", "12", "007", "007", "7", "7"])
    folder = tmp_path / "hierarchies"
    folder.mkdir()
    (folder / "code.csv").write_text("012;A;*\n12;B;*\n007;A;*\n7;B;*\n", encoding="utf-8")
    out, step_file = tmp_path / "g.csv", tmp_path / "step.json"
    rc = main(["generalize", str(path), "--qi", "code", "--hierarchies", str(folder), "--k", "4", "-o", str(out),
               "--step", str(step_file), "--json", str(tmp_path / "g.json")])
    assert rc == 0
    released = load_dataset(out).frame["code"].tolist()
    assert released == ["A", "A", "B", "B", "A", "A", "B", "B"]
    assert step_from_dict(json.loads(step_file.read_text())).apply(load_dataset(path)).frame["code"].tolist() == released


def test_text_values_match_their_own_rows():
    h = Hierarchy((("012", "A", "*"), ("12", "B", "*"), ("007", "A", "*"), ("7", "B", "*")), "code")
    assert h.match(["7", "012", "12", "007"]).tolist() == [3, 0, 1, 2]
    ds = Dataset(pd.DataFrame({"code": CODES}))
    out = GeneralizeStep.build({"code": 1}, {"code": h}).apply(ds)
    assert out.frame["code"].tolist() == ["A", "B", "A", "B", "A"]


def test_a_text_code_does_not_take_the_row_of_another_text():
    # "012" has no row of its own; the row "12" is the text "12"'s, so "012" is reported as not in the hierarchy
    h = Hierarchy((("12", "1*", "*"), ("7", "7", "*")), "code")
    with pytest.raises(InputError, match=r"^1 value\(s\) of variable 'code' are not in its hierarchy"):
        h.tables(["012", "12", "7"])
    # without "12" in the data the number row still serves the text (a hierarchy built from the numbers)
    assert h.tables(["012", "7"]).labels[1] == ("1*", "7")


def test_numeric_column_matches_numerically_and_refuses_two_rows_of_one_number():
    h = Hierarchy((("5", "low", "*"), ("12", "high", "*")), "n")
    assert h.match([5, 12.0]).tolist() == [0, 1]
    two = Hierarchy((("012", "a", "*"), ("12", "b", "*"), ("5", "a", "*")), "n")
    with pytest.raises(InputError, match=r"^Rows 1 and 2 of hierarchy 'n' have the same original value") as exc:
        two.tables([12, 5])
    assert "012" not in str(exc.value)
    assert two.match([12, 5]).tolist() == [-1, 2]  # no guess between the two rows


def test_masking_builder_keeps_text_codes_apart():
    h = masking_hierarchy(["012", "12", "012"])
    assert h.originals == ("012", "12")
    assert h.match(["12", "012"]).tolist() == [1, 0]


# -- 4. bounds must be finite, k positive ----------------------------------------------------------------------
@pytest.mark.parametrize("bound", [["--top", "nan"], ["--top", "inf"], ["--bottom=-inf"], ["--bottom", "NaN"]])
def test_cli_non_finite_bounds_are_refused(tmp_path, capsys, bound):
    path = write_codes(tmp_path)
    step_file = tmp_path / "step.json"
    rc = main(["recode", str(path), "--column", "age", *bound, "--step", str(step_file)])
    assert rc == 2
    assert "finite" in one_error_line(capsys)
    assert not step_file.exists()


@pytest.mark.parametrize("k", ["0", "-2"])
def test_cli_k_below_1_is_refused(tmp_path, capsys, k):
    path = write_codes(tmp_path)
    js = tmp_path / "r.json"
    rc = main(["recode", str(path), "--column", "age", "--top", "50", "--k", k, "--json", str(js)])
    assert rc == 2
    assert "--k must be at least 1" in one_error_line(capsys)
    assert not js.exists()


def test_recipe_step_with_a_non_finite_bound_is_refused():
    with pytest.raises(InputError, match="finite"):
        step_from_dict({"kind": "recode", "column": "age", "top": float("nan")})
    with pytest.raises(InputError, match="finite"):
        RecodeStep(column="age", bottom=float("-inf"))


@pytest.mark.parametrize("into", ["X", "5", True, float("nan"), float("inf")])
def test_a_number_column_is_merged_only_into_a_finite_number(into):
    """A recipe may say anything: a text, a boolean or a non-finite number among numbers would leave a column
    that is neither numbers nor text (the Recode page refuses the same)."""
    ds = Dataset(pd.DataFrame({"n": [1, 2, 3, 3]}))
    with pytest.raises(InputError, match="'n' holds numbers: the value to merge into must be a finite number"):
        RecodeStep(column="n", merge=(1, 2), into=into).apply(ds)
    merged = RecodeStep(column="n", merge=(1, 2), into=9).apply(ds)
    assert merged.frame["n"].tolist() == [9, 9, 3, 3]
