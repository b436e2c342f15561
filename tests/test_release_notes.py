"""What a release's users must be told (kanon_core.export.release_notes), one sentence each, without data
values: variables renamed for SPSS or Stata, and CSV text cells that a spreadsheet may run as formulas (OWASP's
"CSV injection"). The cells are written as they are (text stays text); the command line prints the notes as
notices, the Export page under its downloads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.export import formula_like_cells, formula_like_in_csv, release_notes
from kanon_core.io import csv_bytes
from tests.stderr_lines import without_progress

FORMULA = "=HYPERLINK(ZQX)"  # a value no message may repeat


def test_formula_like_cells_by_hand():
    frame = pd.DataFrame({
        "t": [FORMULA, "+ZQX", "-ZQX", "@ZQX", "\tZQX", "\rZQX", "plain", None, "-5", "+1.5", "=1"],
        "n": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -11],
        "clean": ["a"] * 11,
    })
    # "-5" and "+1.5" read as numbers (a spreadsheet's too, and harmless); "=1" is a formula
    assert formula_like_cells(frame) == {"t": 7}


def test_notes_per_format_name_variables_and_counts_never_values():
    frame = pd.DataFrame({"marital-status": [1, 2], "city": [FORMULA, "Avon"]})
    csv = release_notes(frame, "csv")
    assert len(csv) == 1 and "1 text cell(s)" in csv[0] and "city (1)" in csv[0] and "ZQX" not in csv[0]
    assert release_notes(frame, "parquet") == ()  # read by programs, which run no formula; every name kept
    assert release_notes(frame, "dta") == ("Variable marital-status is named marital_status in the Stata file.",)
    assert release_notes(frame.assign(city="Avon"), "csv") == ()


def test_the_command_line_prints_them_once_the_release_is_written(tmp_path: Path, capsys):
    src = tmp_path / "d.csv"
    rows = [f"{1 + i % 2},{'=ZQX' if i == 3 else 'town'}{i % 2}" for i in range(20)]
    src.write_text("marital-status,city\n" + "\n".join(rows) + "\n", encoding="utf-8")
    for out, needle in ((tmp_path / "r.csv", "a spreadsheet opening the CSV may run them as formulas"),
                        (tmp_path / "r.dta", "Variable marital-status is named marital_status in the Stata file.")):
        assert main(["suppress", str(src), "--qi", "marital-status", "--k", "2", "-o", str(out)]) == 0
        err = [line for line in without_progress(capsys.readouterr().err) if "notice" in line]
        assert any(needle in line for line in err), err
        assert not any("ZQX" in line for line in err)
        assert out.exists()
    # the CSV keeps the cell as it was
    assert "=ZQX1" in (tmp_path / "r.csv").read_text(encoding="utf-8")


def _formula_file(folder: Path) -> tuple[Path, Path]:
    """A file with formula-like text in a QI generalized to labels that begin with "-" ("-10--1": a formula to a
    spreadsheet) and in a text column no step reads, and numbers written with a sign that are harmless."""
    src = folder / "d.csv"
    notes = [FORMULA, "+ZQX", "-5", "@ZQX", "plain", "-nan", "-5 ", "=1"]
    rows = [f"{-(1 + i % 9)},{1 + i % 2},{notes[i % len(notes)]}" for i in range(40)]
    src.write_text("t,s,note\n" + "\n".join(rows) + "\n", encoding="utf-8")
    hier = folder / "h"
    hier.mkdir()
    (hier / "t.csv").write_text("".join(f"{-v};-10--1;*\n" for v in range(1, 10)), encoding="utf-8")
    (hier / "s.csv").write_text("1;*\n2;*\n", encoding="utf-8")
    return src, hier


def _notes(err: str) -> list[str]:
    return [line for line in without_progress(err) if "formulas" in line]


def test_every_engine_says_the_formula_note_of_its_csv_release(tmp_path: Path, capsys):
    """The engines write a CSV release while streaming the file, so no frame held its cells and nothing was
    said. The note is now counted in the written file (:func:`kanon_core.export.formula_like_in_csv`) and is the
    in-memory one, word for word, for generalize, suppress and apply."""
    src, hier = _formula_file(tmp_path)
    said: dict[tuple[str, str], list[str]] = {}
    for engine in ("pandas", "duckdb", "polars"):
        out = tmp_path / f"g_{engine}.csv"
        assert main(["generalize", str(src), "--qi", "t,s", "--hierarchies", str(hier), "--k", "10",
                     "--max-suppression", "0", "--engine", engine, "-o", str(out)]) == 0
        said["generalize", engine] = _notes(capsys.readouterr().err)
        assert "-10--1" in out.read_text(encoding="utf-8")
        out = tmp_path / f"s_{engine}.csv"
        assert main(["suppress", str(src), "--qi", "t,s", "--k", "3", "--engine", engine, "-o", str(out)]) == 0
        said["suppress", engine] = _notes(capsys.readouterr().err)
    for command in ("generalize", "suppress"):
        assert said[command, "duckdb"] == said[command, "polars"] == said[command, "pandas"], command
        assert len(said[command, "pandas"]) == 1 and "ZQX" not in said[command, "pandas"][0]
    # the generalized labels ("-10--1", 40 cells) are counted with the note column's 25 formula-like cells
    # ("-nan" is not a number to a spreadsheet; "-5" and "-5 " are)
    assert "65 text cell(s)" in said["generalize", "pandas"][0] and "t (40), note (25)" in said["generalize", "pandas"][0]
    assert "25 text cell(s)" in said["suppress", "pandas"][0]


def test_apply_at_scale_says_the_formula_note(tmp_path: Path, capsys):
    from kanon_core.dataset import Roles
    from kanon_core.recipe import Recipe
    from kanon_core.steps import SetRoles
    from kanon_core.treat.hierarchy import load_hierarchies
    from kanon_core.treat.recode import GeneralizeStep

    src, hier = _formula_file(tmp_path)
    hs = load_hierarchies(str(hier), ["t"])
    recipe = tmp_path / "r.json"
    Recipe(steps=(SetRoles(qis=("t", "s")), GeneralizeStep.build({"t": 1}, {"t": hs["t"]})),
           roles=Roles()).save(recipe)
    said = {}
    for engine in ("pandas", "duckdb", "polars"):
        assert main(["apply", str(recipe), str(src), "-o", str(tmp_path / f"a_{engine}.csv"), "--engine", engine]) == 0
        said[engine] = _notes(capsys.readouterr().err)
    assert said["duckdb"] == said["polars"] == said["pandas"] and len(said["pandas"]) == 1


TEXTS = st.one_of(st.none(), st.sampled_from(["=1", "+x", "-5", "-5 ", " -5", "-nan", "-inf", "+.5e2", "@a", "\tq",
                                              "\r5", "-", "a,b", 'say "hi"', "-1,5", "=a\nb", "plain", "-5\xa0"]),
                  st.text(alphabet="=+-@ \t0123456789.eanif,\"x", max_size=5))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=12))
def test_the_written_csv_is_counted_as_the_frame_is(tmp_path_factory, rows):
    """:func:`formula_like_in_csv` on the file the release writer writes from a frame gives the frame's
    :func:`formula_like_cells`: quoted cells, line breaks, signs, spaces, NaN and infinity read alike."""
    frame = pd.DataFrame(rows, columns=["a", "b"], dtype=object)
    frame = frame[[c for c in frame.columns if frame[c].notna().any()]]  # an all-empty column is not text
    assume(len(frame.columns))  # a release has variables
    path = tmp_path_factory.mktemp("csv") / "r.csv"
    path.write_bytes(csv_bytes(frame))
    assert formula_like_in_csv(path) == formula_like_cells(frame)
