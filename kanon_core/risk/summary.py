"""Risk at a glance: k achieved, violations for k = 2..10, class-size distribution, sample uniques,
per-QI distinct and singleton values, and the records that reach k only through wildcard matches; and
beyond k (:func:`risk_measures`): Benedetti & Franconi's individual risk and its totals, household risk,
and per sensitive variable l-diversity and t-closeness, with their distributions and the records failing
each criterion. Everything the Risk page and ``kanon risk`` show comes from here.

With sdcMicro's ``alpha`` below 1 the class sizes fk can be fractional (see
:mod:`kanon_core.risk.classes`): k achieved is then the largest integer k with every fk >= k, and class
sizes are binned by their integer part.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..classtable import ClassTable
from ..dataset import MISSING_CODE, Dataset, MissingSemantics, QIMatrix
from ..errors import InputError
from .classes import ClassSizes, compute_class_sizes, wildcard_dependent
from .household import HouseholdRisk, household_summary
from .individual import DEFAULT_MAX_RISK, GlobalRisk, check_max_risk, global_risk, individual_risk
from .keys import group_ids

K_RANGE = tuple(range(2, 11))


@dataclass(frozen=True)
class RiskSummary:
    """Risk of one QI set. ``violations[k]`` = records whose class is smaller than k.

    ``wildcard_dependent`` flags the records with fk >= k at alpha = 1 but < k at alpha = 0: they are
    safe only because records with missing values count as matches (whatever ``alpha`` is chosen).
    """

    n_records: int
    n_qis: int
    missing: MissingSemantics
    k: int
    k_achieved: int
    n_violating: int
    n_sample_uniques: int
    n_classes: int
    violations: dict[int, int]
    sizes: ClassSizes
    size_distribution: pd.DataFrame
    per_qi: pd.DataFrame
    alpha: float = 1.0
    wildcard_dependent: np.ndarray | None = None

    @property
    def n_wildcard_dependent(self) -> int:
        return 0 if self.wildcard_dependent is None else int(self.wildcard_dependent.sum())

    def to_json(self) -> dict:
        return {
            "n_records": self.n_records,
            "n_qis": self.n_qis,
            "missing": self.missing,
            "alpha": self.alpha,
            "k": self.k,
            "k_achieved": self.k_achieved,
            "n_violating": self.n_violating,
            "n_sample_uniques": self.n_sample_uniques,
            "n_classes": self.n_classes,
            "wildcard_dependent": self.n_wildcard_dependent,
            "violations_by_k": {str(k): v for k, v in self.violations.items()},
            "size_distribution": self.size_distribution.to_dict(orient="records"),
            "per_qi": self.per_qi.to_dict(orient="records"),
        }


def risk_summary(
    qm: QIMatrix,
    k: int = 3,
    missing: MissingSemantics = "wildcard",
    weights: np.ndarray | None = None,
    alpha: float = 1.0,
    sizes: ClassSizes | None = None,
) -> RiskSummary:
    """Summarise re-identification risk of the QIs in ``qm`` for threshold ``k``.

    ``n_classes`` counts distinct QI patterns (missing as a value); under wildcard, classes overlap, so
    the pattern count is what is reported. ``k_achieved`` is the floor of the smallest fk (the data is
    k-anonymous for every k up to it). ``alpha`` weighs wildcard matches as in sdcMicro's ``freqCalc``;
    sample uniques are the records with fk = 1 (sdcMicro's ``n1``).

    ``sizes`` hands in the class sizes of ``qm``'s codes already counted under ``missing`` with the
    wildcard split (:func:`compute_class_sizes`, e.g. with weights for the risk measures of the same file),
    so one file is counted once; they are taken at ``alpha`` and with ``weights``' sums, as if counted here.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    if sizes is None:
        sizes = compute_class_sizes(qm.codes, missing, weights, alpha=alpha, wildcard_split=True)
    else:
        sizes.check_counted_on(qm.n_records, missing, weighted=weights is not None)
        sizes = ClassSizes(sizes.fk_all, sizes.Fk_all if weights is not None else None, missing, alpha,
                           sizes.fk_wild, sizes.Fk_wild if weights is not None else None)
    fk = sizes.fk
    _, counts = group_ids(qm.codes)
    violations = {kk: int((fk < kk).sum()) for kk in sorted(set(K_RANGE) | {k})}
    return RiskSummary(
        n_records=qm.n_records,
        n_qis=qm.n_qis,
        missing=missing,
        k=k,
        k_achieved=math.floor(float(fk.min())) if len(fk) else 0,
        n_violating=violations[k],
        n_sample_uniques=int((fk == 1).sum()),
        n_classes=int(len(counts)),
        violations=violations,
        sizes=sizes,
        size_distribution=size_distribution(fk),
        per_qi=per_qi_table(qm),
        alpha=sizes.alpha,
        wildcard_dependent=wildcard_dependent(sizes, k),
    )


def size_distribution(fk: np.ndarray) -> pd.DataFrame:
    """Records by class size in bins 1, 2, ..., 10, 11-20, 21-50, 51-100, >100.

    Fractional sizes (alpha < 1) go to the bin of their integer part: 2.5 counts under "2".
    """
    whole = np.floor(fk)
    edges = [(i, i, str(i)) for i in range(1, 11)] + [(11, 20, "11-20"), (21, 50, "21-50"), (51, 100, "51-100")]
    rows = [(label, int(((whole >= lo) & (whole <= hi)).sum())) for lo, hi, label in edges]
    rows.append((">100", int((whole > 100).sum())))
    return pd.DataFrame(rows, columns=["class_size", "records"])


def per_qi_table(qm: QIMatrix) -> pd.DataFrame:
    """Per QI: distinct values, values held by a single record (singletons), missing count."""
    rows = []
    for j, name in enumerate(qm.names):
        col = qm.codes[:, j]
        obs = col[col != MISSING_CODE]
        counts = np.bincount(obs, minlength=len(qm.values[j])) if len(obs) else np.zeros(0, np.int64)
        rows.append(
            {
                "variable": name,
                "distinct": int((counts > 0).sum()),
                "singletons": int((counts == 1).sum()),
                "missing": int((col == MISSING_CODE).sum()),
                "smallest_category": int(counts[counts > 0].min()) if (counts > 0).any() else 0,
            }
        )
    return pd.DataFrame(rows)


def violating_records(qm: QIMatrix, fk: np.ndarray, k: int, Fk: np.ndarray | None = None, limit: int = 1000) -> pd.DataFrame:
    """The records whose class is smaller than k, with labels, smallest classes first."""
    idx = np.flatnonzero(fk < k)
    idx = idx[np.argsort(fk[idx], kind="stable")][:limit]
    data = {"record": idx, "fk": fk[idx]}
    if Fk is not None:
        data["Fk"] = Fk[idx]
    data.update(_labels(qm, idx))
    return pd.DataFrame(data)


def wildcard_dependent_statement(n_dependent: int, k: int) -> str:
    """The plain explanation shown wherever wildcard-dependent records are reported (page and report).

    One wording, so that an officer reads the same sentence on the Risk page and in the report.
    """
    return (f"{n_dependent:,} records reach k = {k} only because records with missing values count as matches; "
            "with alpha = 0 they would be below k. A missing value is assumed to stand for any value "
            "(sdcMicro's wildcard rule), so a few blank or suppressed records can make many others look safe.")


def wildcard_dependent_records(qm: QIMatrix, sizes: ClassSizes, k: int, limit: int = 1000) -> pd.DataFrame:
    """The records that reach k only through wildcard matches, with fk at alpha = 1 and at alpha = 0.

    Fewest firm matches first (``fk_alpha0``: the record's own key and complete records), so the
    records resting most on blank cells lead the table.
    """
    idx = np.flatnonzero(wildcard_dependent(sizes, k))
    idx = idx[np.argsort(sizes.fk_strict[idx], kind="stable")][:limit]
    data = {"record": idx, "fk_alpha1": sizes.fk_all[idx], "fk_alpha0": sizes.fk_strict[idx]}
    data.update(_labels(qm, idx))
    return pd.DataFrame(data)


def _labels(qm: QIMatrix, idx: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for j, name in enumerate(qm.names):
        labels = np.array(qm.labels[j] + ("(missing)",), dtype=object)
        out[name] = labels[qm.codes[idx, j]]  # -1 indexes the "(missing)" entry
    return out


# -- measures beyond k (issue 13): individual, household, l-diversity, t-closeness -------------------------
@dataclass(frozen=True)
class SensitiveMeasures:
    """l-diversity and t-closeness of one sensitive variable, per class of ``table`` (see ``RiskMeasures``)."""

    name: str
    l_distinct: np.ndarray
    l_entropy: np.ndarray
    l_recursive: np.ndarray
    c: float
    t: np.ndarray
    distance: str

    def to_json(self, count: np.ndarray) -> tuple[dict, dict]:
        """(l-diversity figures, t-closeness figures): minima over classes, the worst t and who is there."""
        lmin = float(self.l_distinct.min()) if len(self.l_distinct) else 0.0
        at_min = self.l_distinct == lmin
        l_json = {
            "l_diversity": int(lmin),
            "records_at_min": int(count[at_min].sum()),
            "records_with_l_1": int(count[self.l_distinct <= 1].sum()),
            "entropy_l": float(self.l_entropy.min()) if len(self.l_entropy) else 0.0,
            "recursive_c": self.c,
            "recursive_l": int(self.l_recursive.min()) if len(self.l_recursive) else 0,
        }
        tmax = float(self.t.max()) if len(self.t) else 0.0
        at_max = np.isclose(self.t, tmax, rtol=0, atol=1e-12)
        t_json = {"t": tmax, "distance": self.distance, "classes_at_worst": int(at_max.sum()),
                  "records_at_worst": int(count[at_max].sum())}
        return l_json, t_json


@dataclass(frozen=True)
class RiskMeasures:
    """Risk measures beyond k for one QI set: per record where a record has its own value.

    ``individual`` is Benedetti & Franconi's individual risk per record (1 / fk without weights, as
    sdcMicro), ``glob`` its totals; ``household`` the household risk when a household identifier is
    given; ``sensitive`` the l-diversity and t-closeness of each sensitive variable, per class of
    ``table`` (broadcast with ``table.per_record``).
    """

    individual: np.ndarray
    method: str
    weighted: bool
    glob: GlobalRisk
    household: HouseholdRisk | None = None
    table: ClassTable | None = None
    sensitive: tuple[SensitiveMeasures, ...] = ()

    def l_distinct_columns(self) -> dict[str, np.ndarray]:
        """Per-record distinct l: ``l_distinct`` for one sensitive variable, ``l_distinct_<S>`` for several."""
        if not self.sensitive or self.table is None:
            return {}
        if len(self.sensitive) == 1:
            return {"l_distinct": self.table.per_record(self.sensitive[0].l_distinct)}
        return {f"l_distinct_{s.name}": self.table.per_record(s.l_distinct) for s in self.sensitive}

    def per_record_columns(self) -> dict[str, np.ndarray]:
        cols = {"individual_risk": self.individual}
        if self.household is not None:
            cols["household_risk"] = self.household.per_record
        cols.update(self.l_distinct_columns())
        return cols

    def to_json(self) -> dict:
        out = {"risk_method": self.method, "risk_weighted": self.weighted,
               "expected_reidentifications": self.glob.expected_reidentifications,
               "global_risk": self.glob.global_risk, "max_risk": self.glob.threshold,
               "records_above_max_risk": self.glob.n_above,
               "highest_individual_risk": self.glob.max_risk,
               "records_risk_undefined": self.glob.n_undefined}
        if self.glob.n_undefined:
            out["risk_undefined_note"] = self.glob.undefined_note
        if self.household is not None:
            out["household"] = self.household.to_json()
        if self.sensitive and self.table is not None:
            ls, ts = {}, {}
            for s in self.sensitive:
                ls[s.name], ts[s.name] = s.to_json(self.table.count)
            out["l_diversity"] = ls
            out["t_closeness"] = ts
        from .describe_record import readings_for

        out["readings"] = readings_for(self)
        return out


def risk_measures(ds: Dataset, sizes: ClassSizes, qis: Sequence[str] | None = None, *,
                  max_risk: float = DEFAULT_MAX_RISK, method: str = "approx", household: str | None = None,
                  sensitive: Sequence[str] = (), c: float = 2.0, distance: str = "auto") -> RiskMeasures:
    """Individual, global and household risk and, per sensitive variable, l-diversity and t-closeness.

    ``sizes`` are the per-record class sizes already counted for the k summary (:func:`risk_summary`),
    so fk and Fk are not counted twice. l-diversity and t-closeness are computed on the class table of
    ``qis`` carrying the sensitive variables' value counts, under ``sizes.missing`` semantics.
    """
    max_risk = check_max_risk(max_risk)
    qis = tuple(ds.roles.qis if qis is None else qis)
    rk = individual_risk(sizes.fk, sizes.Fk, method)
    hh = None
    if household is not None:
        if household not in ds.frame.columns:
            raise InputError(f"Household identifier '{household}' is not a variable of the data.")
        if household in ds.roles.qis:  # an identifier of households, unique per household: no QI (sdcMicro's hhId)
            raise InputError(f"The household identifier '{household}' cannot also be a quasi-identifier.")
        hh = household_summary(rk, ds._encoded(household)[0], household, max_risk)
    names = tuple(dict.fromkeys(sensitive))
    for s in names:
        if s in qis:
            raise InputError(f"Sensitive variable '{s}' is also a quasi-identifier; a variable is one or the other.")
        if s not in ds.frame.columns:
            raise InputError(f"Sensitive variable '{s}' is not a variable of the data.")
    table = ClassTable.from_dataset(ds, qis, weighted=False, sensitive=names) if names else None
    return RiskMeasures(individual=rk, method=method, weighted=sizes.Fk is not None,
                        glob=global_risk(rk, threshold=max_risk), household=hh, table=table,
                        sensitive=_sensitive_measures(table, names, sizes.missing, c, distance))


def _sensitive_measures(table: ClassTable | None, names: Sequence[str], missing: MissingSemantics, c: float,
                        distance: str) -> tuple[SensitiveMeasures, ...]:
    """l-diversity (distinct, entropy, recursive) and t-closeness per class, for each sensitive variable."""
    if not names:
        return ()
    from .closeness import resolve_distance, t_closeness_classes  # compiled kernels: loaded when needed
    from .diversity import l_diversity_classes, matched_value_counts

    out = []
    for s in names:
        counts = matched_value_counts(table, s, missing)  # once for all four measures
        out.append(SensitiveMeasures(
            name=s,
            l_distinct=l_diversity_classes(table, s, missing, "distinct", counts=counts),
            l_entropy=l_diversity_classes(table, s, missing, "entropy", counts=counts),
            l_recursive=l_diversity_classes(table, s, missing, "recursive", c=c, counts=counts),
            c=float(c), t=t_closeness_classes(table, s, missing, distance, counts=counts),
            distance=resolve_distance(table, s, distance)))
    return tuple(out)


def risk_measures_of_table(table: ClassTable, sizes: ClassSizes, *, max_risk: float = DEFAULT_MAX_RISK,
                           method: str = "approx", sensitive: Sequence[str] = (), c: float = 2.0,
                           distance: str = "auto") -> RiskMeasures:
    """The measures of :func:`risk_measures` on an aggregated class table (an out-of-core engine's).

    ``sizes`` are per *class* (:meth:`ClassTable.class_sizes`), so ``individual`` is per class and the
    totals weigh each class by its records: the same figures as on the records, since records of one class
    share fk and Fk. ``table`` must carry the value counts of the ``sensitive`` variables. Household risk
    needs each record's household and is computed in memory only.
    """
    max_risk = check_max_risk(max_risk)
    names = tuple(dict.fromkeys(sensitive))
    lacking = [s for s in names if s not in table.sensitive]
    if lacking:
        raise InputError(f"The class table carries no value counts of {', '.join(lacking)}.")
    rk = individual_risk(sizes.fk, sizes.Fk, method)
    return RiskMeasures(individual=rk, method=method, weighted=sizes.Fk is not None,
                        glob=global_risk(rk, table.count, threshold=max_risk), household=None,
                        table=table if names else None,
                        sensitive=_sensitive_measures(table, names, sizes.missing, c, distance))


# -- what the Risk page shows of the measures beyond k ------------------------------------------------------
RISK_BINS = (0.0, 0.001, 0.01, 0.05, 0.1, 0.5, 1.0)


def risk_distribution(risk: np.ndarray) -> pd.DataFrame:
    """Records by individual (or household) risk in bins 0-0.001, ..., 0.5-1 (a bin holds its upper edge)."""
    risk = np.asarray(risk, dtype=np.float64)
    rows = []
    for lo, hi in zip(RISK_BINS[:-1], RISK_BINS[1:]):
        inside = (risk > lo) & (risk <= hi) if lo > 0 else (risk >= lo) & (risk <= hi)
        rows.append((f"{lo:g}-{hi:g}", int(inside.sum())))
    rows.append(("undefined", int(np.isnan(risk).sum())))
    return pd.DataFrame(rows, columns=["risk", "records"])


def l_distribution(l_per_record: np.ndarray) -> pd.DataFrame:
    """Records by distinct l: 0, 1, ..., 9 and "10+"."""
    whole = np.floor(np.asarray(l_per_record, dtype=np.float64)).astype(np.int64)
    rows = [(str(v), int((whole == v).sum())) for v in range(10)]
    rows.append(("10+", int((whole >= 10).sum())))
    return pd.DataFrame(rows, columns=["l", "records"])


def t_distribution(t_per_record: np.ndarray) -> pd.DataFrame:
    """Records by t-closeness distance in tenths: 0-0.1, ..., 0.9-1 (a bin holds its upper edge)."""
    t = np.asarray(t_per_record, dtype=np.float64)
    rows = []
    for i in range(10):
        lo, hi = i / 10, (i + 1) / 10
        inside = (t > lo) & (t <= hi) if i else (t >= 0) & (t <= hi)
        rows.append((f"{lo:.1f}-{hi:.1f}", int(inside.sum())))
    return pd.DataFrame(rows, columns=["t", "records"])


def failing_criteria(summary: RiskSummary, measures: RiskMeasures, l_target: int = 2,
                     t_target: float = 0.2) -> dict[str, np.ndarray]:
    """Per criterion, a boolean per record: does the record fail it?

    k-anonymity (fk < k), the individual risk limit (risk > max risk), the household risk limit (with a
    household identifier), and per sensitive variable distinct l-diversity (l < ``l_target``) and
    t-closeness (distance > ``t_target``). Keys are plain labels for the page.
    """
    out = {f"k-anonymity (k = {summary.k})": summary.sizes.fk < summary.k,
           f"individual risk above {measures.glob.threshold:g}": measures.individual > measures.glob.threshold}
    if measures.household is not None:
        out[f"household risk above {measures.glob.threshold:g}"] = (
            measures.household.per_record > measures.glob.threshold)
    if measures.table is not None:
        for s in measures.sensitive:
            out[f"{l_target}-diversity of {s.name}"] = measures.table.per_record(s.l_distinct) < l_target
            out[f"{t_target:g}-closeness of {s.name}"] = measures.table.per_record(s.t) > t_target + 1e-12
    return out


def measure_records(qm: QIMatrix, summary: RiskSummary, measures: RiskMeasures, idx: np.ndarray,
                    limit: int = 1000) -> pd.DataFrame:
    """The records ``idx`` with fk, Fk, their risks, l and t per sensitive variable and their QI labels,
    highest individual risk first (at most ``limit``). For the officer's screen: it shows values."""
    idx = np.asarray(idx, dtype=np.int64)
    idx = idx[np.argsort(-np.nan_to_num(measures.individual[idx], nan=np.inf), kind="stable")][:limit]
    data: dict[str, np.ndarray] = {"record": idx, "fk": summary.sizes.fk[idx]}
    if summary.sizes.Fk is not None:
        data["Fk"] = summary.sizes.Fk[idx]
    data["individual_risk"] = measures.individual[idx]
    if measures.household is not None:
        data["household_risk"] = measures.household.per_record[idx]
    if measures.table is not None:
        for s in measures.sensitive:
            data[f"l_{s.name}"] = measures.table.per_record(s.l_distinct)[idx]
            data[f"t_{s.name}"] = measures.table.per_record(s.t)[idx]
    data.update(_labels(qm, idx))
    return pd.DataFrame(data)
