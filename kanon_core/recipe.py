"""Recipes: the steps that turned the original file into a release, as a readable JSON file.

A recipe records the kanon version, the input file's fingerprint (so a replay on the same file can be
checked) and its shape, the initial roles and missing semantics, and the steps, each with its one-line
description so the file reads like a log. Replaying it on the same file gives byte-identical output;
replaying it on a new file with the same variables (the next wave of a survey) works too.

Before each step is applied, :func:`check_step` compares what the step needs with the data in hand, so a
mismatch is reported as "Step 3 (Recode BYOCCUM: merge 5 categories into 2): ..." with the reason:

* a variable the step (or a role) names is not in the file -> error;
* a generalization meets values its hierarchy has no row for -> error (count only);
* a recode lists categories that do not occur in the file -> warning (a rare category may be absent in
  a new wave); none of them occurring -> error. These categories are quoted from the recipe itself,
  never read from the records.

Errors stop the replay (:class:`InputError`); warnings are returned with the history
(:class:`Replay`), and ``strict=True`` turns them into errors (what ``kanon apply --strict`` does).

Replays prove themselves: the recipe records :func:`~kanon_core.steps.version_fingerprint` of each
step's output (and of the data as loaded). Replayed on the same file, each step's output is compared
with its record and the replay stops at the first step that differs; on another file (the next wave)
there is nothing to compare with, and the replay says so.

Recipe files come from outside, so loading them is defensive: the file's size (checked before it is read),
nesting depth, numbers (finite, at most 10^15 in size), text (valid Unicode), keys (each once per object,
none unknown: a misspelt "steps" must not replay nothing), the number of steps, the type of every field and
every step parameter are checked before anything is built, and each problem is one :class:`InputError`
line naming the field, never the offending value.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import __version__
from .dataset import Dataset, Roles, check_semantics, validate_roles
from .errors import Cancelled, InputError, KanonError
from .history import History, Version
from .progress import Progress, scaled_progress
from .steps import (
    STEP_TYPES,
    DeclareMissingCodes,
    DropVariables,
    SetRoles,
    Step,
    _ensure_registered,
    step_from_dict,
    version_fingerprint,
)

FORMAT = "kanon-recipe"
FORMAT_VERSION = 1
MAX_DEPTH = 24  # a recipe nests 5 levels (generalization hierarchies); far deeper is not a recipe
MAX_NUMBER = 10**15  # counts, codes and bounds of survey data fit well within this
MAX_WHOLE = 2**63 - 1  # whole numbers: any code of a 64-bit integer column, as the steps hold them
MAX_BYTES = 100_000_000  # the demo recipe has 10 kB; hierarchies of thousands of categories stay far below this
MAX_STEPS = 10_000  # a session has tens of steps; far more is a generated or broken file, and slow to replay

_RECIPE_FIELDS = frozenset({"format", "format_version", "kanon_version", "notes", "input", "initial", "steps",
                            "extra"})
_INPUT_FIELDS = frozenset({"path", "fingerprint", "records", "columns", "start_fingerprint"})
_INITIAL_FIELDS = frozenset({"roles", "missing"})
_ROLE_FIELDS = frozenset({"qis", "weight", "strata", "psu", "outcomes", "direct_ids", "fpc"})


@dataclass(frozen=True)
class ReadLimits:
    """What a recipe or project file may contain, checked while parsing (before anything is built)."""

    max_depth: int = MAX_DEPTH
    max_number: int = MAX_NUMBER
    max_bytes: int = MAX_BYTES
    max_steps: int = MAX_STEPS


@dataclass(frozen=True)
class Recipe:
    steps: tuple[Step, ...]
    roles: Roles
    missing: str = "wildcard"
    input_path: str | None = None
    input_fingerprint: str | None = None
    input_records: int | None = None
    input_columns: tuple[str, ...] = ()
    kanon_version: str = __version__
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    step_fingerprints: tuple[str | None, ...] = ()
    start_fingerprint: str | None = None

    @classmethod
    def from_history(cls, history: History, vid: int | None = None, input_path: str | None = None,
                     notes: str = "", extra: dict[str, Any] | None = None) -> Recipe:
        """The recipe of version ``vid`` (default: current): its lineage from the original data.

        ``input_path`` should be relative to where the recipe will be saved (usually just the file
        name), since ``kanon apply`` resolves it against the recipe's folder.
        """
        original = history.original.dataset
        lineage = history.lineage(vid)
        return cls(
            steps=tuple(v.step for v in lineage[1:]),  # type: ignore[misc]
            step_fingerprints=tuple(version_fingerprint(v.dataset) for v in lineage[1:]),
            start_fingerprint=version_fingerprint(original),
            roles=original.roles,
            missing=original.missing,
            input_path=input_path,
            input_fingerprint=original.fingerprint,
            input_records=original.n_records,
            input_columns=tuple(original.columns),
            notes=notes,
            extra=dict(extra or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kanon_version": self.kanon_version,
            "notes": self.notes,
            "input": {
                "path": self.input_path,
                "fingerprint": self.input_fingerprint,
                "records": self.input_records,
                "columns": list(self.input_columns),
                **({"start_fingerprint": self.start_fingerprint} if self.start_fingerprint else {}),
            },
            "initial": {"roles": self.roles.to_dict(), "missing": self.missing},
            "steps": [{"description": s.describe(), **s.to_dict(),
                       **({"output_fingerprint": fp} if fp else {})}
                      for s, fp in zip(self.steps, self._padded_fingerprints(), strict=True)],
            **({"extra": self.extra} if self.extra else {}),
        }

    def _padded_fingerprints(self) -> tuple[str | None, ...]:
        fps = self.step_fingerprints[:len(self.steps)]
        return fps + (None,) * (len(self.steps) - len(fps))

    def to_json(self) -> str:
        return pretty_json(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Recipe:
        """Build a recipe from parsed JSON, checking every field's type (one-line errors, no values)."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError("This is not a kanon recipe (its 'format' field is missing or different).")
        check_depth(d, "recipe")
        check_format_version(d, FORMAT_VERSION, "recipe")
        refuse_unknown(d, _RECIPE_FIELDS, "The recipe has")
        inp = _part(d, "input", dict, {})
        init = _part(d, "initial", dict, {})
        refuse_unknown(inp, _INPUT_FIELDS, "The recipe's input part has")
        refuse_unknown(init, _INITIAL_FIELDS, "The recipe's initial part has")
        raw_steps = _part(d, "steps", list, [])
        check_count(len(raw_steps), "recipe", "steps")
        steps: list[Step] = []
        fingerprints: list[str | None] = []
        for i, sd in enumerate(raw_steps, start=1):
            step, fp = parse_step(sd, f"Step {i} of the recipe")
            steps.append(step)
            fingerprints.append(fp)
        roles_d = _part(init, "roles", dict, {}, "initial roles")
        refuse_unknown(roles_d, _ROLE_FIELDS, "The recipe's initial roles have")
        for name in ("qis", "outcomes", "direct_ids"):
            _field(roles_d, name, tuple[str, ...], "initial roles")
        for name in ("weight", "strata", "psu", "fpc"):
            _field(roles_d, name, str | None, "initial roles")
        try:
            roles = Roles.from_dict(roles_d)
        except (TypeError, ValueError, AttributeError):
            raise InputError("The recipe's initial roles are not valid.") from None
        missing = _field(init, "missing", str, "initial part", "wildcard")
        try:
            check_semantics(missing)
        except (InputError, ValueError):
            raise InputError("The recipe's initial missing-value semantics is not one kanon knows.") from None
        extra = _part(d, "extra", dict, {})
        k = extra.get("k")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 10**6):
            raise InputError("The recipe's 'extra.k' is not a whole number from 1 to 1,000,000.")
        recipe = cls(
            steps=tuple(steps),
            roles=roles,
            missing=missing,
            input_path=file_name_field(inp, "path", "The recipe's input part"),
            input_fingerprint=_field(inp, "fingerprint", str | None, "input part"),
            input_records=count_field(inp, "records", "The recipe's input part"),
            input_columns=tuple(_field(inp, "columns", tuple[str, ...], "input part", [])),
            kanon_version=str(_field(d, "kanon_version", str, "recipe", "?")),
            notes=_field(d, "notes", str, "recipe", ""),
            extra=extra,
            step_fingerprints=tuple(fingerprints),
            start_fingerprint=_field(inp, "start_fingerprint", str | None, "input part"),
        )
        if d.get("steps") is None:  # last, so that a file's other faults are named first
            raise InputError("The recipe has no 'steps' list (a recipe of no steps has \"steps\": []).")
        return recipe

    @classmethod
    def from_json(cls, text: str | bytes) -> Recipe:
        return cls.from_dict(parse_json(text, "recipe"))

    @classmethod
    def load(cls, path: str | Path) -> Recipe:
        return cls.from_json(read_limited(path, "recipe", "Recipe not found"))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8", newline="\n")

    def resolve_input(self, recipe_path: str | Path) -> Path:
        """The input file recorded in the recipe, inside the recipe's folder (``kanon apply``).

        A recipe may come from someone else, so the path it records may not lead outside the folder
        holding it (no absolute paths, no ``..`` out of it, no symbolic link out of it): reading any
        other file needs the file named on the command line.
        """
        if not self.input_path:
            raise InputError("The recipe does not record its input file; give the data file explicitly.")
        folder = Path(recipe_path).resolve().parent
        p = Path(self.input_path)
        target = (folder / p).resolve()
        if p.is_absolute() or not target.is_relative_to(folder):
            raise InputError("The recipe's input path leads outside the recipe's folder; give the data file "
                             "on the command line.")
        return target

    def same_input(self, ds: Dataset) -> bool:
        """Whether ``ds`` is the file the recipe was made on (its cells, as loaded, hash the same)."""
        return self.input_fingerprint is not None and ds.fingerprint == self.input_fingerprint

    def check_input(self, ds: Dataset) -> list[str]:
        """Notes about the input (a different file is allowed: the next wave of a survey)."""
        notes = []
        if self.input_fingerprint and not self.same_input(ds):
            notes.append("The input file differs from the one the recipe was made on (replaying on new data; "
                         "the steps' recorded results are not checked).")
        missing_cols = [c for c in self.input_columns if c not in ds.columns]
        if missing_cols:
            notes.append(f"Variables of the original file not in this one: {', '.join(missing_cols)}.")
        return notes

    def start(self, ds: Dataset) -> Dataset:
        """``ds`` with the recipe's initial roles and semantics (version 0 of the replay)."""
        absent = [c for c in _role_columns(self.roles) if c not in ds.frame.columns]
        if absent:
            raise InputError(f"The recipe's initial roles name variable(s) not in this file: {', '.join(absent)}.")
        try:
            return Dataset(frame=ds.frame, meta=ds.meta, roles=self.roles, missing=self.missing,  # type: ignore[arg-type]
                           name=ds.name)
        except InputError as exc:
            raise InputError(f"The recipe's initial roles do not fit this file: {exc}") from None

    def replay_checked(self, ds: Dataset, progress: Progress | None = None, strict: bool = False) -> Replay:
        """Apply the recipe to a freshly loaded dataset: the full history of versions and any warnings.

        Raises :class:`InputError` naming the step (number and description) and the reason when a step
        does not fit the data, or when ``strict`` and a step has a warning. On the recipe's own file,
        each step's output must have the fingerprint recorded for it: the first that does not stops the
        replay (:class:`InputError` naming the step's number and kind).
        """
        history = History.start(self.start(ds))
        warnings: list[str] = list(self.check_input(ds))
        verify = self.same_input(ds) and any(self.step_fingerprints)
        if self.same_input(ds) and self.steps and not verify:
            warnings.append("The recipe records no results of its steps (it was written before kanon recorded "
                            "them), so they are not checked.")
        if verify and self.start_fingerprint and version_fingerprint(history.original.dataset) != self.start_fingerprint:
            verify = False
            warnings.append("The input's labels or missing codes differ from those the recipe was made with "
                            "(the steps' recorded results are not checked).")
        recorded = self._padded_fingerprints()
        verified = 0
        n = max(1, len(self.steps))
        for i, step in enumerate(self.steps, start=1):
            sub = scaled_progress(progress, (i - 1) / n, i / n, f"step {i} of {len(self.steps)}")
            expected = recorded[i - 1] if verify else None
            warnings.extend(apply_checked(history, step, f"Step {i}", sub, strict, expected))
            verified += expected is not None
            if progress is not None:
                progress.update(i / n, f"step {i} of {len(self.steps)} done")
        return Replay(history=history, warnings=tuple(warnings), verified_steps=verified)

    def replay(self, ds: Dataset, progress: Progress | None = None) -> History:
        """Apply the recipe to a freshly loaded dataset, returning the full history of versions."""
        return self.replay_checked(ds, progress).history


