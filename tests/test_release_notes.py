"""What a release's users must be told (kanon_core.export.release_notes), one sentence each, without data
values: variables renamed for SPSS or Stata, and CSV text cells that a spreadsheet may run as formulas (OWASP's
"CSV injection"). The cells are written as they are (text stays text); the command line prints the notes as
notices, the Export page under its downloads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kanon_core.cli import main
from kanon_core.export import formula_like_cells, release_notes
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
