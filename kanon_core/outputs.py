"""Safe output paths and atomic writes: no command ever writes over one of its inputs.

Two rules, enforced here and used by every ``kanon`` command and by :func:`kanon_core.export.write_release`:

* :func:`check_outputs` runs *before any work*: every file a command will write (the release, its
  ``<stem>.labels.json`` sidecar, JSON summaries, per-record tables, the report, recipe steps) is
  resolved and compared with every input and the input's labels sidecar (``Path.resolve`` catches
  ``./x`` vs ``x`` and symbolic links, ``os.path.samefile`` catches hard links and case-insensitive
  file systems when the file exists). Two outputs naming the same file, an output folder that does not
  exist and an output that is a folder are refused too. The microdata a disclosure officer starts from
  is often the only copy; losing it to a typo in ``-o`` is not recoverable.
* :class:`OutputBatch` writes each file to a temporary file in the same folder and renames it into place
  (``os.replace``, atomic on one file system) only when every file of the batch was written. A command
  that fails half-way leaves neither a half-written release nor a release without its report or labels.
  A target that is a symbolic link to a file is written through: the file it points to is replaced and
  the link stays. A target that exists and is no file (a pipe, ``/dev/stdout``, a device) cannot be
  renamed over without destroying it, so its bytes are written into it, before any rename of the batch;
  a failed write there (a full device, a closed pipe) is an error, never a silent loss.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .errors import InputError

STDOUT = "-"
"""The name that means standard output (JSON summaries), never a file."""

SIDECAR_SUFFIX = ".labels.json"


def sidecar_of(path: str | os.PathLike) -> Path:
    """``data.csv`` -> ``data.labels.json``: the labels sidecar read with (or written next to) a data file.

    The same rule as :func:`kanon_core.io.sidecar_path`, repeated so that this module imports nothing heavy.
    """
    p = Path(path)
    return p.with_name(p.stem + SIDECAR_SUFFIX)


@dataclass(frozen=True)
class NamedPath:
    """A path with the role it plays in a command (``"--output"``, ``"the input file"``), for messages."""

    role: str
    path: Path


def data_inputs(*paths: str | os.PathLike | None) -> list[NamedPath]:
    """Input data files and their labels sidecars (read by :func:`kanon_core.io.load_dataset`)."""
    out: list[NamedPath] = []
    for p in paths:
        if p is None:
            continue
        out.append(NamedPath("the input file", Path(p)))
        out.append(NamedPath("the input's labels file", sidecar_of(p)))
    return out


def folder_inputs(folder: str | os.PathLike | None, role: str) -> list[NamedPath]:
    """Every file in an input folder (e.g. the hierarchy files of ``kanon generalize``)."""
    if folder is None:
        return []
    d = Path(folder)
    if not d.is_dir():
        return [NamedPath(role, d)]
    return [NamedPath(role, p) for p in sorted(d.iterdir()) if p.is_file()]


def release_outputs(path: str | os.PathLike | None, role: str = "--output", sidecar: bool = True) -> list[NamedPath]:
    """A release file and, for CSV and Parquet, the labels sidecar the writers put next to it."""
    if path is None:
        return []
    p = Path(path)
    out = [NamedPath(role, p)]
    if sidecar and p.suffix.lower() in (".csv", ".parquet"):
        out.append(NamedPath(f"the labels file of {role}", sidecar_of(p)))
    return out


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): different files
        return False


def check_outputs(outputs: Mapping[str, str | os.PathLike | None] | Iterable[NamedPath],
                  inputs: Iterable[NamedPath]) -> list[Path]:
    """Refuse, before any work, outputs that would destroy an input or each other; returns the output paths.

    ``outputs`` maps an option name to its path (``None`` and ``"-"`` — standard output — are skipped) or
    is a list of :class:`NamedPath` (e.g. from :func:`release_outputs`). Raises :class:`InputError`
    naming options and roles only, never a data value.
    """
    if isinstance(outputs, Mapping):
        named = [NamedPath(role, Path(p)) for role, p in outputs.items() if p is not None and str(p) != STDOUT]
    else:
        named = [o for o in outputs if str(o.path) != STDOUT]
    ins = list(inputs)
    for i, out in enumerate(named):
        if not str(out.path) or out.path.name in ("", ".", ".."):
            raise InputError(f"{out.role} needs a file name.")
        parent = _written_path(out.path).parent
        if not parent.is_dir():
            raise InputError(f"The folder of {out.role} does not exist; create it first.")
        if out.path.is_dir():
            raise InputError(f"{out.role} names a folder; give a file name.")
        for inp in ins:
            if _same_file(out.path, inp.path):
                raise InputError(f"{out.role} would write over {inp.role}; choose another file name.")
        for other in named[:i]:
            if _same_file(out.path, other.path):
                raise InputError(f"{other.role} and {out.role} name the same file; give each its own name.")
    return [o.path for o in named]


def _is_stream(path: Path) -> bool:
    """Whether ``path`` exists (through symbolic links) and is neither a file nor a folder: a pipe, a
    terminal, a device such as ``/dev/stdout`` or ``/dev/full``. Renaming over such a path would replace it
    with a file and its reader would get nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # does not exist yet (or a dangling link): a new file
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _written_path(path: Path) -> Path:
    """The file a write to ``path`` replaces: the file a symbolic link points to (the link stays), else
    ``path`` itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _default_mode() -> int:
    """The permissions an ordinary ``open(path, "w")`` would give (0o666 minus the umask)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class OutputBatch:
    """Files written together or not at all: temporary files in the target folders, renamed on commit.

    Use as a context manager: the files are renamed into place when the block ends without an error, and
    every temporary file is removed when it raises. An existing target keeps its permissions.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []  # (temporary, target) of files renamed into place
        self._streams: list[tuple[Path, Path]] = []  # (temporary, target) of targets written into (pipes, devices)
        self._done = False

    def temp_path(self, target: str | os.PathLike) -> Path:
        """A new empty temporary file next to ``target``, with the same extension (writers that pick the
        format from the name, such as pyreadstat, still work); it becomes ``target`` on commit."""
        t = Path(target)
        stream = _is_stream(t)
        if not stream:
            t = _written_path(t)
        # a short prefix keeps long names within the file system's limit of 255 bytes; a stream's bytes wait in
        # the private temporary folder (a device's folder is not ours to write in)
        fd, name = tempfile.mkstemp(dir=None if stream else t.parent, prefix=f".{t.stem[:60]}.",
                                    suffix=f".tmp{t.suffix[:20]}")
        os.close(fd)
        tmp = Path(name)
        (self._streams if stream else self._pending).append((tmp, t))
        return tmp

    def write_bytes(self, target: str | os.PathLike, data: bytes) -> None:
        tmp = self.temp_path(target)
        with open(tmp, "wb") as fh:
            fh.write(data)

    def write_text(self, target: str | os.PathLike, text: str) -> None:
        """UTF-8 with the line ends as given (``\\n``), the same bytes on every platform."""
        self.write_bytes(target, text.encode("utf-8"))

    @property
    def targets(self) -> list[Path]:
        return [t for _, t in self._streams + self._pending]

    def commit(self) -> list[Path]:
        """Rename every temporary file into place; returns the targets."""
        if self._done:
            raise RuntimeError("This batch of outputs was already committed or discarded.")
        mode = _default_mode()
        try:
            for tmp, target in self._streams:  # first: a failed write leaves every file of the batch untouched
                with open(tmp, "rb") as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
            for tmp, target in self._pending:
                try:
                    os.chmod(tmp, os.stat(target).st_mode & 0o7777)
                except FileNotFoundError:
                    os.chmod(tmp, mode)
            for i, (tmp, target) in enumerate(self._pending):
                os.replace(tmp, target)
                self._pending[i] = (target, target)
        finally:
            self._discard_temps()
        self._done = True
        return self.targets

    def discard(self) -> None:
        """Remove every temporary file; no target is touched."""
        self._discard_temps()
        self._done = True

    def _discard_temps(self) -> None:
        for tmp, target in self._pending:
            if tmp != target:
                tmp.unlink(missing_ok=True)
        for tmp, _ in self._streams:
            tmp.unlink(missing_ok=True)

    def __enter__(self) -> OutputBatch:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def write_files(files: Sequence[tuple[str | os.PathLike, bytes]]) -> list[Path]:
    """Write ``(path, bytes)`` pairs all together (see :class:`OutputBatch`)."""
    with OutputBatch() as batch:
        for path, data in files:
            batch.write_bytes(path, data)
    return batch.targets


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write one file through a temporary file and a rename: readers never see it half-written."""
    return write_files([(path, data)])[0]


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """A temporary path for a writer that needs a file name; renamed to ``target`` if the block succeeds."""
    with OutputBatch() as batch:
        yield batch.temp_path(target)
