"""``kanon apply --engine duckdb|polars|spark``: a recipe replayed on the class table, the release written
by the engine.

An officer builds the recipe in the dashboard on a survey-sized file (or a sample of the census) and
applies it to the full file. The records are never loaded into pandas: the engine aggregates the file
once on the *value columns* (those a step recodes or generalizes, the QIs whose small classes a
generalization blanks, and the final QIs), giving one row per distinct combination of raw values with its
record count. Every step is then replayed on that small table exactly as it runs on the records, because
recodes, generalizations, labels and missing declarations are functions of a cell's value (and of which
values occur), and small-class blanking is a function of the class sizes, which the counts give. What the
replay produced becomes what the engine applies while streaming the file:

* per value column, a mapping table (original value -> released value), the composition of every step
  that touched the variable;
* the classes to blank: keyed by the released values of the blanked QIs, a flag per QI (the rule of
  :func:`kanon_core.treat.recode.suppress_small_classes`, computed on the counts);
* the variables to leave out (dropped ones and direct identifiers) and the labels sidecar from the
  replayed metadata.

Columns no step changes are copied through by the engine as they are read. Step kinds are handled by
registered objects (:data:`SCALE_STEPS`), one per kind. Local suppression (the strict model, exact) is
solved on the replayed class rows as ``kanon suppress`` at scale solves it (:mod:`kanon_core.treat.strict`),
and the engine blanks cells by class and by rank in input order; risk-based suppression, which chooses
cells record by record, is refused in one line naming the step.

The per-step checks of the in-memory replay (each step's output against the fingerprint the recipe
records) need the records in memory, so they are skipped with a notice; instead, after writing, the
engine aggregates the release itself on its QIs and k is counted on that table (``records_below_k``,
``k_achieved``), and a release whose count differs from the replay's is reported.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from ..dataset import Dataset, Roles, VariableMeta
from ..errors import InputError, KanonError
from ..steps import CELL_SUPPRESSION_KINDS, DropVariables, Step
from .notices import notice

if TYPE_CHECKING:
    from ..classtable import ClassTable
    from ..engines.base import Engine, EngineSettings, RankedSuppression
    from ..engines.source import Source
    from ..engines.table import TypedColumn
    from ..recipe import Recipe
    from ..treat.strict.classes import ClassSuppression

DISTINCT_LIMIT = 1_000_000
"""A labelled variable that is not a value column is typed from its distinct values (at most this many)."""

SCALE_OUTPUTS = (".csv", ".parquet")


# -- the replay's state ----------------------------------------------------------------------------------
@dataclass
class ScaleState:
    """What a replay at scale holds instead of the records.

    ``variables`` is a one-row dataset with every variable of the file (typed where known): it carries the
    roles, the missing semantics, the labels and missing codes, and checks steps as a dataset of records
    would. ``classes`` has one row per distinct combination of the value columns' raw values (``count``
    records each), replayed as records are; ``original`` is its first version and ``blanked[c]`` marks the
    rows whose cell of c a small-class blanking emptied. ``unblanked`` is, from the first blanking on, the
    same replay without the blankings: it gives the value a blanked cell would have had, so that every
    original value has a mapped value and blanked classes keep their own keys (None when a step fails
    there). ``changed`` names the value columns a recode or a generalization touched (they become mapping
    tables).
    """

    variables: Dataset
    classes: Dataset | None
    original: Dataset | None
    count: np.ndarray
    blanked: dict[str, np.ndarray] = field(default_factory=dict)
    unblanked: Dataset | None = None
    blanking: bool = False  # a blanking happened (``unblanked`` is kept from then on)
    changed: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    local: LocalAtScale | None = None  # a local suppression solved on the class rows (the last value step)
    weight_sum: np.ndarray | None = None  # per class row, the sum of the weight risk-targeted steps use

    @property
    def value_columns(self) -> list[str]:
        return [] if self.classes is None else self.classes.columns

    def meta(self, column: str) -> VariableMeta:
        """The variable's metadata: from the class rows for a value column (recodes change labels there)."""
        if self.classes is not None and column in self.classes.frame.columns:
            return self.classes.meta_of(column)
        return self.variables.meta_of(column)

    def run_on_classes(self, step: Step, where: str) -> Dataset:
        """Apply ``step`` to the class rows (errors worded as in memory) and to the replay without
        blankings; returns the new class rows, which the caller stores (after any blanking)."""
        assert self.classes is not None
        out = _run(step, self.classes, where)
        if self.blanking and self.unblanked is not None:
            try:
                self.unblanked = step.apply(self.unblanked)
            except (KanonError, KeyError, ValueError, TypeError):
                self.unblanked = None
        return out


# -- step kinds at scale (a registry, one object per kind) ---------------------------------------------------
class ScaleStep:
    """How one step kind runs at scale: which value columns it needs and how it changes the state."""

    kind: ClassVar[str] = ""
    refused: ClassVar[str | None] = None
    """Why the kind cannot run at scale (None: it can)."""

    def value_columns(self, step: Step, roles: Roles) -> set[str]:
        """Variables whose values the step reads or changes record by record (aggregated on)."""
        return set()

    def typed_columns(self, step: Step) -> set[str]:
        """Variables whose type the step needs (codes given as text are matched to it)."""
        return set()

    def weight(self, step: Step, roles: Roles) -> str | None:
        """The weight variable whose sums per class row the step needs (None: none)."""
        return None

    def roles_after(self, step: Step, roles: Roles, columns: set[str]) -> Roles:
        return roles

    def apply(self, state: ScaleState, step: Step, where: str, strict: bool) -> None:
        raise NotImplementedError

    def refuse(self, step: Step, where: str) -> None:
        """Raise the one-line refusal when the kind has no version at scale."""
        if self.refused:
            raise InputError(f"{where} ({step.kind}) has no version at scale yet: {self.refused}; "
                             "use --engine pandas for this recipe.")


SCALE_STEPS: dict[str, ScaleStep] = {}


def register_scale_step(cls: type[ScaleStep]) -> type[ScaleStep]:
    """Class decorator: one instance of the class handles its step kind at scale."""
    SCALE_STEPS[cls.kind] = cls()
    return cls


def _named(step: Step, where: str) -> str:
    return f"{where} ({step.describe_without_values()})"


