"""Model formulas (``y ~ a + C(b) + c``) and the design matrix they describe.

The grammar is deliberately small -- what a disclosure officer needs to re-run an analyst's main-effects
model: one outcome, ``+``-separated covariates, ``C(v)`` or ``factor(v)`` to force a categorical
covariate, backticks for names with spaces. Interactions and models without intercept are refused with
a clear message rather than silently misread. Boolean and categorical columns, and text columns that are
not meant numeric, are categorical without ``C()``.

A text column is *meant numeric* when, among its non-missing cells (empty cells and declared missing codes
left out), at least 95 % are numbers -- or all but one, so that one stray cell in a small file counts too.
Such a column is used as a number (it is one after the file reader keeps a numeric column with a stray
"n/a" as text) and its non-numeric cells are an input error naming the variable and their count, never
their values: silently turning it into a factor would give one coefficient per distinct number, each
named by a data value. A genuinely categorical text variable (most cells not numbers) stays categorical,
and ``C(v)`` always makes a variable categorical, whatever its cells.

Categorical covariates are dummy coded against their first level (R's treatment contrasts); levels are
sorted as everywhere in kanon (numbers numerically, then text; the level ``(suppressed)`` of suppressed
cells last, so the reference stays a real category) and only levels present among the records
used enter the model, so a category that was completely suppressed does not produce an all-zero column.
Coefficient names follow ``variable[level]`` (R writes ``factor(variable)level``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
    the larger one), else None. ``moved_references``: the categorical covariates whose asked reference level
    (:func:`build_matrix`'s ``references``) has no record among those used, so their dummies are contrasts
    with another level.
    """

    x: np.ndarray
    y: np.ndarray | None
    y_binary: np.ndarray | None
    sample: np.ndarray
    columns: tuple[MatrixColumn, ...]
    kinds: dict[str, str]
    event: Any
    outcome_levels: tuple[Any, ...]
    moved_references: tuple[str, ...] = ()


NUMERIC_SHARE = 0.95
"""Share of a text column's non-missing cells that must be numbers for it to count as meant numeric."""


@dataclass(frozen=True)
class NumericReading:
    """A column read as numbers: ``values`` (NaN where missing or not a number) and the counts that decide."""

    values: np.ndarray
    n_present: int
    n_not_numeric: int

    @property
    def meant_numeric(self) -> bool:
        """At least :data:`NUMERIC_SHARE` of the non-missing cells are numbers, or all but one (module docstring)."""
        n_numbers = self.n_present - self.n_not_numeric
        return n_numbers > 0 and (self.n_not_numeric <= 1 or n_numbers >= NUMERIC_SHARE * self.n_present)


def read_numeric(series: pd.Series, missing: np.ndarray | None = None) -> NumericReading:
    """``series`` as finite numbers; ``missing`` flags cells that are missing (not counted as non-numeric)."""
    miss = series.isna().to_numpy() if missing is None else np.asarray(missing, dtype=bool) | series.isna().to_numpy()
    values = series.where(~miss)
    if pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values):
        values = values.map(lambda v: v.strip() if isinstance(v, str) else v)
    num = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
    bad = ~np.isfinite(num) & ~miss
    num[bad] = np.nan
    return NumericReading(values=num, n_present=int((~miss).sum()), n_not_numeric=int(bad.sum()))


def is_text(series: pd.Series) -> bool:
    """Neither numbers nor booleans: text, mixed objects or a categorical dtype."""
    return not pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def is_categorical(series: pd.Series, forced: bool | None, missing: np.ndarray | None = None) -> bool:
    """Whether a covariate enters as dummies: ``C()`` decides, else booleans and text not meant numeric."""
    if forced is not None:
        return forced
    if pd.api.types.is_bool_dtype(series):
        return True
    if pd.api.types.is_numeric_dtype(series):
        return False
    return not read_numeric(series, missing).meant_numeric


@dataclass(frozen=True)
class ModelLevels:
    """What a model's data decide before any fit: the outcome's values among the records used (two values
    make ``family="auto"`` logistic) and each categorical covariate's reference level (its first level)."""

    outcome: tuple[Any, ...]
    references: dict[str, Any]


