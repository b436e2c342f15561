"""Options that name variables select a column whose header name has surrounding spaces (``sex ``).

Every option matches a name the same way (:func:`kanon_core.cli.common.match_names`): the exact name first,
then the one column equal to it once surrounding spaces are ignored; two such columns are refused. ``--qi``
stripped every name, so ``sex `` could not be a quasi-identifier, while ``--weight "sex "`` worked, and
``kanon roles`` suggested ``--qi sex ,age``, which then failed.
"""

from __future__ import annotations

import argparse
import json
import shlex

import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.cli.common import match_names
from kanon_core.errors import InputError
from tests.stderr_lines import one_line_refusal

ROWS = [(1, 20, 1.0, "x"), (2, 30, 1.5, "y"), (1, 20, 2.0, "x"), (1, 30, 1.0, "y"), (2, 20, 1.0, "x"),
        (2, 30, 2.5, "x")]


@pytest.fixture
def spaced(tmp_path):
    """A CSV whose header writes ``sex `` and `` w`` with spaces (as exported by many tools)."""
    path = tmp_path / "spaced.csv"
    lines = ["sex ,age, w,s"] + [f"{a},{b},{c},{d}" for a, b, c, d in ROWS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def refused(capsys, argv: list[str], *needles: str) -> str:
    """:func:`tests.stderr_lines.one_line_refusal`."""
    return one_line_refusal(argv, capsys, *needles)


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
@pytest.mark.parametrize("qi", ["sex ,age", "sex,age", "sex , age"])
def test_a_name_with_a_trailing_space_is_a_quasi_identifier(spaced, capsys, engine, qi):
    out = run_json(capsys, ["risk", str(spaced), "--qi", qi, "--k", "2", "--engine", engine])
    assert out["qis"] == ["sex ", "age"]
    assert out["n_records"] == 6 and out["n_violating"] == 2  # (2, 20) and (1, 30) are unique


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_every_option_naming_variables_matches_the_same_way(spaced, tmp_path, capsys, engine):
    out = run_json(capsys, ["risk", str(spaced), "--qi", "sex", "--weight", "w", "--k", "2", "--engine", engine,
                            "--missing-codes", "age=30", "--sensitive", "age "])
    assert out["qis"] == ["sex "] and out["n_records"] == 6
    summary = tmp_path / "s.json"
    assert main(["suppress", str(spaced), "--qi", "sex,age", "--k", "2", "--importance", "sex=2", "--protect", " age",
                 "--weight", " w", "--engine", engine, "-o", str(tmp_path / "rel.csv"), "--json", str(summary)]) == 0
    payload = json.loads(summary.read_text())
    assert payload["protected"] == ["age"]
    release = pd.read_csv(tmp_path / "rel.csv", dtype=str, keep_default_na=False)
    assert list(release.columns) == ["sex ", "age", " w", "s"]
    assert (release["age"] == [str(r[1]) for r in ROWS]).all()  # protected: never suppressed
    est = run_json(capsys, ["estimate", str(spaced), "--var", "sex", "--weight", "w", "--engine", engine])
    assert sorted(row["level"] for row in est) == [1, 2]


def test_recode_and_roles_options_match_too(spaced, tmp_path, capsys):
    out = run_json(capsys, ["recode", str(spaced), "--column", "sex", "--merge", "1,2", "--into", "1",
                            "--qi", "sex,age"])
    assert out["step"]["column"] == "sex " and out["qis"] == ["sex ", "age"]
    assert main(["roles", str(spaced), "--missing-codes", "sex=2", "-o", str(tmp_path / "roles.json")]) == 0
    roles = {s["variable"]: s for s in json.loads((tmp_path / "roles.json").read_text())["variables"]}
    assert roles["sex "]["missing"] == 3


def test_the_command_roles_suggests_works_when_pasted_into_a_shell(spaced, capsys):
    capsys.readouterr()
    assert main(["roles", str(spaced)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    suggested = last.split("Suggested: ", 1)[1].split(";")[0]
    assert "--qi 'sex ," in suggested  # quoted: the space is part of the name
    options = shlex.split(suggested)
    out = run_json(capsys, ["risk", str(spaced), *options, "--k", "2"])
    assert "sex " in out["qis"]


def test_names_that_match_one_column_twice_are_refused(spaced, capsys):
    refused(capsys, ["risk", str(spaced), "--qi", "sex, sex ,age"], "--qi lists sex twice")
    refused(capsys, ["risk", str(spaced), "--qi", "sex,age", "--missing-codes", "age=20, age =30"],
            "--missing-codes gives 'age' twice")
    refused(capsys, ["risk", str(spaced), "--qi", "sex, w", "--weight", "w "],
            "The weight cannot also be a quasi-identifier")


def test_an_unknown_name_is_still_refused_by_its_name(spaced, capsys):
    line = refused(capsys, ["risk", str(spaced), "--qi", "sex,agee "], "agee")
    assert "Unknown variable" in line


def test_two_columns_equal_but_for_spaces_are_ambiguous_unless_named_exactly():
    # kanon's readers refuse such headers (CSV and Parquet); the rule still never guesses between them
    columns = [" a", "a ", "b", "c"]
    with pytest.raises(InputError, match="--qi names 'a', which matches the variables ' a', 'a ' once surrounding "
                                         "spaces are ignored; give the name exactly as the file writes it"):
        match_names(argparse.Namespace(qi="a,b"), columns)
    with pytest.raises(InputError, match="--weight names 'a'"):
        match_names(argparse.Namespace(qi="b", weight="a  "), columns)
    for given, expected in (("a ,b", ("a ", "b")), (" a,b", (" a", "b")), ("b , c", ("b", "c"))):
        args = argparse.Namespace(qi=given)
        match_names(args, columns)
        assert args.qi == expected
    # the name as written, then without its spaces, before any looser match
    args = argparse.Namespace(qi="b, a")
    match_names(args, ["a", "a ", "b"])
    assert args.qi == ("b", "a")


def test_match_names_is_idempotent_and_leaves_malformed_options_to_their_parsers():
    args = argparse.Namespace(qi="sex, age", weight=" w", missing_codes="sex=1|2", importance="age", link=["x"],
                              protect=None, sensitive=[])
    columns = ["sex ", "age", "w"]
    match_names(args, columns)
    assert args.qi == ("sex ", "age") and args.weight == "w" and args.missing_codes == {"sex ": ("1", "2")}
    assert args.importance == "age" and args.link == ["x"]  # refused later by parse_importance / parse_links
    before = vars(args).copy()
    match_names(args, columns)
    assert vars(args) == before
    with pytest.raises(InputError, match="twice"):
        match_names(argparse.Namespace(qi="age, age"), columns)
