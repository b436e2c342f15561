"""The content of the report: every number comes from the kanon_core function that the dashboard uses.

:func:`build_report` takes a session history (the release is version ``vid``, the original is version 0)
and gathers, for a data steward who was not in the room:

* the data set, every variable's role and why it has it, and the officer's notes (the scenario);
* risk on the release's quasi-identifiers before and after (:func:`kanon_core.risk.summary.risk_summary`):
  k achieved, records violating k for k = 2..10, sample uniques, per-QI categories;
* the steps, each with its description and the risk after it (:func:`kanon_core.risk.timeline.version_risk`);
* suppression tables: per suppression step seed 000's tables 2 and 3 and its completely suppressed
  categories (:class:`~kanon_core.treat.suppress_result.SuppressionResult`), and overall per variable
  (:func:`kanon_core.utility.bias.suppressed_cells`);
* MINUCs before and after, when :mod:`kanon_core.risk.minucs` is available;
* utility: weighted percentages with CIs before/after (:func:`~kanon_core.utility.compare_distributions`)
  and Wilson's three regression models (:func:`~kanon_core.utility.compare_models`), with their plots.

Only aggregates (counts, percentages, estimates) enter the report: no record, no cell value.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
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
SUPPRESSION_KINDS = ("local_suppression",)
CONFIDENTIALITY_NOTE = (
    "This report contains no record-level data: no record and no cell value of the file appears in it. "
    "It shows only aggregates over records (counts, percentages, weighted estimates and their confidence "
    "intervals), category labels and variable names. Small counts in the tables refer to categories, "
    "not to identifiable people; treat the report as internal documentation nonetheless."
)


@dataclass(frozen=True)
class ReportOptions:
    """What to compute. ``qis`` default to the release's quasi-identifiers, ``formulas`` to one model:
    the first outcome on every QI as categorical; ``minucs`` adds the MINUC section (threshold
    ``minuc_k``) unless its estimated cost exceeds ``minuc_budget_seconds``."""

    k: int = 3
    qis: tuple[str, ...] | None = None
    title: str | None = None
    notes: str = ""
    created: str | None = None
    formulas: tuple[str, ...] | None = None
    utility: bool = True
    minucs: bool = True
    minuc_k: int = 2
    minuc_max_size: int | None = None
    minuc_budget_seconds: float = 30.0
    max_variable_plots: int = 40


@dataclass(frozen=True)
class SuppressionStepTables:
    """Seed 000's tables for one suppression step (cells it suppressed on its QIs)."""

    number: int
    description: str
    n_suppressed: int
    records_touched: int
    per_variable: pd.DataFrame
    most_suppressed: pd.DataFrame
    completely_suppressed: pd.DataFrame


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

    @property
    def n_suppressed(self) -> int:
        return int(self.suppression_overall["n_suppressed"].sum()) if len(self.suppression_overall) else 0


def _roles_table(original: Dataset, treated: Dataset) -> pd.DataFrame:
    released = set(treated.release_frame().columns)
    rows = []
    for c in original.columns:
        role = treated.roles.role_of(c) if c in treated.frame.columns else original.roles.role_of(c)
        rows.append({
            "variable": c, "label": original.meta_of(c).label or "", "role": role,
            "why": ROLE_WHY.get(role, ""),
            "released": "yes" if c in released else ("no (dropped)" if c not in treated.frame.columns else "no"),
        })
    return pd.DataFrame(rows, columns=["variable", "label", "role", "why", "released"])