def apply_checked(history: History, step: Step, where: str, progress: Progress | None = None, strict: bool = False,
                  expected: str | None = None, source: str = "recipe") -> list[str]:
    """Apply ``step`` to the current version of ``history`` as a replay does: the step's warnings.

    ``where`` names the step in messages ("Step 3", "Version 5"). Raises :class:`InputError` when the
    step does not fit the data (or has a warning and ``strict``), and, when ``expected`` is given (the
    fingerprint recorded for this step's output), when the output's
    :func:`~kanon_core.steps.version_fingerprint` differs from it.
    """
    named = f"{where} ({step.describe_without_values()})"
    problems, cautions = check_step(step, history.current.dataset)
    if problems:
        raise InputError(f"{named} cannot be applied: {' '.join(problems)}")
    if cautions and strict:
        raise InputError(f"{named}: {' '.join(cautions)} (strict replay)")
    before = history.current.dataset
    try:
        history.apply(step, progress)
    except Cancelled:
        raise
    except KanonError as exc:
        raise InputError(f"{named} cannot be applied: {exc}") from None
    except (KeyError, ValueError, TypeError) as exc:
        raise InputError(f"{named} cannot be applied: {type(exc).__name__}") from None
    if expected is not None and version_fingerprint(history.current.dataset) != expected:
        raise InputError(f"{where} ({step.kind}) does not reproduce the result recorded in the {source} on this "
                         "file; the replay stops there.")
    after = step.cautions(before, history.current.dataset)
    if after and strict:
        raise InputError(f"{named}: {' '.join(after)} (strict replay)")
    return [f"{named}: {c}" for c in (*cautions, *after)]


