"""Per-variable summaries for the Data page and the report."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .dataset import Dataset

MANY_DISTINCT = 1000
"""A quasi-identifier with more distinct values than this is almost surely identifying: warn and ask."""


def variable_summary(ds: Dataset) -> pd.DataFrame:
    """One row per variable: role, label, type, distinct values, missing, most frequent value (label)."""
    rows = []
    for col in ds.columns:
        s = ds.frame[col]
        miss = ds.missing_mask(col)
        observed = s[~miss]
        vc = observed.value_counts()
        top = ds.value_label(col, vc.index[0]) if len(vc) else ""
        rows.append(
            {
                "variable": col,
                "role": ds.roles.role_of(col),
                "label": ds.meta_of(col).label or "",
                "type": "numeric" if pd.api.types.is_numeric_dtype(s.dtype) else "text",
                "distinct": int(observed.nunique()),
                "missing": int(miss.sum()),
                "missing_%": round(100.0 * float(miss.mean()), 2),
                "value_labels": len(ds.meta_of(col).value_labels),
                "most_frequent": top,
                "most_frequent_n": int(vc.iloc[0]) if len(vc) else 0,
            }
        )
    return pd.DataFrame(rows)


def many_distinct_limit(n_records: int, limit: int = MANY_DISTINCT) -> int:
    """The most distinct values a quasi-identifier of a file of ``n_records`` records may have before it is
    said to have very many: ``limit``, or half the records (at least 50) for small files. The one rule of
    :func:`too_many_distinct`, and of the engines' command line, which count the distinct values on the class
    table."""
    return min(limit, max(50, n_records // 2))


def too_many_distinct(ds: Dataset, columns: list[str], limit: int = MANY_DISTINCT) -> dict[str, int]:
    """QIs whose number of distinct values (missing ones left out) exceeds :func:`many_distinct_limit`."""
    cap = many_distinct_limit(ds.n_records, limit)
    out = {}
    for c in columns:
        n = int(ds.frame[c][~ds.missing_mask(c)].nunique())
        if n > cap:
            out[c] = n
    return out


def frequencies(ds: Dataset, column: str) -> pd.DataFrame:
    """Counts (and weighted counts if a weight is set) of each value, with labels, missing last."""
    miss = ds.missing_mask(column)
    s = ds.frame[column]
    w = ds.weights()
    df = pd.DataFrame({"value": s.where(~miss), "w": 1.0 if w is None else w})
    g = df[~miss].groupby("value", sort=True)["w"]
    out = pd.DataFrame({"count": g.size(), "weighted": g.sum()}).reset_index()
    out.insert(1, "label", [ds.value_label(column, v) for v in out["value"]])
    if miss.any():
        out.loc[len(out)] = [None, "(missing)", int(miss.sum()), float(np.sum(df["w"][miss]))]
    if w is None:
        out = out.drop(columns=["weighted"])
    return out
