"""Project files: save a session and reopen it later.

A project is a small JSON file holding a *reference* to the data (never the data): the file's path
(relative to the project file when possible), its name and fingerprint, or the key of a bundled sample;
the recipe of the current version; and the session settings (k, notes). Reopening loads the data,
checks that its fingerprint is the one recorded (the same file, unchanged) and replays the recipe, so
the versions come back exactly as they were. A different file is refused unless ``allow_changed``,
in which case the replay works as on a new wave of the survey and the difference is reported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .dataset import Dataset
from .errors import InputError
from .history import History
from .progress import Progress
from .recipe import Recipe, Replay, pretty_json

FORMAT = "kanon-project"
FORMAT_VERSION = 1
PROJECT_SUFFIX = ".kanon.json"


@dataclass(frozen=True)
class DataRef:
    """Where the data of a project comes from, and how to recognise it."""

    name: str
    fingerprint: str
    records: int
    path: str | None = None
    sample: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "sample": self.sample, "fingerprint": self.fingerprint,
                "records": self.records}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DataRef:
        try:
            return cls(name=str(d["name"]), fingerprint=str(d["fingerprint"]), records=int(d["records"]),
                       path=d.get("path"), sample=d.get("sample"))
        except (KeyError, TypeError, ValueError):
            raise InputError("The project's data reference is incomplete (name, fingerprint and records).") from None


@dataclass(frozen=True)
class Project:
    data: DataRef
    recipe: Recipe
    settings: dict[str, Any] = field(default_factory=dict)
    kanon_version: str = __version__

    @classmethod
    def from_history(cls, history: History, data_name: str, data_path: str | os.PathLike | None = None,
                     sample: str | None = None, settings: dict[str, Any] | None = None, notes: str = "",
                     relative_to: str | os.PathLike | None = None) -> Project:
        """The project of the current version of ``history``.

        ``data_path`` is stored relative to ``relative_to`` (the folder the project file will be saved
        in) when given, so a project and its data can be moved together.
        """
        original = history.original.dataset
        path = None
        if data_path is not None:
            path = str(data_path)
            if relative_to is not None:
                try:
                    path = os.path.relpath(Path(data_path).resolve(), Path(relative_to).resolve())
                except ValueError:  # another drive (Windows): keep the path as given
                    path = str(data_path)
            path = Path(path).as_posix()
        ref = DataRef(name=data_name, fingerprint=original.fingerprint, records=original.n_records, path=path,
                      sample=sample)
        recipe = Recipe.from_history(history, input_path=Path(path).name if path else data_name, notes=notes)
        return cls(data=ref, recipe=recipe, settings=dict(settings or {}))

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "kanon_version": self.kanon_version,
                "data": self.data.to_dict(), "settings": self.settings, "recipe": self.recipe.to_dict()}

    def to_json(self) -> str:
        return pretty_json(self.to_dict())

    @classmethod
    def from_json(cls, text: str | bytes) -> Project:
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8-sig")
            except UnicodeDecodeError:
                raise InputError("The project file is not UTF-8 text.") from None
        try:
            d = json.loads(text)
        except ValueError:
            raise InputError("The project file is not valid JSON.") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError("This is not a kanon project file (its 'format' field is missing or different).")
        if int(d.get("format_version", 0)) > FORMAT_VERSION:
            raise InputError("This project was written by a newer kanon; please upgrade.")
        settings = d.get("settings") or {}
        if not isinstance(settings, dict):
            raise InputError("The project's settings are not valid.")
        return cls(data=DataRef.from_dict(d.get("data") or {}), recipe=Recipe.from_dict(d.get("recipe") or {}),
                   settings=settings, kanon_version=str(d.get("kanon_version", "?")))

    def save(self, path: str | os.PathLike) -> Path:
        p = Path(path)
        p.write_text(self.to_json(), encoding="utf-8", newline="\n")
        return p

    @classmethod
    def load(cls, path: str | os.PathLike) -> Project:
        p = Path(path)
        if not p.exists():
            raise InputError(f"Project file not found: {p.name}")
        return cls.from_json(p.read_bytes())

    # -- reopening ----------------------------------------------------------------------------------------
    def data_path(self, project_path: str | os.PathLike | None = None) -> Path | None:
        """The data file, resolved against the project file's folder when the stored path is relative."""
        if not self.data.path:
            return None
        p = Path(self.data.path)
        if not p.is_absolute() and project_path is not None:
            p = Path(project_path).resolve().parent / p
        return p

    def check_data(self, ds: Dataset) -> str | None:
        """None when ``ds`` is the recorded data, else why not (records or content differ)."""
        if ds.n_records != self.data.records:
            return (f"The data has {ds.n_records:,} records; the project was saved on {self.data.records:,} "
                    f"records of {self.data.name}.")
        if ds.fingerprint != self.data.fingerprint:
            return f"The data differs from the file the project was saved on ({self.data.name})."
        return None

    def reopen(self, ds: Dataset, allow_changed: bool = False, progress: Progress | None = None) -> Replay:
        """Replay the project's recipe on ``ds`` after checking it is the recorded data."""
        problem = self.check_data(ds)
        if problem and not allow_changed:
            raise InputError(problem + " Load the original file, or reopen allowing a changed file.")
        replay = self.recipe.replay_checked(ds, progress)
        if problem:
            return Replay(replay.history, (problem, *replay.warnings))
        return replay


def open_project(path: str | os.PathLike, loader: Callable[[Path], Dataset] | None = None,
                 allow_changed: bool = False, progress: Progress | None = None) -> tuple[Project, Replay]:
    """Load a project file, its data (by ``loader``, default :func:`kanon_core.io.load_dataset`) and replay."""
    from .io import load_dataset

    project = Project.load(path)
    data_path = project.data_path(path)
    if data_path is None:
        raise InputError(f"The project does not record where its data is ({project.data.name}); load it first.")
    ds = (loader or load_dataset)(data_path)
    return project, project.reopen(ds, allow_changed, progress)