@dataclass(frozen=True)
class Replay:
    """A replayed recipe: its history (current = the release) and warnings worth reading."""

    history: History
    warnings: tuple[str, ...] = ()
    verified_steps: int = 0  # steps whose output matched the fingerprint recorded in the recipe

    @property
    def release(self) -> Version:
        return self.history.current


def _role_columns(roles: Roles) -> list[str]:
    named = list(roles.qis) + list(roles.outcomes) + list(roles.direct_ids)
    return named + [c for c in (roles.weight, roles.strata, roles.psu, roles.fpc) if c is not None]


def step_columns(step: Step) -> list[str]:
    """The variables a step names, in the order it names them (for mismatch messages)."""
    cols: list[str] = []
    if isinstance(step, SetRoles):
        cols = _role_columns(step.roles())
    elif isinstance(step, DropVariables):
        cols = list(step.columns)
    elif isinstance(step, DeclareMissingCodes):
        cols = [step.column]
    else:
        for name in ("column",):
            v = getattr(step, name, None)
            if isinstance(v, str) and v:
                cols.append(v)
        levels = getattr(step, "levels", None)
        if isinstance(levels, dict):
            cols += [str(v) for v in levels]
        for name in ("qis", "protected"):
            cols += [str(v) for v in getattr(step, name, ()) or ()]
        cols += [str(pair[0]) for pair in getattr(step, "importance", ()) or ()]
    return list(dict.fromkeys(cols))


