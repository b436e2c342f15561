"""The same regression on the original and the treated file: do the conclusions survive? (Wilson et al., RTI, table 4)

Wilson fits each model three times and lists the covariates significant at 5 %:

1. ``original`` -- the original data;
2. ``treated_excluding`` -- the treated data, records with a suppressed covariate dropped (listwise
   deletion, what most software does by default);
3. ``treated_category`` -- the treated data with suppressed values kept as a category of their own
   (Wilson coded them 99: "a poor imitation of an imputation").

For model 3, a categorical covariate gets the extra level ``(suppressed)``, sorted after every real level
so that the reference (the first real level, as in models 1 and 2) does not move: with ``(suppressed)``
as the reference every coefficient would be a contrast with the suppressed records. A numeric covariate cannot,
so its suppressed values are set to the weighted mean of its observed values and an indicator
``variable[suppressed]`` joins the model (the missing-indicator method). Its joint test stays the test
of the covariate's own coefficient(s). Values missing already in the original are not "suppressed":
those records are dropped in every model, so models 1 and 3 use the same records.

What model 1 decides, the treated models keep, so that their numbers are the same quantities: the family
(``"auto"`` resolved on the original: dropping records in model 2 can leave a three-valued outcome with two
values, which would otherwise make it logistic beside two linear models), each categorical covariate's
reference level (first when present, whatever a recode's new levels sort as; when none of its records is
left, the coefficients are labelled as contrasts with another level and a note says so), and each covariate's
kind, except a number the treatment recoded into text categories (age into bands), which enters the treated
models as categories, with a note: its joint test still compares. A treated model that cannot be fitted (a
covariate with every value suppressed leaves model 2 no record) is reported with its reason; the others stand.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .. import threads
from ..dataset import Dataset, VariableMeta
from ..errors import InputError
from .baseline import reads_alike
from .design import DEFAULT_LONELY_PSU, SurveyDesign
from .formula import (
    INTERCEPT,
    SUPPRESSED_LEVEL,
    Formula,
    TermSpec,
    is_categorical,
    model_levels,
    parse_formula,
    read_numeric,
)
from .regression import RegressionResult, check_family, choose_family, regress

MODEL_ORIGINAL = "original"
MODEL_EXCLUDING = "treated_excluding"
MODEL_CATEGORY = "treated_category"
MODEL_LABELS = {
    MODEL_ORIGINAL: "Original data",
    MODEL_EXCLUDING: "Treated, records with suppressed values excluded",
    MODEL_CATEGORY: "Treated, suppressed values as own category",
}


@dataclass(frozen=True)
class ModelComparison:
    """The fits and tables to compare them: ``results`` holds the models fitted (the original's always),
    ``failures`` why a treated model could not be fitted (model key -> reason, no values)."""

    results: dict[str, RegressionResult]
    alpha: float
    covariates: tuple[str, ...]
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def models(self) -> tuple[str, ...]:
        """Every model compared, fitted or not, in Wilson's order."""
        return tuple(m for m in (MODEL_ORIGINAL, MODEL_EXCLUDING, MODEL_CATEGORY)
                     if m in self.results or m in self.failures)

    def significance_table(self) -> pd.DataFrame:
        """One row per model: records used, and the covariates significant at ``alpha``, not significant, and
        not tested (no p-value: no residual degrees of freedom, or every coefficient aliased). A model not
        fitted says why in ``summary``."""
        rows = []
        for key in self.models:
            label = MODEL_LABELS.get(key, key)
            if key in self.failures:
                rows.append({"model": key, "model_label": label, "n_used": None, "significant": "",
                             "not_significant": "", "not_tested": "", "n_significant": None,
                             "summary": f"not fitted: {self.failures[key]}"})
                continue
            res = self.results[key]
            sig = res.significant(self.alpha)
            untested = _untested(res, self.covariates)
            tested = tuple(c for c in self.covariates if c not in untested)
            phrase = _wilson_phrase(sig, tested) if tested else "None tested"
            rows.append({
                "model": key, "model_label": label, "n_used": res.n_used,
                "significant": ", ".join(sig) if sig else "none",
                "not_significant": ", ".join(c for c in tested if c not in sig) or "none",
                "not_tested": ", ".join(untested) or "none",
                "n_significant": len(sig),
                "summary": phrase + (f"; not tested: {', '.join(untested)}" if untested and tested else ""),
            })
        return pd.DataFrame(rows)

    def pvalue_table(self) -> pd.DataFrame:
        """Covariates x models: joint-test p-values and whether each is below ``alpha`` (missing where there is
        no p-value: the model not fitted, or the covariate not tested). ``conclusion_changes``: significant in
        one model and not in another, among the models that test it."""
        out = pd.DataFrame({"variable": list(self.covariates)})
        for key in self.models:
            res = self.results.get(key)
            if res is None:
                p = np.full(len(out), np.nan)
            else:
                p = out["variable"].map(res.term_tests.set_index("variable")["p_value"]).to_numpy(dtype=float)
            out[f"p_{key}"] = p
            out[f"significant_{key}"] = pd.arrays.BooleanArray(np.nan_to_num(p, nan=1.0) < self.alpha, np.isnan(p))
        sig = out[[f"significant_{k}" for k in self.models]]
        out["conclusion_changes"] = (sig.fillna(False).any(axis=1) & (~sig).fillna(False).any(axis=1)).astype(bool)
        return out

    def coefficient_notes(self) -> pd.DataFrame:
        """Coefficients that must not be read as they stand (infinite under separation, aliased), per model.

        The "suppressed as own category" model easily makes a rare category whose records all share the
        outcome; its coefficient is then infinite, and this table says so next to the number.
        """
        cols = ["model", "model_label", "term", "label", "estimate", "se", "p_value", "note"]
        frames = [res.coefficients.loc[res.coefficients["note"] != "", cols[2:]]
                  .assign(model=key, model_label=MODEL_LABELS.get(key, key))[cols]
                  for key, res in self.results.items()]
        return pd.concat(frames, ignore_index=True)

    def model_notes(self) -> list[str]:
        """Each model's notes (separation, aliasing, convergence, a moved reference) and why a model was not
        fitted, prefixed by the model's label; no values."""
        notes = []
        for key in self.models:
            said = ((f"could not be fitted: {self.failures[key]}",) if key in self.failures
                    else self.results[key].notes)
            notes.extend(f"{MODEL_LABELS.get(key, key)}: {n}" for n in said)
        return notes

    def coefficients_long(self, include_intercept: bool = False) -> pd.DataFrame:
        """All coefficients with CIs, one row per model and term (for the coefficient plot)."""
        frames = []
        for key, res in self.results.items():
            c = res.coefficients.assign(model=key, model_label=MODEL_LABELS.get(key, key))
            if not include_intercept:
                c = c[c["term"] != INTERCEPT]
            frames.append(c)
        return pd.concat(frames, ignore_index=True)


def summary_in_words(summary: str) -> str:
    """A :meth:`ModelComparison.significance_table` summary with Wilson et al.'s bare "All" / "None" in words,
    so that a table does not show "None" as if a value were missing ("None; not tested: region" included)."""
    for bare, words in (("All but ", "all covariates significant but "), ("All", "all covariates significant"),
                        ("None tested", "no covariate tested"), ("None", "no covariate significant")):
        if summary == bare or summary.startswith(bare if bare.endswith(" ") else bare + ";"):
            return words + summary[len(bare):]
    return summary


def _untested(res: RegressionResult, covariates: tuple[str, ...]) -> tuple[str, ...]:
    """The covariates ``res`` gives no joint-test p-value for."""
    p = res.term_tests.set_index("variable")["p_value"]
    return tuple(c for c in covariates if not np.isfinite(float(p.get(c, np.nan))))


def _wilson_phrase(sig: list[str], covariates: tuple[str, ...]) -> str:
    missing = [c for c in covariates if c not in sig]
    if not missing:
        return "All"
    if not sig:
        return "None"
    return "All but " + " and ".join(missing) if len(missing) <= 2 else "All but " + ", ".join(missing)


def suppressed_as_category(
    original: Dataset, treated: Dataset, formula: Formula, weights: np.ndarray
) -> tuple[Dataset, Formula, tuple[tuple[str, np.ndarray, str], ...]]:
    """Treated data for model 3: suppressed categorical values as a level, numeric ones mean-filled + indicator."""
    frame = treated.frame.copy()
    meta = dict(treated.meta)
    terms: list[TermSpec] = []
    extra: list[tuple[str, np.ndarray, str]] = []
    for t in formula.terms:
        v = t.variable
        sup = treated.missing_mask(v) & ~original.missing_mask(v)
        categorical = is_categorical(original.frame[v], t.categorical, original.missing_mask(v))
        terms.append(TermSpec(v, True) if categorical else t)
        if not sup.any():
            continue
        if categorical:
            col = frame[v].astype(object)
            col[sup] = SUPPRESSED_LEVEL
            frame[v] = col
            m = meta.get(v, VariableMeta())
            meta[v] = VariableMeta(m.label, {**dict(m.value_labels), SUPPRESSED_LEVEL: SUPPRESSED_LEVEL}, m.missing_codes)
        else:
            num = np.array(pd.to_numeric(frame[v].where(~treated.missing_mask(v)), errors="coerce"), dtype=float)
            ok = ~np.isnan(num)
            fill = float(np.sum(weights[ok] * num[ok]) / np.sum(weights[ok])) if ok.any() else 0.0
            num[sup] = fill
            frame[v] = num
            extra.append((f"{v}[{SUPPRESSED_LEVEL}]", sup.astype(float), f"{v} {SUPPRESSED_LEVEL}"))
    ds = Dataset(frame=frame, meta=meta, roles=treated.roles, missing=treated.missing, name=treated.name)
    return ds, Formula(formula.outcome, tuple(terms), formula.text), tuple(extra)


def compare_models(
    original: Dataset,
    treated: Dataset,
    formula: str,
    design: SurveyDesign | None = None,
    family: str = "auto",
    alpha: float = 0.05,
    test: str = "F",
    lonely_psu: str = DEFAULT_LONELY_PSU,
) -> ModelComparison:
    """Fit ``formula`` as Wilson's three models (module docstring) with the original's design."""
    if original.n_records != treated.n_records:
        raise InputError(
            f"The two versions have {original.n_records} and {treated.n_records} records; "
            "comparing models needs the same records in both."
        )
    if not 0 < alpha < 1:
        raise InputError("The significance level must be between 0 and 1.")
    f = parse_formula(formula, original.columns)
    missing_in_treated = [v for v in f.variables if v not in treated.frame.columns]
    if missing_in_treated:
        raise InputError(f"Variable(s) not in the treated data: {', '.join(missing_in_treated)}.")
    # the covariate kinds are fixed on the original, so a treated column turned to text stays comparable
    f = Formula(f.outcome, tuple(TermSpec(t.variable, is_categorical(original.frame[t.variable], t.categorical,
                                                                      original.missing_mask(t.variable)))
                                 for t in f.terms), f.text)
    # ... except a number the treatment recoded into text categories: as categories in the treated models
    banded = tuple(t.variable for t in f.terms if not t.categorical
                   and read_numeric(treated.frame[t.variable], treated.missing_mask(t.variable)).n_not_numeric)
    f_treated = Formula(f.outcome, tuple(TermSpec(t.variable, True) if t.variable in banded else t
                                         for t in f.terms), f.text)
    # the family and the reference levels are the original's (module docstring)
    levels = model_levels(original, f)
    fam = choose_family(check_family(family), levels.outcome)
    design = design or SurveyDesign.from_dataset(original, lonely_psu=lonely_psu)

    def fit(model: str) -> RegressionResult | InputError:
        try:
            if model == MODEL_ORIGINAL:
                return regress(original, f, design, family=fam, test=test)
            if model == MODEL_EXCLUDING:
                res = regress(treated, f_treated, design, family=fam, test=test, references=levels.references)
            else:
                ds3, f3, extra = suppressed_as_category(original, treated, f_treated, design.weights)
                res = regress(ds3, f3, design, family=fam, test=test, extra_numeric=extra,
                              references=levels.references)
        except InputError as exc:
            return exc
        if banded:
            res = replace(res, notes=(*res.notes, (
                f"{', '.join(banded)}: a number in the original, recoded into categories by the treatment, so it "
                "enters this model as categories; its joint test compares with the original model's, its "
                "coefficients do not")))
        return res

    # A model whose inputs are another's is that model: the release reads the formula's cells, missing cells
    # and labels as the original does (a version before any treatment of them, such as the report's first)
    # gives model 1 again, and with no covariate suppressed, model 3 is model 2 (no level or indicator
    # added). The fits left are independent: on the process's compute threads (kanon_core.threads), their
    # matrix work (which releases the interpreter) overlaps.
    same = reads_alike(original, treated, f.variables)
    suppressed = any(bool((treated.missing_mask(t.variable) & ~original.missing_mask(t.variable)).any())
                     for t in f.terms)
    models = (MODEL_ORIGINAL, *(() if same else (MODEL_EXCLUDING,)),
              *((MODEL_CATEGORY,) if suppressed else ()))
    fitted = dict(zip(models, threads.map_workers(fit, models), strict=True))
    if isinstance(fitted[MODEL_ORIGINAL], InputError):
        raise fitted[MODEL_ORIGINAL]  # nothing to compare with
    fitted.setdefault(MODEL_EXCLUDING, fitted[MODEL_ORIGINAL])
    fitted.setdefault(MODEL_CATEGORY, fitted[MODEL_EXCLUDING])
    order = (MODEL_ORIGINAL, MODEL_EXCLUDING, MODEL_CATEGORY)
    return ModelComparison(
        results={m: r for m in order if isinstance(r := fitted[m], RegressionResult)}, alpha=alpha,
        covariates=tuple(t.variable for t in f.terms),
        failures={m: str(r) for m in order if isinstance(r := fitted[m], InputError)})
