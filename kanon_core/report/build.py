"""The content of the report: every number comes from the kanon_core function that the dashboard uses.

:func:`build_report` takes a session history (the release is version ``vid``, the original is version 0)
and gathers, for a data steward who was not in the room:

* the data set, every variable's role and why it has it, and the officer's notes (the scenario);
* risk on the release's quasi-identifiers before and after (:func:`kanon_core.risk.summary.risk_summary`):
  k achieved, records violating k for k = 2..10, sample uniques, per-QI categories;
* the steps, each with its description and the risk after it (:func:`kanon_core.risk.timeline.version_risk`);
* suppression tables: per suppression step Wilson et al.'s (RTI) tables 2 and 3 and its completely suppressed
  categories, and overall per variable, all counted by :func:`kanon_core.utility.suppressed.suppressed_mask`;
* MINUCs before and after, when :mod:`kanon_core.risk.minucs` is available;
* utility: weighted percentages with CIs before/after (:func:`~kanon_core.utility.compare_distributions`)
  and Wilson's three regression models (:func:`~kanon_core.utility.compare_models`), with their plots.

Only aggregates (counts, percentages, estimates) enter the report: no record, and no category with fewer
than k records in the original or the release (:mod:`.mask`, the threshold rule): such categories are
pooled (with the smallest others where the total would give back a pooled count below k), counts below
k read "< k", the embedded recipe has their values withheld, and the report lists
what it withheld.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..dataset import Dataset
from ..errors import InputError, KanonError
from ..history import History, Version
from ..risk.summary import RiskSummary, risk_summary
from ..risk.timeline import version_risk
from ..steps import CELL_SUPPRESSION_KINDS, protected_k
from ..utility.suppressed import suppressed_mask
from .mask import (
    WITHHELD,
    MaskLog,
    SmallCategories,
    below,
    gives_back_suppressed_values,
    is_small,
    mask_categories,
    numeric_without_labels,
    pooled_label,
    redact_values,
    small_categories,
)

ROLE_WHY = {
    "quasi-identifier": "Could be known to an intruder from other sources (the disclosure scenario); "
                        "risk is measured on the combination of these variables and they are treated.",
    "direct identifier": "Identifies a person on its own; never released.",
    "weight": "Sampling weight: used for weighted estimates and utility checks, not a key.",
    "stratum": "Survey design (stratum): used for variance estimation.",
    "PSU/cluster": "Survey design (primary sampling unit): used for variance estimation.",
    "outcome": "Analysis variable, not assumed known to an intruder; released unchanged.",
    "other": "Not assumed known to an intruder; released unchanged.",
}

CONFIDENTIALITY_NOTE = (
    "This report contains no record-level data: no record of the file appears in it, and no category that "
    "fewer than k records have (in the original or in the release) is named. It shows aggregates over "
    "records (counts, percentages, weighted estimates and their confidence intervals), variable names and "
    "the names of categories with at least k records; smaller categories are pooled per variable (with the "
    "smallest others where a pooled count below k could be worked out from the total) and a count below k "
    "is shown as '< k' (the threshold rule of statistical offices). The section 'What this "
    "report withholds' lists what was pooled. Treat the report as internal documentation nonetheless."
)


@dataclass(frozen=True)
class ReportOptions:
    """What to compute. ``qis`` default to the release's quasi-identifiers, ``formulas`` to one model:
    the first outcome on every QI as categorical; ``minucs`` adds the MINUC section (threshold
    ``minuc_k``, by default the report's own k, so the whole report speaks of one k) unless its estimated
    cost exceeds ``minuc_budget_seconds``."""

    k: int = 3
    qis: tuple[str, ...] | None = None
    title: str | None = None
    notes: str = ""
    created: str | None = None
    formulas: tuple[str, ...] | None = None
    utility: bool = True
    minucs: bool = True
    minuc_k: int | None = None
    minuc_max_size: int | None = None
    minuc_budget_seconds: float = 30.0
    max_variable_plots: int = 40
    hierarchies: Mapping[str, Any] | None = None
    """The session's hierarchies (the Recode page's) for variables no generalization step used; see
    :func:`kanon_core.utility.info_loss.version_hierarchies`."""


@dataclass(frozen=True)
class SuppressionStepTables:
    """Wilson et al.'s tables for one suppression step (cells it suppressed on its QIs), categories masked.

    ``protection`` states the step's protection model (when the step names one) and the people findable
    among fewer than k released records (the intruder's view of the step's promise).
    """

    number: int
    description: str
    n_suppressed: int
    records_touched: int
    per_variable: pd.DataFrame
    most_suppressed: pd.DataFrame
    completely_suppressed: pd.DataFrame
    protection: str = ""
    findable: int | None = None
    """People of the step's input with fewer than k (the report's) consistent records in its output (intruder's
    view), when counted."""
    restorable: int = 0
    """Suppressed cells another released variable restores (:func:`kanon_core.risk.restore.restorable_cells`)."""
    restoration: str = ""
    """That finding in words (variable names and counts), when some cell is restorable."""
    findable_restored: int | None = None
    """People findable among fewer than k released records once the restorable cells are written back."""
    optimality: str = ""
    """What the step's run proved of its cost (:meth:`kanon_core.treat.suppress_result.Optimality.sentence`),
    when the version keeps it (a step applied or replayed in this session)."""


@dataclass(frozen=True)
class MinucSection:
    k: int
    max_size: int | None
    before: Any
    after: Any
    by_size: pd.DataFrame
    contributions: pd.DataFrame


@dataclass(frozen=True)
class UtilitySection:
    comparison: Any | None
    models: tuple[Any, ...]
    figures: tuple[tuple[str, Any], ...]
    notes: tuple[str, ...]
    info_loss: Any | None = None
    categories: pd.DataFrame | None = None
    """The comparison's per-category table with categories of fewer than k records pooled (what is shown)."""


