"""Project files: save a session and reopen it later.

A project is a small JSON file holding a *reference* to the data (never the data): the file's path
(relative to the project file when possible), its name and fingerprint, or the key of a bundled sample;
the whole version tree of the session (every branch: each version's parent, step and output fingerprint,
and which version is current); the recipe of the current version, for readers; the session's
generalization hierarchies; and the settings (k, notes). Reopening loads the data, checks that its
fingerprint is the one recorded (the same file, unchanged) and replays the tree, checking each version's
output against its recorded fingerprint, so every version comes back exactly as it was, with the same
number. A different file is refused unless ``allow_changed``, in which case the replay works as on a new
wave of the survey (nothing recorded to compare with) and the difference is reported.

Project files of format 1 (the current lineage only) still open: their recipe is replayed.

A project file may come from someone else and is read as defensively as a recipe
(:func:`kanon_core.recipe.parse_json`): besides the recipe's checks, every part must be one kanon writes
(a misspelt "versions" would reopen a format-1 project and drop the branches in silence), the data reference
has its types (a count is not read from "60" or 60.9), and the settings are values the dashboard can use.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .dataset import Dataset
from .errors import InputError
from .history import History
from .progress import Progress, scaled_progress
from .recipe import (
    MAX_NUMBER,
    Recipe,
    Replay,
    apply_checked,
    check_count,
    check_depth,
    check_format_version,
    count_field,
    describe_type,
    file_name_field,
    fits,
    parse_json,
    parse_step,
    pretty_json,
    read_limited,
    refuse_unknown,
)
from .steps import Step, version_fingerprint
from .treat.hierarchy import Hierarchy, hierarchy_from_json

FORMAT = "kanon-project"
FORMAT_VERSION = 2
PROJECT_SUFFIX = ".kanon.json"

_PROJECT_FIELDS = frozenset({"format", "format_version", "kanon_version", "data", "settings", "recipe", "versions",
                             "hierarchies"})
_DATA_FIELDS = frozenset({"name", "path", "sample", "fingerprint", "records"})
_TREE_FIELDS = frozenset({"current", "tree"})


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
        """The data reference of a project file, each field of its own type (nothing converted: 60.9 records
        are not 60, a list is not a path); one-line errors naming the field."""
        where = "The project's data reference"
        if not isinstance(d, dict) or any(d.get(k) is None for k in ("name", "fingerprint", "records")):
            raise InputError(f"{where} is incomplete (name, fingerprint and records).")
        refuse_unknown(d, _DATA_FIELDS, f"{where} has")
        name = d["name"]
        if not (isinstance(name, str) and name.isprintable() and len(name) <= 1000):
            raise InputError(f"{where} field 'name' should be a printable name (a file name, on one line).")
        if not isinstance(d["fingerprint"], str):
            raise InputError(f"{where} field 'fingerprint' should be text.")
        sample = d.get("sample")
        if not fits(sample, str | None):
            raise InputError(f"{where} field 'sample' should be text or null.")
        return cls(name=name, fingerprint=d["fingerprint"], records=count_field(d, "records", where),  # type: ignore[arg-type]
                   path=file_name_field(d, "path", where), sample=sample)


@dataclass(frozen=True)
class SavedVersion:
    """One version of the tree as saved: its number, its parent's, its step and its output's fingerprint."""

    id: int
    parent: int
    step: Step
    fingerprint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "parent": self.parent, "description": self.step.describe(), **self.step.to_dict(),
                **({"output_fingerprint": self.fingerprint} if self.fingerprint else {})}


@dataclass(frozen=True)
class Project:
    """A saved session. ``tree`` holds every version but the original, parents before children; an empty
    tree (a format-1 file) means the versions are the lineage of ``recipe``."""

    data: DataRef
    recipe: Recipe
    settings: dict[str, Any] = field(default_factory=dict)
    kanon_version: str = __version__
    tree: tuple[SavedVersion, ...] = ()
    current: int = 0
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)

    @classmethod
    def from_history(cls, history: History, data_name: str, data_path: str | os.PathLike | None = None,
                     sample: str | None = None, settings: dict[str, Any] | None = None, notes: str = "",
                     relative_to: str | os.PathLike | None = None,
                     hierarchies: Mapping[str, Hierarchy] | None = None) -> Project:
        """The project of ``history``: all its versions, the current one's recipe, and ``hierarchies``.

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
        tree = tuple(SavedVersion(v.id, v.parent, v.step, version_fingerprint(v.dataset))  # type: ignore[arg-type]
                     for vid, v in sorted(history.versions.items()) if v.parent is not None)
        return cls(data=ref, recipe=recipe, settings=dict(settings or {}), tree=tree, current=history.current_id,
                   hierarchies={str(k): h for k, h in (hierarchies or {}).items()})

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "kanon_version": self.kanon_version,
                "data": self.data.to_dict(), "settings": self.settings, "recipe": self.recipe.to_dict(),
                "versions": {"current": self.current, "tree": [v.to_dict() for v in self.tree]},
                "hierarchies": {name: h.to_json() for name, h in self.hierarchies.items()}}

    def to_json(self) -> str:
        return pretty_json(self.to_dict())

    @classmethod
    def from_json(cls, text: str | bytes) -> Project:
        """Read a project file (format 1 or 2), checking every part; one-line errors, no values."""
        d = parse_json(text, "project")
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError("This is not a kanon project file (its 'format' field is missing or different).")
        check_depth(d, "project")
        check_format_version(d, FORMAT_VERSION, "project", digits_as_text=False)
        refuse_unknown(d, _PROJECT_FIELDS, "The project has")
        settings = _read_settings(d.get("settings"))
        kanon_version = d.get("kanon_version", "?")
        if not isinstance(kanon_version, str):
            raise InputError("The project's field 'kanon_version' should be text.")
        data = d.get("data") or {}
        if not isinstance(data, dict):
            raise InputError("The project's data reference is incomplete (name, fingerprint and records).")
        recipe = d.get("recipe") or {}
        if not isinstance(recipe, dict):
            raise InputError("The project's recipe part has the wrong shape.")
        tree, current = _read_tree(d.get("versions"))
        return cls(data=DataRef.from_dict(data), recipe=Recipe.from_dict(recipe), settings=settings,
                   kanon_version=kanon_version, tree=tree, current=current,
                   hierarchies=_read_hierarchies(d.get("hierarchies")))

    def save(self, path: str | os.PathLike) -> Path:
        p = Path(path)
        p.write_text(self.to_json(), encoding="utf-8", newline="\n")
        return p

    @classmethod
    def load(cls, path: str | os.PathLike) -> Project:
        return cls.from_json(read_limited(path, "project", "Project file not found"))

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
        """Replay the project's version tree on ``ds`` after checking it is the recorded data.

        Every version comes back with its number and parent, the saved current version is current, and
        on the recorded data each version's output is checked against its fingerprint (the first that
        differs stops the reopening, naming the version).
        """
        problem = self.check_data(ds)
        if problem and not allow_changed:
            raise InputError(problem + " Load the original file, or reopen allowing a changed file.")
        replay = self._replay_tree(ds, progress) if self.tree else self.recipe.replay_checked(ds, progress)
        if problem:
            return Replay(replay.history, (problem, *replay.warnings), replay.verified_steps)
        return replay

    def _replay_tree(self, ds: Dataset, progress: Progress | None) -> Replay:
        history = History.start(self.recipe.start(ds))
        warnings = list(self.recipe.check_input(ds))
        verify = self.recipe.same_input(ds)
        start_fp = self.recipe.start_fingerprint
        if verify and start_fp and version_fingerprint(history.original.dataset) != start_fp:
            verify = False
            warnings.append("The input's labels or missing codes differ from those the project was saved with "
                            "(the versions' recorded results are not checked).")
        ids = {0: 0}  # saved number -> number in the new history (the same when the tree is complete)
        verified, n = 0, max(1, len(self.tree))
        for i, v in enumerate(self.tree, start=1):
            history.checkout(ids[v.parent])
            sub = scaled_progress(progress, (i - 1) / n, i / n, f"version {v.id}")
            expected = v.fingerprint if verify else None
            warnings.extend(apply_checked(history, v.step, f"Version {v.id}", sub, expected=expected, source="project"))
            verified += expected is not None
            ids[v.id] = history.current_id
            if progress is not None:
                progress.update(i / n, f"version {i} of {len(self.tree)} done")
        history.checkout(ids[self.current])
        return Replay(history=history, warnings=tuple(warnings), verified_steps=verified)


