"""Which rows of the per-category comparison the report lists: every row of a variable up to a bound, beyond
it the rows a data steward has to see.

A quasi-identifier of 100,000 categories (a postcode) made the report's per-category table 8.5 MB of a
13.4 MB file: nobody reads it, and browsers are slow to open it. The dashboard's Compare page pages its table
and offers every row as a download; the report, one file to read or print, lists per variable at most
:data:`REPORT_CATEGORY_ROWS` rows and says how many it leaves out. The summary figures (overlap count, mean
and median difference) are computed on every category before this choice, so they do not change.

A variable with more rows than the bound has its rows chosen in this order until the bound is reached (groups
1 to 3 largest absolute difference first, ties in the table's order):

1. the categories completely suppressed (a category the release no longer has);
2. the categories whose confidence intervals no longer overlap;
3. the other categories with the largest absolute difference, until half the bound is used;
4. the largest categories (the larger of the two percentages), largest first (ties in the table's order),
   to fill up.

The chosen rows are listed in the table's own order (the values' natural order), so the table reads like the
full one with rows left out. The choice is made on the table the report shows, i.e. after the threshold rule
(:mod:`.mask`) pooled the small categories, so it can never bring back a category the rule withholds; a pooled
row (it has no status) is always listed and counts toward the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

REPORT_CATEGORY_ROWS = 50
"""At most this many rows per variable in the report's per-category table."""

STATUS_SUPPRESSED = "completely suppressed"
""":data:`kanon_core.utility.compare.STATUS_SUPPRESSED`, repeated so the report's rendering does not import
the survey estimators."""

STATUS_COMPARED = "compared"
""":data:`kanon_core.utility.compare.STATUS_COMPARED`, repeated for the same reason."""


@dataclass(frozen=True)
class Tier:
    """One reason to list a row: how many rows it listed, and how many rows had that reason."""

    listed: int
    of: int


@dataclass(frozen=True)
class VariableRows:
    """What the report lists of one variable whose rows exceed the bound."""

    variable: str
    n_categories: int
    """The variable's named rows (a pooled row of small categories not counted)."""
    n_listed: int
    """Named rows listed."""
    suppressed: Tier
    apart: Tier
    """Categories whose confidence intervals no longer overlap (completely suppressed ones not counted)."""
    changed: int
    """Rows listed for their large difference only."""
    largest: int
    """Rows listed for their size only."""

    @property
    def n_left_out(self) -> int:
        return self.n_categories - self.n_listed

    def sentence(self) -> str:
        """The note under the table: how many rows are listed, why, and how many are left out."""
        reasons = []
        if self.suppressed.of:
            reasons.append(_tier_text(self.suppressed, "completely suppressed"))
        if self.apart.of:
            reasons.append(_tier_text(self.apart, "whose confidence intervals no longer overlap"))
        if self.changed:
            reasons.append(f"{self.changed:,} more with the largest differences")
        if self.largest:
            reasons.append(f"the {self.largest:,} largest of the others")
        why = ", ".join(reasons[:-1]) + (" and " if len(reasons) > 1 else "") + (reasons[-1] if reasons else "")
        return (f"{self.variable}: {self.n_listed:,} of {self.n_categories:,} categories listed"
                + (f" ({why})" if why else "") + f"; {self.n_left_out:,} left out.")


def _tier_text(tier: Tier, what: str) -> str:
    if tier.listed == tier.of:
        return f"the {tier.of:,} {what}" if tier.of > 1 else f"the one {what}"
    return f"the {tier.listed:,} most changed of the {tier.of:,} {what}"


@dataclass(frozen=True)
class CategoryRows:
    """The rows to list (the table's columns, the table's order) and, per variable with rows left out, what
    was listed of it (variables in the table's order)."""

    table: pd.DataFrame
    limited: tuple[VariableRows, ...]