def check_step(step: Step, ds: Dataset) -> tuple[list[str], list[str]]:
    """(problems, warnings) of applying ``step`` to ``ds``; problems stop a replay.

    Messages name variables and counts, never a value: neither one read from records nor a category the recipe
    lists (a value of the file it was made on).
    """
    problems: list[str] = []
    warnings: list[str] = []
    absent = [c for c in step_columns(step) if c not in ds.frame.columns]
    if absent:
        what = "role(s) name" if isinstance(step, SetRoles) else "it uses"
        problems.append(f"{what} unknown variable(s), not in the data: {', '.join(absent)}.")
        return problems, warnings
    if isinstance(step, SetRoles):
        try:
            validate_roles(ds.frame, step.roles())
        except InputError as exc:
            problems.append(str(exc))
    merge = getattr(step, "merge", ())
    column = getattr(step, "column", None)
    if merge and isinstance(column, str):
        gone = _absent_categories(ds, column, merge)
        if len(gone) == len(merge):
            problems.append(f"none of the {len(merge)} categories to merge occur in {column}.")
        elif gone:  # counted, not listed: a category is a value of the data (an earlier wave's, or this file's)
            verb = "does" if len(gone) == 1 else "do"
            warnings.append(f"{len(gone)} of the {len(merge)} categories to merge {verb} not occur in {column}; the "
                            "others are merged.")
    return problems, warnings