def _check_on_variables(state: ScaleState, step: Step, where: str) -> None:
    """The in-memory checks that need only the variables (names, roles): problems stop the replay. A
    recode's categories are checked on the class rows instead (:class:`_Recode`)."""
    from ..recipe import check_step, step_columns

    if getattr(step, "merge", ()):
        absent = [c for c in step_columns(step) if c not in state.variables.frame.columns]
        problems = [f"it uses unknown variable(s), not in the data: {', '.join(absent)}."] if absent else []
    else:
        problems, _ = check_step(step, state.variables)
    if problems:
        raise InputError(f"{_named(step, where)} cannot be applied: {' '.join(problems)}")


def _run(step: Step, ds: Dataset, where: str) -> Dataset:
    """``step.apply`` with the in-memory replay's error wording."""
    try:
        return step.apply(ds)
    except KanonError as exc:
        raise InputError(f"{_named(step, where)} cannot be applied: {exc}") from None
    except (KeyError, ValueError, TypeError) as exc:
        raise InputError(f"{_named(step, where)} cannot be applied: {type(exc).__name__}") from None


class _MetaStep(ScaleStep):
    """Steps that change only settings or metadata: applied to the variables, and to the class rows for the
    value columns they name (``part`` gives the step restricted to some columns, or None)."""

    def part(self, step: Step, columns: set[str]) -> Step | None:
        return None

    def apply(self, state: ScaleState, step: Step, where: str, strict: bool) -> None:
        _check_on_variables(state, step, where)
        state.variables = _run(step, state.variables, where)
        if state.classes is not None:
            sub = self.part(step, set(state.value_columns))
            if sub is not None:
                state.classes = state.run_on_classes(sub, where)


@register_scale_step
class _Roles(_MetaStep):
    kind = "set_roles"

    def roles_after(self, step: Step, roles: Roles, columns: set[str]) -> Roles:
        return step.roles()  # type: ignore[attr-defined]


@register_scale_step
class _Missing(_MetaStep):
    kind = "set_missing"

    def part(self, step: Step, columns: set[str]) -> Step | None:
        return step  # the class rows are counted under the same semantics


@register_scale_step
class _Drop(_MetaStep):
    """Dropped variables leave the release (the engine does not write them); the class rows keep them, as no
    later step can name a dropped variable."""

    kind = "drop_variables"

    def roles_after(self, step: Step, roles: Roles, columns: set[str]) -> Roles:
        gone = set(step.columns)  # type: ignore[attr-defined]
        keep = columns - gone
        return Roles(tuple(q for q in roles.qis if q in keep), roles.weight if roles.weight in keep else None,
                     roles.strata if roles.strata in keep else None, roles.psu if roles.psu in keep else None,
                     tuple(q for q in roles.outcomes if q in keep), tuple(q for q in roles.direct_ids if q in keep),
                     roles.fpc if roles.fpc in keep else None)


@register_scale_step
class _MissingCodes(_MetaStep):
    kind = "declare_missing_codes"

    def typed_columns(self, step: Step) -> set[str]:
        return {step.column}  # type: ignore[attr-defined]

    def part(self, step: Step, columns: set[str]) -> Step | None:
        return step if step.column in columns else None  # type: ignore[attr-defined]


@register_scale_step
class _MissingValues(_MetaStep):
    kind = "declare_missing_values"

    def typed_columns(self, step: Step) -> set[str]:
        return set(step.columns)  # type: ignore[attr-defined]

    def part(self, step: Step, columns: set[str]) -> Step | None:
        values = tuple(p for p in step.values if p[0] in columns)  # type: ignore[attr-defined]
        return dataclasses.replace(step, values=values) if values else None


@register_scale_step
class _Labels(_MetaStep):
    kind = "set_value_labels"

    def typed_columns(self, step: Step) -> set[str]:
        return set(step.columns)  # type: ignore[attr-defined]

    def part(self, step: Step, columns: set[str]) -> Step | None:
        labels = tuple(p for p in step.labels if p[0] in columns)  # type: ignore[attr-defined]
        names = tuple(p for p in step.variable_labels if p[0] in columns)  # type: ignore[attr-defined]
        return dataclasses.replace(step, labels=labels, variable_labels=names) if labels or names else None


@register_scale_step
class _Recode(ScaleStep):
    """A recode runs on the class rows: each distinct value is recoded as every record holding it is."""

    kind = "recode"

    def value_columns(self, step: Step, roles: Roles) -> set[str]:
        return {step.column}  # type: ignore[attr-defined]

    def apply(self, state: ScaleState, step: Step, where: str, strict: bool) -> None:
        from ..recipe import check_step

        _check_on_variables(state, step, where)
        assert state.classes is not None  # the recoded column is a value column
        problems, cautions = check_step(step, state.classes)
        if problems:
            raise InputError(f"{_named(step, where)} cannot be applied: {' '.join(problems)}")
        if cautions and strict:
            raise InputError(f"{_named(step, where)}: {' '.join(cautions)} (strict replay)")
        _refuse_order_dependent_merge(state.classes, step, where)
        state.classes = state.run_on_classes(step, where)
        state.changed.add(step.column)  # type: ignore[attr-defined]
        state.warnings.extend(f"{_named(step, where)}: {c}" for c in cautions)


def _refuse_order_dependent_merge(ds: Dataset, step: Any, where: str) -> None:
    """A merge without ``into`` takes, for each category, the first cell in record order that matches it;
    when several distinct cells match one category, that cell depends on the order of the records, which the
    class rows do not have. Categories match cells as the recode step matches them: a text given for a text
    column only the cell written so (``"012"`` is one cell beside ``"12"``), a number every cell of its value
    (``12`` finds both ``"012"`` and ``"12"``: refused)."""
    if not step.merge or step.into is not None:
        return
    from ..treat.recode import cell_keys, is_text_column, merge_key

    col = ds.frame[step.column]
    text = is_text_column(col)
    wanted = {merge_key(v, text) for v in step.merge}
    seen: dict[tuple[str, str | None], Any] = {}
    for v in pd.unique(col[~ds.missing_mask(step.column)].to_numpy(dtype=object)):
        if any(key in wanted and seen.setdefault(key, v) != v for key in cell_keys(v, text)):
            raise InputError(f"{_named(step, where)} cannot be applied at scale: a category to merge is written "
                             f"in more than one way in {step.column}, so the merged value depends on the order "
                             "of the records; give the value to merge into in the recipe, or use --engine pandas.")