def complete_cases(ds: Dataset, formula: Formula, domain: np.ndarray | None = None
                   ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The records inside ``domain`` with every variable of ``formula`` present, and each variable's missing
    cells."""
    for v in formula.variables:
        if v not in ds.frame.columns:
            raise InputError(f"Variable '{v}' of the formula is not a variable of the data.")
    sample = np.ones(ds.n_records, dtype=bool) if domain is None else np.asarray(domain, dtype=bool).copy()
    missing = {v: ds.missing_mask(v) for v in formula.variables}
    for v in formula.variables:
        sample &= ~missing[v]
    return sample, missing


def model_levels(ds: Dataset, formula: Formula) -> ModelLevels:
    """:class:`ModelLevels` of ``formula`` on ``ds``, read as :func:`build_matrix` reads them, without building
    the matrix: what the model comparison fixes on the original so that the treated models keep them."""
    sample, missing = complete_cases(ds, formula)
    if not sample.any():
        return ModelLevels((), {})
    outcome, _ = _level_codes(_outcome_series(ds.frame[formula.outcome], missing[formula.outcome], formula.outcome),
                              sample)
    references = {}
    for t in formula.terms:
        if is_categorical(ds.frame[t.variable], t.categorical, missing[t.variable]):
            present, _ = _level_codes(ds.frame[t.variable], sample)
            references[t.variable] = present[0]
    return ModelLevels(tuple(outcome), references)


def build_matrix(
    ds: Dataset,
    formula: Formula,
    domain: np.ndarray | None = None,
    extra_numeric: Sequence[tuple[str, np.ndarray, str]] = (),
    references: Mapping[str, Any] | None = None,
) -> ModelMatrix:
    """The design matrix of ``formula`` on the records that are complete and inside ``domain``.

    ``extra_numeric`` appends ready-made numeric columns ``(term, values, covariate)`` -- used for
    missing-value indicators in the "suppressed as own category" model. ``references`` names the reference
    level of categorical covariates (another model's, :class:`ModelLevels`): it comes first when some record
    used has it, whatever the natural order; otherwise the first level present is the reference and the
    covariate is listed in ``moved_references``.
    """
    frame = ds.frame
    n = ds.n_records
    sample, missing = complete_cases(ds, formula, domain)
    kinds: dict[str, str] = {}
    numeric_values: dict[str, np.ndarray] = {}
    for t in formula.terms:
        col = frame[t.variable]
        categorical = is_categorical(col, t.categorical, missing[t.variable])
        if not categorical:
            reading = read_numeric(col, missing[t.variable])
            if reading.n_not_numeric:
                raise InputError(
                    f"Covariate '{t.variable}' is used as a number, but {reading.n_not_numeric} of its "
                    f"{reading.n_present} non-missing cells are not numbers; correct them, declare them as "
                    f"missing codes, or write C({t.variable}) to use it as categorical.")
            numeric_values[t.variable] = reading.values
        kinds[t.variable] = "categorical" if categorical else "numeric"
    if int(sample.sum()) == 0:
        raise InputError("No record has all the variables of the formula (every record has a missing value).")

    columns: list[MatrixColumn] = [MatrixColumn(INTERCEPT, None, None, INTERCEPT)]
    blocks: list[np.ndarray] = [np.ones(n)]
    moved: list[str] = []
    for t in formula.terms:
        v = t.variable
        if kinds[v] == "numeric":
            columns.append(MatrixColumn(v, v, None, _var_label(ds, v)))
            blocks.append(np.nan_to_num(numeric_values[v]))
            continue
        present, codes = _level_codes(frame[v], sample)
        # a moved reference makes every dummy of v another contrast: its labels say so, so that no table or
        # plot puts it beside the other model's coefficient of the same level
        suffix = ""
        if references is not None and v in references:
            present, codes, found = _reference_first(present, codes, references[v])
            if not found:
                moved.append(v)
                suffix = f" {MOVED_REFERENCE}"
        labels = ds.meta_of(v).value_labels
        for i, level in enumerate(present[1:], start=1):
            columns.append(MatrixColumn(f"{v}[{_level_text(level)}]", v, level,
                                        f"{_var_label(ds, v)}: {_label_for(level, labels)}{suffix}"))
            blocks.append((codes == i).astype(np.float64))
    for term, values, covariate in extra_numeric:
        columns.append(MatrixColumn(term, covariate, None, term))
        blocks.append(np.asarray(values, dtype=np.float64))
    x = np.column_stack(blocks)
    x[~sample] = 0.0

    y_num, y_bin, event, levels = _outcome(_outcome_series(frame[formula.outcome], missing[formula.outcome],
                                                           formula.outcome), sample, formula.outcome)
    return ModelMatrix(x=x, y=y_num, y_binary=y_bin, sample=sample, columns=tuple(columns), kinds=kinds,
                       event=event, outcome_levels=levels, moved_references=tuple(moved))


MOVED_REFERENCE = "(other reference)"
"""Added to the labels of a covariate's coefficients when its asked reference level has no record in the model."""


def _reference_first(present: list[Any], codes: np.ndarray, reference: Any) -> tuple[list[Any], np.ndarray, bool]:
    """``present`` and ``codes`` (:func:`_level_codes`) with the level written as ``reference`` first, and
    whether it is present. Levels are matched as coefficient names write them (1 and 1.0 are one level; a
    release whose codes became text, "1", still has level 1), so the reference is the one whose coefficient
    names the other model leaves out."""
    wanted = _level_text(reference)
    at = next((i for i, level in enumerate(present) if _level_text(level) == wanted), None)
    if at is None:
        return present, codes, False
    if at == 0:
        return present, codes, True
    order = [at, *range(at), *range(at + 1, len(present))]
    new_code = np.empty(len(present), dtype=np.int64)
    new_code[order] = np.arange(len(present), dtype=np.int64)
    return [present[i] for i in order], np.where(codes >= 0, new_code[np.maximum(codes, 0)], -1), True


SUPPRESSED_LEVEL = "(suppressed)"
"""The level suppressed cells get in the "suppressed as a category" model (:mod:`.model_compare`)."""


def _level_codes(series: pd.Series, sample: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """Sorted levels present in ``sample`` and each record's level index (-1 outside the levels)."""
    values = series.to_numpy(dtype=object)
    rows = np.flatnonzero(sample)
    # Distinct values by Python equality (1, 1.0 and True are one level, as in a set or a dict), hashed
    # once in compiled code instead of a dict lookup per record.
    found, _ = pd.factorize(values, use_na_sentinel=True)
    seen, first = np.unique(found[rows], return_index=True)
    if len(seen) and seen[0] < 0:  # an empty cell inside the sample: levels by Python sets, as they are
        present = sorted({values[i] for i in rows}, key=_level_order)
        index = {level: i for i, level in enumerate(present)}
        codes = np.fromiter((index.get(x, -1) for x in values), dtype=np.int64, count=len(values))
        return [_plain(v) for v in present], codes
    # each level is written as its first record in the sample shows it (what a set built in record order keeps)
    shown = [values[rows[i]] for i in first]
    order = sorted(range(len(shown)), key=lambda j: _level_order(shown[j]))
    level_of = np.full(max(int(found.max(initial=-1)) + 1, 1), -1, dtype=np.int64)
    level_of[seen[order]] = np.arange(len(order), dtype=np.int64)
    codes = np.where(found >= 0, level_of[np.maximum(found, 0)], -1)
    return [_plain(shown[j]) for j in order], codes


def _level_order(value: Any) -> tuple[bool, tuple[int, Any]]:
    """Levels in their natural order (numbers, then texts); the level of suppressed cells (model 3 of the
    model comparison) sorts last, so it is never the reference."""
    return (value == SUPPRESSED_LEVEL, _sort_key(value))


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


def _outcome_series(series: pd.Series, missing: np.ndarray, name: str) -> pd.Series:
    """A text outcome meant numeric (module docstring) as numbers; its non-numeric cells are an input error."""
    if not is_text(series):
        return series
    reading = read_numeric(series, missing)
    if not reading.meant_numeric:
        return series
    if reading.n_not_numeric:
        raise InputError(f"Outcome '{name}' is used as a number, but {reading.n_not_numeric} of its "
                         f"{reading.n_present} non-missing cells are not numbers; correct them or declare them "
                         "as missing codes.")
    return pd.Series(reading.values, index=series.index, name=series.name)


def _var_label(ds: Dataset, v: str) -> str:
    return ds.meta_of(v).label or v


def _level_text(level: Any) -> str:
    if isinstance(level, float) and level.is_integer():
        return str(int(level))
    return str(level)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
