"""Every release is read back before it is written: each released variable must have the missing cells and
the grouping of records of the version whose risk was measured (kanon_core.release_check). These tests give
the check faults a writer could have and see it stop them, and see it pass real releases in every format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kanon_core import export
from kanon_core.dataset import Dataset, Roles
from kanon_core.export import ExportOptions, export_bytes, release_files
from kanon_core.io import load_dataset
from kanon_core.recipe import Recipe
from kanon_core.release_check import ReleaseCheckError, differences, read_back
from tests.release_faults import blank_first_cell_of

ROOT = Path(__file__).resolve().parent.parent
FORMATS = (".csv", ".parquet", ".dta", ".sav")


@pytest.fixture(scope="module")
def demo():
    recipe_path = ROOT / "sample_data" / "demo.recipe.json"
    recipe = Recipe.load(recipe_path)
    history = recipe.replay(load_dataset(recipe.resolve_input(recipe_path)))
    return history.original.dataset, history.current.dataset


@pytest.mark.parametrize(("ext", "csv_code"), [(ext, False) for ext in FORMATS] + [(".csv", True)])
def test_the_demo_release_reads_back_as_checked_in_every_format(demo, ext, csv_code, tmp_path):
    original, treated = demo
    files = release_files(treated, tmp_path / f"r{ext}", original, ExportOptions(csv_code=csv_code))
    back = read_back(files)
    assert differences(treated, back, list(treated.release_frame().columns)) == []
    assert back.missing_mask(treated.roles.qis[0]).sum() == treated.missing_mask(treated.roles.qis[0]).sum()


def _survey(values: list) -> Dataset:
    return Dataset(pd.DataFrame({"a": pd.Series(values, dtype=object), "b": np.arange(len(values)) % 2}),
                   roles=Roles(qis=("a", "b")))


def test_an_empty_category_that_would_read_back_missing_is_stopped(tmp_path):
    """A category "" (what an empty generalized label made) is written as an empty cell: missing when read."""
    ds = _survey(["x", "", "x", "", "y"])
    with pytest.raises(ReleaseCheckError) as err:
        release_files(ds, tmp_path / "r.csv")
    message = str(err.value)
    assert "2 cell(s) of 'a'" in message and "'x'" not in message and "\n" not in message
    with pytest.raises(ReleaseCheckError):
        export_bytes(ds, "csv")


def test_two_values_written_alike_are_stopped(tmp_path):
    """The number 1 and the text "1" are two categories in memory and one in a CSV file."""
    with pytest.raises(ReleaseCheckError, match="group the records differently"):
        release_files(_survey([1, "1", 1, "1", "z"]), tmp_path / "r.csv")


def test_a_writer_that_drops_a_value_is_stopped(monkeypatch, tmp_path, demo):
    """The check uses none of the writers' code: a CSV writer that blanks one cell is caught."""
    original, treated = demo
    blank_first_cell_of(monkeypatch, treated.roles.qis[0])
    with pytest.raises(ReleaseCheckError, match="1 cell"):
        release_files(treated, tmp_path / "r.csv", original)


def test_the_cli_writes_nothing_when_the_check_fails(monkeypatch, tmp_path, capsys):
    """kanon apply with a writer that blanks a cell: exit 2, one line naming the variable, no file."""
    from kanon_core.cli import main

    recipe = ROOT / "sample_data" / "demo.recipe.json"
    real = export.csv_bytes

    def blanking(frame, *args, **kwargs):
        frame = frame.copy()
        frame.iloc[0, 0] = None
        return real(frame, *args, **kwargs)

    monkeypatch.setattr(export, "csv_bytes", blanking)
    out = tmp_path / "out.csv"
    assert main(["apply", str(recipe), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line for line in err if "error" in line] == err[-1:] and "would not read back" in err[-1]
    assert not out.exists() and not (tmp_path / "out.labels.json").exists()
