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
