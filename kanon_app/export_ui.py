"""What the Export page offers, built from the session (no Streamlit calls here, so tests use it directly).

Every file is built in memory from kanon_core: the data through :mod:`kanon_core.export` (the same bytes
``kanon apply`` writes), the recipe through :class:`~kanon_core.recipe.Recipe`, the report through
:mod:`kanon_core.report` and the project file through :class:`~kanon_core.project.Project`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kanon_core.dataset import Dataset
from kanon_core.errors import KanonError
from kanon_core.export import (
    FORMATS,
    ExportOptions,
    Release,
    check_options,
    export_bytes,
    labels_file,
    release_stem,
)
from kanon_core.history import History, Version
from kanon_core.io import load_dataset
from kanon_core.project import PROJECT_SUFFIX, Project
from kanon_core.recipe import Recipe, Replay, graft

from .samples import SAMPLES, load_sample


@dataclass(frozen=True)
class Download:
    label: str
    file_name: str
    mime: str
    make: Callable[[], bytes]


def input_name(source: Mapping[str, Any]) -> str:
    """The loaded file's name (never a path of this machine): what a recipe records as its input."""
    if source.get("path"):
        return Path(str(source["path"])).name
    return str(source.get("name") or source.get("title") or "data")


class DownloadFailed(RuntimeError):
    """A file asked for by a deferred download could not be made. Streamlit logs this exception with its
    traceback and tells the browser only that the file failed; its text names the file and nothing else, and
    the reason waits in the session's ``failures`` for the Export page's next run."""


def made_or_recorded(make: Callable[[], bytes], file_name: str, failures: dict[str, str] | None) -> bytes:
    """``make()``, or the reason it failed recorded in ``failures`` under ``file_name`` and
    :class:`DownloadFailed` raised in its place.

    Why: a download's bytes are made on click, outside the page's run, so a refusal (the read-back check of
    :mod:`kanon_core.release_check`, a code clash) cannot become a message on the page there; and Streamlit
    logs the exception raised with its chain. A kanon message is one line without data values, so it is
    kept as the reason; any other exception's text may quote a cell, so only its type is, and the chain is
    cut (``from None``) so that the log shows neither."""
    try:
        return make()
    except KanonError as exc:
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001 - its text may quote a cell: only its type is kept
        reason = f"an unexpected error ({type(exc).__name__}) while writing it; nothing was downloaded"
    if failures is not None:
        failures[file_name] = reason
    raise DownloadFailed(f"{file_name} was not made: the Export page says why.") from None


def data_downloads(history: History, version: Version, options: ExportOptions,
                   failures: dict[str, str] | None = None) -> list[Download]:
    """One download per format; the bytes are made on click (deferred), exactly as ``kanon apply`` writes.
    A file that cannot be made leaves its reason in ``failures`` (:func:`made_or_recorded`)."""
    original = history.original.dataset
    ds = version.dataset
    stem = release_stem(ds.name, version.id)
    out = []
    for f in FORMATS.values():
        name = f"{stem}{f.ext}"

        def make(fmt: str = f.key, name: str = name) -> bytes:
            return made_or_recorded(lambda: export_bytes(ds, fmt, original, options, stem).data, name, failures)
        out.append(Download(f"{f.title} ({f.ext})", name, f.mime, make))
    return out


def release_notes_of(version: Version) -> list[str]:
    """What the users of the version's release must be told, per format (:func:`kanon_core.export.release_notes`,
    which ``kanon apply`` prints as notices): variables renamed for SPSS or Stata, CSV cells a spreadsheet may run
    as formulas."""
    from kanon_core.export import release_notes

    out = []
    for f in FORMATS.values():
        out += [note if f.key != "csv" else f"CSV: {note}" for note in release_notes(version.dataset.frame, f.key)]
    return out


def failure_messages(failures: dict[str, str]) -> list[str]:
    """What the Export page says about the downloads that failed since its last run (each said once: they
    are taken out of ``failures``)."""
    said = [f"{name} was not downloaded: {reason}" for name, reason in list(failures.items())]
    for name in list(failures):
        failures.pop(name, None)
    return said


def labels_download(history: History, version: Version, options: ExportOptions) -> Download | None:
    """The labels sidecar that goes with the CSV/Parquet files (None when the data has no labels)."""
    stem = release_stem(version.dataset.name, version.id)
    lf = labels_file(version.dataset, "csv", history.original.dataset, options, stem)
    if lf is None:
        return None
    return Download("Labels for CSV/Parquet (.labels.json)", lf.name, lf.mime, lambda: lf.data)


def export_problem(rel: Release, options: ExportOptions) -> str | None:
    """Why the SPSS/CSV files cannot be written with these options (a code clash), else None."""
    from kanon_core.errors import KanonError

    try:
        check_options(rel, options, "sav")
        check_options(rel, options, "csv")
    except KanonError as exc:
        return str(exc)
    return None


