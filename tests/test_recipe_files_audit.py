"""Recipe and project files written by hand, by another tool or by mistake: each is refused in one line
(``kanon apply`` exits 2, nothing is written) or replayed exactly as written, never half-read or misread.

These complement the field-by-field checks of tests/test_recipe.py and tests/test_project.py with what a
careless or hostile file does at the level of the file itself: duplicated keys, misspelt parts, a recipe
without its steps, versions that do not exist, text that is not Unicode, sizes no recipe has, and the
command's own options.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import kanon_core.recipe as recipe_module
from kanon_core.cli import main
from kanon_core.errors import InputError
from kanon_core.history import History
from kanon_core.io import load_dataset
from kanon_core.project import Project, open_project
from kanon_core.recipe import Recipe
from kanon_core.steps import SetRoles
from kanon_core.treat.recode import RecodeStep
from tests.test_cli_apply import _small


def _wave(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A small survey, a three-step recipe made on it (in the same folder) and the recipe as parsed JSON."""
    data, recipe = _small(tmp_path)
    return data, recipe, json.loads(recipe.read_text(encoding="utf-8"))


def _apply_refused(tmp_path: Path, capsys, text: str | bytes, *extra: str) -> str:
    """Run ``kanon apply`` on a recipe of ``text``: exit 2, one line on stderr, no file written; the line."""
    bad = tmp_path / "bad.recipe.json"
    if isinstance(text, bytes):
        bad.write_bytes(text)
    else:
        bad.write_text(text, encoding="utf-8")
    out = tmp_path / "out.csv"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["apply", str(bad), *extra, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kanon apply: error: ") and err.count("\n") == 1, err
    assert "unexpected" not in err and "SECRET" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    return err


# -- the file as a whole --------------------------------------------------------------------------------------
def test_a_key_written_twice_is_refused_not_read_as_its_last_value(tmp_path, capsys):
    """json keeps the last of two equal keys: a reader of the file may see the first. Neither is guessed."""
    _, _, good = _wave(tmp_path)
    text = json.dumps(good).replace('"k": 3,', '"k": 30, "k": 3,', 1)
    assert text != json.dumps(good)
    with pytest.raises(InputError, match=r"^The recipe file has the key 'k' twice in one object\.$"):
        Recipe.from_json(text)
    _apply_refused(tmp_path, capsys, text)
    twice = json.dumps(good)[:-1] + ', "format": "kanon-recipe"}'
    with pytest.raises(InputError, match="key 'format' twice"):
        Recipe.from_json(twice)


def test_text_that_is_not_unicode_is_refused_when_read(tmp_path, capsys):
    r"""A lone ``\ud800`` escape is valid JSON but no text: it failed only when the report was written."""
    _, _, good = _wave(tmp_path)
    assert '"notes": ""' in json.dumps(good)
    text = json.dumps(good).replace('"notes": ""', '"notes": "a \\ud800 b"')
    with pytest.raises(InputError, match=r"^The recipe file has text that is not valid Unicode"):
        Recipe.from_json(text)
    _apply_refused(tmp_path, capsys, text, "--report", str(tmp_path / "r.html"))
    step = json.dumps(good).replace('"into": 5', '"into": "\\udc80"')
    _apply_refused(tmp_path, capsys, step)
    # a pair of escapes is one character: it stays
    paired = json.dumps(good).replace('"notes": ""', '"notes": "\\ud83d\\ude00"')
    assert Recipe.from_json(paired).notes == "\U0001F600"


def test_utf16_without_a_byte_order_mark_is_named_as_not_utf8(tmp_path, capsys):
    _, _, good = _wave(tmp_path)
    for encoding in ("utf-16-le", "utf-16-be", "utf-32-le"):
        with pytest.raises(InputError, match=r"^The recipe file is not UTF-8 text"):
            Recipe.from_json(json.dumps(good).encode(encoding))
    assert "not UTF-8 text" in _apply_refused(tmp_path, capsys, json.dumps(good).encode("utf-16-le"))


def test_a_byte_order_mark_is_read_and_the_replay_is_the_same(tmp_path, capsys):
    data, recipe, _ = _wave(tmp_path)
    with_bom = tmp_path / "bom.recipe.json"
    with_bom.write_bytes(b"\xef\xbb\xbf" + recipe.read_bytes())
    assert main(["apply", str(recipe), "-o", str(tmp_path / "a.csv")]) == 0
    assert main(["apply", str(with_bom), "-o", str(tmp_path / "b.csv")]) == 0
    assert "(3 matching the recipe's recorded results)" in capsys.readouterr().err
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_a_file_larger_than_any_recipe_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch):
    """The size is checked first (a 1 GB file given by mistake is not read into memory); the limit is
    lowered here so the test needs no large file."""
    data, recipe, good = _wave(tmp_path)
    size = recipe.stat().st_size
    monkeypatch.setattr(recipe_module, "MAX_BYTES", size - 1)
    with pytest.raises(InputError, match=r"^The recipe file is larger than .* MB"):
        Recipe.load(recipe)
    with pytest.raises(InputError, match=r"^The recipe file is larger than"):
        Recipe.from_json(recipe.read_bytes())
    assert "larger than" in _apply_refused(tmp_path, capsys, recipe.read_text(encoding="utf-8"), str(data))
    project = Project.from_history(History.start(load_dataset(data)), data_name="wave1.csv", data_path="wave1.csv")
    saved = project.save(tmp_path / "p.kanon.json")
    monkeypatch.setattr(recipe_module, "MAX_BYTES", saved.stat().st_size - 1)
    with pytest.raises(InputError, match=r"^The project file is larger than"):
        Project.load(saved)
    monkeypatch.setattr(recipe_module, "MAX_BYTES", saved.stat().st_size)
    assert Project.load(saved).data.name == "wave1.csv"


