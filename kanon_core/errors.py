"""Errors a user can act on.

Every message is written for a disclosure officer and must never contain data values (confidential
microdata must not leak into logs or screenshots): name variables, counts and rules, never cells.
"""


class KanonError(Exception):
    """Base class: the UI shows ``str(error)`` as a message, the CLI prints it and exits non-zero."""


class InputError(KanonError):
    """The input file or a parameter is unusable (wrong type, empty, duplicated names, bad weights...)."""


class InfeasibleError(KanonError):
    """The requested treatment cannot be achieved with the given constraints (e.g. everything protected)."""


class Cancelled(KanonError):
    """A long computation was cancelled by the user."""


def fewer_records_than_k(n_records: int, k: int) -> str:
    """The one message for a k above the file's record count, where no record can be in a group of k
    (suppression, MINUCs and the commands that refuse such a k all say it in these words)."""
    noun = "record" if n_records == 1 else "records"
    return f"The file has {n_records:,} {noun}, so no record can be in a group of k={k:,}."