@register_scale_step
class _Generalize(ScaleStep):
    """Generalization maps each value through its hierarchy on the class rows; the records of classes still
    smaller than ``suppress_k`` are blanked on the QIs, with class sizes summed from the counts (the rule of
    :func:`kanon_core.treat.recode.suppress_small_classes`, wildcard semantics included)."""

    kind = "generalize"

    def refuse(self, step: Step, where: str) -> None:
        if step.criteria:  # type: ignore[attr-defined]
            raise InputError(f"{where} ({step.kind} with criteria {', '.join(step.criteria)}) has no version "  # type: ignore[attr-defined]
                             "at scale yet: its suppression needs the sensitive values of each class; use "
                             "--engine pandas for this recipe.")

    def blank_qis(self, step: Any, roles: Roles) -> tuple[str, ...]:
        return tuple(step.qis or roles.qis or tuple(step.levels))

    def value_columns(self, step: Step, roles: Roles) -> set[str]:
        cols = set(step.levels)  # type: ignore[attr-defined]  (the step names every variable it levels)
        if step.suppress_k > 1 or step.criteria:  # type: ignore[attr-defined]
            cols |= set(self.blank_qis(step, roles))
        return cols

    def apply(self, state: ScaleState, step: Step, where: str, strict: bool) -> None:
        from ..treat.recode import GeneralizeStep

        assert isinstance(step, GeneralizeStep)
        self.refuse(step, where)
        _check_on_variables(state, step, where)
        mapped = dataclasses.replace(step, suppress_k=0)
        assert state.classes is not None
        ds = state.run_on_classes(mapped, where)
        state.changed.update(v for v, lv in step.levels.items() if lv > 0)
        if step.suppress_k > 1:
            qis = self.blank_qis(step, state.variables.roles)
            absent = [q for q in qis if q not in state.variables.frame.columns]
            if absent:
                raise InputError(f"{_named(step, where)} cannot be applied: Quasi-identifier '{absent[0]}' is not "
                                 "a variable of the data.")
            small = small_classes(ds, qis, state.count, state.variables.missing, step.suppress_k)
            if small.any():
                if not state.blanking:
                    state.blanking, state.unblanked = True, ds
                from ..treat.recode import blank_records

                for q in qis:
                    state.blanked[q] = state.blanked.get(q, np.zeros(len(small), bool)) | small
                state.changed.update(qis)  # written through a mapping table, in the column's new type
                ds, _ = blank_records(ds, qis, small)  # as in memory: an integer column keeps its integers
            # the records blank on every QI are one class of the release (GeneralizeStep.cautions): at least k
            blank = (ds.qi_matrix(list(qis)).codes < 0).all(axis=1)
            n_blank = int(state.count[blank].sum())
            if 0 < n_blank < step.suppress_k:
                caution = step.blank_group_caution(n_blank)
                if strict:
                    raise InputError(f"{_named(step, where)}: {caution} (strict replay)")
                state.warnings.append(f"{_named(step, where)}: {caution}")
        state.classes = ds


@dataclass(frozen=True)
class LocalAtScale:
    """A local suppression step solved on the replayed class rows: the class table on its QIs (``gid``: the
    class of each class row) and the checked strict solution, which the engine applies by class and rank."""

    qis: tuple[str, ...]
    k: int
    table: ClassTable
    gid: np.ndarray
    result: ClassSuppression

    def released_k(self, missing: str, k: int) -> KCount:
        """k as counted on the release (a suppressed cell is missing there, so under wildcard semantics it
        matches any value), from the solution's released rows with their copies."""
        from ..risk.intruder import SUPPRESSED
        from ..treat.strict.classes import released_table

        rel, counts, _ = released_table(self.table.codes, self.table.count, self.result.assignment)
        table, _ = table_of_codes(self.qis, np.where(rel == SUPPRESSED, -1, rel), counts)
        return k_of_table(table, missing, k)

    @property
    def cells(self) -> int:
        """Observed cells blanked (a pattern bit on a cell that is missing already blanks nothing)."""
        from ..risk.intruder import SUPPRESSED
        from ..treat.strict.classes import released_table

        rel, counts, _ = released_table(self.table.codes, self.table.count, self.result.assignment)
        return int(((rel == SUPPRESSED).sum(axis=1) * counts).sum())


@register_scale_step
class _LocalSuppression(ScaleStep):
    """Local suppression at scale: the strict model solved exactly on the class table of the replayed class
    rows (:func:`kanon_core.treat.strict.classes.suppress_classes`, the solver of ``kanon suppress`` at
    scale, checked there by an independent recount and the intruder's count), written by the engine by
    class and by rank in input order, as in memory the copies of a distinct row take their patterns in
    input order.

    It must be the last step that changes values: the blanked cells depend on the records' order, which the
    class rows do not hold, so a later recode could not be replayed on them (labels and roles may follow). A
    blanking of small classes before it is refused for the same reason (the engine blanks those classes
    first and would then have to rank records within the merged classes)."""

    kind = "local_suppression"
    AFTER: ClassVar[frozenset[str]] = frozenset({"set_value_labels", "set_roles"})
    """Step kinds that may follow a local suppression at scale (they change no value)."""

    def refuse(self, step: Step, where: str) -> None:
        why = None
        if step.model != "strict":  # type: ignore[attr-defined]
            why = f"the {step.model} model chooses cells record by record; the strict model (the default) runs there"  # type: ignore[attr-defined]
        elif step.method != "exact":  # type: ignore[attr-defined]
            why = "only the exact method runs there"
        elif step.alpha != 1.0:  # type: ignore[attr-defined]
            why = "missing values count as matches in full there (alpha 1)"
        elif step.linked:  # type: ignore[attr-defined]
            why = "linked variables are blanked record by record"
        if why:
            raise InputError(f"{where} ({step.kind}) has no version at scale yet: {why}; use --engine pandas for "
                             "this recipe.")

    def value_columns(self, step: Step, roles: Roles) -> set[str]:
        return set(step.qis or roles.qis) | set(step.by)  # type: ignore[attr-defined]

    def apply(self, state: ScaleState, step: Step, where: str, strict: bool) -> None:
        from ..errors import InfeasibleError
        from ..treat.strict.classes import suppress_classes
        from ..treat.suppress import SuppressStep, resolve_costs

        assert isinstance(step, SuppressStep)
        self.refuse(step, where)
        if state.blanking:
            raise InputError(f"{_named(step, where)} cannot be applied at scale after a step that blanked small "
                             "classes (the engine would have to rank records within the classes the blanking "
                             "merged); use --engine pandas for this recipe.")
        if state.local is not None:
            raise InputError(f"{_named(step, where)} cannot be applied at scale after another local suppression; "
                             "use --engine pandas for this recipe.")
        _check_on_variables(state, step, where)
        qis = step.problem_qis(state.variables)
        absent = [q for q in qis if state.classes is None or q not in state.classes.frame.columns]
        if absent:
            raise InputError(f"{_named(step, where)} cannot be applied: Quasi-identifier '{absent[0]}' is not a "
                             "variable of the data.")
        assert state.classes is not None
        try:
            costs, protected = resolve_costs(qis, step.importance, tuple(step.protected) + tuple(step.by))
            table, gid = counted_table(state.classes, qis, state.count)
            result = suppress_classes(table.codes, table.count, step.k, costs, protected,
                                      state.variables.missing, step.node_limit)
        except (InfeasibleError, InputError) as exc:
            raise InputError(f"{_named(step, where)} cannot be applied: {exc}") from None
        state.local = LocalAtScale(tuple(qis), step.k, table, gid, result)


