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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .dataset import Dataset, Roles, validate_roles
from .errors import Cancelled, InputError, KanonError
from .history import History, Version
from .progress import Progress
from .steps import DeclareMissingCodes, DropVariables, SetRoles, Step, step_from_dict

FORMAT = "kanon-recipe"
FORMAT_VERSION = 1


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

    @classmethod
    def from_history(cls, history: History, vid: int | None = None, input_path: str | None = None,
                     notes: str = "", extra: dict[str, Any] | None = None) -> Recipe:
        """The recipe of version ``vid`` (default: current): its lineage from the original data.

        ``input_path`` should be relative to where the recipe will be saved (usually just the file
        name), since ``kanon apply`` resolves it against the recipe's folder.
        """
        original = history.original.dataset
        return cls(
            steps=tuple(history.steps(vid)),
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
            },
            "initial": {"roles": self.roles.to_dict(), "missing": self.missing},
            "steps": [{"description": s.describe(), **s.to_dict()} for s in self.steps],
            **({"extra": self.extra} if self.extra else {}),
        }

    def to_json(self) -> str:
        return pretty_json(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Recipe:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError("This is not a kanon recipe (its 'format' field is missing or different).")
        try:
            version = int(d.get("format_version", 0))
        except (TypeError, ValueError):
            raise InputError("The recipe's 'format_version' is not a number.") from None
        if version > FORMAT_VERSION:
            raise InputError("This recipe was written by a newer kanon; please upgrade.")
        inp = d.get("input") or {}
        init = d.get("initial") or {}
        raw_steps = d.get("steps") or []
        if not isinstance(raw_steps, list) or not isinstance(inp, dict) or not isinstance(init, dict):
            raise InputError("The recipe's 'input', 'initial' or 'steps' part has the wrong shape.")
        steps = []
        for i, sd in enumerate(raw_steps, start=1):
            if not isinstance(sd, dict):
                raise InputError(f"Step {i} of the recipe is not an object with a 'kind'.")
            # the description is written for readers; the step's parameters alone define it
            params = {k: v for k, v in sd.items() if k != "description"}
            try:
                steps.append(step_from_dict(params))
            except (TypeError, ValueError, InputError) as exc:
                what = f" ({sd['description']})" if isinstance(sd.get("description"), str) else ""
                raise InputError(f"Step {i}{what} of the recipe is not valid: {exc}") from None
        try:
            roles = Roles.from_dict(init.get("roles") or {})
        except (TypeError, ValueError, AttributeError):
            raise InputError("The recipe's initial roles are not valid.") from None
        return cls(
            steps=tuple(steps),
            roles=roles,
            missing=init.get("missing", "wildcard"),
            input_path=inp.get("path"),
            input_fingerprint=inp.get("fingerprint"),
            input_records=inp.get("records"),
            input_columns=tuple(inp.get("columns") or ()),
            kanon_version=d.get("kanon_version", "?"),
            notes=d.get("notes", ""),
            extra=d.get("extra") or {},
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Recipe:
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8-sig")
            except UnicodeDecodeError:
                raise InputError("The recipe file is not UTF-8 text.") from None
        try:
            d = json.loads(text)
        except ValueError:
            raise InputError("The recipe file is not valid JSON.") from None
        return cls.from_dict(d)

    @classmethod
    def load(cls, path: str | Path) -> Recipe:
        p = Path(path)
        if not p.exists():
            raise InputError(f"Recipe not found: {p.name}")
        return cls.from_json(p.read_bytes())

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8", newline="\n")

    def resolve_input(self, recipe_path: str | Path) -> Path:
        """The input file recorded in the recipe, relative to the recipe's folder (``kanon apply``)."""
        if not self.input_path:
            raise InputError("The recipe does not record its input file; give the data file explicitly.")
        p = Path(self.input_path)
        return p if p.is_absolute() else Path(recipe_path).resolve().parent / p

    def check_input(self, ds: Dataset) -> list[str]:
        """Notes about the input (a different file is allowed: the next wave of a survey)."""
        notes = []
        if self.input_fingerprint and ds.fingerprint != self.input_fingerprint:
            notes.append("The input file differs from the one the recipe was made on (replaying on new data).")
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
        does not fit the data, or when ``strict`` and a step has a warning.
        """
        history = History.start(self.start(ds))
        warnings: list[str] = list(self.check_input(ds))
        n = max(1, len(self.steps))
        for i, step in enumerate(self.steps, start=1):
            where = f"Step {i} ({step.describe()})"
            problems, cautions = check_step(step, history.current.dataset)
            if problems:
                raise InputError(f"{where} cannot be applied: {' '.join(problems)}")
            if cautions and strict:
                raise InputError(f"{where}: {' '.join(cautions)} (strict replay)")
            warnings.extend(f"{where}: {c}" for c in cautions)
            sub = _scaled(progress, (i - 1) / n, i / n, f"step {i} of {len(self.steps)}")
            try:
                history.apply(step, sub)
            except Cancelled:
                raise
            except KanonError as exc:
                raise InputError(f"{where} cannot be applied: {exc}") from None
            except (KeyError, ValueError, TypeError) as exc:
                raise InputError(f"{where} cannot be applied: {type(exc).__name__}") from None
            if progress is not None:
                progress.update(i / n, f"step {i} of {len(self.steps)} done")
        return Replay(history=history, warnings=tuple(warnings))

    def replay(self, ds: Dataset, progress: Progress | None = None) -> History:
        """Apply the recipe to a freshly loaded dataset, returning the full history of versions."""
        return self.replay_checked(ds, progress).history


@dataclass(frozen=True)
class Replay:
    """A replayed recipe: its history (current = the release) and warnings worth reading."""

    history: History
    warnings: tuple[str, ...] = ()

    @property
    def release(self) -> Version:
        return self.history.current


def _scaled(progress: Progress | None, lo: float, hi: float, label: str) -> Progress | None:
    """A progress for one step that maps its [0, 1] into [lo, hi] of the whole replay."""
    if progress is None:
        return None

    def forward(fraction: float, message: str) -> None:  # the parent raises Cancelled when cancelled
        progress.update(lo + (hi - lo) * fraction, f"{label}: {message}" if message else label)

    return Progress(forward)


def _role_columns(roles: Roles) -> list[str]:
    named = list(roles.qis) + list(roles.outcomes) + list(roles.direct_ids)
    return named + [c for c in (roles.weight, roles.strata, roles.psu) if c is not None]


def step_columns(step: Step) -> list[str]:
    """The variables a step names, in the order it names them (for mismatch messages)."""
    cols: list[str] = []
    if isinstance(step, SetRoles):
        cols = _role_columns(Roles(step.qis, step.weight, step.strata, step.psu, step.outcomes, step.direct_ids))
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

    Messages name variables, counts and the recipe's own parameters, never values read from records.
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
            validate_roles(ds.frame, Roles(step.qis, step.weight, step.strata, step.psu, step.outcomes,
                                           step.direct_ids))
        except InputError as exc:
            problems.append(str(exc))
    merge = getattr(step, "merge", ())
    column = getattr(step, "column", None)
    if merge and isinstance(column, str):
        from .treat.hierarchy import value_key

        present = {value_key(v) for v in ds.frame[column][~ds.missing_mask(column)].unique().tolist()}
        gone = [v for v in merge if value_key(v) not in present]
        if len(gone) == len(merge):
            problems.append(f"none of the {len(merge)} categories to merge occur in {column}.")
        elif gone:
            listed = ", ".join(map(str, gone))
            warnings.append(f"{len(gone)} of the {len(merge)} categories to merge do not occur in {column} "
                            f"(recipe categories {listed}); the others are merged.")
    return problems, warnings


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
        added.append(history.add(v.step, v.dataset))  # type: ignore[arg-type]
    return added


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