@dataclass(frozen=True)
class Report:
    """Everything the HTML shows; numbers straight from kanon_core's results."""

    title: str
    created: str
    kanon_version: str
    name: str
    n_records: int
    n_variables: int
    n_released: int
    fingerprint: str
    missing: str
    k: int
    qis: tuple[str, ...]
    notes: str
    roles: pd.DataFrame
    risk_before: RiskSummary
    risk_after: RiskSummary
    risk_table: pd.DataFrame
    violations: pd.DataFrame
    per_qi: pd.DataFrame
    steps: pd.DataFrame
    suppression_overall: pd.DataFrame
    suppression_steps: tuple[SuppressionStepTables, ...]
    minucs: MinucSection | None
    minuc_note: str
    utility: UtilitySection | None
    recipe_json: str
    masking: pd.DataFrame
    """What the threshold rule withheld: table, variable, categories pooled (or recipe values withheld)."""
    identifiers: tuple[IdentifierFlag, ...] = ()
    """Variables released unchanged that look like identifiers (:func:`identifier_like`)."""
    risk_beyond: tuple[Any, Any] | None = None
    """Risk measures beyond k (:func:`kanon_core.risk.summary.risk_measures`) before and after."""
    risk_beyond_note: str = ""
    released_suppressed: int | None = None
    """Suppressed cells of the whole release, every released variable (QI or not), as ``kanon apply`` and the
    exported files count them (:func:`kanon_core.export.release`); None when not counted."""

    @property
    def n_suppressed(self) -> int:
        """Suppressed cells of the release's quasi-identifiers (the overall suppression table's total)."""
        return int(self.suppression_overall["n_suppressed"].sum()) if len(self.suppression_overall) else 0

    @property
    def n_suppressed_released(self) -> int:
        """Suppressed cells of every released variable (``kanon apply``'s "suppressed cells"); the QIs' total when
        not counted."""
        return self.n_suppressed if self.released_suppressed is None else int(self.released_suppressed)


def suppressed_in_words(report: Report) -> str:
    """The release's total of suppressed cells in words, as ``kanon apply`` counts it, with the share on the
    quasi-identifiers when other released variables carry some too (e.g. a variable suppressed as a QI and
    given another role by a later step)."""
    total, on_qis = report.n_suppressed_released, report.n_suppressed
    if total == on_qis:
        return f"{total:,} quasi-identifier values were suppressed (set to missing)"
    return (f"{total:,} values of released variables were suppressed (set to missing): {on_qis:,} on the "
            "release's quasi-identifiers (the suppression tables), the rest on its other variables")


@dataclass(frozen=True)
class IdentifierFlag:
    """A variable released unchanged that looks like an identifier, with the plain reason."""

    variable: str
    reason: str


ID_NAME = ("id", "hid", "pid", "hhid", "idno", "serial", "caseid", "respid", "key", "uuid")
"""Name tokens of identifiers (``hh_id``, ``PersonID``, ``serial_no``)."""
NEAR_UNIQUE_SHARE = 0.9
"""A variable with distinct values in at least this share of its observed records identifies them."""


def _name_tokens(name: str) -> list[str]:
    import re

    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t.lower() for t in re.split(r"[^A-Za-z0-9]+", spaced) if t]


def identifier_like(original: Dataset, treated: Dataset) -> tuple[IdentifierFlag, ...]:
    """Released variables, unchanged by the treatment and not quasi-identifiers, that look like identifiers.

    The rule is kept simple and stated in the report: a name token of an identifier (``id``, ``hhid``,
    ``serial``...: ``STU_ID``, ``PersonID``, ``caseid``), or distinct values in at least 90 % of the
    records where it is observed (free text and record numbers). Numeric measurements with many distinct
    values (an income) also pass the second test, so it is applied to whole numbers and texts only: a
    continuous measurement is not a key, an integer unique per record is.
    """
    released = treated.release_frame()
    out = []
    for c in released.columns:
        r = treated.roles
        if c in r.qis or c in (r.weight, r.strata, r.fpc) or c not in original.frame.columns:
            continue  # QIs are measured and treated; a weight or stratum is design, not a key
        if not treated.frame[c].equals(original.frame[c]):
            continue
        toks = _name_tokens(str(c))
        if any(t in ID_NAME for t in toks):
            out.append(IdentifierFlag(str(c), "its name looks like an identifier"))
            continue
        s = treated.frame[c][~treated.missing_mask(c)]
        if len(s) < 10:
            continue
        whole = not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_integer_dtype(s.dtype) or (
            pd.api.types.is_float_dtype(s.dtype) and bool(np.all(np.mod(s.to_numpy(dtype=float), 1) == 0)))
        share = s.nunique() / len(s)
        if whole and share >= NEAR_UNIQUE_SHARE:
            out.append(IdentifierFlag(str(c), f"{100 * share:.0f} % of its values are distinct"))
    return tuple(out)


def _class_sizes(original: Dataset, treated: Dataset, qis: tuple[str, ...]) -> list[Any]:
    """The class sizes of both files on ``qis`` under the release's semantics, with the wildcard split and
    each file's weights: one count per file for the risk summaries and the risk measures beyond k. Weights
    that cannot be read leave them out (the measures then say why, :func:`_risk_beyond_k`). A release that
    reads as the original on the QIs and the weight (the first version, or one treating other variables)
    has the original's sizes, counted once."""
    from ..risk.classes import compute_class_sizes
    from ..utility.baseline import reads_alike

    def weights(ds: Dataset) -> np.ndarray | None:
        try:
            return ds.weights()
        except KanonError:
            return None

    def count(ds: Dataset) -> Any:
        return compute_class_sizes(ds.qi_matrix(qis).codes, treated.missing, weights(ds), wildcard_split=True)

    first = count(original)
    weight = original.roles.weight
    read = [*qis, *([weight] if weight else [])]
    alike = weight == treated.roles.weight and reads_alike(original, treated, read)
    return [first, first if alike else count(treated)]


def _risk_beyond_k(original: Dataset, treated: Dataset, qis: tuple[str, ...],
                   counted: Sequence[Any]) -> tuple[tuple[Any, Any] | None, str]:
    """Individual and global risk (Benedetti & Franconi, as sdcMicro) before and after, on the release's
    QIs and weight: aggregates only. None with the reason when the measures cannot be computed.
    ``counted``: both files' class sizes (:func:`_class_sizes`)."""
    try:
        from ..risk.summary import risk_measures
    except ImportError:
        return None, "The risk measures beyond k are not available in this installation."
    try:
        out = []
        for ds, sizes in zip((original, treated), counted, strict=True):
            ds.weights()  # weights that cannot be read: said here, as when they were counted here
            out.append(risk_measures(ds, sizes, qis))
    except KanonError as exc:
        return None, f"Risk measures beyond k not computed: {exc}"
    return (out[0], out[1]), ""


def _changed_conclusions(utility: UtilitySection | None) -> list[str]:
    """Per model, the covariates whose significance differs between the original and a treated model."""
    out = []
    for mc in (utility.models if utility is not None else ()):
        table = mc.pvalue_table()
        changed = table.loc[table["conclusion_changes"].astype(bool), "variable"].tolist()
        formula = next(iter(mc.results.values())).formula
        out.append((formula, changed))
    return out