def _absent_categories(ds: Dataset, column: str, merge: Sequence[Any]) -> list[Any]:
    """The categories to merge that no observed cell of ``column`` answers to, matched as the recode step
    matches them: in a text column a text as written ("012" is not "12"), numbers by value (12.0 is 12)."""
    from .treat.recode import cell_keys, is_text_column, merge_key

    series = ds.frame[column]
    text = is_text_column(series)
    cells = pd.unique(series[~ds.missing_mask(column)].to_numpy(dtype=object))
    present = {key for cell in cells for key in cell_keys(cell, text)}
    return [v for v in merge if merge_key(v, text) not in present]


def graft(history: History, replay: Replay | History, base: int = 0) -> list[Version]:
    """Add a replayed recipe's versions to ``history`` as a branch from version ``base`` (the data as
    loaded), so replaying a recipe in the dashboard keeps the work already done.

    The replay's start may differ from ``base`` in roles or semantics (the recipe's initial roles): that
    difference becomes a first :class:`SetRoles` / ``SetMissing`` version. The result's datasets are
    the replay's own, so the branch is byte-identical to a fresh replay.
    """
    from .steps import SetMissing

    replayed = replay.history if isinstance(replay, Replay) else replay
    start = replayed.original.dataset
    here = history.versions[base].dataset
    if start.n_records != here.n_records or start.columns != here.columns:
        raise InputError("The replayed data is not the data of this session.")
    history.checkout(base)
    added: list[Version] = []
    if start.roles != here.roles:
        added.append(history.add(SetRoles.from_roles(start.roles), here.with_roles(start.roles)))
    if start.missing != here.missing:
        cur = history.current.dataset
        added.append(history.add(SetMissing(start.missing), cur.with_missing(start.missing)))
    for v in replayed.lineage()[1:]:
        added.append(history.add(v.step, v.dataset, v.outcome))  # type: ignore[arg-type]
    return added