def recipe_for(history: History, source: Mapping[str, Any], settings: Mapping[str, Any],
               version: Version | None = None) -> Recipe:
    extra = {"k": int(settings.get("k", 3))}
    return Recipe.from_history(history, None if version is None else version.id, input_path=input_name(source),
                               notes=str(settings.get("notes", "")), extra=extra)


def project_for(history: History, source: Mapping[str, Any], settings: Mapping[str, Any],
                hierarchies: Mapping[str, Any] | None = None) -> Project:
    """The session as a project file: every version (all branches), the hierarchies and the settings."""
    name = input_name(source)
    sample = source.get("key") if source.get("kind") == "sample" else None
    keep = {k: v for k, v in settings.items() if isinstance(v, (str, int, float, bool)) or v is None}
    return Project.from_history(history, data_name=name, data_path=name, sample=sample, settings=keep,
                                notes=str(settings.get("notes", "")), hierarchies=hierarchies)


def project_file_name(source: Mapping[str, Any]) -> str:
    return Path(input_name(source)).stem + PROJECT_SUFFIX


def replay_recipe(history: History, recipe: Recipe, strict: bool, progress: Any = None) -> Replay:
    """Replay ``recipe`` on the session's original data and add its versions as a branch from version 0."""
    replay = recipe.replay_checked(history.original.dataset, progress, strict=strict)
    graft(history, replay, 0)
    return replay


def project_data(project: Project, current: Dataset, upload: tuple[bytes, str] | None) -> tuple[Dataset, dict]:
    """The data a project refers to: its sample, an uploaded file, or the data already loaded."""
    from kanon_core.errors import InputError

    key = project.data.sample
    if key and key in SAMPLES:
        s = SAMPLES[key]
        return load_sample(key), {"kind": "sample", "key": key, "title": s.title, "path": str(s.path)}
    if upload is not None:
        data, name = upload
        return load_dataset(data, filename=name), {"kind": "upload", "title": name, "name": name}
    if current.fingerprint == project.data.fingerprint:
        return current, {"kind": "upload", "title": project.data.name, "name": project.data.name}
    raise InputError(f"The project's data is the file {project.data.name}: upload it together with the project.")


def report_hierarchies(history: History, version: Version,
                       qis: tuple[str, ...]) -> tuple[dict[str, Any], list[str]]:
    """The session's hierarchies the report measures Prec with (as the Compare page's, on the original seen with
    the version's roles), and the message of each QI left without one.

    A QI whose hierarchy cannot be made (one with no observed values needs none) is left out, as the Compare
    and Recode pages say rather than fail: the report measures its information loss without a hierarchy."""
    from kanon_core.errors import KanonError
    from kanon_core.utility.baseline import original_with_roles

    from . import hierarchy_ui

    try:
        base = original_with_roles(history, version.id)
    except KanonError as exc:
        return {}, [str(exc)]
    found: dict[str, Any] = {}
    problems: list[str] = []
    for q in qis:  # one at a time: one QI's problem leaves the others' hierarchies
        try:
            found.update(hierarchy_ui.effective_hierarchies(base, [q])[0])
        except KanonError as exc:
            problems.append(str(exc))
    return found, problems


def minucs_of_minucs_page(history: History, version: Version, qis: tuple[str, ...],
                          k: int) -> tuple[Any, Any] | None:
    """The MINUCs page's searches the report can reuse: (before, after) when that page has searched the
    version and the original (seen with the version's roles) on the same QIs, k and semantics, else None.
    A search made on a version with the original's codes (e.g. one that only set roles) counts as the
    original's."""
    from . import state

    key = (tuple(qis), int(k), None, version.dataset.missing)
    after = state.memo_peek("minucs", key)
    if after is None:
        return None
    before = original_minucs_of_minucs_page(history, version, qis, k)
    return None if before is None else (before, after)


def original_minucs_of_minucs_page(history: History, version: Version, qis: tuple[str, ...], k: int) -> Any | None:
    """The MINUCs page's search of the original seen with ``version``'s roles (made on ``version``, the original
    or a version between them that shows the original's codes on ``qis``, such as one that only set roles), on
    the same QIs, k, semantics and all sizes, or None: the report's side before, whose MINUCs the release's
    search can carry over."""
    from . import state

    key = (tuple(qis), int(k), None, version.dataset.missing)
    for v in reversed(history.lineage(version.id)):
        found = state.memo_peek("minucs", key, version=v)
        if found is not None and shows_original_codes(history, version, qis, v):
            return found
    return None


def shows_original_codes(history: History, version: Version, qis: tuple[str, ...],
                         other: Version | None = None) -> bool:
    """Whether ``other`` (default ``version``) holds, on ``qis``, the codes of the original seen with
    ``version``'s roles: a MINUC search of it is then the original's for ``version``'s report (the first
    version, or one that only set roles). False when the codes cannot be read (the report says why)."""
    import numpy as np

    from kanon_core.errors import KanonError
    from kanon_core.utility.baseline import original_with_roles

    try:
        base = original_with_roles(history, version.id).qi_matrix(list(qis)).codes
        return bool(np.array_equal((other or version).dataset.qi_matrix(list(qis)).codes, base))
    except KanonError:
        return False
