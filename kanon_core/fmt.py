"""Numbers and headers for humans: one place that decides how every page and the report write them.

A disclosure officer and a data steward read these tables; what misleads them is fixed here once:

* p-values: ``< 0.001`` below the threshold a reader can act on, else three decimals; scientific notation
  only on request (:func:`p_value` with ``exact=True``), for the rare reader who needs the magnitude;
* no ``-0.00``: a value that rounds to zero is written as zero, whatever its sign;
* an undefined metric says why (``undefined: no hierarchy``), never ``None`` or ``nan``;
* column headers in words (:data:`HEADERS`, else snake_case spelled out), the same on every page.

Pages keep their numeric tables numeric where they sort; :func:`readable_table` makes the display copy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

P_THRESHOLD = 0.001
UNDEFINED = "undefined"

HEADERS: dict[str, str] = {
    # risk and classes
    "fk": "class size (fk)", "Fk": "estimated population class size (Fk)", "class_size": "class size",
    "n_violating": "records below k", "k_achieved": "k achieved", "smallest_category": "smallest category",
    "distinct": "distinct values", "missing": "missing values", "records": "records",
    "share_percent": "share of MINUCs (%)", "minucs": "MINUCs", "records_with_minucs": "records with a MINUC",
    # suppression
    "n_suppressed": "values suppressed", "suppressed": "values suppressed", "percent": "% of records",
    "pct_records": "% of records", "most_suppressed": "value suppressed most", "most_suppressed_n": "its count",
    "most_suppressed_percent": "its share (%)", "cost_per_cell": "cost per value", "records_touched": "records touched",
    "suppressed_cells": "suppressed values",
    # comparison of percentages
    "n_original": "records before", "n_treated": "records after", "pct_original": "% before",
    "pct_treated": "% after", "se_original": "SE before", "se_treated": "SE after",
    "ci_low_original": "CI low before", "ci_high_original": "CI high before", "ci_low_treated": "CI low after",
    "ci_high_treated": "CI high after", "difference": "difference (points)",
    "relative_difference": "relative difference", "overlap": "CIs overlap",
    # models
    "model_label": "model", "n_used": "records used", "not_significant": "not significant",
    "p_value": "p-value", "se": "standard error", "ci_low": "CI low", "ci_high": "CI high",
    "estimate": "estimate", "term": "term",
    # information loss and bias
    "loss_metric": "loss metric (LM)", "prec": "Prec", "dm": "discernibility", "aecs": "average class size",
    "mean_original": "mean before", "mean_treated": "mean after", "bias": "bias",
    "relative_bias": "relative bias", "corr_original": "correlation before", "corr_treated": "correlation after",
    "entropy_original": "entropy before", "entropy_treated": "entropy after",
    "before_percent": "before (%)", "after_percent": "after (%)",
    "categories_before": "categories before", "categories_after": "categories after",
    "smallest_category_before": "smallest category before", "smallest_category_after": "smallest category after",
    "missing_before": "missing before", "missing_after": "missing after",
    "n_suppressed_records": "records suppressed", "nodes_evaluated": "nodes evaluated",
    "minucs_before": "MINUCs before", "minucs_after": "MINUCs after",
    "records_before": "records before", "records_after": "records after",
    "minucs_removed": "MINUCs removed", "variable_label": "variable label", "n_significant": "significant covariates",
    "p_original": "p-value, original", "p_treated_excluding": "p-value, suppressed records excluded",
    "p_treated_category": "p-value, suppressed as a category", "significant_original": "significant, original",
    "significant_treated_excluding": "significant, suppressed records excluded",
    "significant_treated_category": "significant, suppressed as a category",
    "conclusion_changes": "conclusion changes", "n_missing_original": "missing before",
    "n_missing_treated": "missing after", "non_uniform_entropy": "non-uniform entropy",
    "non_uniform_entropy_per_record": "non-uniform entropy per record", "variable_1": "variable 1",
    "variable_2": "variable 2", "violating_before": "records below k before",
    "violating_after": "records below k after", "categories_lost": "categories lost",
}
"""Readable headers for the column names kanon_core's tables use; other names are spelled out by
:func:`header`."""

_ACRONYMS = {"ci": "CI", "se": "SE", "id": "ID", "qi": "QI", "qis": "QIs", "psu": "PSU", "suda": "SUDA",
             "dis": "DIS", "minucs": "MINUCs", "minuc": "MINUC", "pct": "%", "n": "number of"}


def header(name: Any) -> str:
    """The header for a column: :data:`HEADERS`, else the words of a snake_case name (``ci_low`` → ``CI low``)."""
    text = str(name)
    if text in HEADERS:
        return HEADERS[text]
    if "_" not in text:
        return text
    words = [w for w in text.split("_") if w]
    return " ".join(_ACRONYMS.get(w.lower(), w) for w in words)


def is_missing(value: Any) -> bool:
    """None, NaN and pandas' NA/NaT: the values that would otherwise print as ``None``/``nan``."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(float(value))


