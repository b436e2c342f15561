"""Lines of information a command prints on stderr only once it has succeeded.

A command that fails prints one line, its error (exit status 2): a notice printed before the failure (text
that often means missing, a replay's notes) would make it two, and a script reading the error would read
the notice. So notices wait here and :func:`kanon_core.cli.main` prints them after the work, or drops them.
Kept apart from the commands' shared options so that the entry point imports nothing heavy.
"""

from __future__ import annotations

_notices: list[str] = []


def notice(line: str) -> None:
    """A line of information for stderr (text that often means missing, a replay's notes), printed once the
    command has succeeded: a failed command prints its error alone, on one line (:func:`kanon_core.cli.main`).
    A line queued already is not queued again (a check run twice says it once)."""
    if line not in _notices:
        _notices.append(line)


def take_notices() -> list[str]:
    """The notices so far, forgotten here (the command line prints them after a success, drops them after
    a failure)."""
    out = list(_notices)
    _notices.clear()
    return out
