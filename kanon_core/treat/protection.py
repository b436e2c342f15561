"""Protection models for local suppression: what a release promises, and how that promise is checked.

A suppression is only as good as the criterion it meets. Three criteria are in use in this field and
they promise different things, so every run names its model (CLI ``--model``, the Suppress page, the
recipe and the report):

* ``strict`` (the default): a suppressed cell is a value of its own. A released record's class is the
  set of records with the same visible values and the same suppressed QIs, and every class has at least
  k records (k-anonymity with suppression: Samarati 2001; Sweeney 2002). No person can be narrowed down
  to fewer than k released records by the values the file holds; blanked records protect nobody but each
  other. Under ``wildcard`` semantics a value missing in the input is taken to be unknown to the intruder
  (the intruder's count reads it as any value); under ``category`` it is a value like any other.
* ``release`` (sdcMicro's ``localSuppression``): the release is k-anonymous when missing and suppressed
  cells match anything (with sdcMicro's alpha for records with missing values). It is weak: blanking
  every QI of k - 1 records satisfies it for any file, so it is offered with the greedy method only, for
  comparison with sdcMicro.
* ``record`` (Wilson et al., RTI): each released record is consistent with at least k records of the
  original file; solved exactly, record by record.

Each model's ``counts`` recounts its criterion on the output with code that does not share the solver's
bookkeeping (class sizes from :mod:`kanon_core.risk.classes`, consistency from
:mod:`kanon_core.risk.intruder`); a record below k stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..dataset import MissingSemantics
from ..errors import InputError

# the counting modules are compiled (numba): imported where used, so that naming the models (the CLI's
# --help) stays instant


class ProtectionModel:
    """One criterion a release must meet; subclasses are registered once in :data:`MODELS`."""

    name: ClassVar[str]
    title: ClassVar[str]
    promise: ClassVar[str]
    methods: ClassVar[tuple[str, ...]]
    solvers: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Per method, the integer-programming solvers it can be asked to use (a method absent here uses none)."""

    def counts(self, original: np.ndarray, mask: np.ndarray, missing: MissingSemantics,
               alpha: float = 1.0) -> np.ndarray:
        """Per record, the number the criterion requires to be at least k, recounted on the output."""
        raise NotImplementedError

    def check_method(self, method: str) -> None:
        if method not in self.methods:
            raise InputError(f"The {self.name} model is solved by: {', '.join(self.methods)} "
                             f"(not '{method}'). {self.method_note()}")

    def method_note(self) -> str:
        return ""

    def check_solver(self, method: str, solver: str) -> None:
        """Refuse a solver asked for that the method would not use: an option silently ignored is a promise
        not kept (the strict model's class programme is HiGHS's alone; the greedy methods solve no programme)."""
        offered = self.solvers.get(method, ())
        if solver not in offered:
            uses = (f"uses {' or '.join(offered)}" if len(offered) > 1 else f"always uses {offered[0]}") if offered \
                else "solves no integer programme"
            raise InputError(f"The {self.name} model's {method} method {uses}: a solver of '{solver}' would not "
                             "be used.")


MODELS: dict[str, ProtectionModel] = {}


def register_model(cls: type[ProtectionModel]) -> type[ProtectionModel]:
    """Register a protection model under its ``name`` (once)."""
    if cls.name in MODELS:
        raise ValueError(f"protection model '{cls.name}' registered twice")
    MODELS[cls.name] = cls()
    return cls


def get_model(name: str) -> ProtectionModel:
    if name not in MODELS:
        raise InputError(f"The protection model must be one of {', '.join(MODELS)}, not '{name}'.")
    return MODELS[name]


def suppressed_as_value(original: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Codes where each suppressed cell holds a code of its own (one past the column's largest code).

    Cells missing in the input stay -1 and keep the session's missing-value semantics.
    """
    out = np.array(original, dtype=np.int32, copy=True)
    mask = np.asarray(mask, dtype=bool)
    for j in range(out.shape[1]):
        col = out[:, j]
        col[mask[:, j]] = int(np.max(original[:, j], initial=-1)) + 1
    return out


@register_model
@dataclass(frozen=True)
class StrictModel(ProtectionModel):
    name: ClassVar[str] = "strict"
    title: ClassVar[str] = "Strict: suppressed cells are values"
    promise: ClassVar[str] = (
        "Every released record shares its visible values and its suppressed variables with at least k - 1 "
        "other records, so nobody can be narrowed down to fewer than k released records by the values the file "
        "holds. Under the wildcard rule a value missing in the file is taken to be unknown to the intruder too; "
        "choose the category rule (Data page; --missing category) when intruders may know such values.")
    methods: ClassVar[tuple[str, ...]] = ("exact", "greedy")
    solvers: ClassVar[dict[str, tuple[str, ...]]] = {"exact": ("highs",)}

    def counts(self, original, mask, missing, alpha=1.0):
        from ..risk.classes import class_sizes

        return class_sizes(suppressed_as_value(original, mask), missing, alpha=alpha)


@register_model
@dataclass(frozen=True)
class ReleaseModel(ProtectionModel):
    name: ClassVar[str] = "release"
    title: ClassVar[str] = "Release: sdcMicro's criterion"
    promise: ClassVar[str] = (
        "The release is k-anonymous when missing and suppressed cells match any value (sdcMicro's "
        "localSuppression). Weak: a few fully blanked records satisfy it for any file, so check how many "
        "people stay findable.")
    methods: ClassVar[tuple[str, ...]] = ("greedy",)

    def counts(self, original, mask, missing, alpha=1.0):
        from ..risk.classes import class_sizes
        from ..risk.intruder import released_codes

        return class_sizes(np.maximum(released_codes(original, mask), -1), "wildcard", alpha=alpha)

    def method_note(self) -> str:
        return ("Its optimum is degenerate (blanking every quasi-identifier of k - 1 records meets it), so "
                "only the greedy method is offered, for comparison with sdcMicro.")


@register_model
@dataclass(frozen=True)
class RecordModel(ProtectionModel):
    name: ClassVar[str] = "record"
    title: ClassVar[str] = "Record-wise: Wilson et al. (RTI)"
    promise: ClassVar[str] = (
        "Each released record is consistent with at least k records of the original file (Wilson et al., "
        "RTI). It does not promise that each person has k candidates in the release.")
    methods: ClassVar[tuple[str, ...]] = ("exact",)
    solvers: ClassVar[dict[str, tuple[str, ...]]] = {"exact": ("highs", "cbc")}

    def counts(self, original, mask, missing, alpha=1.0):
        from ..risk.intruder import released_codes, released_consistent_with

        return released_consistent_with(original, released_codes(original, mask), missing)

    def method_note(self) -> str:
        return "It is solved exactly record by record in seconds, so no heuristic is needed."


MODEL_NAMES: tuple[str, ...] = tuple(MODELS)
DEFAULT_MODEL = "strict"