def category_rows(table: pd.DataFrame, limit: int = REPORT_CATEGORY_ROWS) -> CategoryRows:
    """The rows of a per-category comparison (:func:`kanon_core.utility.compare_distributions`' table, or the
    report's masked one) the report lists: at most ``limit`` per variable, chosen as the module docstring says.
    Variables with ``limit`` rows or fewer keep every row."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    variables = table["variable"].to_numpy(dtype=object)
    keep = np.ones(len(table), dtype=bool)
    limited: list[VariableRows] = []
    for v in pd.unique(variables):
        rows = np.flatnonzero(variables == v)
        if len(rows) <= limit:
            continue
        chosen, info = _choose(table.iloc[rows], str(v), limit)
        keep[rows] = chosen
        limited.append(info)
    return CategoryRows(table=table[keep].reset_index(drop=True), limited=tuple(limited))


def _choose(rows: pd.DataFrame, variable: str, limit: int) -> tuple[np.ndarray, VariableRows]:
    """One variable's rows to list (flags in its rows' order) and the account of the choice."""
    pooled = rows["status"].isna().to_numpy(dtype=bool)
    named = ~pooled
    status = rows["status"].to_numpy(dtype=object)
    gone = named & (status == STATUS_SUPPRESSED)
    # intervals are judged apart only on rows compared on both sides with both intervals (``overlap`` is missing
    # elsewhere: a recoded category or one only in the release has no interval on one side)
    apart = named & (status == STATUS_COMPARED) & ~_flags(rows["overlap"], default=True)
    size = np.fmax(_numbers(rows["pct_original"]), _numbers(rows["pct_treated"]))
    by_change = _descending(np.abs(_numbers(rows["difference"])))
    by_size = _descending(size)
    room = max(limit - int(pooled.sum()), 0)
    chosen = pooled.copy()
    listed = 0

    def take(order: np.ndarray, wanted: np.ndarray, upto: int) -> int:
        nonlocal listed
        before = listed
        for i in order:
            if listed >= upto:
                break
            if wanted[i] and not chosen[i]:
                chosen[i] = True
                listed += 1
        return listed - before

    n_gone = take(by_change, gone, room)
    n_apart = take(by_change, apart, room)
    n_changed = take(by_change, named, room // 2)
    n_largest = take(by_size, named, room)
    return chosen, VariableRows(variable=variable, n_categories=int(named.sum()), n_listed=listed,
                                suppressed=Tier(n_gone, int(gone.sum())), apart=Tier(n_apart, int(apart.sum())),
                                changed=n_changed, largest=n_largest)


def _numbers(col: pd.Series) -> np.ndarray:
    """A column as floats, a missing or text cell (a pooled count "< k") as NaN."""
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)


def _flags(col: pd.Series, default: bool) -> np.ndarray:
    """A yes/no column as booleans, an empty cell (a pooled row's) as ``default``."""
    return np.array([default if pd.isna(v) else bool(v) for v in col.tolist()], dtype=bool)


def _descending(values: np.ndarray) -> np.ndarray:
    """Row positions by ``values``, largest first, NaN last, ties in the rows' order."""
    return np.argsort(-np.nan_to_num(values, nan=-np.inf), kind="stable")


def listed_note(limit: int = REPORT_CATEGORY_ROWS) -> str:
    """Under the table: which rows a variable of many categories lists, and where every row is."""
    return (f"A variable with more than {limit:,} categories lists {limit:,} of them (in the table's order), "
            "chosen in this order: the categories completely suppressed, those whose confidence intervals no "
            "longer overlap, those with the largest differences up to half of the rows, then the largest "
            "categories. The summary above counts every category. Every category of every variable is in the table the Compare "
            "page downloads (CSV); on the command line, `kanon estimate` gives one file's weighted percentages "
            "per category, to run on the original and on the release.")


__all__ = ["REPORT_CATEGORY_ROWS", "CategoryRows", "Tier", "VariableRows", "category_rows", "listed_note"]
