"""The privacy-criterion interface: one object per criterion, checked on a class table, combined with AND.

A criterion says which *classes* of a :class:`~kanon_core.classtable.ClassTable` fail it (their records
would have to be suppressed for a release to satisfy it). A release satisfies a set of criteria under a
record-suppression limit when the records of the classes failing *any* of them are at most the limit;
this is ARX's rule (Prause et al., the ARX documentation of ``PrivacyCriterion``), and the one the
generalization lattice and every treatment use.

``monotonic_at`` is a promise used to prune the generalization lattice (node X is below node Y when X is
at most as general as Y on every QI):

* with a suppression limit of 0 it promises: if no class fails at X, no class fails at any Y above X;
* with a positive limit it promises more, record by record: a record that fails at Y above X already
  failed at X (the set of failing records can only shrink when generalizing). This is what makes the
  AND of several criteria under one shared limit monotonic too (the union of shrinking sets shrinks),
  and what lets the search bound the suppression of a node from any evaluated node above it.

It must be argued in the criterion's docstring and checked by brute force on small lattices. It may
depend on the missing-value semantics: under wildcard semantics a record's class is the set of records
matching it, which grows but does not merge whole classes.

Criteria are written on the command line as ``prefix=arguments`` (``k=5``, ``l=3:occupation``,
``risk=0.05``); each criterion type registers its prefix once (:func:`register_criterion`) and
:func:`parse_criterion` turns the text back into the object (``spec`` is that text, canonical).
A variable's name is written in double quotes when it holds ``:``, ``;`` or ``"`` or begins or ends with
a space (``l=3:"Q1: occupation"``; a quote inside is doubled, as in CSV): a spec then still names exactly
the variable, and a recipe that stores it replays (:func:`quote_name`, :func:`split_arguments`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ..errors import InputError

if TYPE_CHECKING:
    from ..classtable import ClassTable
    from ..dataset import MissingSemantics
    from ..risk.classes import ClassSizes


@dataclass(frozen=True)
class Evaluation:
    """What is known about one table when criteria are checked: the table, its semantics, its sizes."""

    table: ClassTable
    missing: MissingSemantics
    sizes: ClassSizes  # per class (ClassTable.class_sizes)


@runtime_checkable
class Criterion(Protocol):
    """A privacy criterion on a class table."""

    @property
    def name(self) -> str:
        """A short name for messages and JSON ("k-anonymity", "distinct-l-diversity", ...)."""

    @property
    def spec(self) -> str:
        """The text that recreates it on the command line (``k=5``, ``l=3:occupation``, ``risk=0.05``)."""

    @property
    def sensitive(self) -> tuple[str, ...]:
        """Sensitive variables whose value counts the table must carry."""

    def monotonic_at(self, suppression_limit: int, missing: MissingSemantics = "category") -> bool:
        """True when the promise of the module docstring holds at this limit and semantics."""

    def failing_classes(self, ev: Evaluation) -> np.ndarray:
        """Boolean per class: the classes whose records fail the criterion."""

    # Optional: ``holds_when_records_join`` (bool, False when absent): a class that passes still passes with
    # any records added to it (k-anonymity, distinct l-diversity). Under wildcard semantics a record blanked by
    # suppression joins every class of the release, so a search judges criteria without it on the release
    # itself (:func:`kanon_core.treat.lattice.release_passes`).


def failing_records(criteria: list[Criterion], ev: Evaluation) -> tuple[np.ndarray, int]:
    """Classes failing any criterion (AND of the criteria) and the number of records in them."""
    fail = np.zeros(ev.table.n_classes, dtype=bool)
    for c in criteria:
        fail |= np.asarray(c.failing_classes(ev), dtype=bool)
    return fail, int(ev.table.count[fail].sum())


# -- the registry: one parser per command-line prefix ----------------------------------------------------------
CRITERIA: dict[str, Callable[[str], Criterion]] = {}
"""Parser of the argument text (after ``prefix=``) for each registered prefix."""

CRITERIA_HELP: dict[str, str] = {}
"""One line of syntax per prefix, for ``--help`` and error messages."""


def register_criterion(prefix: str, syntax: str) -> Callable[[Callable[[str], Criterion]], Callable[[str], Criterion]]:
    """Decorator: make ``parse(arguments)`` the parser of criteria written ``prefix=arguments``."""

    def deco(parse: Callable[[str], Criterion]) -> Callable[[str], Criterion]:
        if prefix in CRITERIA and CRITERIA[prefix] is not parse:
            raise ValueError(f"criterion prefix '{prefix}' registered twice")
        CRITERIA[prefix] = parse
        CRITERIA_HELP[prefix] = syntax
        return parse

    return deco


def criteria_syntax() -> str:
    """The accepted forms, one per registered criterion (for help texts)."""
    _load_builtin()
    return "; ".join(CRITERIA_HELP[p] for p in sorted(CRITERIA_HELP))


def parse_criterion(text: str) -> Criterion:
    """The criterion written ``prefix=arguments`` (``k=5``, ``l=entropy:3:occupation``, ``risk=0.05``)."""
    _load_builtin()
    prefix, sep, rest = str(text).strip().partition("=")
    prefix = prefix.strip().lower()
    if not sep or prefix not in CRITERIA:
        raise InputError(f"Unknown criterion '{str(text)[:40]}'. Write one of: {criteria_syntax()}.")
    return CRITERIA[prefix](rest.strip())


def parse_criteria(texts: Iterable[str]) -> list[Criterion]:
    """Several criteria (AND); the same criterion given twice is kept once."""
    out: list[Criterion] = []
    seen: set[str] = set()
    for t in texts:
        c = parse_criterion(t)
        if c.spec not in seen:
            seen.add(c.spec)
            out.append(c)
    return out


QUOTE = '"'
NEEDS_QUOTES = (":", ";", QUOTE)
"""Characters that make a variable's name be written in quotes in a spec (the separators and the quote)."""