def _read_tree(raw: Any) -> tuple[tuple[SavedVersion, ...], int]:
    """The saved version tree (absent in format 1: empty) and the current version's number."""
    if raw is None:
        return (), 0
    bad = "The project's version tree is not valid (numbers, parents or the current version)."
    if not isinstance(raw, dict) or not isinstance(raw.get("tree", []), list):
        raise InputError(bad)
    refuse_unknown(raw, _TREE_FIELDS, "The project's version tree has")
    check_count(len(raw.get("tree", [])), "project", "versions")
    known = {0}
    tree = []
    for entry in raw.get("tree", []):
        if not isinstance(entry, dict):
            raise InputError(bad)
        vid, parent = entry.get("id"), entry.get("parent")
        if not (fits(vid, int) and fits(parent, int)) or vid in known or parent not in known:
            raise InputError(bad)  # parents come first: a tree saved by kanon is in version order
        params = {k: x for k, x in entry.items() if k not in ("id", "parent")}
        step, fp = parse_step(params, f"Version {vid} of the project")
        tree.append(SavedVersion(vid, parent, step, fp))
        known.add(vid)
    current = raw.get("current", 0)
    if not fits(current, int) or current not in known:
        raise InputError(bad)
    return tuple(tree), current


def _whole_k(v: Any) -> bool:
    return fits(v, int) and 1 <= v <= 10**6