# -- reading recipe and project files defensively ----------------------------------------------------------
def read_limited(path: str | os.PathLike, what: str, not_found: str) -> bytes:
    """The bytes of a recipe or project file, refused unread when larger than :data:`MAX_BYTES`: a data file
    or a 1 GB file named by mistake is not read into memory to be found not to be JSON. ``not_found`` starts
    the message for a path that does not exist ("Recipe not found")."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{not_found}: {p.name}")
    if not p.is_file():  # a folder, a device or a pipe: nothing a recipe is saved as
        raise InputError(f"The {what} is not a file: {p.name}")
    try:
        with p.open("rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_BYTES:
                raise InputError(_too_large(what))
            data = f.read(MAX_BYTES + 1)  # bounded: the file may grow while it is read
    except OSError:
        raise InputError(f"The {what} file cannot be read: {p.name}") from None
    if len(data) > MAX_BYTES:
        raise InputError(_too_large(what))
    return data


def _too_large(what: str) -> str:
    return f"The {what} file is larger than {MAX_BYTES / 10**6:g} MB; that is not a kanon {what}."


class _OutOfRange(Exception):
    """A number that is not finite or too large, found while parsing (turned into one InputError)."""


class _KeyTwice(Exception):
    """A key written twice in one object, found while parsing (``args[0]``: the key)."""


def parse_json(text: str | bytes, what: str = "recipe") -> Any:
    """Parse a recipe (or project) file: UTF-8 JSON of at most :data:`MAX_BYTES`, whose numbers are finite
    and at most :data:`MAX_NUMBER` in size (whole numbers :data:`MAX_WHOLE`), nested at most :data:`MAX_DEPTH` deep, with each key once per
    object (``json`` keeps the last of two, a reader may see the first) and text that is valid Unicode (an
    unpaired ``\\ud800`` escape is valid JSON but cannot be written anywhere). One-line errors, no values."""
    if len(text) > MAX_BYTES:
        raise InputError(_too_large(what))
    if isinstance(text, (bytes, bytearray)):
        if b"\x00" in text:  # never in JSON text; UTF-16 and UTF-32 have one in every ASCII character
            raise InputError(f"The {what} file is not UTF-8 text (it may be UTF-16; save it as UTF-8).")
        try:
            source = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(f"The {what} file is not UTF-8 text.") from None
        unpaired = False  # decoded UTF-8 holds no surrogate: only an escape can make one
    else:
        source, unpaired = text, not _encodes(text)
    try:
        d = json.loads(source, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_reject_constant,
                       object_pairs_hook=_object)
    except _OutOfRange:
        raise InputError(f"The {what} file has a number that is not finite or is beyond 10^15 in size (whole "
                         "numbers: 2^63 - 1).") from None
    except _KeyTwice as exc:
        raise InputError(f"The {what} file has the key {_named(exc.args[0])} twice in one object.") from None
    except RecursionError:
        raise InputError(f"The {what} file is nested too deeply.") from None
    except ValueError:
        raise InputError(f"The {what} file is not valid JSON.") from None
    check_depth(d, what)
    if unpaired or _SURROGATE_ESCAPE.search(source):  # else no text can be half a character
        _check_unicode(d, what)
    return d


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the file (``object_pairs_hook``), refused when a key is written twice."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _KeyTwice(key)
            seen.add(key)
    return d


def _named(key: Any, quote: str = "'") -> str:
    """A key of the file for a message (a field or variable name, never a cell), when short and printable."""
    name = str(key)
    if not (name.isprintable() and 0 < len(name) <= 60):
        return "(a name that is not printable)"
    return f"{quote}{name}{quote}"


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # an escape that may stand for half a character


def _check_unicode(obj: Any, what: str) -> None:
    """Refuse a parsed file holding a text (key or value) that is not valid Unicode (checked without recursion)."""
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not _encodes(v):
                raise InputError(f"The {what} file has text that is not valid Unicode (an unpaired surrogate "
                                 "escape such as \\ud800).")
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _parse_int(text: str) -> int:
    """A whole number within kanon's 64-bit integers: codes of 16 to 19 digits are read as the steps wrote them
    (a file kanon writes, it reads); decimals keep the bound :data:`MAX_NUMBER`."""
    if len(text.lstrip("-")) > len(str(MAX_WHOLE)) or abs(int(text)) > MAX_WHOLE:
        raise _OutOfRange
    return int(text)


def _parse_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x) or abs(x) > MAX_NUMBER:
        raise _OutOfRange
    return x


def _reject_constant(text: str) -> Any:
    raise _OutOfRange  # NaN, Infinity, -Infinity


def check_format_version(d: Mapping[str, Any], current: int, what: str, digits_as_text: bool = True) -> None:
    """Refuse a ``format_version`` that is not a whole number (digits as text are read when
    ``digits_as_text``, as recipes always were), that is newer than ``current`` or that never existed (below
    1). Absent, the file is read as the current format."""
    if "format_version" not in d:
        return
    version = d["format_version"]
    if digits_as_text and isinstance(version, str) and version.strip().isdigit():
        version = int(version)
    if not isinstance(version, int) or isinstance(version, bool):
        raise InputError(f"The {what}'s 'format_version' is not a number.")
    if version > current:
        raise InputError(f"This {what} was written by a newer kanon; please upgrade.")
    if version < 1:
        raise InputError(f"The {what}'s 'format_version' is not one kanon knows (1 to {current}).")


def refuse_unknown(d: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    """Refuse fields kanon does not write: a misspelt part ("Steps") would otherwise be skipped in silence.
    ``where`` starts the message ("The recipe's input part has")."""
    unknown = [k for k in d if k not in known]
    if unknown:
        names = ", ".join(_named(k, quote="") for k in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise InputError(f"{where} unknown field(s): {names}{more} (kanon writes {', '.join(sorted(known))}).")


def check_count(n: int, what: str, things: str) -> None:
    """Refuse more steps (or versions) than :data:`MAX_STEPS`, before any is read."""
    if n > MAX_STEPS:
        raise InputError(f"The {what} has {n:,} {things}; kanon replays at most {MAX_STEPS:,}.")


def count_field(d: Mapping[str, Any], key: str, where: str) -> int | None:
    """A count (records): a whole number of 0 or more, or absent/null."""
    v = d.get(key)
    if v is not None and not (fits(v, int) and v >= 0):
        raise InputError(f"{where} field '{key}' should be a whole number of 0 or more.")
    return v


def file_name_field(d: Mapping[str, Any], key: str, where: str) -> str | None:
    """A path (text or absent/null) the operating system can open: no NUL character."""
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise InputError(f"{where} field '{key}' should be text or null.")
    if "\x00" in v:
        raise InputError(f"{where} field '{key}' is not a usable file name.")
    return v


def check_depth(obj: Any, what: str = "recipe", limit: int = MAX_DEPTH) -> None:
    """Refuse containers nested deeper than ``limit`` (checked without recursion)."""
    stack = [(obj, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > limit:
                raise InputError(f"The {what} file is nested too deeply.")
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))


def _part(d: Mapping[str, Any], key: str, kind: type, default: Any, name: str | None = None,
          owner: str = "recipe") -> Any:
    """A part of the file that must be an object or a list (absent or null: ``default``)."""
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, kind):
        raise InputError(f"The {owner}'s '{name or key}' part has the wrong shape.")
    return v


def _field(d: Mapping[str, Any], key: str, hint: Any, where: str, default: Any = None, owner: str = "recipe") -> Any:
    """A field checked against its type hint (absent or null: ``default``)."""
    v = d.get(key)
    if v is None:
        return default
    if not fits(v, hint):
        raise InputError(f"The {owner}'s {where} field '{key}' should be {describe_type(hint)}.")
    return v


_SCALARS = (str, int, float, bool, type(None))


def fits(value: Any, hint: Any) -> bool:
    """Whether a parsed JSON value fits a step field's type hint (lists stand for tuples)."""
    if hint is Any:
        return isinstance(value, _SCALARS)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, a) for a in args)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin is tuple:
        if not isinstance(value, list):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(fits(x, args[0]) for x in value)
        return len(value) == len(args) and all(fits(x, a) for x, a in zip(value, args, strict=True))
    if origin in (dict, Mapping, typing.Mapping):
        return isinstance(value, dict) and (not args or all(fits(x, args[1]) for x in value.values()))
    return True  # an annotation this check does not know: the step itself validates


