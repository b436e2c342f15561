"""Treatment steps as data.

A step is a frozen dataclass holding its parameters; ``apply(dataset)`` is a pure function returning a
new :class:`~kanon_core.dataset.Dataset`. History (undo/redo), recipes, batch replay (``kanon apply``),
the CLI and the report all build on this one idea.

Each step class is registered under a unique ``kind`` with :func:`register_step`, and serialises to a
plain JSON dict ``{"kind": ..., **params}`` (``to_dict``/``step_from_dict``); replaying the same step
on the same data must give byte-identical output, so steps must be deterministic.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

from .dataset import Dataset, Roles, VariableMeta
from .errors import InputError
from .progress import Progress

STEP_TYPES: dict[str, type[Step]] = {}
S = TypeVar("S", bound="type[Step]")

CELL_SUPPRESSION_KINDS = ("local_suppression", "risk_suppression")
"""Step kinds that blank cells of the QIs and change nothing else: a step's output is its input with cells made
missing, so the people of its input can be looked for in its output (the intruder's side) cell by cell."""


def protected_k(step: Step | None, default: int) -> int:
    """The k a cell-suppression step is checked at: its own (local suppression to k), else ``default`` (the
    report's or the session's k: suppression to a risk threshold names none)."""
    own = int(getattr(step, "k", 0) or 0)
    return own if own > 1 else int(default)


def register_step(cls: S) -> S:
    """Class decorator: make a step type known to recipes by its ``kind``."""
    kind = cls.kind
    if kind in STEP_TYPES and STEP_TYPES[kind] is not cls:
        raise ValueError(f"step kind '{kind}' registered twice")
    STEP_TYPES[kind] = cls
    return cls


@dataclasses.dataclass(frozen=True)
class Step:
    """Base of all steps. Subclasses are frozen dataclasses with JSON-friendly fields."""

    kind: ClassVar[str] = "step"

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        raise NotImplementedError

    def apply_with_outcome(self, ds: Dataset, progress: Progress | None = None) -> tuple[Dataset, Any]:
        """:meth:`apply`, with what the run proved beyond its data (:attr:`kanon_core.history.Version.outcome`;
        None for a step that proves nothing more, as here)."""
        return self.apply(ds, progress), None

    def describe(self) -> str:
        """One line for the history timeline and the report."""
        return self.kind

    def describe_without_values(self) -> str:
        """One line naming the step in a message (a replay's notes and errors on the command line): the step's
        kind, variables and counts, without a value of the data (a recode's categories and thresholds)."""
        return self.describe()

    def cautions(self, before: Dataset, after: Dataset) -> list[str]:
        """What a replay must say about this step's result on the file at hand (``before`` -> ``after``): a
        treatment chosen on one file may protect less on the next wave. Counts and the step's own parameters,
        never values. None by default."""
        return []

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            d[f.name] = _plain(v)
        return d


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


FINGERPRINT_CHARS = 16


def version_fingerprint(ds: Dataset) -> str:
    """A short hash of everything a step's output consists of, recorded per step in recipes.

    ``kanon apply`` on the same file compares it after each step, so a replay proves that it reproduces
    the recorded versions (and stops at the first step that does not). It covers the frame as held in
    memory after loading (column names, each column's dtype and its cells, through
    :attr:`Dataset.fingerprint`), the roles, the missing semantics and each variable's label, value
    labels and declared missing codes. A truncated SHA-256 reveals nothing about the records; the cell
    hash is cached per dataset, so this costs a few milliseconds on the 16,197-record sample.
    """
    import hashlib
    import json

    meta = {c: [m.label, sorted([str(k), str(v)] for k, v in dict(m.value_labels).items()),
                [str(x) for x in m.missing_codes]]
            for c in ds.columns if (m := ds.meta_of(c)) != VariableMeta()}
    canonical = {
        "cells": ds.fingerprint,
        "dtypes": [str(t) for t in ds.frame.dtypes],
        # unset roles left out, so a role added to kanon later does not change the fingerprints of old recipes
        "roles": {k: v for k, v in ds.roles.to_dict().items() if v not in (None, [], ())},
        "missing": ds.missing,
        "meta": meta,
    }
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:FINGERPRINT_CHARS]


