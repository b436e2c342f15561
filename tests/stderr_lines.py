"""Standard error of a command without its engines' progress lines.

An out-of-core engine prints what it is doing ("kanon risk: duckdb: counting classes ...") as it goes when
stderr is a terminal, as the in-memory path prints its progress. A refusal must still be one line: these helpers
keep the lines that are not progress, so a test can say so whatever stderr is.
"""

from __future__ import annotations

import re

from kanon_core.engines import ENGINE_CHOICES

_PROGRESS = re.compile(rf"^kanon [\w-]+: ({'|'.join(map(re.escape, ENGINE_CHOICES))}): ")


def without_progress(err: str) -> list[str]:
    """The lines of ``err`` that are not an engine's progress line."""
    return [line for line in err.strip().splitlines() if not _PROGRESS.match(line)]


def one_line_refusal(argv: list[str], capsys, *needles: str) -> str:
    """Run the command line; it must exit 2 with one line on stderr naming each of ``needles`` (an option
    refused by the argument parser exits from ``main`` itself). The line is returned."""
    from kanon_core.cli import main

    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    lines = without_progress(capsys.readouterr().err)
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
