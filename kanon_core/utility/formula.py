"""Model formulas (``y ~ a + C(b) + c``) and the design matrix they describe.

The grammar is deliberately small -- what a disclosure officer needs to re-run an analyst's main-effects
model: one outcome, ``+``-separated covariates, ``C(v)`` or ``factor(v)`` to force a categorical
covariate, backticks for names with spaces. Interactions and models without intercept are refused with
a clear message rather than silently misread. Non-numeric (text, boolean, categorical) columns are
categorical without ``C()``.

Categorical covariates are dummy coded against their first level (R's treatment contrasts); levels are
sorted as everywhere in kanon (numbers numerically, then text) and only levels present among the records
used enter the model, so a category that was completely suppressed does not produce an all-zero column.
Coefficient names follow ``variable[level]`` (R writes ``factor(variable)level``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset, _label_for, _sort_key
from ..errors import InputError

INTERCEPT = "(Intercept)"
_CATEGORICAL_CALL = re.compile(r"^(?:C|factor)\((.+)\)$")


@dataclass(frozen=True)
class TermSpec:
    """A covariate of the formula; ``categorical`` is None when the data decide (text -> categorical)."""

    variable: str
    categorical: bool | None = None


@dataclass(frozen=True)
class Formula:
    outcome: str
    terms: tuple[TermSpec, ...]
    text: str

    @property
    def variables(self) -> tuple[str, ...]:
        return (self.outcome, *(t.variable for t in self.terms))


def parse_formula(text: str, columns: Sequence[str] | None = None) -> Formula:
    """Parse ``outcome ~ a + C(b) + ...``; with ``columns``, every name must be a variable of the data."""
    if text.count("~") != 1:
        raise InputError("A formula needs exactly one '~' between the outcome and the covariates, e.g. 'y ~ a + C(b)'.")
    lhs, rhs = (part.strip() for part in text.split("~"))
    outcome = _name(lhs, "outcome")
    terms: list[TermSpec] = []
    for raw in _split_plus(rhs):
        token = raw.strip()
        if token == "":
            raise InputError("The formula has an empty term (two '+' in a row or a trailing '+').")
        if token == "1":
            continue
        if token in ("0", "-1") or token.startswith("-") or re.search(r"(^|\s)-\s*1\b", token):
            raise InputError("Models without an intercept are not supported.")
        if _outside_backticks(token, ":*/|^"):
            raise InputError("Interactions and other formula operators are not supported; list main effects with '+'.")
        match = _CATEGORICAL_CALL.match(token)
        if match:
            terms.append(TermSpec(_name(match.group(1).strip(), "covariate"), categorical=True))
        else:
            terms.append(TermSpec(_name(token, "covariate")))
    seen: set[str] = set()
    for t in terms:
        if t.variable in seen:
            raise InputError(f"Covariate '{t.variable}' appears twice in the formula.")
        if t.variable == outcome:
            raise InputError(f"The outcome '{outcome}' cannot also be a covariate.")
        seen.add(t.variable)
    formula = Formula(outcome=outcome, terms=tuple(terms), text=text.strip())
    if columns is not None:
        known = set(map(str, columns))
        unknown = [v for v in formula.variables if v not in known]
        if unknown:
            raise InputError(f"Unknown variable(s) in the formula: {', '.join(unknown)}.")
    return formula


def _split_plus(text: str) -> list[str]:
    parts, depth, tick, cur = [], 0, False, []
    for ch in text:
        if ch == "`":
            tick = not tick
        elif not tick and ch == "(":
            depth += 1
        elif not tick and ch == ")":
            depth -= 1
        if ch == "+" and depth == 0 and not tick:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _outside_backticks(token: str, chars: str) -> bool:
    stripped = re.sub(r"`[^`]*`", "", token)
    return any(c in stripped for c in chars)


def _name(token: str, what: str) -> str:
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] == "`":
        token = token[1:-1]
    if not token or any(c in token for c in "()~`"):
        raise InputError(f"Cannot read the {what} of the formula; write plain variable names, C(name) for categories.")
    return token


# -- design matrix ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MatrixColumn:
    """One column of the design matrix: the coefficient it estimates."""

    term: str
    variable: str | None
    level: Any
    label: str


@dataclass(frozen=True)
class ModelMatrix:
    """Design matrix over all records (rows outside ``sample`` are zero) and the outcome.

    ``sample`` flags the complete cases used; ``kinds`` says for each covariate whether it entered as
    ``"numeric"`` or ``"categorical"``. ``y`` is the outcome as numbers (None when it is text) and
    ``y_binary`` the outcome coded 0/1 when it takes exactly two values (``event`` is the value coded 1,
    the larger one), else None.
    """

    x: np.ndarray
    y: np.ndarray | None
    y_binary: np.ndarray | None
    sample: np.ndarray
    columns: tuple[MatrixColumn, ...]
    kinds: dict[str, str]
    event: Any
    outcome_levels: tuple[Any, ...]


def is_categorical(series: pd.Series, forced: bool | None) -> bool:
    if forced is not None:
        return forced
    if pd.api.types.is_bool_dtype(series):
        return True
    return not pd.api.types.is_numeric_dtype(series)


def build_matrix(
    ds: Dataset,
    formula: Formula,
    domain: np.ndarray | None = None,
    extra_numeric: Sequence[tuple[str, np.ndarray, str]] = (),
) -> ModelMatrix:
    """The design matrix of ``formula`` on the records that are complete and inside ``domain``.

    ``extra_numeric`` appends ready-made numeric columns ``(term, values, covariate)`` -- used for
    missing-value indicators in the "suppressed as own category" model.
    """
    frame = ds.frame
    n = ds.n_records
    for v in formula.variables:
        if v not in frame.columns:
            raise InputError(f"Variable '{v}' of the formula is not a variable of the data.")
    sample = np.ones(n, dtype=bool) if domain is None else np.asarray(domain, dtype=bool).copy()
    missing = {v: ds.missing_mask(v) for v in formula.variables}
    for v in formula.variables:
        sample &= ~missing[v]
    kinds: dict[str, str] = {}
    numeric_values: dict[str, np.ndarray] = {}
    for t in formula.terms:
        col = frame[t.variable]
        categorical = is_categorical(col, t.categorical)
        if not categorical:
            num = pd.to_numeric(col.where(~missing[t.variable]), errors="coerce")
            bad = int((num.isna().to_numpy() & ~missing[t.variable]).sum())
            if bad:
                raise InputError(f"Covariate '{t.variable}' has {bad} non-numeric value(s); write C({t.variable}) to use it as categorical.")
            numeric_values[t.variable] = num.to_numpy(dtype=np.float64)
        kinds[t.variable] = "categorical" if categorical else "numeric"
    if int(sample.sum()) == 0:
        raise InputError("No record has all the variables of the formula (every record has a missing value).")

    columns: list[MatrixColumn] = [MatrixColumn(INTERCEPT, None, None, INTERCEPT)]
    blocks: list[np.ndarray] = [np.ones(n)]
    for t in formula.terms:
        v = t.variable
        if kinds[v] == "numeric":
            columns.append(MatrixColumn(v, v, None, _var_label(ds, v)))
            blocks.append(np.nan_to_num(numeric_values[v]))
            continue
        present, codes = _level_codes(frame[v], sample)
        labels = ds.meta_of(v).value_labels
        for i, level in enumerate(present[1:], start=1):
            columns.append(MatrixColumn(f"{v}[{_level_text(level)}]", v, level,
                                        f"{_var_label(ds, v)}: {_label_for(level, labels)}"))
            blocks.append((codes == i).astype(np.float64))
    for term, values, covariate in extra_numeric:
        columns.append(MatrixColumn(term, covariate, None, term))
        blocks.append(np.asarray(values, dtype=np.float64))
    x = np.column_stack(blocks)
    x[~sample] = 0.0

    y_num, y_bin, event, levels = _outcome(frame[formula.outcome], sample, formula.outcome)
    return ModelMatrix(x=x, y=y_num, y_binary=y_bin, sample=sample, columns=tuple(columns), kinds=kinds,
                       event=event, outcome_levels=levels)


def _level_codes(series: pd.Series, sample: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """Sorted levels present in ``sample`` and each record's level index (-1 outside the levels)."""
    values = series.to_numpy(dtype=object)
    present = sorted({values[i] for i in np.flatnonzero(sample)}, key=_sort_key)
    index = {level: i for i, level in enumerate(present)}
    codes = np.fromiter((index.get(x, -1) for x in values), dtype=np.int64, count=len(values))
    return [_plain(v) for v in present], codes


def _outcome(
    series: pd.Series, sample: np.ndarray, name: str
) -> tuple[np.ndarray | None, np.ndarray | None, Any, tuple[Any, ...]]:
    """The outcome as numbers (None if not numeric) and as 0/1 (None unless it has two values)."""
    observed, codes = _level_codes(series, sample)
    y_bin = None
    event = None
    if len(observed) == 2:
        event = observed[1]
        y_bin = np.where(sample, (codes == 1).astype(np.float64), 0.0)
    y_num = None
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        y_num = np.where(sample, pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64), 0.0)
    if y_num is None and y_bin is None:
        raise InputError(f"Outcome '{name}' is neither numeric nor binary; a regression needs a number or a yes/no outcome.")
    return y_num, y_bin, event, tuple(observed)


def _var_label(ds: Dataset, v: str) -> str:
    return ds.meta_of(v).label or v


def _level_text(level: Any) -> str:
    if isinstance(level, float) and level.is_integer():
        return str(int(level))
    return str(level)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