def test_a_recipe_path_that_is_no_regular_file_says_so(tmp_path, capsys):
    _wave(tmp_path)
    assert main(["apply", str(tmp_path), "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err == f"kanon apply: error: The recipe is not a file: {tmp_path.name}\n"
    with pytest.raises(InputError, match=r"^Recipe not found: gone\.json$"):
        Recipe.load(tmp_path / "gone.json")


# -- the parts of a recipe ------------------------------------------------------------------------------------
@pytest.mark.parametrize("change,message", [
    (lambda d: d.update(Steps=d.pop("steps")), r"^The recipe has unknown field\(s\): Steps \(kanon writes extra, format, "),
    (lambda d: d.update(step=d.pop("steps")), r"^The recipe has unknown field\(s\): step \(kanon writes "),
    (lambda d: d["initial"].update(rolse=d["initial"].pop("roles")), r"^The recipe's initial part has unknown"),
    (lambda d: d["initial"]["roles"].update(qi=d["initial"]["roles"].pop("qis")), r"^The recipe's initial roles have unknown field\(s\): qi \("),
    (lambda d: d["input"].update(file="wave1.csv"), r"^The recipe's input part has unknown field\(s\): file \("),
])
def test_a_misspelt_part_is_refused_not_skipped(tmp_path, capsys, change, message):
    """A misspelt "steps" replayed no step and wrote the unprotected data with exit status 0."""
    data, _, good = _wave(tmp_path)
    change(good)
    with pytest.raises(InputError) as exc:
        Recipe.from_json(json.dumps(good))
    assert re.search(message, str(exc.value)), str(exc.value)
    _apply_refused(tmp_path, capsys, json.dumps(good), str(data))


@pytest.mark.parametrize("steps", ["absent", None])
def test_a_recipe_without_its_steps_list_is_refused(tmp_path, capsys, steps):
    data, _, good = _wave(tmp_path)
    if steps == "absent":
        del good["steps"]
    else:
        good["steps"] = steps
    with pytest.raises(InputError, match=r"^The recipe has no 'steps' list"):
        Recipe.from_json(json.dumps(good))
    _apply_refused(tmp_path, capsys, json.dumps(good), str(data))
    good["steps"] = []  # written by kanon for a session without steps: replays nothing, as written
    assert Recipe.from_json(json.dumps(good)).steps == ()


@pytest.mark.parametrize("version", [0, -5])
def test_a_format_version_that_never_existed_is_refused(tmp_path, capsys, version):
    _, _, good = _wave(tmp_path)
    good["format_version"] = version
    with pytest.raises(InputError, match=r"^The recipe's 'format_version' is not one kanon knows"):
        Recipe.from_json(json.dumps(good))
    _apply_refused(tmp_path, capsys, json.dumps(good))
    del good["format_version"]  # absent: read as the current format, as before
    assert len(Recipe.from_json(json.dumps(good)).steps) == 3


def test_negative_counts_and_unusable_paths_in_the_input_part(tmp_path, capsys):
    _, _, good = _wave(tmp_path)
    good["input"]["records"] = -90
    with pytest.raises(InputError, match=r"^The recipe's input part field 'records' should be a whole number of 0"):
        Recipe.from_json(json.dumps(good))
    good["input"]["records"] = 90
    good["input"]["path"] = "wave1\u0000.csv"  # failed as an unexpected ValueError when resolved
    with pytest.raises(InputError, match=r"^The recipe's input part field 'path' is not a usable file name\.$"):
        Recipe.from_json(json.dumps(good))
    _apply_refused(tmp_path, capsys, json.dumps(good))


def test_more_steps_than_any_recipe_has_are_refused_with_the_count():
    step = {"kind": "set_missing", "missing": "wildcard"}
    n = recipe_module.MAX_STEPS + 1
    with pytest.raises(InputError, match=rf"^The recipe has {n:,} steps; kanon replays at most "):
        Recipe.from_json(json.dumps({"format": "kanon-recipe", "steps": [step] * n}))
    at_most = Recipe.from_json(json.dumps({"format": "kanon-recipe", "steps": [step] * 3}))
    assert len(at_most.steps) == 3


# -- the command line -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", ["0", "-1"])
def test_a_k_below_1_for_the_report_is_refused(tmp_path, capsys, k):
    """--k 0 printed '0 records below k=0' and wrote the release."""
    data, recipe, _ = _wave(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["apply", str(recipe), "-o", str(tmp_path / "x.csv"), "--k", k])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --k" in err and "whole number from 1" in err and err.count("\n") == 1
    assert not (tmp_path / "x.csv").exists()


def test_the_output_may_not_be_the_input_and_nothing_is_overwritten(tmp_path, capsys):
    data, recipe, _ = _wave(tmp_path)
    before = hashlib.sha256(data.read_bytes()).hexdigest(), recipe.read_bytes()
    for args in ([str(data)], []):  # the data named, or the one the recipe records
        assert main(["apply", str(recipe), *args, "-o", str(data)]) == 2
        assert capsys.readouterr().err == ("kanon apply: error: --output would write over the input file; "
                                           "choose another file name.\n")
    assert main(["apply", str(recipe), "-o", str(tmp_path / "x.csv"), "--report", str(recipe)]) == 2
    assert "--report would write over the recipe" in capsys.readouterr().err
    assert (hashlib.sha256(data.read_bytes()).hexdigest(), recipe.read_bytes()) == before


# -- project files --------------------------------------------------------------------------------------------
def _project(tmp_path: Path) -> tuple[Path, dict]:
    data, _, _ = _wave(tmp_path)
    h = History.start(load_dataset(data))
    h.apply(SetRoles(qis=("age", "sex", "job")))
    h.apply(RecodeStep("job", merge=(5, 6), into=5))
    project = Project.from_history(h, data_name="wave1.csv", data_path="wave1.csv", settings={"k": 3, "notes": "n"})
    return data, json.loads(project.to_json())


def _project_refused(d: dict, message: str) -> None:
    with pytest.raises(InputError) as exc:
        Project.from_json(json.dumps(d))
    text = str(exc.value)
    assert re.search(message, text), text
    assert "\n" not in text and "SECRET" not in text


@pytest.mark.parametrize("field,value,message", [
    ("path", ["SECRET"], r"data reference field 'path' should be text or null"),
    ("path", 5, r"data reference field 'path' should be text or null"),
    ("path", "a\u0000.csv", r"data reference field 'path' is not a usable file name"),
    ("records", "60", r"data reference field 'records' should be a whole number of 0 or more"),
    ("records", 90.9, r"data reference field 'records' should be a whole number"),
    ("records", True, r"data reference field 'records' should be a whole number"),
    ("records", -1, r"data reference field 'records' should be a whole number of 0 or more"),
    ("fingerprint", 5, r"data reference field 'fingerprint' should be text"),
    ("sample", ["SECRET"], r"data reference field 'sample' should be text or null"),
    ("name", ["SECRET"], r"data reference field 'name' should be a printable name"),
    ("name", "wave\nSECRET.csv", r"data reference field 'name' should be a printable name"),
])
def test_a_data_reference_of_the_wrong_type_is_refused_not_converted(tmp_path, field, value, message):
    """A list as the path failed with an unexpected TypeError; 90.9 records were read as 90, "60" as 60."""
    _, d = _project(tmp_path)
    d["data"][field] = value
    _project_refused(d, "^The project's " + message)


@pytest.mark.parametrize("settings,message", [
    ({"k": "SECRET"}, r"setting 'k' should be a whole number from 1 to 1,000,000"),
    ({"k": -1}, r"setting 'k' should be a whole number from 1"),
    ({"k": 0}, r"setting 'k' should be a whole number from 1"),
    ({"k": 2.5}, r"setting 'k' should be a whole number from 1"),
    ({"k": True}, r"setting 'k' should be a whole number from 1"),
    ({"alpha": 7}, r"setting 'alpha' should be a number from 0 to 1"),
    ({"max_risk": 0}, r"setting 'max_risk' should be a number above 0 and below 1"),
    ({"notes": ["SECRET"]}, r"setting 'notes' should be text"),
    ({"scales": {"age": ["SECRET"]}}, r"setting 'scales' should be a plain value"),
    ([], r"'settings' part has the wrong shape"),
])
def test_settings_the_dashboard_cannot_use_are_refused(tmp_path, settings, message):
    """The dashboard reads k with int(): "SECRET" crashed it, 2.5 became 2 and -1 was used as it was."""
    _, d = _project(tmp_path)
    d["settings"] = settings
    _project_refused(d, "^The project's " + message)


def test_project_parts_misspelt_written_twice_or_of_versions_that_never_existed(tmp_path):
    data, d = _project(tmp_path)
    # a misspelt "versions" was read as a format-1 project: the saved branches were silently dropped
    _project_refused({**{k: v for k, v in d.items() if k != "versions"}, "Versions": d["versions"]},
                     r"^The project has unknown field\(s\): Versions \(kanon writes data, format, .*, versions\)\.$")
    _project_refused(d | {"data": d["data"] | {"fingerprnt": "x"}},
                     r"^The project's data reference has unknown field\(s\): fingerprnt \(")
    _project_refused(d | {"versions": d["versions"] | {"curent": 1}}, r"^The project's version tree has unknown")
    _project_refused(d | {"format_version": 0}, r"^The project's 'format_version' is not one kanon knows")
    _project_refused(d | {"format_version": -1}, r"'format_version' is not one kanon knows")
    _project_refused(d | {"kanon_version": ["SECRET"]}, r"^The project's field 'kanon_version' should be text")
    text = json.dumps(d).replace('"current": 2', '"current": 1, "current": 2')
    assert text != json.dumps(d)
    with pytest.raises(InputError, match=r"^The project file has the key 'current' twice in one object\.$"):
        Project.from_json(text)
    # the untouched file still opens, on its data, with every version checked
    path = tmp_path / "wave1.kanon.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    project, replay = open_project(path)
    assert replay.verified_steps == 2 and project.settings == {"k": 3, "notes": "n"}


def test_a_project_on_data_missing_or_changed_since_is_refused(tmp_path):
    data, d = _project(tmp_path)
    path = tmp_path / "wave1.kanon.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    data.write_text(data.read_text(encoding="utf-8").replace("\n3,23,", "\n3,24,"), encoding="utf-8")
    with pytest.raises(InputError, match=r"^The data differs from the file the project was saved on \(wave1\.csv\)"):
        open_project(path)
    data.unlink()
    with pytest.raises(InputError, match=r"^File not found: wave1\.csv$"):
        open_project(path)