@register_scale_step
class _RiskSuppression(ScaleStep):
    """Suppression to a limit on individual risk at scale: the in-memory algorithm works on the class table
    of the records (:func:`kanon_core.treat.suppress_risk.suppress_table_to_risk`, whole classes alike), so
    on the class rows' table (counts and weight sums per class) it blanks the same cells. They are blanked
    on the class rows as a blanking of small classes is, and written by the engine as a list of classes."""

    kind = "risk_suppression"

    def value_columns(self, step: Step, roles: Roles) -> set[str]:
        return set(step.qis or roles.qis)  # type: ignore[attr-defined]

    def weight(self, step: Step, roles: Roles) -> str | None:
        return roles.weight

    def apply(self, state: ScaleState, step: Step, where: str, strict: bool) -> None:
        from ..classtable import ClassTable
        from ..treat.suppress import apply_mask, resolve_costs
        from ..treat.suppress_risk import RiskSuppressStep, suppress_table_to_risk

        assert isinstance(step, RiskSuppressStep)
        _check_on_variables(state, step, where)
        qis = tuple(step.qis or state.variables.roles.qis)
        assert state.classes is not None
        absent = [q for q in qis if q not in state.classes.frame.columns]
        if not qis or absent:
            raise InputError(f"{_named(step, where)} cannot be applied: "
                             + (f"Quasi-identifier '{absent[0]}' is not a variable of the data." if absent else
                                "Choose at least one quasi-identifier."))
        weighted = state.variables.roles.weight is not None
        try:
            costs, protected = resolve_costs(qis, step.importance, step.protected)
            table, gid = counted_table(state.classes, qis, state.count)
            if weighted:
                assert state.weight_sum is not None  # aggregated with the weight (plan_columns)
                table = ClassTable(qis, table.codes, table.count,
                                   np.bincount(gid, weights=state.weight_sum, minlength=table.n_classes))
            res = suppress_table_to_risk(table, step.max_risk, costs=costs, protected=protected, method=step.method,
                                         alpha=step.alpha, missing=state.classes.missing)
        except InputError as exc:
            raise InputError(f"{_named(step, where)} cannot be applied: {exc}") from None
        mask = res.mask[gid]
        if not mask.any():
            return
        if not state.blanking:
            state.blanking, state.unblanked = True, state.classes
        for j, q in enumerate(qis):
            state.blanked[q] = state.blanked.get(q, np.zeros(len(mask), bool)) | mask[:, j]
        state.changed.update(q for j, q in enumerate(qis) if mask[:, j].any())
        state.classes = state.classes.with_frame(apply_mask(state.classes.frame, list(qis), mask),
                                                 state.classes.meta)


def small_classes(ds: Dataset, qis: Iterable[str], count: np.ndarray, missing: str, k: int) -> np.ndarray:
    """Per class row, whether its class on ``qis`` holds fewer than ``k`` records (counts summed over the
    rows of each class; under wildcard semantics a class also counts the records it matches)."""
    table, gid = counted_table(ds, tuple(qis), count)
    return np.asarray(table.class_sizes(missing).fk)[gid] < k  # type: ignore[arg-type]


def counted_table(ds: Dataset, qis: tuple[str, ...], count: np.ndarray) -> tuple[ClassTable, np.ndarray]:
    """The class table on ``qis`` of rows that stand for ``count`` records each, and each row's class."""
    return table_of_codes(qis, ds.qi_matrix(qis).codes, count)


def table_of_codes(qis: tuple[str, ...], codes: np.ndarray, count: np.ndarray) -> tuple[ClassTable, np.ndarray]:
    """The class table of coded rows (-1 missing) standing for ``count`` records each, and each row's class."""
    from ..classtable import ClassTable
    from ..risk.keys import group_ids

    codes = np.ascontiguousarray(codes, dtype=np.int32)
    gid, _ = group_ids(codes)
    n = int(gid.max()) + 1 if len(gid) else 0
    first = np.zeros(n, dtype=np.int64)
    first[gid[::-1]] = np.arange(len(gid) - 1, -1, -1)
    table = ClassTable(qis, codes[first], np.bincount(gid, weights=count, minlength=n).astype(np.int64))
    return table, gid


# -- planning and reading ----------------------------------------------------------------------------------
def _handler(step: Step, where: str) -> ScaleStep:
    h = SCALE_STEPS.get(step.kind)
    if h is None:
        raise InputError(f"{where} ({step.kind}) has no version at scale yet; use --engine pandas for this recipe.")
    return h


