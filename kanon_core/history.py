"""Versions of a dataset: an immutable tree with a current pointer, unlimited undo/redo and branching.

Version 0 is the data as loaded (with its initial roles). Every treatment step makes a child version;
nothing is ever overwritten, so undo is a pointer move and branching from an old version is just
applying a step there. The path from version 0 to any version is a recipe (:mod:`kanon_core.recipe`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from .dataset import Dataset
from .errors import InputError
from .progress import Progress
from .steps import Step

_session_ids = itertools.count(1)


@dataclass(frozen=True)
class Version:
    id: int
    parent: int | None
    step: Step | None
    dataset: Dataset
    outcome: Any = None
    """What the step's run proved beyond its data, when it says (a suppression's
    :class:`~kanon_core.treat.suppress_result.Optimality`), for the report; None otherwise."""

    @property
    def label(self) -> str:
        return "Original data" if self.step is None else self.step.describe()


@dataclass
class History:
    """All versions of one session. ``uid`` distinguishes histories in caches."""

    versions: dict[int, Version]
    current_id: int = 0
    redo_stack: list[int] = field(default_factory=list)
    uid: int = field(default_factory=lambda: next(_session_ids))
    # The highest version number and how many versions there were when it was counted, kept so that
    # adding a version does not scan every version number: a replay adds up to 10,000 versions, and a
    # scan per step made replays quadratic. -1: not counted yet.
    _last_id: int = field(default=0, init=False, repr=False, compare=False)
    _counted: int = field(default=-1, init=False, repr=False, compare=False)

    @classmethod
    def start(cls, dataset: Dataset) -> History:
        return cls(versions={0: Version(0, None, None, dataset)})

    @property
    def current(self) -> Version:
        return self.versions[self.current_id]

    @property
    def original(self) -> Version:
        return self.versions[0]

    def apply(self, step: Step, progress: Progress | None = None) -> Version:
        """Apply ``step`` to the current version; the result becomes current (redo is cleared)."""
        new_ds, outcome = step.apply_with_outcome(self.current.dataset, progress)
        return self.add(step, new_ds, outcome)

    def add(self, step: Step, dataset: Dataset, outcome: Any = None) -> Version:
        """Record a version computed elsewhere (e.g. a suppression run with progress in the UI), with what its
        run proved (:attr:`Version.outcome`)."""
        vid = self._next_id()
        version = Version(vid, self.current_id, step, dataset, outcome)
        self.versions[vid] = version
        self.current_id = vid
        self.redo_stack.clear()
        return version

    def _next_id(self) -> int:
        """The number of the next version: one above the highest so far, counted once and then kept."""
        vid = self._last_id + 1
        if len(self.versions) != self._counted or vid in self.versions:
            vid = max(self.versions) + 1  # first version added, or ``versions`` was changed directly
        self._last_id, self._counted = vid, len(self.versions) + 1
        return vid

    def can_undo(self) -> bool:
        return self.current.parent is not None

    def can_redo(self) -> bool:
        return bool(self.redo_stack)

    def undo(self) -> Version:
        if not self.can_undo():
            raise InputError("Nothing to undo: this is the original data.")
        self.redo_stack.append(self.current_id)
        self.current_id = self.current.parent  # type: ignore[assignment]
        return self.current

    def redo(self) -> Version:
        if not self.can_redo():
            raise InputError("Nothing to redo.")
        self.current_id = self.redo_stack.pop()
        return self.current

    def checkout(self, vid: int) -> Version:
        """Make any version current (branching: the next step becomes a new child of it)."""
        if vid not in self.versions:
            raise InputError(f"There is no version {vid}.")
        self.current_id = vid
        self.redo_stack.clear()
        return self.current

    def lineage(self, vid: int | None = None) -> list[Version]:
        """Versions from the original to ``vid`` (default: current), in order."""
        v = self.versions[self.current_id if vid is None else vid]
        chain = [v]
        while v.parent is not None:
            v = self.versions[v.parent]
            chain.append(v)
        return chain[::-1]

    def steps(self, vid: int | None = None) -> list[Step]:
        return [v.step for v in self.lineage(vid) if v.step is not None]
