"""Recipes: the steps that turned the original file into a release, as a readable JSON file.

A recipe records the kanon version, the input file's fingerprint (so a replay on the same file can be
checked) and its shape, the initial roles and missing semantics, and the steps. Replaying it on the same
file gives byte-identical output; replaying it on a new file with the same variables (the next wave of a
survey) works too, and a mismatch names the step and the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .dataset import Dataset, Roles
from .errors import InputError, KanonError
from .history import History
from .progress import Progress
from .steps import Step, step_from_dict

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
                     notes: str = "") -> Recipe:
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
            "steps": [s.to_dict() for s in self.steps],
            **({"extra": self.extra} if self.extra else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Recipe:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError("This is not a kanon recipe (its 'format' field is missing or different).")
        if int(d.get("format_version", 0)) > FORMAT_VERSION:
            raise InputError("This recipe was written by a newer kanon; please upgrade.")
        inp = d.get("input") or {}
        init = d.get("initial") or {}
        steps = []
        for i, sd in enumerate(d.get("steps") or [], start=1):
            try:
                steps.append(step_from_dict(sd))
            except (TypeError, InputError) as exc:
                raise InputError(f"Step {i} of the recipe is not valid: {exc}") from None
        return cls(
            steps=tuple(steps),
            roles=Roles.from_dict(init.get("roles") or {}),
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
    def from_json(cls, text: str) -> Recipe:
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
        return cls.from_json(p.read_text(encoding="utf-8"))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    def check_input(self, ds: Dataset) -> list[str]:
        """Warnings about the input (a different file is allowed: the next wave of a survey)."""
        notes = []
        if self.input_fingerprint and ds.fingerprint != self.input_fingerprint:
            notes.append("The input file differs from the one the recipe was made on (replaying on new data).")
        missing_cols = [c for c in self.input_columns if c not in ds.columns]
        if missing_cols:
            notes.append(f"Variables of the original file not in this one: {', '.join(missing_cols)}.")
        return notes

    def replay(self, ds: Dataset, progress: Progress | None = None) -> History:
        """Apply the recipe to a freshly loaded dataset, returning the full history of versions."""
        try:
            start = Dataset(frame=ds.frame, meta=ds.meta, roles=self.roles, missing=self.missing, name=ds.name)  # type: ignore[arg-type]
        except InputError as exc:
            raise InputError(f"The recipe's roles do not fit this file: {exc}") from None
        history = History.start(start)
        for i, step in enumerate(self.steps, start=1):
            try:
                history.apply(step, None)
            except KanonError as exc:
                raise InputError(f"Step {i} ({step.describe()}) cannot be applied: {exc}") from None
            except (KeyError, ValueError) as exc:
                raise InputError(f"Step {i} ({step.describe()}) cannot be applied: {type(exc).__name__}") from None
            if progress is not None:
                progress.update(i / max(1, len(self.steps)), f"step {i} of {len(self.steps)}")
        return history
