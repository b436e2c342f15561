"""Plain sentences about a generalization result, for the Recode page and the report.

The optimal search may take a variable to the top of its hierarchy: every value becomes ``*``, the
variable is removed from the release in all but name. A table of levels ("relat: 2") hides that; these
functions say it in words ("relat: fully suppressed (every value released as *)").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .hierarchy import Hierarchy


@dataclass(frozen=True)
class LevelEffect:
    """What one variable's chosen level does: kept, generalized to fewer values, or fully suppressed."""

    variable: str
    level: int
    values_before: int
    values_after: int

    @property
    def fully_suppressed(self) -> bool:
        return self.level > 0 and self.values_after <= 1

    @property
    def text(self) -> str:
        if self.level == 0:
            return f"{self.variable}: unchanged ({self.values_before:,} values)"
        if self.fully_suppressed:
            return f"{self.variable}: fully suppressed (every value released as *)"
        return (f"{self.variable}: generalized to level {self.level} "
                f"({self.values_before:,} → {self.values_after:,} values)")


def level_effects(levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy] | Sequence[Hierarchy],
                  qis: Sequence[str] | None = None) -> list[LevelEffect]:
    """One :class:`LevelEffect` per variable, in ``qis`` order (default: the order of ``levels``)."""
    qis = list(qis or levels)
    hs = hierarchies if isinstance(hierarchies, Mapping) else dict(zip(qis, hierarchies, strict=True))
    out = []
    for q in qis:
        groups = hs[q].n_groups()
        lv = int(levels[q])
        out.append(LevelEffect(q, lv, groups[0], groups[lv]))
    return out


def search_summary(result: Any) -> str:
    """One paragraph on a :class:`~kanon_core.treat.lattice.SearchResult`: the fully suppressed
    variables first (they are what an analyst loses outright), then the generalized ones."""
    effects = level_effects(result.levels, result.hierarchies, result.qis)
    gone = [e for e in effects if e.fully_suppressed]
    changed = [e for e in effects if e.level and not e.fully_suppressed]
    parts = []
    if gone:
        parts.append("Removed entirely: " + "; ".join(e.text for e in gone) + ".")
    if changed:
        parts.append("Generalized: " + "; ".join(
            f"{e.variable} to level {e.level} ({e.values_before:,} → {e.values_after:,} values)" for e in changed) + ".")
    if not gone and not changed:
        parts.append("Every variable keeps its original values.")
    if result.n_suppressed_records:
        parts.append(f"{result.n_suppressed_records:,} of {result.n_records:,} records are suppressed "
                     f"(those still in classes smaller than k = {result.k}).")
    return " ".join(parts)


def effects_table(levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy] | Sequence[Hierarchy],
                  qis: Sequence[str] | None = None) -> pd.DataFrame:
    """The page's table of the chosen levels with a column saying what each does in words."""
    rows = [{"variable": e.variable, "level": e.level, "values before": e.values_before,
             "values after": e.values_after, "effect": e.text.split(": ", 1)[1]}
            for e in level_effects(levels, hierarchies, qis)]
    return pd.DataFrame(rows, columns=["variable", "level", "values before", "values after", "effect"])