def _changes_in_words(descriptions: Sequence[str]) -> str:
    """Step descriptions with the recodes of one variable counted together (``BYINCOME recoded in 4
    steps``), in the order the variables were first treated; other steps as described."""
    import re

    parts: list[str] = []
    recodes: dict[str, int] = {}
    for d in descriptions:
        m = re.match(r"^Recode (\S+?):", str(d))
        if m:
            if m.group(1) not in recodes:
                parts.append(m.group(1))
            recodes[m.group(1)] = recodes.get(m.group(1), 0) + 1
        else:
            parts.append(str(d))
    return "; ".join(
        (f"{p} recoded" + (f" in {recodes[p]} steps" if recodes[p] > 1 else "")) if p in recodes else p
        for p in parts)


def findable_after(report: Report) -> tuple[int, int] | None:
    """The most people a suppression step of the release left findable among fewer than k released records
    (the intruder's view, :class:`SuppressionStepTables`), with that step's number; None when none did. A
    release can have no record in a class smaller than k when a blank counts as any value (sdcMicro's
    criterion, the record's side) and still leave a person consistent with fewer than k records (the person's
    side): the claim of k-anonymity must rest on the person's side."""
    worst = max(((t.findable, t.number) for t in report.suppression_steps if t.findable), default=None)
    return worst


def restored_after(report: Report) -> tuple[int, int] | None:
    """The most people findable among fewer than k released records once a suppression step's restorable
    cells are written back (:func:`kanon_core.risk.restore.restorable_cells`), with that step's number; None
    when no step's cells restore so."""
    return max(((t.findable_restored, t.number) for t in report.suppression_steps
                if t.restorable and t.findable_restored), default=None)


def conclusions(report: Report) -> list[str]:
    """The report's first paragraph, in words: risk before and after, what was changed, which regression
    conclusions changed, and which variables released unchanged look like identifiers."""
    b, a, k, n = report.risk_before, report.risk_after, report.k, max(report.n_records, 1)
    findable = findable_after(report)
    restored = restored_after(report)
    if a.n_violating:
        after = (f"{a.n_violating:,} ({100 * a.n_violating / n:.1f} %) still can: the release is NOT "
                 f"{k}-anonymous.")
    elif findable:
        after = (f"no record is in a class smaller than k when a blank counts as any value, but {findable[0]:,} "
                 f"people are findable among fewer than {k} released records (suppression step {findable[1]}, "
                 f"from the intruder's side): the release is NOT {k}-anonymous for them.")
    elif restored:
        after = (f"none can as the release is written, but suppressed cells of step {restored[1]} can be restored "
                 f"from other variables of the release, and with them restored {restored[0]:,} people are "
                 f"findable among fewer than {k} released records: the release does NOT protect them (see that "
                 "step).")
    else:
        after = f"none can: the release is {k}-anonymous on its {len(report.qis)} quasi-identifiers."
    out = [f"Risk: before treatment {b.n_violating:,} of {report.n_records:,} records "
           f"({100 * b.n_violating / n:.1f} %) could be singled out (fewer than k = {k} records share their "
           f"quasi-identifier values); after treatment " + after]
    steps = report.steps.iloc[1:] if len(report.steps) else report.steps
    if len(steps):
        out.append(f"What was changed ({len(steps)} step(s)): {_changes_in_words(steps['description'])}. "
                   f"In total {suppressed_in_words(report)}.")
    else:
        out.append("Nothing was changed: the release is the data as loaded.")
    models = _changed_conclusions(report.utility)
    if not models:
        out.append("Regression conclusions: no model was compared.")
    for formula, changed in models:
        out.append(f"Regression conclusions ({formula}): "
                   + (f"the significance of {', '.join(changed)} changes after treatment (see the utility section)."
                      if changed else "every covariate keeps its significance after treatment."))
    if report.identifiers:
        out.append("Released unchanged but looking like identifiers (check before release): "
                   + "; ".join(f"{f.variable} ({f.reason})" for f in report.identifiers) + ".")
    else:
        out.append("No variable released unchanged looks like an identifier (by name, or distinct in at "
                   f"least {100 * NEAR_UNIQUE_SHARE:.0f} % of records).")
    return out


def _variable_label(column: str, original: Dataset, treated: Dataset) -> str:
    """The release's label of a variable (labels may be set as a step after loading), else the original's."""
    if column in treated.frame.columns and treated.meta_of(column).label:
        return str(treated.meta_of(column).label)
    return original.meta_of(column).label or ""


def _roles_table(original: Dataset, treated: Dataset) -> pd.DataFrame:
    released = set(treated.release_frame().columns)
    rows = []
    for c in original.columns:
        role = treated.roles.role_of(c) if c in treated.frame.columns else original.roles.role_of(c)
        rows.append({
            "variable": c, "label": _variable_label(c, original, treated), "role": role,
            "why": ROLE_WHY.get(role, ""),
            "released": "yes" if c in released else ("no (dropped)" if c not in treated.frame.columns else "no"),
        })
    return pd.DataFrame(rows, columns=["variable", "label", "role", "why", "released"])


