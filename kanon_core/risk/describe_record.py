"""Risk in plain words: what each measure means, and one sentence per record for the officer.

sdcMicro's users find its risk figures hard to read (its issue #350 on the individual risk, #227 on SUDA
scores), so every measure kanon shows comes with a reading (:data:`READINGS`) and every record can be
described in a sentence such as "unique on sex × age × region among 14,827 records; its weight says about
3 such people in the population" (:func:`describe_record`).

The sentences name variables and counts. Values appear only with ``show_values=True``, which the Risk
page uses for the officer on screen; exports, logs, the JSON of ``kanon risk`` and the report never call
it that way (a confidential value must not leave the screen).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..dataset import MISSING_CODE, QIMatrix

if TYPE_CHECKING:
    from .classes import ClassSizes
    from .summary import RiskMeasures

READINGS: dict[str, str] = {
    "individual_risk": (
        "The chance that an intruder who finds a person with the record's combination of quasi-identifier values "
        "picks the right record (Benedetti & Franconi, as sdcMicro computes it). 0.05 means 1 chance in 20. It uses "
        "the sampling weights: fk records share the combination in the file and their weights (Fk) estimate how "
        "many such people live in the population; without weights it is 1 / fk."),
    "expected_reidentifications": (
        "If an intruder tried to match every record, about this many matches would be right: the sum of the "
        "individual risks."),
    "global_risk": (
        "The expected re-identifications as a share of the records: 0.002 means 2 correct matches per 1,000 "
        "records."),
    "records_above_max_risk": (
        "Records whose individual risk is above the limit you set (default 0.01, i.e. 1 chance in 100)."),
    "household_risk": (
        "The chance that at least one member of the household is re-identified, 1 - (1 - r1)(1 - r2)...: whoever "
        "identifies one member learns who the others are, so every member carries the household's risk."),
    "l_distinct": (
        "Distinct l-diversity (Machanavajjhala et al.): how many different values of the sensitive variable the "
        "records matching this record have. l = 1 means finding the record's group reveals the value for "
        "everyone in it, even if the group is large."),
    "l_entropy": (
        "Entropy l-diversity: the number of equally common values that would leave an intruder as uncertain as "
        "the group's actual mix. A group with 9 'no' and 1 'yes' has 2 distinct values but an entropy l of "
        "about 1.4: it nearly reveals 'no'."),
    "l_recursive": (
        "Recursive (c,l)-diversity: the largest l such that the most common value is less frequent than c times "
        "the values from the l-th most common on. Higher means no single value dominates the group."),
    "t_closeness": (
        "t-closeness (Li et al.): how far the group's distribution of the sensitive variable is from the whole "
        "file's, from 0 (finding the group teaches nothing about the value) to 1 (it teaches everything): the "
        "share of people whose value would have to move, and how far, to make the two alike (Earth Mover's "
        "Distance; equal distance for categories, ordered distance for numbers)."),
    "suda": (
        "SUDA score (Elliot et al., as sdcMicro's suda2): the sum, over the smallest sets of a record's values "
        "that are unique in the file, of a weight that grows the smaller the set. High means the record stands "
        "out on few variables; 0 means no combination of its values is unique. Scores rank records within one "
        "file and are not probabilities; DIS-SUDA turns them into an estimated probability of a correct match. "
        "Computed by kanon minucs at k = 2 and on the MINUCs page."),
}


def readings_for(measures: RiskMeasures) -> dict[str, str]:
    """The readings of the measures present in ``measures`` (for JSON and the report)."""
    keys = ["individual_risk", "expected_reidentifications", "global_risk", "records_above_max_risk"]
    if measures.household is not None:
        keys.append("household_risk")
    if measures.sensitive:
        keys += ["l_distinct", "l_entropy", "l_recursive", "t_closeness"]
    keys.append("suda")  # not computed here, but read next to these figures (sdcMicro's issue #227)
    return {k: READINGS[k] for k in keys}


def chance_in_words(risk: float) -> str:
    """0.08 -> "about 1 chance in 12"; 0 -> "no chance"; NaN -> "undefined"."""
    if risk is None or (isinstance(risk, float) and math.isnan(risk)):
        return "undefined"
    if risk <= 0:
        return "no chance"
    if risk >= 1:
        return "certain"
    return f"about 1 chance in {max(1, round(1 / risk)):,}"


def _people(total: float) -> str:
    n = max(1, int(round(total)))
    return "about 1 such person" if n == 1 else f"about {n:,} such people"


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.2f}".rstrip("0").rstrip(".")


def describe_record(i: int, qm: QIMatrix, sizes: ClassSizes, measures: RiskMeasures | None = None,
                    show_values: bool = False) -> str:
    """One plain sentence on record ``i``'s risk: its class, population estimate, risks and diversity.

    ``sizes`` are the per-record class sizes (:func:`~kanon_core.risk.summary.risk_summary`'s), ``measures``
    the optional measures beyond k. Values of the record are included only with ``show_values`` (on
    screen, for the officer).
    """
    qis = " × ".join(qm.names)
    n = qm.n_records
    fk = float(sizes.fk[i])
    row = qm.codes[i]
    parts = []
    if show_values:
        shown = [f"{name} = {qm.labels[j][row[j]] if row[j] != MISSING_CODE else '(missing)'}"
                 for j, name in enumerate(qm.names)]
        parts.append(", ".join(shown))
    if fk == 1:
        parts.append(f"unique on {qis} among {n:,} records")
    elif fk.is_integer():
        others = int(fk) - 1
        parts.append(f"shares its {qis} with {others:,} other record{'s' if others != 1 else ''} among {n:,} records")
    else:
        parts.append(f"counts {_num(fk)} matching records on {qis} among {n:,} records (matches with missing "
                     f"values count {sizes.alpha:g})")
    missing_here = [qm.names[j] for j in range(qm.n_qis) if row[j] == MISSING_CODE]
    if missing_here and sizes.missing == "wildcard":
        parts.append(f"its missing {', '.join(missing_here)} match{'es' if len(missing_here) == 1 else ''} any value")
    if sizes.Fk is not None:
        whose = "its weight says" if fk == 1 else "their weights say"
        parts.append(f"{whose} {_people(float(sizes.Fk[i]))} in the population")
    if measures is not None:
        r = float(measures.individual[i])
        above = " (above the limit of " + f"{measures.glob.threshold:g})" if r > measures.glob.threshold else ""
        parts.append(f"individual risk {r:.3g}, {chance_in_words(r)} of a correct re-identification{above}")
        if measures.household is not None:
            h = float(measures.household.per_record[i])
            parts.append(f"household risk {h:.3g}")
        if measures.table is not None:
            cls = int(measures.table.record_class[i]) if measures.table.record_class is not None else None
            for s in measures.sensitive:
                if cls is None:
                    break
                ell = float(s.l_distinct[cls])
                if ell <= 1:
                    parts.append(f"every record it matches has the same {s.name}: finding it reveals its {s.name}")
                else:
                    parts.append(f"{_num(ell)} different values of {s.name} among the records it matches")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] if show_values else text


def describe_records(idx: np.ndarray, qm: QIMatrix, sizes: ClassSizes, measures: RiskMeasures | None = None,
                     show_values: bool = False) -> list[str]:
    """:func:`describe_record` for several records."""
    return [describe_record(int(i), qm, sizes, measures, show_values) for i in np.asarray(idx)]