def plan_columns(recipe: Recipe, columns: Iterable[str]) -> tuple[list[str], set[str], str | None]:
    """The value columns to aggregate on (file order), the variables whose type the steps need and the
    weight whose sums the steps need (one at most).

    Roles are followed through the steps, so a generalization that blanks on "the QIs" aggregates the QIs
    of that moment; the final QIs are value columns too (k is counted on them). Unknown variables are left
    to the replay, which names the step.
    """
    cols = list(columns)
    present = set(cols)
    roles = recipe.roles
    value: set[str] = set()
    typed: set[str] = set()
    weights: set[str] = set()
    local = False
    for i, step in enumerate(recipe.steps, start=1):
        h = _handler(step, f"Step {i}")
        h.refuse(step, f"Step {i}")
        if local:
            _refuse_after_local(step, f"Step {i}")
        local = local or step.kind == _LocalSuppression.kind
        value |= h.value_columns(step, roles)
        typed |= h.typed_columns(step)
        w = h.weight(step, roles)
        if w is not None:
            weights.add(w)
            if len(weights) > 1:
                raise InputError(f"Step {i} ({step.kind}) uses a second weight variable; at scale the steps share "
                                 "one; use --engine pandas for this recipe.")
        roles = h.roles_after(step, roles, present)
        present -= set(getattr(step, "columns", ())) if isinstance(step, DropVariables) else set()
    value |= set(roles.qis)
    weight = next(iter(weights), None)
    return [c for c in cols if c in value], {c for c in typed if c in set(cols)}, weight


def _series(t: TypedColumn, idx: np.ndarray) -> pd.Series:
    """A value column over the class rows with the dtype the in-memory reader gives the whole column."""
    vals = np.array([*t.values, None], dtype=object)[idx]  # index -1 takes the appended None
    missing = bool((idx < 0).any())
    if t.dtype == "int":
        return pd.Series(vals, dtype="Int64" if missing else "int64")
    if t.dtype == "float":
        return pd.Series([np.nan if v is None else v for v in vals], dtype="float64")
    if t.dtype == "bool" and not missing:
        return pd.Series(vals, dtype=bool)
    return pd.Series([np.nan if v is None else v for v in vals], dtype=object)


def _encode(arr: Any) -> tuple[np.ndarray, Any]:
    import pyarrow.compute as pc

    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    idx = enc.indices
    if idx.null_count:
        idx = pc.fill_null(idx, -1)
    return idx.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary


@dataclass(frozen=True)
class ClassRows:
    """The file aggregated on the value columns: raw index per row and column, typing, counts."""

    columns: list[str]
    idx: dict[str, np.ndarray]
    typed: dict[str, TypedColumn]
    count: np.ndarray
    weight_sum: np.ndarray | None = None


def read_classes(engine: Engine, source: Source, columns: list[str], settings: EngineSettings,
                 weight: str | None = None) -> ClassRows:
    """The file aggregated on ``columns`` (with ``weight``'s sums per row, its values checked as in memory)."""
    from ..engines.table import check_aggregate_weights, type_distinct

    source.require([*columns, *([weight] if weight else [])])
    settings.say(f"{engine.name}: aggregating on {len(columns)} variable(s)")
    agg = engine.aggregate(source, columns, weight, settings)
    if weight is not None:  # (codes the labels declare missing are missing weights, as in memory)
        check_aggregate_weights(engine, source, agg, weight, None, settings)
    idx, typed = {}, {}
    for i, c in enumerate(columns):
        ix, dictionary = _encode(agg.column(f"k{i}"))
        idx[c] = ix
        typed[c] = type_distinct(source, c, dictionary, bool((ix < 0).any()))
    return ClassRows(columns, idx, typed, agg.column("n").to_numpy().astype(np.int64),
                     None if weight is None else agg.column("w").to_numpy().astype(np.float64))


def check_role_weight(engine: Engine, source: Source, name: str | None, checked: str | None,
                      settings: EngineSettings) -> None:
    """The weight the roles name checked as in memory and by every command's ``--weight``, unless it is the one
    the steps aggregate (``checked``, refused by :func:`read_classes` already): one more pass over the file."""
    from ..engines.table import check_file_weights

    if name is not None and name != checked:
        check_file_weights(engine, source, name, None, settings)  # (codes the labels declare: missing weights)


def start_state(recipe: Recipe, engine: Engine, source: Source, settings: EngineSettings) -> tuple[ScaleState, ClassRows]:
    """Version 0 of the replay: the variables with the recipe's initial roles, the class rows, the labels."""
    from ..engines.api import labelled_columns
    from ..engines.table import declared_meta, type_distinct

    value, typed_needed, weight = plan_columns(recipe, source.columns)
    rows = read_classes(engine, source, value, settings, weight)
    typed = dict(rows.typed)
    for c in sorted((typed_needed | set(labelled_columns(source))) - set(value), key=list(source.columns).index):
        raw = engine.distinct(source, c, DISTINCT_LIMIT, settings)
        if raw is None:
            raise InputError(f"Variable '{c}' has more than {DISTINCT_LIMIT:,} distinct values; its labels cannot "
                             "be typed at scale (use --engine pandas).")
        typed[c] = type_distinct(source, c, raw, False)
    meta = declared_meta(source, typed)
    for c, t in typed.items():  # numbers keep the text they were read with
        meta[c] = dataclasses.replace(meta.get(c, VariableMeta()), float_style=t.float_style)
    one = {c: (typed[c].series().iloc[:1].reset_index(drop=True) if c in typed and typed[c].values
               else pd.Series([np.nan], dtype=object if c not in typed else "float64"))
           for c in source.columns}
    skeleton = Dataset(frame=pd.DataFrame(one), meta=meta, name=source.path.stem)
    variables = recipe.start(skeleton)
    check_role_weight(engine, source, variables.roles.weight, weight, settings)
    classes = None
    if value:
        frame = pd.DataFrame({c: _series(rows.typed[c], rows.idx[c]) for c in value})
        classes = Dataset(frame=frame, meta={c: meta[c] for c in value if c in meta}, missing=recipe.missing,
                          name=source.path.stem)
    return ScaleState(variables, classes, classes, rows.count, weight_sum=rows.weight_sum), rows