def quote_name(name: str) -> str:
    """``name`` as a spec writes it: as it is, or in double quotes (a quote inside doubled) when it holds a
    separator or a quote or begins or ends with a space, which an unquoted argument loses when stripped."""
    if name and name == name.strip() and not any(ch in name for ch in NEEDS_QUOTES):
        return name
    return QUOTE + name.replace(QUOTE, QUOTE * 2) + QUOTE


def split_outside_quotes(text: str, sep: str) -> list[str]:
    """``text`` split at every ``sep`` that is not inside double quotes, the pieces as written (quotes kept):
    ``l=3:"a;b"; k=5`` splits at ``;`` into two criteria, ``3:"a:b"`` at ``:`` into two arguments."""
    pieces, start, quoted = [], 0, False
    for i, ch in enumerate(text):
        if ch == QUOTE:
            quoted = not quoted  # a doubled quote inside a quoted name closes and reopens it: still inside
        elif ch == sep and not quoted:
            pieces.append(text[start:i])
            start = i + 1
    if quoted:
        raise InputError("A quoted name in a criterion is not closed: end it with a double quote.")
    pieces.append(text[start:])
    return pieces


def unquote(piece: str) -> str:
    """One argument as written: a quoted one without its quotes (a doubled quote read as one), taken exactly;
    an unquoted one stripped of spaces."""
    text = piece.strip()
    if not text.startswith(QUOTE):
        if QUOTE in text:
            raise InputError("In a criterion, quote a whole name: \"name\".")
        return text
    inner = text[1:-1] if len(text) >= 2 and text.endswith(QUOTE) else None
    if inner is None or QUOTE in inner.replace(QUOTE * 2, ""):
        raise InputError("In a criterion, quote a whole name: \"name\" (a quote inside written twice).")
    return inner.replace(QUOTE * 2, QUOTE)


def split_arguments(text: str) -> list[str]:
    """The ``:``-separated arguments of a criterion, each read by :func:`unquote`."""
    return [unquote(p) for p in split_outside_quotes(text, ":")]


def split_criteria(text: str) -> list[str]:
    """Several criteria written in one field, separated by ``;`` outside quotes (blank ones dropped)."""
    return [p for p in split_outside_quotes(text, ";") if p.strip()]


def parse_number(text: str, what: str, integer: bool = False, low: float | None = None,
                 high: float | None = None) -> float:
    """A number argument of a criterion, with a one-line error naming the argument (never data)."""
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"{what} must be a number, not '{text[:20]}'.") from None
    if not np.isfinite(x) or (integer and x != int(x)):
        raise InputError(f"{what} must be a {'whole ' if integer else ''}number.")
    if (low is not None and x < low) or (high is not None and x > high):
        bounds = f"at least {low:g}" if high is None else f"between {low:g} and {high:g}"
        raise InputError(f"{what} must be {bounds}.")
    return int(x) if integer else x


def _load_builtin() -> None:
    """Import the criterion modules shipped with kanon (each registers itself on import)."""
    from . import builtin  # noqa: F401