def describe_type(hint: Any) -> str:
    """The type a field should have, in words (for one-line errors)."""
    words = {str: "text", int: "a whole number", float: "a number", bool: "true or false",
             type(None): "null", Any: "a plain value (text, number, true/false or null)"}
    if hint in words:
        return words[hint]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe_type(a) for a in typing.get_args(hint))
    if origin is typing.Literal:
        return "one of " + ", ".join(map(str, typing.get_args(hint)))
    if origin is tuple:
        return "a list"
    if origin in (dict, Mapping, typing.Mapping):
        return "an object"
    return "of another type"


def check_step_params(params: Mapping[str, Any]) -> None:
    """Refuse a step whose kind is unknown or whose parameters have the wrong JSON type.

    Checked against the step class's own type hints, so a new step kind is covered without listing it.
    """
    _ensure_registered()
    kind = params.get("kind")
    if not isinstance(kind, str) or kind not in STEP_TYPES:
        raise InputError(f"its kind is not one kanon knows ({', '.join(sorted(STEP_TYPES))}).")
    cls = STEP_TYPES[kind]
    hints = _step_hints(cls)
    if hints is None:  # an unresolvable annotation: leave validation to the step
        return
    for f in dataclasses.fields(cls):
        if f.name in params and f.name in hints and not fits(params[f.name], hints[f.name]):
            raise InputError(f"its parameter '{f.name}' should be {describe_type(hints[f.name])}.")