def _risk_tables(before: RiskSummary, after: RiskSummary, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    measures = [
        ("Smallest class size (k achieved)", before.k_achieved, after.k_achieved),
        (f"Records in classes smaller than k = {k}", before.n_violating, after.n_violating),
        ("Sample uniques (class of 1)", before.n_sample_uniques, after.n_sample_uniques),
        (f"Records reaching k = {k} only through records with missing values", before.n_wildcard_dependent,
         after.n_wildcard_dependent),
        ("Distinct quasi-identifier patterns", before.n_classes, after.n_classes),
    ]
    table = pd.DataFrame(measures, columns=["measure", "before", "after"])
    table["change"] = table["after"] - table["before"]
    ks = sorted(before.violations)
    viol = pd.DataFrame({"k": ks, "before": [before.violations[x] for x in ks],
                         "after": [after.violations[x] for x in ks]})
    n = max(before.n_records, 1)
    viol["before_percent"] = np.round(100.0 * viol["before"] / n, 2)
    viol["after_percent"] = np.round(100.0 * viol["after"] / n, 2)
    return table, viol


def _per_qi(original: Dataset, treated: Dataset, before: RiskSummary, after: RiskSummary,
            k: int, pooled: Collection[str] = ()) -> pd.DataFrame:
    """Per QI: categories, smallest category and missing values before and after. A smallest category of 1 to
    k - 1 records reads "< k", as that count does everywhere else (the threshold rule).

    For a variable with ``pooled`` categories in the per-category table, the smallest category before reads
    "k or more" rather than its count: the release gives every category's count after, so the original's
    smallest count, beside a pooled sum, would give the pooled categories' counts back one by one (a pool
    of f and m with 40 records before, f 15 and m 20 in the release, and a smallest category of 20 before:
    both had 20, and every suppressed sex was f)."""
    b = before.per_qi.set_index("variable")
    a = after.per_qi.set_index("variable")

    def smallest(n: Any, v: str | None = None) -> int | str:
        if is_small(int(n), k):
            return below(k)
        return f"{k} or more" if v in pooled else int(n)

    rows = []
    for v in a.index:
        rows.append({
            "variable": v, "label": _variable_label(v, original, treated),
            "categories_before": int(b.loc[v, "distinct"]), "categories_after": int(a.loc[v, "distinct"]),
            "smallest_category_before": smallest(b.loc[v, "smallest_category"], v),
            "smallest_category_after": smallest(a.loc[v, "smallest_category"]),
            "missing_before": int(b.loc[v, "missing"]), "missing_after": int(a.loc[v, "missing"]),
        })
    return pd.DataFrame(rows)


VALUE_FIELDS = ("merge", "into", "top", "bottom", "top_value", "bottom_value")
"""Fields of a recode step that hold values of its variable (its description may show them)."""


def _value_labels_note(step: Any, released: Dataset, column: str) -> str:
    """The value labels of the codes a recode's description shows (its target, top and bottom codes), so a
    steward reads "into 1 = 'None'" rather than a bare code: ``" (1 = 'None')"``, or "" without labels.
    The labels are those of the step's output, so a merged category reads as its new label."""
    labels = released.meta_of(column).value_labels
    if not labels:
        return ""
    from ..treat.hierarchy import value_key

    by_key = {value_key(c): str(lab) for c, lab in labels.items()}
    parts = []
    for f in ("into", "top", "bottom"):
        x = getattr(step, f, None)
        lab = by_key.get(value_key(x)) if x is not None else None
        if lab and lab != str(x) and f"{x} = '{lab}'" not in parts:
            parts.append(f"{x} = '{lab}'")
    return f" ({'; '.join(parts)})" if parts else ""


def _declared_codes(step: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The (variable, codes) a step declares missing (its description lists them), or none."""
    values = getattr(step, "values", None)
    if isinstance(values, tuple) and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str)
                                         for p in values):
        return [(p[0], tuple(p[1])) for p in values]
    codes, column = getattr(step, "codes", None), getattr(step, "column", None)
    if isinstance(codes, tuple) and isinstance(column, str):
        return [(column, codes)]
    return []


def _safe_description(v: Version, original: Dataset, k: int, log: MaskLog) -> str:
    """The step's description, unless it would show a value of a category with fewer than k records (a merge
    target, a top- or bottom-coding bound, a code declared missing): then the variable and the kind of rule
    only."""
    declared = [(c, codes) for c, codes in (_declared_codes(v.step) if v.step is not None else [])
                if c in original.frame.columns]
    small = small_categories(original, v.dataset, [c for c, _ in declared], k) if declared else None
    for column, codes in declared:
        if any(small.label_is_small(column, c) for c in codes):  # type: ignore[union-attr]
            log.add("steps (description)", {column: 1})
            return (f"Declare missing codes of {', '.join(c for c, _ in declared)} (a code is a value of fewer "
                    f"than {k} records: see the recipe file, which is confidential)")
    if declared:
        return v.label
    column = getattr(v.step, "column", None)
    if v.step is None or not isinstance(column, str) or column not in original.frame.columns:
        return v.label
    small = small_categories(original, v.dataset, [column], k)
    values: list[Any] = []
    for f in VALUE_FIELDS[1:]:  # the description counts merged values but shows the target and bounds
        x = getattr(v.step, f, None)
        values.extend(x if isinstance(x, (tuple, list)) else [x])
    if not any(x is not None and small.label_is_small(column, x) for x in values):
        merged = getattr(v.step, "merge", None) or ()
        # a merged category's new label names its parts: shown only when none of them is a small category
        if any(x is not None and small.label_is_small(column, x) for x in merged):
            return v.label
        return v.label + _value_labels_note(v.step, v.dataset, column)
    log.add("steps (description)", {column: 1})
    return (f"Recode {column} (the rule names a category with fewer than {k} records: see the recipe file, "
            "which is confidential)")


def _steps_table(history: History, lineage: list[Version], k: int, known: dict[int, Any] | None,
                 log: MaskLog) -> pd.DataFrame:
    original = history.original.dataset
    rows = []
    for i, v in enumerate(lineage):
        try:
            r = known[v.id] if known and v.id in known else version_risk(original, v.dataset, k)
        except KanonError:
            r = None
        rows.append({
            "step": i, "version": v.id, "description": _safe_description(v, original, k, log),
            "kind": v.step.kind if v.step is not None else "",
            "qis": len(v.dataset.roles.qis),
            f"records_below_k{k}": None if r is None else r.n_violating,
            "k_achieved": None if r is None else r.k_achieved,
            "suppressed_cells": None if r is None else r.suppressed_cells,
        })
    return pd.DataFrame(rows)


def _mask_most_suppressed(table: pd.DataFrame, small: SmallCategories, value_col: str, count_col: str,
                          log: MaskLog, name: str) -> pd.DataFrame:
    """One row per variable naming the value suppressed most: not named when it is a small category, nor when
    fewer than k of the suppressed cells held it. Why the second: the row crosses a value with the cells that
    hid it, so "region 3, 1 cell (100 %)" gives back the one value suppressed, and "2 of 3 were region 2"
    most of them; fewer than k such cells are shown as a count below k is everywhere ("< k"), and so is their
    share.

    Nor is it named when it held every suppressed cell of the variable (a share of 100 %): the name would give
    back each of them.

    The text in place of the value says why it is not named: a small category reads "a category with fewer
    than k records", a category hidden only because fewer than k of its cells were suppressed (it may be
    large) "a category (fewer than k of its values suppressed)", one that held them all
    :data:`EVERY_SUPPRESSED_LABEL`."""
    out = table.copy()
    if not len(out):
        return out
    small_label = [v is not None and small.label_is_small(var, v)
                   for var, v in zip(out["variable"], out[value_col], strict=True)]
    share_col = next((c for c in ("percent_of_variable", "most_suppressed_percent") if c in out.columns), None)
    every = ([False] * len(out) if share_col is None else
             [bool(p >= 100.0) for p in pd.to_numeric(out[share_col], errors="coerce").fillna(0.0)])
    hide = [v is not None and (s or e or is_small(n, small.k))
            for v, s, e, n in zip(out[value_col], small_label, every, out[count_col], strict=True)]
    if any(hide):
        out[value_col] = [(pooled_label(small.k).replace("other categories", "a category") if s
                           else few_suppressed_label(small.k) if is_small(n, small.k)
                           else EVERY_SUPPRESSED_LABEL) if h else v
                          for h, s, v, n in zip(hide, small_label, out[value_col], out[count_col], strict=True)]
        out[count_col] = [below(small.k) if h and is_small(n, small.k) else n
                          for h, n in zip(hide, out[count_col], strict=True)]
        if share_col is not None:
            out[share_col] = [None if h and is_small(n, small.k) else p
                              for h, n, p in zip(hide, table[count_col], out[share_col], strict=True)]
        log.add(name, {str(var): 1 for var, h in zip(out["variable"], hide, strict=True) if h})
    return out


CATEGORY_TABLE = "weighted percentages per category"
"""The per-category comparison's name in the record of what was withheld (:class:`.mask.MaskLog`); the per-QI
table reads its pooled variables from there."""

EVERY_SUPPRESSED_LABEL = "a category (not named: it held every suppressed value of the variable)"
"""What "value suppressed most" reads when one category held all the variable's suppressed cells: naming it
would give back every one of them."""


def few_suppressed_label(k: int) -> str:
    """What "value suppressed most" reads when fewer than k of that category's cells were suppressed (the category
    itself may be large): the value is not named, nor is the category said to be small."""
    return f"a category (fewer than {k} of its values suppressed)"


def _protection(step: Any, parent: Dataset, qis: tuple[str, ...], mask: np.ndarray, missing: str, k_report: int
                ) -> tuple[str, int | None]:
    """The step's protection model (when the step names one) and, from the intruder's side
    (:func:`kanon_core.risk.intruder.findable_below_k`), the people of the step's input with fewer than k
    consistent records in its output: the sentence, and that number at the report's k (None when not
    counted), which the report's conclusions state with that k. The sentence gives the step's own k too when
    it names another (a step suppressing to k = 2 in a report at k = 3)."""
    from ..risk.intruder import findable_below_k, released_codes

    parts = []
    model = getattr(step, "model", None)
    if model:
        try:
            from ..treat.protection import get_model

            promise = str(getattr(get_model(str(model)), "promise", "") or "")
        except (ImportError, KanonError):
            promise = ""
        parts.append(f"protection model: {model}" + (f" — {promise.rstrip('.')}" if promise else ""))
    n = None
    if k_report > 1:
        codes = parent.qi_matrix(qis).codes
        released = released_codes(codes, mask)  # suppressed cells are declared, told from missing ones
        for k in dict.fromkeys([protected_k(step, k_report), k_report]):
            found = findable_below_k(codes, released, k, missing)  # type: ignore[arg-type]
            parts.append(f"people findable among fewer than {k} released records: {found:,}")
            n = found if k == k_report else n
    return "; ".join(parts), n


def _step_suppression(number: int, parent: Dataset, child: Dataset, step: Any, k: int,
                      log: MaskLog, original: Dataset, outcome: Any = None) -> SuppressionStepTables | None:
    from ..treat.suppress import resolve_costs
    from ..treat.suppress_result import Optimality

    qis = tuple(q for q in (getattr(step, "qis", ()) or parent.roles.qis)
                if q in child.frame.columns and q in parent.frame.columns)
    if not qis:
        return None
    cells = suppressed_mask(parent, child, qis)
    try:
        costs, prot = resolve_costs(qis, getattr(step, "importance", ()), getattr(step, "protected", ()))
    except InputError:
        costs, prot = np.ones(len(qis)), np.zeros(len(qis), dtype=bool)
    counts = cells.per_variable()
    per_variable = pd.DataFrame({
        "variable": list(qis), "suppressed": [counts[q] for q in qis],
        "percent": [round(100.0 * counts[q] / max(parent.n_records, 1), 2) for q in qis],
        "cost_per_cell": [float(c) if np.isfinite(c) else None for c in costs],
        "protected": prot.tolist(),
    })
    small = small_categories(parent, child, qis, k).union(
        small_categories(original, child, [q for q in qis if q in original.frame.columns], k))
    most = _mask_most_suppressed(cells.most_suppressed(parent), small, "value", "suppressed", log,
                                 f"suppression step {number}: value suppressed most")
    gone = cells.completely_suppressed(parent)
    flags = [small.label_is_small(v, x) for v, x in zip(gone["variable"], gone["value"], strict=True)]
    # a category that disappeared with as many records as its variable lost held every suppressed cell
    held_all = [not f and int(n) == counts[v] for v, n, f in zip(gone["variable"], gone["records"], flags, strict=True)]
    if any(held_all):
        gone = gone.assign(value=[EVERY_SUPPRESSED_LABEL if h else x for h, x in zip(held_all, gone["value"],
                                                                                    strict=True)])
        log.add(f"suppression step {number}: categories that disappeared",
                {str(v): 1 for v, h in zip(gone["variable"], held_all, strict=True) if h})
    masked = mask_categories(gone, k, flags, ("value",), ("records",), ("records",))
    log.add(f"suppression step {number}: categories that disappeared", masked.masked)
    protection, findable = _protection(step, parent, qis, cells.mask, child.missing, k)
    restoration = None
    if findable is not None:  # k > 1: what the other released variables give back, from the intruder's side
        from ..risk.restore import restorable_cells

        restoration = restorable_cells(parent, child, qis, k, findable)
    return SuppressionStepTables(number=number, description=step.describe(), n_suppressed=cells.total,
                                 records_touched=cells.records_touched, per_variable=per_variable,
                                 most_suppressed=most, completely_suppressed=masked.table,
                                 protection=protection, findable=findable,
                                 restorable=restoration.n_restorable if restoration else 0,
                                 restoration=restoration.sentence() if restoration and restoration.n_restorable
                                 else "",
                                 findable_restored=restoration.findable_after if restoration else None,
                                 optimality=outcome.sentence() if isinstance(outcome, Optimality) else "")


def report_minuc_searches(original: Dataset, treated: Dataset, qis: tuple[str, ...],
                          options: ReportOptions, original_found: Any = None) -> tuple[Any, Any] | str:
    """The MINUC counts of the report's section, before (``original``, seen with the release's roles) and
    after: ``(before, after)``, or the sentence the report prints when they are not computed (MINUCs off,
    the engine absent, the search on the original estimated above ``options.minuc_budget_seconds``, or
    refused).

    The one place the report's MINUC search is made, whether by :func:`build_report` itself or ahead of it
    (the dashboard starts it when the report tab opens, and hands the pair in). The section shows counts
    only, so the search tallies them and keeps no list of MINUCs; when nothing changed on the QIs the
    release's MINUCs are the original's and are not searched twice. ``original_found``: every MINUC of the
    original already found (a :class:`~kanon_core.risk.minucs.MinucResult`, e.g. by the MINUCs page) on
    ``qis`` with the report's k, size limit and semantics; it is then not searched again (nor estimated), and
    the release's search carries its untouched records' MINUCs over. Anything else is ignored.
    """
    import importlib

    try:
        minuc_module = importlib.import_module("kanon_core.risk.minucs")
    except ImportError:  # the MINUC engine is optional for the report
        return "The MINUC engine is not available in this installation."
    if not options.minucs:
        return "MINUCs were not computed for this report."
    k = report_minuc_k(options)
    qb, qa = original.qi_matrix(qis), treated.qi_matrix(qis)
    missing, max_size = treated.missing, options.minuc_max_size
    carry_module = importlib.import_module("kanon_core.risk.minucs_carry")
    if original_found is not None and not carry_module.prior_answers(original_found, qb, k, missing, max_size):
        original_found = None  # another question (QIs, k, semantics, size limit) or other records
    estimate = getattr(minuc_module, "estimate_cost", None)
    if original_found is None and estimate is not None and options.minuc_budget_seconds is not None:
        limit = options.minuc_budget_seconds
        try:  # the estimate itself within a share of the limit: with 40 QIs a sample alone can take minutes
            est = estimate(qb, k=k, missing=treated.missing, max_size=options.minuc_max_size, keep=False,
                           budget_seconds=max(ESTIMATE_SHARE * limit, 0.4))
        except KanonError as exc:
            return f"MINUCs not computed: {exc}"
        if est.seconds > limit:
            bound = getattr(est, "at_least", None)
            if bound is not None:
                return (f"MINUCs not computed: the cost of the search on the original data could not be estimated "
                        f"within {bound.budget_seconds:,.1f} s, so it may exceed the limit of {limit:,.0f} s. "
                        "Use the MINUCs page or a maximum size.")
            return (f"MINUCs not computed: the search on the original data is estimated at "
                    f"{est.seconds:,.0f} s (limit {limit:,.0f} s). "
                    "Use the MINUCs page or a maximum size.")
    search = getattr(minuc_module, "summarize_minucs", minuc_module.find_minucs)
    try:
        if np.array_equal(qb.codes, qa.codes):  # nothing changed on the QIs: the same MINUCs
            before = (original_found.counts_only() if original_found is not None
                      else search(qb, k=k, missing=missing, max_size=max_size))
            return before, before
        # the original's MINUCs are kept for the release's search, which takes those of the records the
        # treatment did not touch (kanon_core.risk.minucs_carry) and searches the others
        found = (original_found if original_found is not None
                 else minuc_module.find_minucs(qb, k=k, missing=missing, max_size=max_size))
        carry = carry_module.plan_carry(found, qb, qa, k, missing, max_size)
        after = search(qa, k=k, missing=missing, max_size=max_size, carry=carry)
    except KanonError as exc:
        return f"MINUCs not computed: {exc}"
    return found.counts_only(), after


ESTIMATE_SHARE = 0.1
"""Share of the report's MINUC time limit its cost estimate may take (at least 0.4 s): within it the estimate is
exact; beyond, the search is not made unasked, and the report says its cost is not known."""


def report_minuc_k(options: ReportOptions) -> int:
    """The k of the report's MINUC section: ``minuc_k`` when set, else the report's own k."""
    return int(options.k if options.minuc_k is None else options.minuc_k)


def _minuc_section(original: Dataset, treated: Dataset, qis: tuple[str, ...], options: ReportOptions,
                   precomputed: tuple[Any, Any] | None) -> tuple[MinucSection | None, str]:
    if not options.minucs:
        return None, "MINUCs were not computed for this report."
    k = report_minuc_k(options)
    searched = precomputed if precomputed is not None else report_minuc_searches(original, treated, qis, options)
    if isinstance(searched, str):
        return None, searched
    before, after = searched
    tb, ta = before.totals_by_size(), after.totals_by_size()
    sizes = sorted(set(tb) | set(ta))
    by_size = pd.DataFrame({"size": sizes, "before": [int(tb.get(s, 0)) for s in sizes],
                            "after": [int(ta.get(s, 0)) for s in sizes]})
    by_size = by_size[(by_size["before"] > 0) | (by_size["after"] > 0)].reset_index(drop=True)
    contrib = pd.DataFrame({"variable": list(qis)})
    for side, res in (("before", before), ("after", after)):
        vc = res.variable_contributions() if hasattr(res, "variable_contributions") else None
        if vc is not None:
            m = vc.set_index("variable")
            contrib[f"minucs_{side}"] = contrib["variable"].map(m["minucs"]).fillna(0).astype(np.int64)
            contrib[f"records_{side}"] = contrib["variable"].map(m["records"]).fillna(0).astype(np.int64)
    return MinucSection(k=k, max_size=options.minuc_max_size, before=before, after=after, by_size=by_size,
                        contributions=contrib), ""


def default_formulas(treated: Dataset, qis: Sequence[str]) -> tuple[str, ...]:
    """One model: the first outcome on every quasi-identifier as a categorical covariate."""
    outcomes = [o for o in treated.roles.outcomes if o in treated.frame.columns]
    if not outcomes or not qis:
        return ()
    return (f"{outcomes[0]} ~ " + " + ".join(f"C({q})" for q in qis),)


def _mask_comparison(table: pd.DataFrame, original: Dataset, treated: Dataset,
                     k: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """The per-category comparison with categories of 1 to k - 1 records (either side) pooled; every category
    of a measurement (:func:`.mask.numeric_without_labels`, e.g. incomes) that is still one in the release
    (not recoded into bins) is pooled when one of them is small."""
    n_o = pd.to_numeric(table["n_original"], errors="coerce").fillna(0).to_numpy()
    n_t = pd.to_numeric(table["n_treated"], errors="coerce").fillna(0).to_numpy()
    flags = np.array([is_small(a, k) or is_small(b, k) for a, b in zip(n_o, n_t, strict=True)], dtype=bool)
    variables = table["variable"].to_numpy()
    # a merged category of k records or more whose label names a small one (SmallCategories.label_is_small)
    merged = np.array(["/" in str(lab) for lab in table["label"]], dtype=bool) & ~flags
    if merged.any():
        small = small_categories(original, treated, list(dict.fromkeys(variables[merged].tolist())), k)
        flags[merged] = [small.label_is_small(str(v), lab) for v, lab in zip(variables[merged],
                                                                           table["label"].to_numpy()[merged],
                                                                           strict=True)]
    for v in set(variables[flags].tolist()):
        if numeric_without_labels(original, v) and numeric_without_labels(treated, v):
            flags |= variables == v
    flags |= gives_back_suppressed_values(variables, n_o, n_t, flags)
    masked = mask_categories(table, k, flags, ("value", "label"),
                             ("n_original", "n_treated", "pct_original", "pct_treated", "difference"),
                             ("n_original", "n_treated"))
    out = masked.table
    for c in out.columns:  # a pooled row has no CI: NaN (empty in the table, a gap in the plot)
        if c.startswith(("pct_", "se_", "ci_")) or c in ("difference", "relative_difference"):
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    return out, dict(masked.masked)


def _shown_coefficients(mc: Any, small: SmallCategories) -> tuple[pd.DataFrame, int]:
    """The coefficients to plot: those of categories with fewer than k records are left out."""
    from ..utility.formula import MOVED_REFERENCE
    from ..utility.model_compare import SUPPRESSED_LEVEL

    c = mc.coefficients_long()

    def shown_level(label: str) -> str:  # "Race: Asian (other reference)" -> "Asian"
        return str(label).split(": ", 1)[-1].replace(f" {MOVED_REFERENCE}", "")

    hide = np.array([lvl is not None and str(lvl) != SUPPRESSED_LEVEL and str(lvl) != "" and var in small.texts
                     and (small.label_is_small(var, lvl) or small.label_is_small(var, shown_level(lab)))
                     for var, lvl, lab in zip(c["variable"], c["level"], c["label"], strict=True)], dtype=bool)
    return c[~hide].reset_index(drop=True), int(hide.sum())


def _reusable(comparison: Any | None, variables: Sequence[str]) -> bool:
    """Whether ``comparison`` (computed elsewhere, e.g. on the Compare page, for the same original with the
    release's roles and the same release) is what :func:`compare_distributions` gives the report: the same
    variables in the same order, Wald intervals at 95 %."""
    if comparison is None:
        return False
    shown = pd.unique(comparison.table["variable"]).tolist()
    return shown == list(variables) and comparison.ci_method == "wald" and comparison.level == 0.95


def _utility(original: Dataset, treated: Dataset, qis: tuple[str, ...], options: ReportOptions,
             hierarchies: Mapping[str, Any] | None, log: MaskLog,
             comparison: Any | None = None, counted: Sequence[Any] = (),
             levels: Mapping[str, int] | None = None) -> UtilitySection:
    """The utility section; ``counted``: both files' class sizes on ``qis`` (:func:`_class_sizes`); ``levels``:
    the level each variable was generalized to (:func:`kanon_core.utility.info_loss.version_levels`)."""
    from ..utility import compare_distributions, compare_models
    from ..utility.formula import parse_formula
    from ..utility.info_loss import information_loss
    from ..utility.plots import ci_comparison_spec, coefficient_figure, relative_difference_histogram

    k = int(options.k)
    notes: list[str] = []
    figures: list[tuple[str, Any]] = []
    known, comparison = comparison, None
    categories = None
    # a variable with every value suppressed has no percentages after: each of its categories is completely
    # suppressed (compare_distributions), and counted so in the summary
    empty = [q for q in qis if not (~treated.missing_mask(q)).any()]
    if empty:
        notes.append(f"No value left after treatment (every category completely suppressed): {', '.join(empty)}.")
    try:
        compared = list(qis)
        if compared and _reusable(known, compared):
            comparison = known
        else:
            comparison = compare_distributions(original, treated, compared) if compared else None
    except KanonError as exc:
        notes.append(f"Weighted percentages could not be compared: {exc}")
    if comparison is not None:
        table = comparison.table
        categories, masked = _mask_comparison(table, original, treated, k)
        log.add(CATEGORY_TABLE, masked)
        if (table["status"] == "compared").any():  # relative differences only: no category is named
            figures.append(("Relative differences", relative_difference_histogram(table)))
        for v in list(qis)[: options.max_variable_plots]:
            if (categories["variable"] == v).any():
                figures.append((v, ci_comparison_spec(categories, v)))
    models = []
    formulas = options.formulas if options.formulas is not None else default_formulas(treated, qis)
    for f in formulas:
        try:
            mc = compare_models(original, treated, f)
        except KanonError as exc:
            notes.append(f"Model '{f}' could not be fitted: {exc}")
            continue
        models.append(mc)
        covariates = [t.variable for t in parse_formula(f, original.columns).terms]
        shown, hidden = _shown_coefficients(mc, small_categories(original, treated, covariates, k))
        if hidden:
            log.add(f"coefficients of the model {f}", {"(coefficients)": hidden})
            notes.append(f"Model '{f}': {hidden} coefficient(s) of categories with fewer than {k} records are "
                         "not plotted (they would name the category).")
        if len(shown):
            figures.append((f"Model: {f}", coefficient_figure(shown, title=f"Coefficients: {f}")))
        else:  # every coefficient names a small category (or there is none): the report goes on without a plot
            notes.append(f"Model '{f}': no coefficient is plotted.")
        # separation, aliasing, convergence: counts and reasons only, no category named
        notes.extend(f"Model '{f}', {n}." for n in mc.model_notes())
    if not formulas:
        notes.append("No regression model: the data have no outcome variable (set one on the Data page).")
    loss = None
    present = [q for q in qis if q in treated.frame.columns and q in original.frame.columns]
    if present:
        try:
            same = tuple(present) == tuple(qis) and original.missing == treated.missing
            loss = information_loss(original, treated, present, hierarchies,
                                    counted=[c.fk_all for c in counted] if same and counted else None,
                                    levels=levels)
        except KanonError as exc:
            notes.append(f"Information loss could not be computed: {exc}")
    return UtilitySection(comparison=comparison, models=tuple(models), figures=tuple(figures), notes=tuple(notes),
                          info_loss=loss, categories=categories)


def _mask_recipe(recipe_json: str, versions: Sequence[Dataset], k: int, log: MaskLog) -> str:
    """The recipe with the values of categories of fewer than k records withheld (merge lists, hierarchy
    rows, merge targets, bounds, texts); unchanged when it names none. The recipe file itself keeps them: it
    must, to replay.

    A category is small when it has 1 to k - 1 records in any of ``versions`` (the original first, then every
    version on the way to the release): a recipe names the values its steps make (a merge target, a top code)
    as well as those they read, and a value made by a step exists only from that step's version on (a merge
    of two categories into one of 2 records was named when only the original was looked at)."""
    import json

    data = json.loads(recipe_json)
    named: set[str] = set()

    def collect(x: Any) -> None:
        if isinstance(x, dict):
            if isinstance(x.get("column"), str):
                named.add(x["column"])
            for key in ("values", "labels"):  # declared missing codes, value labels: [[variable, [...]], ...]
                if isinstance(x.get(key), list):
                    named.update(p[0] for p in x[key] if isinstance(p, list) and p and isinstance(p[0], str))
            if isinstance(x.get("hierarchies"), dict):
                named.update(str(v) for v in x["hierarchies"])
            for val in x.values():
                collect(val)
        elif isinstance(x, list):
            for e in x:
                collect(e)

    collect(data.get("steps", []))
    original = versions[0]
    variables = [v for v in named if v in original.frame.columns]
    if not variables:
        return recipe_json
    per_version = [small_categories(original, v, [c for c in variables if c in v.frame.columns], k)
                   for v in versions]
    texts = {c: frozenset().union(*(s.texts.get(c, frozenset()) for s in per_version)) for c in variables}
    every = frozenset().union(*texts.values())
    steps, n = [], 0
    for step in data.get("steps", []):
        safe, m = redact_values(step, every, texts, value_fields=VALUE_FIELDS)
        if m and isinstance(safe, dict) and "description" in safe:  # the description may show the value too
            safe["description"] = WITHHELD
        steps.append(safe)
        n += m
    if not n:
        return recipe_json
    log.add("recipe (values withheld)", {"(recipe)": n})
    return json.dumps({**data, "steps": steps}, indent=2, ensure_ascii=False)


def build_report(history: History, vid: int | None = None, recipe_json: str | None = None,
                 options: ReportOptions = ReportOptions(),
                 minucs: tuple[Any, Any] | Callable[[], tuple[Any, Any] | None] | None = None,
                 version_risks: dict[int, Any] | None = None, comparison: Any | None = None) -> Report:
    """Gather the report of version ``vid`` (default: current) of ``history``.

    ``minucs`` may pass (before, after) MINUC results already computed (e.g. on the MINUCs page) for
    the same QIs, k and semantics, or a function that gives them once a search under way elsewhere has
    finished (None when there is none: the report then searches itself), ``version_risks`` the
    :func:`version_risk` of versions at
    ``options.k`` (e.g. from the sidebar timeline), and ``comparison`` the weighted percentages of the
    original (with the release's roles) against the release (e.g. the Compare page's), to avoid computing
    them twice; a comparison of other variables or intervals is not used.

    A MINUC search the report has to make itself, or waits for, runs in a thread of its own while the other
    sections are gathered: its compiled kernels release the interpreter, so on a machine of two cores the
    search and the report's Python work overlap instead of adding up.
    """
    from ..export import released_suppressed
    from ..recipe import Recipe
    from ..utility.baseline import original_with_roles
    from ..utility.bias import suppressed_cells
    from ..utility.info_loss import version_hierarchies, version_levels

    version = history.versions[history.current_id if vid is None else vid]
    lineage = history.lineage(version.id)
    treated = version.dataset
    qis = tuple(options.qis if options.qis is not None else treated.roles.qis)
    if not qis:
        raise InputError("The report needs quasi-identifiers: set them on the Data page.")
    absent = [q for q in qis if q not in treated.frame.columns]
    if absent:
        raise InputError(f"Quasi-identifier(s) not in the release: {', '.join(absent)}.")
    raw_original = history.original.dataset
    if raw_original.n_records != treated.n_records:
        raise InputError("The release does not have the same records as the original data.")
    # the original seen with the release's roles and semantics: same design, same QIs, same counting
    original = original_with_roles(history, version.id)
    k = int(options.k)
    log = MaskLog(k)
    minuc_job = None
    if (minucs is None or callable(minucs)) and options.minucs:
        from concurrent.futures import ThreadPoolExecutor

        ahead = minucs if callable(minucs) else None
        pool = ThreadPoolExecutor(1, thread_name_prefix="kanon-report-minucs")
        minuc_job = pool.submit(lambda: _minuc_section(original, treated, qis, options,
                                                       ahead() if ahead is not None else None))
        pool.shutdown(wait=False)  # the thread ends with the search; its result is taken below
    counted = _class_sizes(original, treated, qis)
    before = risk_summary(original.qi_matrix(qis), k, treated.missing, sizes=counted[0])
    after = risk_summary(treated.qi_matrix(qis), k, treated.missing, sizes=counted[1])
    risk_table, violations = _risk_tables(before, after, k)
    sup_steps = []
    for i, v in enumerate(lineage[1:], start=1):
        if v.step is not None and v.step.kind in CELL_SUPPRESSION_KINDS and v.parent is not None:
            t = _step_suppression(i, history.versions[v.parent].dataset, v.dataset, v.step, k, log, original,
                                  v.outcome)
            if t is not None:
                sup_steps.append(t)
    overall = _mask_most_suppressed(suppressed_cells(original, treated, list(qis)),
                                    small_categories(original, treated, qis, k), "most_suppressed",
                                    "most_suppressed_n", log, "suppression per variable: value suppressed most")
    beyond, beyond_note = _risk_beyond_k(original, treated, qis, counted)
    hierarchies = version_hierarchies(history, version.id, options.hierarchies)
    utility = (_utility(original, treated, qis, options, hierarchies, log, comparison, counted,
                        version_levels(history, version.id))
               if options.utility else None)
    if recipe_json is None:
        recipe_json = Recipe.from_history(history, version.id, notes=options.notes).to_json()
    recipe_json = _mask_recipe(recipe_json, [raw_original, *(v.dataset for v in lineage[1:])], k, log)
    # everything that does not need the MINUCs is gathered before waiting for them (a search under way ends
    # last), so that little is left to do once it has ended
    roles = _roles_table(raw_original, treated)
    per_qi = _per_qi(original, treated, before, after, k,
                     {r["variable"] for r in log.rows if r["table"] == CATEGORY_TABLE})
    steps = _steps_table(history, lineage, k, version_risks, log)
    identifiers = identifier_like(raw_original, treated)
    n_released_suppressed = sum(int(m.sum()) for m in released_suppressed(treated, raw_original).values())
    minuc_section, minuc_note = (minuc_job.result() if minuc_job is not None
                                 else _minuc_section(original, treated, qis, options,
                                                     None if callable(minucs) else minucs))
    return Report(
        title=options.title or f"Disclosure control report: {treated.name}",
        created=options.created or _dt.date.today().isoformat(),
        kanon_version=__version__,
        name=treated.name,
        n_records=treated.n_records,
        n_variables=len(raw_original.columns),
        n_released=len(treated.release_frame().columns),
        fingerprint=raw_original.fingerprint,
        missing=treated.missing,
        k=k,
        qis=qis,
        notes=options.notes,
        roles=roles,
        risk_before=before,
        risk_after=after,
        risk_table=risk_table,
        violations=violations,
        per_qi=per_qi,
        steps=steps,
        suppression_overall=overall,
        suppression_steps=tuple(sup_steps),
        minucs=minuc_section,
        minuc_note=minuc_note,
        utility=utility,
        recipe_json=recipe_json,
        masking=log.frame(),
        identifiers=identifiers,
        risk_beyond=beyond,
        risk_beyond_note=beyond_note,
        released_suppressed=n_released_suppressed,
    )
