"""Safe output paths and atomic writes: no command ever writes over one of its inputs.

Two rules, enforced here and used by every ``kanon`` command and by :func:`kanon_core.export.write_release`:

* :func:`check_outputs` runs *before any work*: every file a command will write (the release, its
  ``<stem>.labels.json`` sidecar, JSON summaries, per-record tables, the report, recipe steps) is
  resolved and compared with every input and the input's labels sidecar (``Path.resolve`` catches
  ``./x`` vs ``x`` and symbolic links, ``os.path.samefile`` catches hard links and case-insensitive
  file systems when the file exists). An input given through a symbolic link or a hard link has more
  than one labels file that belongs to it: the one beside the name given, the one beside each link on the
  way and the one beside the file itself, and the one beside any other name the file has in the folder an
  output's labels file would go to (another hard link); each of them is protected (:func:`data_inputs`).
  Two outputs naming the same file, an output folder that does not exist and an output that is a folder
  are refused too. The microdata a disclosure officer starts from is often the only copy; losing it (or
  the labels that say which codes are missing) to a typo in ``-o`` is not recoverable.
* ``-`` means standard output only for the options that write a JSON summary (:data:`STDOUT_ROLES`),
  and for at most one of them per run; any other option given ``-`` (a per-record table, a MINUC list, a
  release, a report, a recipe step) is refused, where a writer would otherwise create a file named ``-``
  and two such options would silently overwrite each other.
* :class:`OutputBatch` writes each file to a temporary file in the same folder and renames it into place
  (``os.replace``, atomic on one file system) only when every file of the batch was written. A command
  that fails half-way leaves neither a half-written release nor a release without its report or labels.
  A target that is a symbolic link to a file is written through: the file it points to is replaced and
  the link stays. A target that exists and is no file (a pipe, ``/dev/stdout``, a device) cannot be
  renamed over without destroying it, so its bytes are written into it, before any rename of the batch;
  a failed write there (a full device, a closed pipe) is an error, never a silent loss.

Which labels file a symbolically linked input is *read* with: the one beside the name given, which is the
one the officer sees next to the file they named; when there is none, the one beside the file the link
resolves to (the reader, :func:`kanon_core.io.read_labels_sidecar`, decides). Both are protected here
whichever is read, so no output can replace either.
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

STDOUT_ROLES = frozenset({"-o/--json", "--json"})
"""The roles (option names) that may be ``-``: the options that write a command's JSON summary, documented as
writing to standard output. Every other option writes a file, and ``-`` given to it is refused."""

SIDECAR_SUFFIX = ".labels.json"


def sidecar_of(path: str | os.PathLike) -> Path:
    """``data.csv`` -> ``data.labels.json``: the labels sidecar read with (or written next to) a data file.

    The same rule as :func:`kanon_core.io.sidecar_path`, repeated so that this module imports nothing heavy.
    """
    p = Path(path)
    return p.with_name(p.stem + SIDECAR_SUFFIX)


INPUT_LABELS = "the input's labels file"


@dataclass(frozen=True)
class NamedPath:
    """A path with the role it plays in a command (``"--output"``, ``"the input file"``), for messages.

    ``labelled``: a data file whose labels file may be read beside any of its names; an output named like
    the labels file of another name of the same file (a hard link elsewhere in the output's folder) is
    refused as if it were the input's own labels file (see :func:`check_outputs`).
    """

    role: str
    path: Path
    labelled: bool = False


def _names_of(path: Path) -> list[Path]:
    """``path``, each symbolic link it passes through (a link to a link to the file) and the file it
    resolves to: every name beside which a labels file of this input may be looked for or written."""
    names = [path]
    seen = {os.path.abspath(path)}
    current = path
    for _ in range(40):  # the kernel's own limit on links followed; a loop ends here too
        if not current.is_symlink():
            break
        try:
            target = Path(os.readlink(current))
        except OSError:  # replaced while we looked: the resolved file below still counts
            break
        current = target if target.is_absolute() else current.parent / target
        key = os.path.abspath(current)
        if key in seen:
            break
        seen.add(key)
        names.append(current)
    real = Path(os.path.realpath(path))
    if os.path.abspath(real) not in seen:
        names.append(real)
    return names


def data_inputs(*paths: str | os.PathLike | None) -> list[NamedPath]:
    """Input data files and their labels sidecars (read by :func:`kanon_core.io.load_dataset`).

    An input reached through symbolic links has a labels file beside every name on the way, and the reader
    may use the one beside the resolved file when the name given has none: each is an input, so that a
    release named like the real file (``-o d.parquet`` when reading ``link.csv -> d.csv``) cannot replace
    ``d.labels.json``. Hard links are matched when outputs are checked (the other names of a file cannot be
    listed without searching the disk), by ``labelled``.
    """
    out: list[NamedPath] = []
    for p in paths:
        if p is None:
            continue
        path = Path(p)
        out.append(NamedPath("the input file", path, labelled=True))
        seen: set[str] = set()
        for name in _names_of(path):
            side = sidecar_of(name)
            key = os.path.abspath(side)
            if key not in seen:
                seen.add(key)
                out.append(NamedPath(INPUT_LABELS, side))
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


def _labels_of_another_name(out: Path, data: Path) -> bool:
    """Whether ``out`` is the labels file (``<stem>.labels.json``) of a file in its folder that is ``data``
    under another name: a hard link (same device and inode) or a symbolic link to it. Such a labels file is
    read with ``data`` when it is opened under that name, and may be the only copy of its labels."""
    try:
        st = os.stat(data)
    except OSError:  # no such input (the reader says so): nothing of it to protect
        return False
    for q in {Path(os.path.abspath(out)), Path(os.path.realpath(out))}:
        if not q.name.endswith(SIDECAR_SUFFIX) or len(q.name) == len(SIDECAR_SUFFIX):
            continue
        stem = q.name[:-len(SIDECAR_SUFFIX)]
        try:
            entries = list(os.scandir(q.parent))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.startswith(stem) or Path(entry.name).stem != stem:
                continue
            try:
                other = entry.stat()  # through a symbolic link
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return True
    return False


def _named_outputs(outputs: Mapping[str, str | os.PathLike | None] | Iterable[NamedPath],
                   stdout_roles: Iterable[str]) -> list[NamedPath]:
    """The outputs that are files: ``None`` (option not given) is left out, and ``-`` too where the role may
    write to standard output (at most one of them); ``-`` for any other role is refused, not a file named
    ``-``. The text is compared as given, so ``./-`` is a file named ``-`` on purpose."""
    if isinstance(outputs, Mapping):
        given = [(role, p, None if p is None else str(p)) for role, p in outputs.items()]
    else:
        given = [(o.role, o, str(o.path)) for o in outputs]
    allowed = set(stdout_roles)
    named: list[NamedPath] = []
    to_stdout: list[str] = []
    for role, p, text in given:
        if text is None:
            continue
        if text == STDOUT:
            if role not in allowed:
                raise InputError(f"{role} writes a file, not standard output: give a file name instead of '-'.")
            to_stdout.append(role)
            continue
        named.append(p if isinstance(p, NamedPath) else NamedPath(role, Path(text)))
    if len(to_stdout) > 1:
        raise InputError(f"{' and '.join(to_stdout)} both write to standard output ('-'); give one of them a "
                         "file name.")
    return named


def check_outputs(outputs: Mapping[str, str | os.PathLike | None] | Iterable[NamedPath],
                  inputs: Iterable[NamedPath], stdout_roles: Iterable[str] = STDOUT_ROLES) -> list[Path]:
    """Refuse, before any work, outputs that would destroy an input or each other; returns the output paths.

    ``outputs`` maps an option name to its path (``None`` is skipped) or is a list of :class:`NamedPath`
    (e.g. from :func:`release_outputs`). ``"-"`` is standard output for the roles in ``stdout_roles`` (the
    JSON summaries) and refused for every other role. Raises :class:`InputError` naming options and roles
    only, never a data value.
    """
    named = _named_outputs(outputs, stdout_roles)
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
            if inp.labelled and _labels_of_another_name(out.path, inp.path):
                raise InputError(f"{out.role} would write over {INPUT_LABELS}; choose another file name.")
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