def _risk_tables(before: RiskSummary, after: RiskSummary, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    measures = [
        ("Smallest class size (k achieved)", before.k_achieved, after.k_achieved),
        (f"Records in classes smaller than k = {k}", before.n_violating, after.n_violating),
        ("Sample uniques (class of 1)", before.n_sample_uniques, after.n_sample_uniques),
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


def _per_qi(original: Dataset, treated: Dataset, before: RiskSummary, after: RiskSummary) -> pd.DataFrame:
    b = before.per_qi.set_index("variable")
    a = after.per_qi.set_index("variable")
    rows = []
    for v in a.index:
        rows.append({
            "variable": v, "label": treated.meta_of(v).label or original.meta_of(v).label or "",
            "categories_before": int(b.loc[v, "distinct"]), "categories_after": int(a.loc[v, "distinct"]),
            "smallest_category_before": int(b.loc[v, "smallest_category"]),
            "smallest_category_after": int(a.loc[v, "smallest_category"]),
            "missing_before": int(b.loc[v, "missing"]), "missing_after": int(a.loc[v, "missing"]),
        })
    return pd.DataFrame(rows)


def _steps_table(history: History, lineage: list[Version], k: int, known: dict[int, Any] | None) -> pd.DataFrame:
    original = history.original.dataset
    rows = []
    for i, v in enumerate(lineage):
        try:
            r = known[v.id] if known and v.id in known else version_risk(original, v.dataset, k)
        except KanonError:
            r = None
        rows.append({
            "step": i, "version": v.id, "description": v.label,
            "kind": v.step.kind if v.step is not None else "",
            "qis": len(v.dataset.roles.qis),
            f"records_below_k{k}": None if r is None else r.n_violating,
            "k_achieved": None if r is None else r.k_achieved,
            "suppressed_cells": None if r is None else r.suppressed_cells,
        })
    return pd.DataFrame(rows)


def _step_suppression(number: int, parent: Dataset, child: Dataset, step: Any) -> SuppressionStepTables | None:
    from ..treat.suppress import resolve_costs
    from ..treat.suppress_result import SuppressionResult

    qis = tuple(q for q in (getattr(step, "qis", ()) or parent.roles.qis) if q in child.frame.columns)
    if not qis:
        return None
    qm = parent.qi_matrix(qis)
    mask = np.column_stack([child.missing_mask(q) & ~parent.missing_mask(q) for q in qis])
    try:
        costs, prot = resolve_costs(qis, getattr(step, "importance", ()), getattr(step, "protected", ()))
    except InputError:
        costs, prot = np.ones(len(qis)), np.zeros(len(qis), dtype=bool)
    cost = float((mask * costs[None, :]).sum())
    # Only the table methods are used: they depend on the codes, the mask and the costs, which are known
    # exactly from the two versions; bounds and timings of the original run are not.
    res = SuppressionResult(
        names=qis, k=int(getattr(step, "k", 0)), missing=parent.missing, method=str(getattr(step, "method", "")),
        engine="", codes=qm.codes, mask=mask, costs=costs,
        protected=tuple(q for q, p in zip(qis, prot.tolist(), strict=True) if p), cost=cost,
        record_wise_cost=cost, lower_bound=float("nan"), optimal=False, joint_released=0, seconds=0.0,
        violations_after=0, min_class_after=0)
    return SuppressionStepTables(number=number, description=step.describe(), n_suppressed=res.n_suppressed,
                                 records_touched=res.records_touched, per_variable=res.per_variable(),
                                 most_suppressed=res.most_suppressed(qm),
                                 completely_suppressed=res.completely_suppressed(qm))


def _minuc_section(original: Dataset, treated: Dataset, qis: tuple[str, ...], options: ReportOptions,
                   precomputed: tuple[Any, Any] | None) -> tuple[MinucSection | None, str]:
    import importlib

    try:
        minuc_module = importlib.import_module("kanon_core.risk.minucs")
    except ImportError:  # the MINUC engine is optional for the report
        return None, "The MINUC engine is not available in this installation."
    if not options.minucs:
        return None, "MINUCs were not computed for this report."
    k = int(options.minuc_k)
    if precomputed is not None:
        before, after = precomputed
    else:
        qb, qa = original.qi_matrix(qis), treated.qi_matrix(qis)
        estimate = getattr(minuc_module, "estimate_cost", None)
        if estimate is not None and options.minuc_budget_seconds is not None:
            try:
                est = estimate(qb, k=k, missing=treated.missing, max_size=options.minuc_max_size)
            except KanonError as exc:
                return None, f"MINUCs not computed: {exc}"
            if est.seconds > options.minuc_budget_seconds:
                return None, (f"MINUCs not computed: the search on the original data is estimated at "
                              f"{est.seconds:,.0f} s (limit {options.minuc_budget_seconds:,.0f} s). "
                              "Use the MINUCs page or a maximum size.")
        try:
            before = minuc_module.find_minucs(qb, k=k, missing=treated.missing, max_size=options.minuc_max_size)
            same = np.array_equal(qb.codes, qa.codes)  # nothing changed on the QIs: the same MINUCs
            after = before if same else minuc_module.find_minucs(qa, k=k, missing=treated.missing,
                                                                 max_size=options.minuc_max_size)
        except KanonError as exc:
            return None, f"MINUCs not computed: {exc}"
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


def _step_hierarchies(lineage: list[Version]) -> dict[str, Any]:
    """The hierarchies the lineage's generalization steps used (the latest per variable): Prec needs them."""
    from ..treat.recode import GeneralizeStep

    out: dict[str, Any] = {}
    for v in lineage:
        if isinstance(v.step, GeneralizeStep):
            for var in v.step.hierarchies:
                out[var] = v.step.hierarchy(var)
    return out


def _utility(original: Dataset, treated: Dataset, qis: tuple[str, ...], options: ReportOptions,
             hierarchies: dict[str, Any] | None = None) -> UtilitySection:
    from ..utility import compare_distributions, compare_models
    from ..utility.info_loss import information_loss
    from ..utility.plots import ci_comparison_figure, coefficient_figure, relative_difference_histogram

    notes: list[str] = []
    figures: list[tuple[str, Any]] = []
    comparison = None
    try:
        comparison = compare_distributions(original, treated, list(qis))
    except KanonError as exc:
        notes.append(f"Weighted percentages could not be compared: {exc}")
    if comparison is not None:
        table = comparison.table
        if (table["status"] == "compared").any():
            figures.append(("Relative differences", relative_difference_histogram(table)))
        for v in list(qis)[: options.max_variable_plots]:
            if (table["variable"] == v).any():
                figures.append((v, ci_comparison_figure(table, v)))
    models = []
    formulas = options.formulas if options.formulas is not None else default_formulas(treated, qis)
    for f in formulas:
        try:
            mc = compare_models(original, treated, f)
        except KanonError as exc:
            notes.append(f"Model '{f}' could not be fitted: {exc}")
            continue
        models.append(mc)
        figures.append((f"Model: {f}", coefficient_figure(mc.coefficients_long(), title=f"Coefficients: {f}")))
    if not formulas:
        notes.append("No regression model: the data have no outcome variable (set one on the Data page).")
    loss = None
    present = [q for q in qis if q in treated.frame.columns and q in original.frame.columns]
    if present:
        try:
            loss = information_loss(original, treated, present, hierarchies)
        except KanonError as exc:
            notes.append(f"Information loss could not be computed: {exc}")
    return UtilitySection(comparison=comparison, models=tuple(models), figures=tuple(figures), notes=tuple(notes),
                          info_loss=loss)


def build_report(history: History, vid: int | None = None, recipe_json: str | None = None,
                 options: ReportOptions = ReportOptions(),
                 minucs: tuple[Any, Any] | None = None, version_risks: dict[int, Any] | None = None) -> Report:
    """Gather the report of version ``vid`` (default: current) of ``history``.

    ``minucs`` may pass (before, after) MINUC results already computed (e.g. on the MINUCs page) for
    the same QIs, k and semantics, and ``version_risks`` the :func:`version_risk` of versions at
    ``options.k`` (e.g. from the sidebar timeline), to avoid computing them twice.
    """
    from ..recipe import Recipe
    from ..utility.bias import suppressed_cells

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
    original = raw_original.with_roles(treated.roles).with_missing(treated.missing)
    k = int(options.k)
    before = risk_summary(original.qi_matrix(qis), k, treated.missing)
    after = risk_summary(treated.qi_matrix(qis), k, treated.missing)
    risk_table, violations = _risk_tables(before, after, k)
    sup_steps = []
    for i, v in enumerate(lineage[1:], start=1):
        if v.step is not None and v.step.kind in SUPPRESSION_KINDS and v.parent is not None:
            t = _step_suppression(i, history.versions[v.parent].dataset, v.dataset, v.step)
            if t is not None:
                sup_steps.append(t)
    overall = suppressed_cells(original, treated, list(qis))
    minuc_section, minuc_note = _minuc_section(original, treated, qis, options, minucs)
    utility = _utility(original, treated, qis, options, _step_hierarchies(lineage)) if options.utility else None
    if recipe_json is None:
        recipe_json = Recipe.from_history(history, version.id, notes=options.notes).to_json()
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
        roles=_roles_table(raw_original, treated),
        risk_before=before,
        risk_after=after,
        risk_table=risk_table,
        violations=violations,
        per_qi=_per_qi(original, treated, before, after),
        steps=_steps_table(history, lineage, k, version_risks),
        suppression_overall=overall,
        suppression_steps=tuple(sup_steps),
        minucs=minuc_section,
        minuc_note=minuc_note,
        utility=utility,
        recipe_json=recipe_json,
    )