def _refuse_after_local(step: Step, where: str) -> None:
    """A step that changes values cannot follow a local suppression at scale (see :class:`_LocalSuppression`)."""
    if step.kind not in _LocalSuppression.AFTER:
        raise InputError(f"{where} ({step.kind}) cannot be applied at scale after a local suppression (the cells "
                         "it blanked depend on the records' order); use --engine pandas for this recipe.")


def replay_at_scale(recipe: Recipe, state: ScaleState, strict: bool) -> ScaleState:
    for i, step in enumerate(recipe.steps, start=1):
        where = f"Step {i}"
        if state.local is not None:
            _refuse_after_local(step, where)
        _handler(step, where).apply(state, step, where, strict)
    return state


# -- from the replay to the engine's plan ----------------------------------------------------------------------
def _written(s: pd.Series, style: str, as_text: bool) -> list[Any]:
    """The values of a replayed column as the release holds them: the text the in-memory CSV writer writes
    (floats in the variable's style) for a CSV file, the typed value for Parquet; None when missing."""
    from ..io import cell_text, float_cell

    is_float = pd.api.types.is_float_dtype(s.dtype)
    out: list[Any] = []
    for v, m in zip(s.tolist(), s.isna().to_numpy().tolist(), strict=True):
        if m:
            out.append(None)
        elif as_text:
            out.append(float_cell(v, style) if is_float else cell_text(v))
        else:
            out.append(v.item() if hasattr(v, "item") else v)
    return out


@dataclass(frozen=True)
class ScalePlan:
    """What the engine applies: mapping tables, the classes to blank (keyed on ``keys``) and the variables
    left out, with the release's variables and labels."""

    recodes: dict[str, dict[Any, Any]]
    keys: tuple[str, ...]
    suppress: pd.DataFrame | None
    drop: tuple[str, ...]
    columns: tuple[str, ...]
    meta: dict[str, VariableMeta]
    ranked: RankedSuppression | None = None
    """A local suppression's cells by class and rank, keyed on ``keys`` (its QIs, after the mapping tables)."""


def release_plan(state: ScaleState, rows: ClassRows, source: Source) -> ScalePlan:
    """The engine's plan from the replayed class rows (see :class:`ScalePlan`).

    Every value column in the release gets its mapping (original value -> released value); the engine
    applies those of the columns a step changed and of the columns the classes to blank are keyed on, and
    copies the others as read (which gives the same text: the reader keeps a value only in its own form).
    """
    variables = state.variables
    columns = tuple(c for c in variables.release_frame().columns)
    drop = tuple(c for c in source.columns if c not in columns)
    meta = {c: state.meta(c) for c in columns}
    mappings: dict[str, dict[Any, Any]] = {}
    view: dict[str, np.ndarray] = {}  # per value column in the release: what the engine sees, coded per row
    for c in state.value_columns:
        if c in columns:
            mappings[c], view[c] = _mapping(state, rows, c, meta[c].float_style, source.format == "csv")
    keys, suppress = _blank_table(state, columns, mappings, view, rows)
    ranked = None
    if state.local is not None and state.local.result.n_suppressed:
        keys, ranked = state.local.qis, _ranked_table(state.local, columns, mappings, rows)
    recodes = {c: m for c, m in mappings.items() if c in state.changed or c in keys}
    return ScalePlan(recodes, keys, suppress, drop, columns, meta, ranked)


def _ranked_table(local: LocalAtScale, columns: tuple[str, ...], mappings: dict[str, dict[Any, Any]],
                  rows: ClassRows) -> RankedSuppression:
    """The engine's suppressions by class and rank for a local suppression solved on the class rows: each
    class keyed on the values its QIs have after the mapping tables (the QIs are written through them), so
    the engine finds a record's class after recoding it, then ranks the class's records in input order.

    A class may be written in several ways (a declared missing code is written as its code, an empty cell
    as empty; both are missing in the class), so every way its class rows are written is listed, once."""
    import pyarrow as pa

    from ..engines.local_suppression import ranked_plan

    gone = [q for q in local.qis if q not in columns]
    if gone:
        raise InputError(f"Quasi-identifier '{gone[0]}' of the local suppression is not released; the engine "
                         "cannot rank its classes (use --engine pandas for this recipe).")
    from ..risk.keys import group_ids

    written, codes = [], []
    for q in local.qis:
        by_value = [mappings[q][v] for v in rows.typed[q].values]
        tagged = pd.Series([None if v is None else (type(v).__name__, v) for v in by_value], dtype=object)
        code, _ = pd.factorize(tagged, use_na_sentinel=True)  # one code per way of writing, -1 for empty
        written.append(np.array([*by_value, None], dtype=object)[rows.idx[q]])
        codes.append(np.append(code, -1)[rows.idx[q]])
    way, _ = group_ids(np.column_stack(codes).astype(np.int32))
    pairs = np.unique(np.column_stack([way, local.gid]), axis=0)
    if len(pairs) != len(np.unique(way)):
        raise InputError("The local suppression's classes cannot be told apart in the written release; use "
                         "--engine pandas for this recipe.")
    first = np.unique(way, return_index=True)[1]  # one class row per way of writing a class
    classes = local.gid[first]
    keys = pa.table({f"k{j}": pa.array(w[first].tolist()) for j, w in enumerate(written)})
    n = local.table.n_classes
    return ranked_plan(keys, classes.astype(np.int64), n, local.result.assignment, len(local.qis))


def _first_rows(idx: np.ndarray, rows: np.ndarray, n_values: int) -> np.ndarray:
    """For each original value (index into the column's distinct values), one of ``rows`` holding it (-1: none)."""
    first = np.full(n_values, -1, np.int64)
    first[idx[rows[::-1]]] = rows[::-1]
    return first


