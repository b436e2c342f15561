"""A CSV file holding a NUL byte is refused as binary wherever the NUL is, by the in-memory reader and the engines.

Both looked at the file's first 4,096 characters only: a binary tail (or a NUL in a header longer than that) was
read as text of a cell. The engines find a later NUL in the pass they make over the file's bytes anyway
(:func:`kanon_core.engines.csv_checks.check_quotes_closed`), so the file is not read twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kanon_core.cli import main
from kanon_core.engines import get_engine
from kanon_core.engines.csv_checks import check_quotes_closed
from kanon_core.engines.source import open_source
from kanon_core.errors import InputError
from kanon_core.io import BINARY_FILE, read_table
from tests.stderr_lines import without_progress

EMBEDDED = ["duckdb", "polars"]
BODY = "x,1,1\n" * 2000  # 12,000 characters before the NUL: past every sample the readers look at first

FILES = {
    "late, unquoted": "a,b,w\n" + BODY + "SEC\x00RET,1,1\n",
    "late, in a quoted cell": "a,b,w\n" + BODY + '"SEC\x00RET",1,1\n',
    "last byte": "a,b,w\n" + BODY + "y,2,2\n\x00",
    "in a header longer than the samples": ",".join(f"c{i}" for i in range(15000)) + ",na\x00me\n" + ",".join(["1"] * 15001) + "\n" + BODY,
    "early": "a,b,w\nSEC\x00RET,1,1\n",
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nul.csv"
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("case", list(FILES))
def test_the_in_memory_reader_refuses_a_nul_anywhere(tmp_path, case):
    path = _write(tmp_path, FILES[case])
    with pytest.raises(InputError, match=f"^{BINARY_FILE}"):
        read_table(path)
    with pytest.raises(InputError, match=f"^{BINARY_FILE}"):
        read_table(path.read_bytes(), filename="nul.csv")


@pytest.mark.parametrize("case", list(FILES))
def test_the_engines_refuse_a_nul_anywhere(tmp_path, case):
    path = _write(tmp_path, FILES[case])
    with pytest.raises(InputError, match=f"^{BINARY_FILE}"):
        open_source(path)
    for engine in EMBEDDED:
        with pytest.raises(InputError, match=f"^{BINARY_FILE}"):
            get_engine(engine).class_table(path, ["c1"] if case == "in a header longer than the samples" else ["b"])


@pytest.mark.parametrize("engine", ["pandas", *EMBEDDED])
def test_every_engine_gives_exit_2_and_one_line_without_the_cell(tmp_path, capsys, engine):
    path = _write(tmp_path, FILES["late, unquoted"])
    code = main(["risk", str(path), "--qi", "a,b", "--engine", engine])
    err = without_progress(capsys.readouterr().err)
    assert code == 2 and len(err) == 1 and "binary file" in err[0] and "SEC" not in err[0]


@pytest.mark.parametrize("chunk", [1, 5, 7, 1 << 24])
@pytest.mark.parametrize("quoted", [False, True])
def test_the_quote_pass_finds_a_nul_in_any_chunk(tmp_path, chunk, quoted):
    """Chunks with and without quotes go different ways through the pass (a byte count, or the compiled
    scan); a NUL is found in both, in the first chunk or a later one, and a file without one passes."""
    cell = '"y"' if quoted else "y"
    clean = _write(tmp_path, f"a,b\nx,1\n{cell},2\n")
    assert check_quotes_closed(clean, ",", chunk).text_after == 0
    for at in (0, 5, 12):
        text = clean.read_text()
        path = _write(tmp_path, text[:at] + "\x00" + text[at:])
        with pytest.raises(InputError, match=f"^{BINARY_FILE}"):
            check_quotes_closed(path, ",", chunk)
