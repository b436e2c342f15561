"""A generalized label is never empty: a release writes an empty label as an empty cell, which every reader
(kanon's included) reads as missing, so the records the risk counted as one group would be released as
blanks, and counted as wildcards by an intruder. Such a hierarchy is refused wherever it comes from (a recipe,
a project, the API); the masking builder names a value with nothing to mask ``*``."""

from __future__ import annotations

import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.io import load_dataset
from kanon_core.treat.hierarchy import TOP, Hierarchy, hierarchy_from_json, masking_hierarchy
from kanon_core.treat.recode import GeneralizeStep


@pytest.mark.parametrize("rows", [
    (("x", "", "*"), ("y", "", "*"), ("z", "g", "*")),
    (("x", "a", ""), ("y", "a", "")),  # the root
    (("x", "  ", "*"), ("y", "g", "*")),  # only spaces: the ARX reader refuses it, other readers trim it
])
def test_an_empty_generalized_label_is_refused(rows):
    with pytest.raises(InputError, match="empty label") as err:
        Hierarchy(rows, "region")
    assert "'x'" not in str(err.value) and "'y'" not in str(err.value)  # names the row, quotes no value
    with pytest.raises(InputError, match="empty label"):
        hierarchy_from_json([list(r) for r in rows], "region")


def test_an_empty_original_stays_allowed():
    """Level 0 holds the data's texts: a value of only spaces has the row text "" (rows match stripped)."""
    h = Hierarchy((("", "blank", TOP), ("x", "x", TOP)), "a")
    assert h.rows[0][0] == ""


def test_a_recipe_step_with_an_empty_label_does_not_replay(tmp_path, capsys):
    frame = pd.DataFrame({"a": ["x", "y", "x", "z"], "b": [1, 2, 1, 2]})
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    from kanon_core.recipe import Recipe

    step = GeneralizeStep(levels={"a": 1}, hierarchies={"a": (("x", "", "*"), ("y", "", "*"), ("z", "g", "*"))})
    recipe = tmp_path / "r.json"
    Recipe(steps=(step,), roles=Roles(qis=("a", "b"))).save(recipe)
    out = tmp_path / "out.csv"
    assert main(["apply", str(recipe), str(data), "-o", str(out)]) == 2
    assert "empty label" in capsys.readouterr().err and not out.exists()


def test_masking_names_a_value_with_nothing_to_mask_by_the_root(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b\nab,1\n  ,2\nab,1\ncd,2\n")
    ds = load_dataset(csv)
    assert ds.frame["a"].tolist() == ["ab", "  ", "ab", "cd"] and not ds.missing_mask("a").any()
    h = masking_hierarchy(ds.frame["a"], name="a")
    blank = next(r for r in h.rows if r[0] == "")
    assert set(blank[1:]) == {TOP}
    assert all(label != "" for r in h.rows for label in r[1:])
    # and a generalization with it releases no empty cell for the blank value
    step = GeneralizeStep.build({"a": 1}, {"a": h})
    released = step.apply(Dataset(ds.frame, roles=Roles(qis=("a", "b"))))
    assert "" not in released.frame["a"].tolist()


def test_truncation_with_an_empty_mask_never_empties_a_value():
    h = masking_hierarchy(["02138", "9", "021"], mask_char="", name="zip")
    assert all(label != "" for r in h.rows for label in r[1:])
    assert dict((r[0], r[1]) for r in h.rows)["9"] == TOP


def test_grouping_names_a_blank_category_that_stays_alone():
    """A frequent value of only spaces is not merged at the first levels: it is named ``(blank)`` there (or
    ``(blank) (2)`` when a category is called ``(blank)``), never released as an empty cell."""
    from kanon_core.treat.default_hierarchy import default_hierarchy

    values = ["  "] * 50 + ["x", "y"] + ["z"] * 30 + ["w"] * 5 + ["v"] * 3 + ["(blank)"] * 4
    ds = Dataset(pd.DataFrame({"a": pd.Series(values, dtype=object), "b": range(len(values))}),
                 roles=Roles(qis=("a",)))
    h = default_hierarchy(ds, "a")
    blank = next(r for r in h.rows if r[0] == "")
    assert blank[1] == "(blank) (2)" and all(label != "" for r in h.rows for label in r[1:])


@pytest.mark.parametrize("kwargs", [dict(merge=("x", "y"), into=""), dict(top=5, top_value=""),
                                    dict(bottom=1, bottom_value="")])
def test_a_recode_into_an_empty_value_is_refused(kwargs):
    from kanon_core.treat.recode import RecodeStep

    with pytest.raises(InputError, match="empty value"):
        RecodeStep("a", **kwargs)


def test_a_recode_into_spaces_stays_a_category_in_the_release(tmp_path):
    """A category of only spaces is text: the release quotes it, and it reads back as the same text."""
    from kanon_core.export import ExportOptions, release_files
    from kanon_core.treat.recode import RecodeStep

    ds = Dataset(pd.DataFrame({"a": pd.Series(["x", "y", "x", "z"], dtype=object), "b": [1, 2, 1, 2]}),
                 roles=Roles(qis=("a", "b")))
    out = RecodeStep("a", merge=("x", "y"), into="  ").apply(ds)
    path = tmp_path / "r.csv"
    [(written, data)] = release_files(out, path, ds, ExportOptions(), sidecar=False)
    written.write_bytes(data)
    back = load_dataset(path)
    assert back.frame["a"].tolist() == ["  ", "  ", "  ", "z"] and not back.missing_mask("a").any()
