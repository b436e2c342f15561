"""Recode suggestions drawn from the MINUCs: which categories to merge or tail-code first.

Wilson et al.'s advice is to review the MINUCs, recode, re-identify and repeat. A value that sits in many
MINUCs is what makes records unsafe; merging it with a neighbouring category (or coding the tail of an
ordered variable into one category) removes MINUCs at the price of categories lost. Candidates per
variable:

* **merge with a neighbour**: each of the variable's values that sits in MINUCs, merged with the value
  just below or just above it (values in their sorted order, which for coded ordinal variables is the
  order of the codes);
* **merge rare categories**: Angiuli & Waldo's greedy binning with a capacity (records per category), merging
  towards the neighbour that changes the mean code least, applied to the categories;
* **top / bottom coding**: for variables with at least four values, the upper (lower) tail holding
  about 1 %, 2 % or 5 % of the records becomes one category. Unlabelled numbers are top-coded
  (``>= t`` becomes t, sdcMicro's ``topBotCoding``); labelled codes are merged so their labels remain.

Ranking needs no new MINUC search: the MINUCs containing a recoded value are the only ones a recode can
remove (a MINUC without any recoded value keeps its values and its rarity), so ``minucs_touched`` is an
upper bound on the MINUCs removed, and the ranking is by touched MINUCs per category lost. The exact
effect — MINUCs and records at risk before and after, recounted on the recoded data — is computed on
demand by :func:`suggestion_effect`, one search per suggestion the officer asks about.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset, QIMatrix
from ..errors import InputError
from ..progress import Progress
from ..risk.minucs import MinucResult, summarize_minucs
from .hierarchy import greedy_bins
from .recode import RecodeStep

TAIL_SHARES = (0.01, 0.02, 0.05)
"""Shares of records the top (bottom) tail candidates hold."""


@dataclass(frozen=True)
class Suggestion:
    """One candidate recode of one variable (one or more :class:`RecodeStep` applied in order)."""

    variable: str
    kind: str
    steps: tuple[RecodeStep, ...]
    values: tuple[str, ...]
    categories_lost: int
    minucs_touched: int
    description: str

    @property
    def score(self) -> float:
        """MINUCs touched per category lost: the ranking key (an upper bound on MINUCs removed per category)."""
        return self.minucs_touched / max(1, self.categories_lost)

    def apply(self, ds: Dataset) -> Dataset:
        for step in self.steps:
            ds = step.apply(ds)
        return ds


@dataclass(frozen=True)
class SuggestionEffect:
    """The exact effect of a suggestion, recounted on the recoded data."""

    suggestion: Suggestion
    minucs_before: int
    minucs_after: int
    records_at_risk_before: int
    records_at_risk_after: int
    seconds: float
    violating_before: int = 0
    """Records in classes smaller than k (fk < k) on the same QIs before the recode, and after it: what
    the officer reads on the Risk page, beside the MINUC counts."""
    violating_after: int = 0

    @property
    def minucs_removed(self) -> int:
        return self.minucs_before - self.minucs_after

    @property
    def removed_per_category(self) -> float:
        return self.minucs_removed / max(1, self.suggestion.categories_lost)

    def to_dict(self) -> dict[str, Any]:
        return {"variable": self.suggestion.variable, "recode": self.suggestion.description,
                "categories lost": self.suggestion.categories_lost, "MINUCs before": self.minucs_before,
                "MINUCs after": self.minucs_after, "MINUCs removed": self.minucs_removed,
                "removed per category lost": round(self.removed_per_category, 1),
                "records with a MINUC before": self.records_at_risk_before,
                "records with a MINUC after": self.records_at_risk_after,
                "records below k before": self.violating_before, "records below k after": self.violating_after}


def suggest_recodes(
    ds: Dataset,
    minucs: MinucResult,
    qm: QIMatrix | None = None,
    capacity: int | None = None,
    per_variable: int = 3,
) -> list[Suggestion]:
    """Candidate recodes for every QI of the MINUC result, best first (touched MINUCs per category lost).

    ``minucs`` must come from ``qm`` (default: the dataset's matrix on ``minucs.names``); ``capacity`` is
    the smallest category size the rare-category merge aims for (default: 1 % of the records, at least
    the MINUC threshold k). At most ``per_variable`` neighbour merges per variable are proposed, from
    its values in the most MINUCs.
    """
    qm = qm if qm is not None else ds.qi_matrix(minucs.names)
    if tuple(qm.names) != tuple(minucs.names) or qm.n_records != minucs.n_records:
        raise InputError("The MINUC result does not belong to these quasi-identifiers; search MINUCs again.")
    cap = int(capacity) if capacity else max(int(minucs.k), math.ceil(0.01 * qm.n_records))
    tally = minucs.value_tally(np.ones(minucs.n_qis + 1))
    out: list[Suggestion] = []
    for j, name in enumerate(qm.names):
        contrib = np.asarray(tally[j][1:], dtype=np.float64)  # index 0 is "missing"
        contrib = np.pad(contrib, (0, max(0, len(qm.values[j]) - len(contrib))))[: len(qm.values[j])]
        if len(qm.values[j]) < 3 or contrib.sum() == 0:  # merging two categories drops the variable
            continue
        codes = qm.codes[:, j]
        counts = np.bincount(codes[codes >= 0], minlength=len(qm.values[j])).astype(np.int64)
        var = _Variable(ds, name, qm.values[j], qm.labels[j], counts, contrib)
        out += var.neighbour_merges(per_variable)
        out += var.rare_merge(cap)
        out += var.tails(qm.n_records)
    return _rank(out)


def _rank(suggestions: list[Suggestion]) -> list[Suggestion]:
    seen: set[tuple] = set()
    unique = []
    for s in suggestions:
        key = (s.variable, tuple((st.merge, st.top, st.bottom) for st in s.steps))
        if key in seen or s.minucs_touched == 0:
            continue
        seen.add(key)
        unique.append(s)
    unique.sort(key=lambda s: (-s.score, -s.minucs_touched, s.categories_lost, s.variable, s.description))
    return unique


def suggestions_frame(suggestions: Sequence[Suggestion]) -> pd.DataFrame:
    """The suggestions as a table for display (rank order kept)."""
    return pd.DataFrame([{"variable": s.variable, "recode": s.description, "kind": s.kind,
                          "categories lost": s.categories_lost, "MINUCs touched": s.minucs_touched,
                          "touched per category lost": round(s.score, 1)} for s in suggestions],
                        columns=["variable", "recode", "kind", "categories lost", "MINUCs touched",
                                 "touched per category lost"])


def suggestion_effect(
    ds: Dataset, suggestion: Suggestion, minucs: MinucResult, progress: Progress | None = None
) -> SuggestionEffect:
    """Apply the suggestion to a copy and count the MINUCs again (same QIs, k, semantics and max size).

    Only the records the recode touched are searched: the others keep ``minucs``' MINUCs
    (:mod:`~kanon_core.risk.minucs_carry`), since a recode leaves every other record's disagreement sets as
    they were."""
    from ..risk.classes import class_sizes
    from ..risk.minucs_carry import plan_carry

    t0 = time.perf_counter()
    after = suggestion.apply(ds)
    qa = after.qi_matrix(minucs.names)
    qb = ds.qi_matrix(minucs.names)
    carry = plan_carry(minucs, qb, qa, minucs.k, minucs.missing, minucs.max_size)
    res = summarize_minucs(qa, k=minucs.k, missing=minucs.missing, max_size=minucs.max_size, progress=progress,
                           carry=carry)
    below_before = int((class_sizes(qb.codes, minucs.missing) < minucs.k).sum())
    below_after = int((class_sizes(qa.codes, minucs.missing) < minucs.k).sum())
    return SuggestionEffect(suggestion, int(minucs.total), int(res.total), int(minucs.records_with_minucs()),
                            int(res.records_with_minucs()), time.perf_counter() - t0, below_before, below_after)


def suggestion_effect_table(effect: SuggestionEffect, k: int) -> pd.DataFrame:
    """The effect as the Recode page shows it beside the selected suggestion: one row per measure,
    before, after and the change."""
    rows = [("MINUCs", effect.minucs_before, effect.minucs_after),
            ("Records with a MINUC", effect.records_at_risk_before, effect.records_at_risk_after),
            (f"Records below k = {k}", effect.violating_before, effect.violating_after)]
    table = pd.DataFrame(rows, columns=["measure", "before", "after"])
    table["change"] = table["after"] - table["before"]
    return table


class _Variable:
    """One QI's values (sorted), labels, record counts and MINUC contributions, and its candidates."""

    def __init__(self, ds: Dataset, name: str, values: Sequence[Any], labels: Sequence[str],
                 counts: np.ndarray, contrib: np.ndarray):
        self.name = name
        self.values = list(values)
        self.labels = list(labels)
        self.counts = counts
        self.contrib = contrib
        self.numeric = all(_is_number(v) for v in self.values)
        self.labelled = bool(ds.meta_of(name).value_labels)

    def _merge(self, idx: Sequence[int], kind: str, what: str) -> Suggestion:
        idx = sorted(idx)
        vals = [self.values[i] for i in idx]
        into = min(vals) if self.numeric else None
        step = RecodeStep(column=self.name, merge=tuple(_plain(v) for v in vals), into=_plain(into))
        return Suggestion(self.name, kind, (step,), tuple(self.labels[i] for i in idx), len(idx) - 1,
                          int(round(self.contrib[idx].sum())), what)

    def neighbour_merges(self, per_variable: int) -> list[Suggestion]:
        order = [int(i) for i in np.argsort(-self.contrib, kind="stable") if self.contrib[i] > 0][:per_variable]
        out = []
        for i in order:
            for nb in (i - 1, i + 1):
                if 0 <= nb < len(self.values):
                    a, b = sorted((i, nb))
                    out.append(self._merge([a, b], "merge", f"merge '{self.labels[a]}' with '{self.labels[b]}'"))
        return out

    def rare_merge(self, capacity: int) -> list[Suggestion]:
        if len(self.values) < 3 or self.counts.min() >= capacity:
            return []
        pos = np.array([float(v) for v in self.values]) if self.numeric else np.arange(len(self.values), dtype=float)
        bins = greedy_bins(pos, self.counts.astype(np.float64), float(capacity))
        if bins.max() == 0:  # everything in one category: that is dropping the variable, not recoding it
            return []
        steps, touched, lost, shown = [], 0.0, 0, []
        for b in range(int(bins.max()) + 1):
            idx = np.flatnonzero(bins == b)
            if len(idx) < 2:
                continue
            s = self._merge(idx.tolist(), "merge rare", "")
            steps += list(s.steps)
            touched += self.contrib[idx].sum()
            lost += len(idx) - 1
            shown += [self.labels[i] for i in idx]
        what = f"merge categories with fewer than {capacity:,} records into neighbours ({len(steps)} merges)"
        return [Suggestion(self.name, "merge rare", tuple(steps), tuple(shown), lost, int(round(touched)), what)]

    def tails(self, n_records: int) -> list[Suggestion]:
        if len(self.values) < 4 or not self.numeric:
            return []
        out = []
        for share in TAIL_SHARES:
            need = share * n_records
            for top in (True, False):
                cum = np.cumsum(self.counts[::-1] if top else self.counts)
                m = int(np.searchsorted(cum, need)) + 1  # values in the tail
                if m < 2 or m >= len(self.values) - 1:
                    continue
                idx = list(range(len(self.values) - m, len(self.values))) if top else list(range(m))
                out.append(self._tail(idx, top, share))
        return out

    def _tail(self, idx: list[int], top: bool, share: float) -> Suggestion:
        word = "top" if top else "bottom"
        bound = self.values[idx[0]] if top else self.values[idx[-1]]
        what = (f"{word}-code at {self.labels[idx[0] if top else idx[-1]]} ({len(idx)} values, "
                f"{int(self.counts[idx].sum()):,} records, ~{100 * share:g} %)")
        if self.labelled:
            s = self._merge(idx, f"{word}-code", what)
            return Suggestion(s.variable, s.kind, s.steps, s.values, s.categories_lost, s.minucs_touched, what)
        step = RecodeStep(column=self.name, top=float(bound)) if top else RecodeStep(column=self.name,
                                                                                     bottom=float(bound))
        return Suggestion(self.name, f"{word}-code", (step,), tuple(self.labels[i] for i in idx), len(idx) - 1,
                          int(round(self.contrib[idx].sum())), what)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _plain(v: Any) -> Any:
    """Numpy scalars as Python numbers, so the step serialises into a recipe."""
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        f = float(v)
        return int(f) if f.is_integer() else f
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v