def _share(v: Any) -> bool:
    return fits(v, float) and 0 <= v <= 1


def _risk(v: Any) -> bool:
    return fits(v, float) and 0 < v < 1


_SETTINGS: dict[str, tuple[Callable[[Any], bool], str]] = {
    # the settings the dashboard reads back with int(), float() or bool(): each must be what it writes
    "k": (_whole_k, "a whole number from 1 to 1,000,000"),
    "alpha": (_share, "a number from 0 to 1"),
    "max_risk": (_risk, "a number above 0 and below 1"),
    "notes": (lambda v: fits(v, str), "text"),
    "suppressed_code": (lambda v: fits(v, int) and abs(v) <= MAX_NUMBER, "a whole number"),
    "csv_code": (lambda v: fits(v, bool), "true or false"),
}


def _read_settings(raw: Any) -> dict[str, Any]:
    """The session's settings: plain values (the dashboard saves no other), those it reads back of their type."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError("The project's 'settings' part has the wrong shape.")
    for key, value in raw.items():
        name = key if key.isprintable() and len(key) <= 60 else "(a name that is not printable)"
        check, words = _SETTINGS.get(key, (lambda v: fits(v, Any), describe_type(Any)))
        if not check(value):
            raise InputError(f"The project's setting '{name}' should be {words}.")
    return raw


def _read_hierarchies(raw: Any) -> dict[str, Hierarchy]:
    """The session's hierarchies by variable, each as rows of texts (original, level 1, ..., root)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError("The project's hierarchies part has the wrong shape.")
    out = {}
    for name, rows in raw.items():
        if not (name.isprintable() and 0 < len(name) <= 200):
            raise InputError("The project's hierarchies part names a variable that is not a printable name.")
        if not fits(rows, tuple[tuple[str, ...], ...]):
            raise InputError(f"The project's hierarchy of '{name}' should be a list of rows of texts.")
        out[str(name)] = hierarchy_from_json(rows, str(name))
    return out


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
