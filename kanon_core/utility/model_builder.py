"""The point-and-click model of the Compare page: an outcome, covariates and a family chosen from the
loaded file's own variables, written as the formula :func:`~kanon_core.utility.formula.parse_formula` reads.

The formula stays the one source of truth (it is shown and editable); this module only proposes one that
fits the file, so the example is never a formula naming variables the file lacks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..dataset import Dataset

FAMILIES = ("auto", "gaussian", "binomial")
MAX_COVARIATES = 8
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


@dataclass(frozen=True)
class ModelSpec:
    """A main-effects model: ``outcome ~ covariates``, the categorical ones written ``C(v)``."""

    outcome: str
    covariates: tuple[str, ...]
    categorical: tuple[str, ...]

    @property
    def formula(self) -> str:
        return build_formula(self.outcome, self.covariates, self.categorical)


def quote(name: str) -> str:
    """A variable name as the formula grammar reads it (backticks around names with spaces or signs)."""
    return name if _PLAIN.match(name) else f"`{name}`"


def build_formula(outcome: str, covariates: Sequence[str], categorical: Sequence[str] = ()) -> str:
    """``outcome ~ a + C(b)``; ``categorical`` covariates get ``C()``, the outcome never appears on the right."""
    cats = set(categorical)
    terms = [f"C({quote(c)})" if c in cats else quote(c) for c in covariates if c != outcome]
    return f"{quote(outcome)} ~ " + (" + ".join(terms) if terms else "1")


def _design_columns(ds: Dataset) -> set[str]:
    r = ds.roles
    return {c for c in (r.weight, r.strata, r.psu, r.fpc) if c} | set(r.direct_ids)


def outcome_candidates(ds: Dataset) -> list[str]:
    """Variables a regression can model: numeric (linear) or with two values (logistic); the design
    variables and direct identifiers are left out. Outcome roles first, then the other non-QIs, then QIs."""
    skip = _design_columns(ds)
    out = []
    for c in ds.columns:
        if c in skip:
            continue
        s = ds.frame[c][~ds.missing_mask(c)]
        if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
            if s.nunique() >= 2:
                out.append(c)
        elif s.nunique() == 2:
            out.append(c)
    rank = {c: (0 if c in ds.roles.outcomes else 2 if c in ds.roles.qis else 1) for c in out}
    return sorted(out, key=lambda c: (rank[c], out.index(c)))


def covariate_candidates(ds: Dataset, outcome: str) -> list[str]:
    """Every variable but the outcome, the design variables, direct identifiers and variables with no observed
    value (a model on one would have no complete record)."""
    skip = _design_columns(ds) | {outcome}
    return [c for c in ds.columns if c not in skip and not ds.missing_mask(c).all()]


def is_categorical_default(ds: Dataset, column: str) -> bool:
    """Quasi-identifiers, texts and labelled codes are categories; other numbers are measurements."""
    if column in ds.roles.qis:
        return True
    s = ds.frame[column]
    if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        return True
    return bool(ds.meta_of(column).value_labels)


def default_model(ds: Dataset, variables: Sequence[str] = ()) -> ModelSpec | None:
    """A model that fits the file: the first outcome candidate, on the quasi-identifiers among
    ``variables`` (else all of them), at most :data:`MAX_COVARIATES`. None when nothing can be modelled."""
    outcomes = outcome_candidates(ds)
    if not outcomes:
        return None
    qis = [q for q in ds.roles.qis if q in ds.frame.columns and not ds.missing_mask(q).all()]
    preferred = [v for v in variables if v in qis] or qis
    outcome = next((o for o in outcomes if o not in preferred), outcomes[0])
    covariates = [c for c in preferred if c != outcome][:MAX_COVARIATES]
    if not covariates:
        covariates = [c for c in covariate_candidates(ds, outcome)][:1]
    return ModelSpec(outcome, tuple(covariates), tuple(c for c in covariates if is_categorical_default(ds, c)))


MIN_MEASUREMENT_VALUES = 10


def measurement_variables(ds: Dataset) -> list[str]:
    """Numeric analysis variables (income, expenditure, age, test scores): numbers without value labels
    with at least :data:`MIN_MEASUREMENT_VALUES` distinct values, design variables and direct identifiers
    left out; outcome roles first. Coded categories (a QI's codes 1..9) are not measurements: a mean of
    codes means nothing, so the bias tab does not start with them."""
    skip = _design_columns(ds)
    out = []
    for c in ds.columns:
        s = ds.frame[c]
        if c in skip or not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            continue
        if ds.meta_of(c).value_labels:
            continue
        if s[~ds.missing_mask(c)].nunique() >= MIN_MEASUREMENT_VALUES:
            out.append(c)
    return sorted(out, key=lambda c: (c not in ds.roles.outcomes, out.index(c)))