def undefined(reason: str = "") -> str:
    """The text of a metric that has no value, with the reason (``undefined: no hierarchy``)."""
    return f"{UNDEFINED}: {reason}" if reason else UNDEFINED


def number(value: Any, digits: int = 2, why: str = "", thousands: bool = True) -> str:
    """A number rounded to ``digits`` decimals, never ``-0.00``; an integer without decimals.

    ``why`` is the reason shown when the value is undefined (None or NaN); infinities are written as
    ``∞``/``-∞``.
    """
    if is_missing(value):
        return undefined(why)
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}" if thousands else str(int(value))
    x = float(value)
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    x = round(x, digits)
    if x == 0:
        x = 0.0  # -0.0 rounds to -0.0: write it as 0
    return f"{x:,.{digits}f}" if thousands else f"{x:.{digits}f}"


def percent(value: Any, digits: int = 1, why: str = "") -> str:
    """A percentage (already in percent) with a ``%`` sign, never ``-0.0 %``."""
    text = number(value, digits, why)
    return text if text.startswith(UNDEFINED) else f"{text} %"


def p_value(p: Any, exact: bool = False, threshold: float = P_THRESHOLD, why: str = "") -> str:
    """A p-value as a reader uses it: ``< 0.001`` below ``threshold``, else three decimals.

    With ``exact``, values below the threshold are written in scientific notation (``3.2e-05``) and
    those that underflow to zero as ``< 1e-300``.
    """
    if is_missing(p):
        return undefined(why)
    x = float(p)
    if not 0.0 <= x <= 1.0 + 1e-12:
        raise ValueError("a p-value lies between 0 and 1")
    if x < threshold:
        if not exact:
            return f"< {threshold:g}"
        return "< 1e-300" if x == 0 else f"{x:.1e}"
    return f"{min(x, 1.0):.3f}"


def _looks_like_p(name: str) -> bool:
    n = name.lower()
    return n in ("p", "p_value", "pvalue", "p-value") or n.startswith(("p_", "p-value")) or n.endswith(
        ("_p", "_p_value", "_pvalue", " p-value"))


def readable_table(frame: pd.DataFrame, digits: int = 2, p_columns: Iterable[str] | None = None,
                   why: Mapping[str, str] | None = None, headers: bool = True,
                   rename: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A display copy of ``frame``: p-value columns as text (:func:`p_value`), other floats rounded without
    ``-0.00``, undefined cells with their reason (``why`` per column, else empty), headers in words
    (``rename`` first, for a name whose meaning depends on the table, then :func:`header`).

    Integer and text columns keep their type, so they still sort in a table widget; a column of texts and
    numbers together is shown as text.
    """
    why = dict(why or {})
    pcols = set(p_columns) if p_columns is not None else {c for c in frame.columns if _looks_like_p(str(c))}
    out: dict[str, pd.Series] = {}
    for c in frame.columns:
        s = frame[c]
        name = str(c)
        reason = why.get(name, "")
        if isinstance(s.dtype, pd.BooleanDtype) and s.isna().any():
            s = s.astype(object)  # yes/no with undefined cells (pd.NA): shown with their reason, as below
        if c in pcols:
            s = s.map(lambda v, r=reason: p_value(v, why=r) if not isinstance(v, str) else v)
        elif pd.api.types.is_float_dtype(s.dtype):
            if s.isna().any():
                s = s.map(lambda v, r=reason: number(v, digits, r) if (r or not is_missing(v)) else "")
            else:
                s = s.round(digits).map(lambda v: 0.0 if v == 0 else v)
        elif s.dtype == object:
            s = s.map(lambda v, r=reason: (undefined(r) if r else "") if is_missing(v) else v)
            if not all(isinstance(v, str) for v in s):
                # texts beside numbers (the categories of several variables in one column, or a missing cell's
                # ""): all as text, as a table widget can show them; Streamlit would convert them itself after
                # logging a traceback
                s = s.map(str)
        out[(rename or {}).get(name) or (header(c) if headers else name)] = s
    return pd.DataFrame(out, index=frame.index)


_TOKEN = re.compile(r"^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)+$")


def is_snake_case(name: str) -> bool:
    """Whether a header is still an identifier (``n_original``) rather than words: for tests of pages."""
    return bool(_TOKEN.match(name))


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#|$~^]|:(?=[A-Za-z_]))")
_MD_LEADING = re.compile(r"^(\s*)(\d*)([-+.)])")


def markdown_literal(text: Any) -> str:
    """``text`` for a Markdown element, shown exactly as written: Markdown emphasis, links, code, LaTeX
    (``$``), Streamlit directives (``:material/..:``, ``:red[..]``, ``:smile:``) and a leading list or
    quote marker escaped; ``<``, ``>`` and ``&`` as entities. Data values (labels, step descriptions) go
    through this, never straight into Markdown."""
    s = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(lambda m: "\\" + m.group(1), s)
    lead = _MD_LEADING.match(s)
    if lead and (lead.group(2) or lead.group(3) in "-+"):  # "- x", "+ x", "1. x", "2) x": not a list
        s = s[:lead.start(3)] + "\\" + s[lead.start(3):]
    return s