def step_from_dict(d: dict[str, Any]) -> Step:
    """Rebuild a step from its dict; list fields become tuples (steps are hashable)."""
    _ensure_registered()
    kind = d.get("kind")
    if kind not in STEP_TYPES:
        raise InputError(f"Unknown step kind '{kind}'. Known: {', '.join(sorted(STEP_TYPES))}.")
    cls = STEP_TYPES[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - names - {"kind"}
    if unknown:
        raise InputError(f"Step '{kind}' has unknown parameter(s): {', '.join(sorted(unknown))}.")
    kwargs = {k: _tuplify(v) for k, v in d.items() if k != "kind"}
    return cls(**kwargs)


def _tuplify(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuplify(x) for x in v)
    if isinstance(v, dict):
        return {k: _tuplify(x) for k, x in v.items()}
    return v


def _ensure_registered() -> None:
    """Import the modules that define steps, so recipes know every kind."""
    import importlib

    for mod in ("kanon_core.steps", "kanon_core.treat.recode", "kanon_core.treat.suppress",
                "kanon_core.declare_missing", "kanon_core.value_labels"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:  # a module not built yet must not break the others
            if exc.name != mod:
                raise


# -- basic steps ---------------------------------------------------------------------------------------------
@register_step
@dataclasses.dataclass(frozen=True)
class SetRoles(Step):
    """Change variable roles (QIs, weight, design, outcomes, direct identifiers)."""

    kind: ClassVar[str] = "set_roles"
    qis: tuple[str, ...] = ()
    weight: str | None = None
    strata: str | None = None
    psu: str | None = None
    outcomes: tuple[str, ...] = ()
    direct_ids: tuple[str, ...] = ()
    fpc: str | None = None  # last, with a default: recipes written before it existed still load

    @classmethod
    def from_roles(cls, roles: Roles) -> SetRoles:
        return cls(roles.qis, roles.weight, roles.strata, roles.psu, roles.outcomes, roles.direct_ids, roles.fpc)

    def roles(self) -> Roles:
        return Roles(self.qis, self.weight, self.strata, self.psu, self.outcomes, self.direct_ids, self.fpc)

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        return ds.with_roles(self.roles())

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if d.get("fpc") is None:
            d.pop("fpc", None)  # recipes of designs without an fpc stay as they were
        return d

    def describe(self) -> str:
        return f"Roles: {len(self.qis)} quasi-identifier(s)" + (f", weight {self.weight}" if self.weight else "")


@register_step
@dataclasses.dataclass(frozen=True)
class SetMissing(Step):
    """Switch the missing-value semantics (wildcard or category)."""

    kind: ClassVar[str] = "set_missing"
    missing: str = "wildcard"

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        return ds.with_missing(self.missing)  # type: ignore[arg-type]

    def describe(self) -> str:
        return f"Missing values as {self.missing}"


@register_step
@dataclasses.dataclass(frozen=True)
class DropVariables(Step):
    """Remove variables from the release (Wilson et al., RTI: dropping a variable is often the best recode)."""

    kind: ClassVar[str] = "drop_variables"
    columns: tuple[str, ...] = ()

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        missing = [c for c in self.columns if c not in ds.frame.columns]
        if missing:
            raise InputError(f"Cannot drop unknown variable(s): {', '.join(missing)}.")
        if len(self.columns) >= len(ds.columns):
            raise InputError("Cannot drop every variable.")
        return ds.with_frame(ds.frame.drop(columns=list(self.columns)))

    def describe(self) -> str:
        return f"Drop {', '.join(self.columns)}"


@register_step
@dataclasses.dataclass(frozen=True)
class DeclareMissingCodes(Step):
    """Declare codes of a variable that mean "missing" (e.g. -9, 99), in addition to empty cells."""

    kind: ClassVar[str] = "declare_missing_codes"
    column: str = ""
    codes: tuple[Any, ...] = ()

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        if self.column not in ds.frame.columns:
            raise InputError(f"Unknown variable '{self.column}'.")
        from .io import typed_codes

        m = ds.meta_of(self.column)
        meta = dict(ds.meta)
        # typed against the column in hand: a next wave whose column reads as text (one stray "n/a") holds the
        # text "-9", which the number -9 typed for the first wave would not match (its refusals then a category)
        codes = typed_codes(ds.frame[self.column], self.codes)
        meta[self.column] = dataclasses.replace(m, missing_codes=codes)
        return ds.with_frame(ds.frame, meta)

    def describe(self) -> str:
        return f"Missing codes of {self.column}: {', '.join(map(str, self.codes)) or 'none'}"

    def describe_without_values(self) -> str:
        return f"Missing codes of {self.column}: {len(self.codes)}"