def _mapping(state: ScaleState, rows: ClassRows, column: str, style: str,
             as_text: bool) -> tuple[dict[Any, Any], np.ndarray]:
    """Original value -> released value of one value column, read off the replayed class rows, and per class
    row a code of the value the engine sees (the mapped value; -1 when missing).

    Each original value is looked up once (on one of its rows); that its other rows agree is checked on
    codes of the replayed values, so the cost is one pass over the rows in numpy.
    """
    assert state.classes is not None
    idx, values = rows.idx[column], rows.typed[column].values
    n = len(values)
    blanked = state.blanked.get(column, np.zeros(len(idx), bool))
    final = state.classes.frame[column]
    kept = np.flatnonzero((idx >= 0) & ~blanked)
    first = _first_rows(idx, kept, n)
    codes, _ = pd.factorize(final.astype(object), use_na_sentinel=True)
    if np.any(codes[kept] != codes[first[idx[kept]]]):
        raise InputError(f"The replay of {column} at scale did not give one value per original value; "
                         "use --engine pandas for this recipe.")
    has = first >= 0
    written = _written(final.iloc[first[has]], style, as_text)
    out: list[Any] = [None] * n
    for j, w in zip(np.flatnonzero(has).tolist(), written, strict=True):
        out[j] = w
    # values held only by blanked cells never reach the release; they map to the value they would have had,
    # so that their classes keep keys of their own in the list of classes to blank
    only_blanked = _first_rows(idx, np.flatnonzero((idx >= 0) & blanked), n)
    only_blanked[has] = -1
    if state.unblanked is not None and (only_blanked >= 0).any():
        at = only_blanked >= 0
        shadow = _written(state.unblanked.frame[column].iloc[only_blanked[at]], style, as_text)
        for j, w in zip(np.flatnonzero(at).tolist(), shadow, strict=True):
            out[j] = w
    mapping = dict(zip(values, out, strict=True))
    keyed = pd.Series([None if v is None else (type(v).__name__, v) for v in out], dtype=object)
    value_code, _ = pd.factorize(keyed, use_na_sentinel=True)
    seen = np.append(value_code, -1)[idx]  # a missing original (index -1) stays missing
    return mapping, seen.astype(np.int64)


def _blank_table(state: ScaleState, columns: tuple[str, ...], mappings: dict[str, dict[Any, Any]],
                 view: dict[str, np.ndarray], rows: ClassRows) -> tuple[tuple[str, ...], pd.DataFrame | None]:
    """The classes to blank, keyed on the values the engine sees after the mapping tables.

    Keyed first on the blanked QIs only; if two class rows agree there but were blanked differently (a
    later recode merged values that were blanked apart), on every value column in the release; if they
    still agree, the blanking cannot be written as a table of classes and the recipe is refused.
    """
    from ..risk.keys import group_ids

    blanked = [c for c in state.value_columns if c in columns and c in state.blanked and state.blanked[c].any()]
    if not blanked:
        return (), None
    n = len(state.count)
    for keys in (blanked, [c for c in state.value_columns if c in view]):
        codes = np.column_stack([view[c] for c in keys]).astype(np.int32)
        flags = np.column_stack([state.blanked.get(c, np.zeros(n, bool)) for c in keys])
        key_id, _ = group_ids(codes)
        both_id, _ = group_ids(np.column_stack([codes, flags.astype(np.int32)]))
        if key_id.max() != both_id.max():
            continue
        hit = np.flatnonzero(flags.any(axis=1))
        hit = hit[np.unique(key_id[hit], return_index=True)[1]]  # one row per class to blank
        table = {}
        for c in keys:
            by_index = np.array([*(mappings[c][v] for v in rows.typed[c].values), None], dtype=object)
            table[c] = by_index[rows.idx[c][hit]]
        for j, c in enumerate(keys):
            table[f"suppress_{c}"] = flags[hit, j]
        return tuple(keys), pd.DataFrame(table)
    raise InputError("The recipe blanks small classes and then recodes their values, so the blanking cannot be "
                     "applied by the engine as a list of classes; use --engine pandas for this recipe.")


# -- checks ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KCount:
    records_below_k: int
    k_achieved: int


def k_of_table(table: ClassTable, missing: str, k: int) -> KCount:
    fk = np.asarray(table.class_sizes(missing).fk)
    below = int(table.count[fk < k].sum())
    return KCount(below, int(math.floor(float(fk.min()))) if len(fk) else 0)


def replay_k(state: ScaleState, k: int) -> KCount | None:
    """k on the replayed class rows (what the release should show); after a local suppression, on its
    released rows when the QIs are the step's (else None: the release's own count is reported)."""
    qis = state.variables.roles.qis
    if not qis or state.classes is None:
        return None
    if state.local is not None:
        return state.local.released_k(state.variables.missing, k) if tuple(qis) == state.local.qis else None
    table, _ = counted_table(state.classes, tuple(qis), state.count)
    return k_of_table(table, state.variables.missing, k)


def recount_k(engine: Engine, path: Path, plan: ScalePlan, qis: tuple[str, ...], missing: str, k: int,
              settings: EngineSettings) -> KCount | None:
    """k counted on the written release, aggregated again by the engine (its declared missing codes given
    as the sidecar declares them)."""
    from ..engines.source import open_source
    from ..engines.table import aggregate_table
    from ..io import labels_spec

    if not qis:
        return None
    spec = labels_spec(plan.meta, list(qis))
    codes = {q: [str(c) for c in spec.get(q, {}).get("missing_codes", [])] for q in qis}
    settings.say(f"{engine.name}: counting k on the release")
    table, _, _, _ = aggregate_table(engine, open_source(path), qis, None, {q: c for q, c in codes.items() if c},
                                     settings)
    return k_of_table(table, missing, k)


def suppressed_cells(state: ScaleState, columns: tuple[str, ...]) -> int:
    """Cells missing in the release that were observed in the file (as :func:`kanon_core.export.release`
    counts them), summed over the class rows' counts; only value columns can lose a value."""
    from ..utility.suppressed import suppressed_mask

    if state.classes is None or state.original is None:
        return 0
    cols = [c for c in state.value_columns if c in columns]
    if not cols:
        return 0
    mask = suppressed_mask(state.original, state.classes, cols).mask
    return int((mask.sum(axis=1) * state.count).sum()) + (0 if state.local is None else state.local.cells)


def local_summary(local: LocalAtScale) -> dict[str, Any]:
    """The local suppression's figures (no data values): its QIs, the cells, the cost and its lower bound,
    whether the optimum is proven, and the independent check (records below k, people findable)."""
    res = local.result
    return {"qis": list(local.qis), "k": local.k, "cells": local.cells, "records_touched": res.records_touched,
            "cost": float(res.cost), "lower_bound": res.lower_bound, "optimal": res.optimal,
            "gap": res.optimality().gap,
            "violations_after": res.check.violations, "findable_below_k": res.check.findable_below_k}