@functools.cache
def _step_hints(cls: type) -> dict[str, Any] | None:
    """A step class's resolved type hints (resolved once: a recipe may have thousands of steps)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001
        return None


def parse_step(sd: Any, label: str) -> tuple[Step, str | None]:
    """A step of a recipe or project file and the output fingerprint recorded with it.

    ``label`` names it in errors ("Step 3 of the recipe"), followed by its kind and variable when the kind is
    one kanon knows ("Step 3 (recode of age) of the recipe"). The file's readable description is not quoted:
    it is written from the step's parameters, and a recode's merge target or threshold is a value of the data.
    Parameters are checked by :func:`check_step_params` first.
    """
    if not isinstance(sd, dict):
        raise InputError(f"{label} is not an object with a 'kind'.")
    fp = sd.get("output_fingerprint")
    if fp is not None and not isinstance(fp, str):
        raise InputError(f"{label} has an 'output_fingerprint' that is not text.")
    # the description is written for readers; the step's parameters alone define it
    params = {k: v for k, v in sd.items() if k not in ("description", "output_fingerprint")}
    kind, column = sd.get("kind"), sd.get("column")
    what = ""
    if isinstance(kind, str) and kind in STEP_TYPES:
        of = f" of {column}" if isinstance(column, str) and column.isprintable() and len(column) <= 80 else ""
        what = f" ({kind}{of})"
    words = label.split(" ", 2)
    named = " ".join(words[:2]) + what + (" " + words[2] if len(words) > 2 else "")
    try:
        check_step_params(params)
        return step_from_dict(params), fp
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, InputError) as exc:
        raise InputError(f"{named} is not valid: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    """An error's text on one line (names from a file may hold line breaks)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def pretty_json(obj: Any, width: int = 100) -> str:
    """JSON for people: objects one key per line, lists of plain values packed into lines of ``width``.

    Deterministic (key order as given), UTF-8 text, final newline; ``json.loads`` gives ``obj`` back.
    """
    lines: list[str] = []

    def scalar(v: Any) -> bool:
        return not isinstance(v, (dict, list, tuple))

    def emit(v: Any, indent: int, prefix: str, suffix: str) -> None:
        pad = " " * indent
        if isinstance(v, dict) and v:
            lines.append(f"{pad}{prefix}{{")
            items = list(v.items())
            for i, (key, val) in enumerate(items):
                emit(val, indent + 2, json.dumps(str(key), ensure_ascii=False) + ": ", "," if i < len(items) - 1 else "")
            lines.append(f"{pad}}}{suffix}")
        elif isinstance(v, (list, tuple)) and v:
            flat = json.dumps(list(v), ensure_ascii=False)
            if all(scalar(x) or (isinstance(x, (list, tuple)) and all(map(scalar, x))) for x in v):
                if len(pad) + len(prefix) + len(flat) + len(suffix) <= width:
                    lines.append(f"{pad}{prefix}{flat}{suffix}")
                    return
                lines.append(f"{pad}{prefix}[")
                parts = [json.dumps(x if scalar(x) else list(x), ensure_ascii=False) for x in v]
                row = ""
                for i, part in enumerate(parts):
                    piece = part + ("," if i < len(parts) - 1 else "")
                    if row and len(pad) + 2 + len(row) + 1 + len(piece) > width:
                        lines.append(f"{pad}  {row}")
                        row = piece
                    else:
                        row = f"{row} {piece}" if row else piece
                lines.append(f"{pad}  {row}")
                lines.append(f"{pad}]{suffix}")
                return
            lines.append(f"{pad}{prefix}[")
            for i, x in enumerate(v):
                emit(x, indent + 2, "", "," if i < len(v) - 1 else "")
            lines.append(f"{pad}]{suffix}")
        else:
            lines.append(f"{pad}{prefix}{json.dumps(v if not isinstance(v, tuple) else list(v), ensure_ascii=False)}{suffix}")

    emit(obj, 0, "", "")
    return "\n".join(lines) + "\n"