# -- the command ----------------------------------------------------------------------------------------------
def apply_at_scale(args: argparse.Namespace, recipe: Recipe, data_path: Path) -> int | None:
    """``kanon apply`` of ``recipe`` (read by the caller) on ``data_path`` through an out-of-core engine; None when the in-memory path runs (pandas, or ``auto``
    on a small file, for what only the in-memory path writes: SPSS/Stata, the HTML report, CSV codes for
    suppressed cells, and for a recipe with a step kind that has no version at scale, as ``kanon apply``
    ran before it had one; a notice says so). An engine named explicitly refuses these in one line."""
    from ..engines.source import is_scale_format, open_source
    from .scale import out_of_core_engine

    explicit = (getattr(args, "engine", "auto") or "auto") != "auto"
    in_memory_only = _in_memory_reason(args)
    if not explicit and (in_memory_only or not is_scale_format(data_path)):
        return None
    engine = out_of_core_engine(args, data_path)
    if engine is None:
        return None
    if in_memory_only:
        raise InputError(f"kanon apply at scale cannot {in_memory_only}; use --engine pandas.")
    if not explicit:
        try:
            plan_columns(recipe, open_source(data_path).columns)
        except InputError as exc:
            notice(f"kanon apply: notice: running in memory: {exc}")
            return None
    return _run_at_scale(args, recipe, data_path, engine)


def _in_memory_reason(args: argparse.Namespace) -> str | None:
    if args.report:
        return "write --report (the report needs the records in memory)"
    if Path(args.output).suffix.lower() not in SCALE_OUTPUTS:
        return "write this format (a release at scale is .csv or .parquet)"
    if args.csv_code:
        return "write --csv-code (suppressed cells are written empty)"
    return None


def _run_at_scale(args: argparse.Namespace, recipe: Recipe, data_path: Path, engine: Any) -> int:
    from ..engines.source import open_source
    from ..io import labels_json, labels_spec, sidecar_path
    from ..outputs import STDOUT, NamedPath, OutputBatch, check_outputs, data_inputs, release_outputs
    from ..risk.restore import NOT_COUNTED_AT_SCALE
    from .common import notice_engine_release, write_json
    from .scale import engine_settings

    check_outputs([*release_outputs(args.output, sidecar=not args.no_labels),
                   NamedPath("--json", Path(args.json_out or STDOUT))],
                  [NamedPath("the recipe", Path(args.recipe)), *data_inputs(data_path)])
    k = int(args.k if args.k is not None else recipe.extra.get("k", 3))
    settings = engine_settings(args, "apply")
    try:
        source = open_source(data_path)
        state, rows = start_state(recipe, engine, source, settings)
        notice("kanon apply: notice: at scale the steps are not checked against the results the recipe records "
               "(that needs the records in memory); k is counted on the written release instead.")
        missing_cols = [c for c in recipe.input_columns if c not in source.columns]
        if missing_cols:
            state.warnings.append(f"Variables of the original file not in this one: {', '.join(missing_cols)}.")
        if source.format == "csv" and Path(args.output).suffix.lower() == ".parquet":
            state.warnings.append("A CSV file released as Parquet at scale keeps every variable as text, as the "
                                  "engine reads CSV cells (in memory numbers are typed); release as CSV, or "
                                  "start from Parquet, to keep the types.")
        settings.say(f"replaying {len(recipe.steps)} step(s) on {len(state.count):,} class rows")
        replay_at_scale(recipe, state, args.strict)
        final = state.variables.roles.weight  # a step may name another weight: checked before writing too
        if final != recipe.roles.weight:
            check_role_weight(engine, source, final, plan_columns(recipe, source.columns)[2], settings)
        plan = release_plan(state, rows, source)
        expected = replay_k(state, k)
        qis = tuple(state.variables.roles.qis)
        out = Path(args.output)
        written = [out]
        with OutputBatch() as batch:
            target = batch.temp_path(out) if engine.name != "spark" else out
            engine.release(data_path, target, qis=plan.keys, recodes=plan.recodes, suppress=plan.suppress,
                           drop=plan.drop, settings=settings, sidecar=False, ranked=plan.ranked)
            got = expected if engine.name == "spark" else recount_k(engine, target, plan, qis,
                                                                    state.variables.missing, k, settings)
            if expected is not None and got != expected:
                state.warnings.append("The release's own count of records below k differs from the replay's; "
                                      "the release's count is reported.")
            if not args.no_labels:
                spec = labels_spec(plan.meta, list(plan.columns))
                side = sidecar_path(out)
                if spec or side.exists():
                    batch.write_bytes(side, labels_json(spec))
                    written.append(side)
            for w in state.warnings:
                notice(f"kanon apply: note: {w}")
            n_sup = suppressed_cells(state, plan.columns)
            summary = {
                "input": data_path.name, "same_input": None, "steps": len(recipe.steps), "steps_verified": 0,
                "records": int(state.count.sum()), "variables_released": len(plan.columns),
                "suppressed_cells": n_sup, "k": k,
                "records_below_k": None if got is None else got.records_below_k,
                "k_achieved": None if got is None else got.k_achieved,
                # suppressed cells other released variables give back are counted on records, in memory only
                "warnings": list(state.warnings), "restorable": None, "written": [p.name for p in written],
                "engine": engine.name,
            }
            if state.local is not None:
                summary["local_suppression"] = local_summary(state.local)
            if args.json_out:
                write_json(args.json_out, summary, batch)
        notice_engine_release(out)
    finally:
        settings.close()
    if n_sup and any(step.kind in CELL_SUPPRESSION_KINDS for step in recipe.steps):
        notice(f"kanon apply: notice: {NOT_COUNTED_AT_SCALE}")
    below = "" if got is None else f"; {got.records_below_k:,} records below k={k}"
    print(f"kanon apply: {len(recipe.steps)} step(s) replayed at scale ({engine.name}); {int(state.count.sum()):,} "
          f"records, {len(plan.columns)} variables, {n_sup:,} suppressed cells{below}; wrote "
          f"{', '.join(p.name for p in written)}", file=sys.stderr)
    return 0
