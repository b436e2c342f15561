"""Suggested variable roles at load: quasi-identifier candidates, the weight, identifiers to exclude.

An officer who uploads a file should not have to pick a dozen quasi-identifiers from a list before seeing
any risk. :func:`suggest_roles` reads each variable's name, label, type and distinct values and proposes a
role with a short plain reason ("unique in 99.8 % of records: looks like a record id"). It is a suggestion
the officer accepts with one click or changes, never a decision: nothing is applied here.

The heuristics are deterministic and ordered. Each is a :class:`Rule` registered in :data:`RULES`; the
first rule that recognises a variable decides its suggestion, so a new heuristic is one registered object,
not a branch in a chain. In order:

1. free text (many long distinct strings) -> direct identifier, excluded;
2. a single value in every record -> other;
3. a weight by name or label (``weight``, ``wgt``, ``pweight``, EU-SILC's ``rb050``/``db090``, ...) that is
   numeric, positive and never missing -> weight (only the first such variable; later ones are "other");
4. a stratum or cluster by name (``strata``, ``psu``, ``cluster``, EU-SILC's ``db050``/``db060``) -> design;
5. an identifier by name (``id``, ``hid``, ``pid``, ``hhid``, ``serial``) or personal details (``name``,
   ``address``, ``phone``, ``email``) -> direct identifier, excluded;
6. a name or label stem of a variable an intruder knows (age, sex/gender, region, birth, marital status,
   occupation, education, nationality/country, ethnicity, religion, income, household relationship, in
   English, German, French, Spanish, Italian and Dutch) with a manageable number of distinct values ->
   quasi-identifier;
7. near-unique whole numbers or codes (a value seen once in at least 90 % of records) -> direct identifier
   ("looks like a record id");
8. a numeric variable with many distinct values -> analysis variable (a measurement, e.g. income or a score);
9. a categorical variable with a few categories (2 to 30) -> quasi-identifier candidate;
10. anything else -> other.

Only empty cells and declared missing codes are missing (as everywhere in kanon); counts are over the
records as read. Reasons name counts and shares, never data values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .dataset import Dataset, Roles
from .describe import many_distinct_limit
from .errors import InputError

QI = "quasi-identifier"
WEIGHT = "weight"
STRATUM = "stratum"
PSU = "PSU/cluster"
FPC = "finite population correction"
ANALYSIS = "outcome"
DIRECT = "direct identifier"
OTHER = "other"
ROLES: tuple[str, ...] = (QI, WEIGHT, STRATUM, PSU, FPC, ANALYSIS, DIRECT, OTHER)
"""The roles a variable can take, named as :meth:`kanon_core.dataset.Roles.role_of` names them."""

ROLE_WORDS = {
    QI: "quasi-identifier (known to an intruder)",
    WEIGHT: "sampling weight",
    STRATUM: "stratum",
    PSU: "PSU / cluster",
    FPC: "finite population correction",
    ANALYSIS: "analysis / sensitive variable",
    DIRECT: "direct identifier (excluded)",
    OTHER: "other",
}

MAX_CATEGORIES = 30
"""A variable with at most this many distinct values is read as categorical."""
NEAR_UNIQUE = 0.9
"""Share of records whose value occurs only once above which whole numbers or codes look like a record id."""
FREE_TEXT_LENGTH = 20
"""Mean length (characters) of the distinct strings of a text variable read as free text."""

# -- name stems ------------------------------------------------------------------------------------------------
# Short stems must be a whole token (or a token's start/end where said); longer ones may occur anywhere.
QI_STEMS: dict[str, tuple[str, ...]] = {
    "age": ("alter", "edad", "leeftijd", "idade"),
    "sex": ("gender", "geschlecht", "sexe", "sexo", "sesso", "geslacht", "genre"),
    "region": ("region", "province", "provinc", "district", "county", "canton", "bundesland", "departement",
               "gemeente", "comune", "municip", "urban", "rural", "geo"),
    "birth": ("birth", "dob", "yob", "geburt", "naissance", "nacimiento", "nascita", "geboorte"),
    "marital status": ("marital", "marstat", "civil", "familienstand", "matrimon", "married", "burgerlijk"),
    "occupation": ("occup", "isco", "profession", "beruf", "metier", "ocupac", "occupaz", "beroep", "job", "nace",
                   "industry"),
    "education": ("educ", "isced", "degree", "bildung", "diploma", "estudio", "istruz", "opleiding", "pared"),
    "nationality or country": ("nation", "country", "citizen", "pays", "pais", "cittadin", "staatsang", "land",
                               "herkunft", "origin"),
    "ethnicity": ("ethnic", "ethni", "race", "etnia", "etnic"),
    "religion": ("relig", "konfession", "confession"),
    "income": ("income", "einkommen", "revenu", "ingreso", "reddito", "inkomen", "salary"),
    "household relationship": ("relat", "relationship", "verwandt", "parente"),
}
# stems that are whole tokens (or a token's start/end) only: "age" must not match "wage" or "language"
TOKEN_ONLY = {"age", "sex", "geo", "dob", "yob", "job", "land", "race", "nace", "pais", "edad", "alter", "genre"}
PREFIX_ENDS = ("gr", "grp", "group", "cat", "class", "band")  # age5, agegr, age_cat: still "age"
TOKEN_END_OK = {"sex", "race", "dob", "yob"}  # ELS-style prefixes: BYSEX, BYRACE

WEIGHT_STEMS = ("weight", "wgt", "wght", "pweight", "gewicht", "poids", "peso", "ponder", "expfac",
                "fexp", "rb050", "db090", "pb040", "hx090")
WEIGHT_TOKENS = {"wt", "w", "pw", "hw", "fw", "wgt", "wght", "weight", "fac", "factor"}
WEIGHT_TOKEN_ENDS = ("wt", "wgt")
STRATUM_STEMS = ("strat", "db050")
PSU_STEMS = ("psu", "cluster", "db060", "ssu")
ID_TOKENS = {"id", "hid", "pid", "hhid", "idno", "ident", "identifier", "caseid", "respid", "serial", "serialno",
             "uuid", "rid", "recid", "persid", "hhnr", "persnr", "pnr", "nr"}
ID_TOKEN_ENDS = ("id",)
PERSONAL_TOKENS = {"name", "surname", "firstname", "lastname", "email", "mail", "phone", "telephone", "tel",
                   "address", "street", "adresse", "strasse", "nom", "nombre", "cognome", "telefon", "ssn",
                   "passport", "iban"}


def tokens(text: str) -> list[str]:
    """Lower-case word pieces of a name or label: ``"ori_hid"`` -> ["ori", "hid"]; camelCase is split."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", str(text))
    return [t for t in re.split(r"[^0-9a-zA-Z\u00c0-\u024f]+", spaced.lower()) if t]


def _plain(t: str) -> str:
    """Accents removed (``métier`` -> ``metier``), so one stem covers both spellings."""
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", t) if not unicodedata.combining(c))


def _stem_in(stem: str, toks: Sequence[str]) -> bool:
    for t in toks:
        t = _plain(t)
        word = t.rstrip("0123456789")
        if stem in TOKEN_ONLY:
            rest = t[len(stem):]
            if word == stem or t.startswith(stem) and (not rest.isalpha() or rest.startswith(PREFIX_ENDS)):
                return True
            if stem in TOKEN_END_OK and word.endswith(stem) and len(word) <= len(stem) + 3:
                return True
        elif stem in t:
            return True
    return False


def qi_topic(toks: Sequence[str]) -> str | None:
    """The quasi-identifier topic ("age", "sex", ...) a name or label's tokens point to, if any."""
    for topic, stems in QI_STEMS.items():
        if any(_stem_in(s, toks) for s in (topic.split()[0], *stems)):
            return topic
    return None


# -- per-variable profile ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    """What the rules look at for one variable (computed once)."""

    name: str
    label: str
    n_records: int
    n_missing: int
    distinct: int
    unique_share: float
    """Share of all records whose (observed) value occurs in no other record."""
    numeric: bool
    whole: bool
    """Numeric and every observed value a whole number."""
    positive: bool
    """Numeric and every observed value > 0."""
    mean_text_length: float
    """Mean length of the distinct values of a text variable (0 for numbers)."""
    name_tokens: tuple[str, ...]
    label_tokens: tuple[str, ...]

    @property
    def all_tokens(self) -> tuple[str, ...]:
        return self.name_tokens + self.label_tokens


def profile(series: pd.Series, name: str, label: str | None, missing: np.ndarray) -> Profile:
    observed = series[~missing]
    n = len(series)
    numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
    whole = positive = False
    mean_len = 0.0
    if numeric and pd.api.types.is_integer_dtype(series.dtype):
        ints = observed.to_numpy(dtype=np.int64)  # exact: a 17-digit id must not merge with its neighbour as a float
        _, counts = np.unique(ints, return_counts=True)  # sorting: faster than hashing for many distinct values
        whole, positive = True, bool(len(ints) and np.all(ints > 0))
    elif numeric:
        values = observed.to_numpy(dtype=np.float64)
        values = values[~np.isnan(values)]  # a nullable column's <NA> left after the missing mask
        _, counts = np.unique(values, return_counts=True)
        if len(values):
            finite = values[np.isfinite(values)]
            whole = bool(len(finite) == len(values) and np.all(finite == np.round(finite)))
            positive = bool(len(finite) == len(values) and np.all(finite > 0))
    else:
        vc = observed.value_counts(dropna=True, sort=False)
        counts = vc.to_numpy()
        if len(vc):
            mean_len = float(np.mean([len(str(v)) for v in vc.index]))
    distinct = int(len(counts))
    unique_share = float((counts == 1).sum() / n) if n else 0.0
    return Profile(
        name=name,
        label=label or "",
        n_records=n,
        n_missing=int(missing.sum()),
        distinct=distinct,
        unique_share=unique_share,
        numeric=numeric,
        whole=whole,
        positive=positive,
        mean_text_length=mean_len,
        name_tokens=tuple(tokens(name)),
        label_tokens=tuple(tokens(label or "")),
    )


def _pct(share: float) -> str:
    """A share as a percentage with one decimal, never rounded up to 100 when below it."""
    p = 100.0 * share
    text = f"{p:.1f}"
    if text == "100.0" and share < 1.0:
        text = "99.9"
    return text.rstrip("0").rstrip(".") if text.endswith(".0") else text


# -- rules -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """One heuristic: ``match(profile)`` returns (role, reason) when it recognises the variable, else None."""

    name: str
    match: Callable[[Profile], tuple[str, str] | None]


RULES: list[Rule] = []


def register_rule(name: str) -> Callable[[Callable[[Profile], tuple[str, str] | None]], Callable]:
    """Decorator: append a heuristic to :data:`RULES` (evaluated in registration order, first match wins)."""

    def deco(fn: Callable[[Profile], tuple[str, str] | None]) -> Callable:
        if any(r.name == name for r in RULES):
            raise ValueError(f"guidance rule '{name}' registered twice")
        RULES.append(Rule(name, fn))
        return fn

    return deco


@register_rule("free text")
def _free_text(p: Profile) -> tuple[str, str] | None:
    if p.numeric or p.distinct < 2:
        return None
    observed = p.n_records - p.n_missing
    if p.mean_text_length >= FREE_TEXT_LENGTH and p.distinct >= max(2, 0.5 * observed):
        return DIRECT, (f"free text: many long distinct strings ({p.distinct:,} distinct, "
                        f"{p.mean_text_length:.0f} characters on average); exclude it from the release")
    return None


@register_rule("constant")
def _constant(p: Profile) -> tuple[str, str] | None:
    if p.distinct <= 1:
        what = "empty in every record" if p.distinct == 0 else "the same value in every record"
        return OTHER, f"{what}: tells an intruder nothing"
    return None


def _weight_named(p: Profile) -> bool:
    for toks in (p.name_tokens, p.label_tokens):
        for t in toks:
            t = _plain(t)
            if t in WEIGHT_TOKENS or any(s in t for s in WEIGHT_STEMS) or t.endswith(WEIGHT_TOKEN_ENDS):
                return True
    return False


@register_rule("weight")
def _weight(p: Profile) -> tuple[str, str] | None:
    if not _weight_named(p):
        return None
    where = "name and label suggest" if _weight_named(_only(p, "label")) and _weight_named(_only(p, "name")) \
        else ("name suggests" if _weight_named(_only(p, "name")) else "label suggests")
    if not p.numeric or p.distinct <= 1:
        return None
    if p.n_missing or not p.positive:
        return OTHER, f"{where} a weight, but it is missing or not positive in some records"
    return WEIGHT, f"{where} a sampling weight (numeric, positive, never missing)"


def _only(p: Profile, which: str) -> Profile:
    from dataclasses import replace

    return replace(p, label_tokens=()) if which == "name" else replace(p, name_tokens=())


@register_rule("design")
def _design(p: Profile) -> tuple[str, str] | None:
    toks = [_plain(t) for t in p.name_tokens]
    if any(s in t for t in toks for s in STRATUM_STEMS):
        return STRATUM, f"name suggests a stratum of the sample design ({p.distinct:,} strata)"
    if any(s in t for t in toks for s in PSU_STEMS):
        return PSU, f"name suggests a cluster (PSU) of the sample design ({p.distinct:,} clusters)"
    return None


@register_rule("identifier by name")
def _id_named(p: Profile) -> tuple[str, str] | None:
    toks = [_plain(t) for t in p.name_tokens]
    if any(t in PERSONAL_TOKENS for t in toks):
        return DIRECT, "name suggests personal details (a name, address, phone or e-mail): exclude it"
    if not any(t in ID_TOKENS or (t.endswith(ID_TOKEN_ENDS) and len(t) <= 6 and not t.isdigit()) for t in toks):
        return None
    if p.unique_share >= NEAR_UNIQUE:
        return DIRECT, f"unique in {_pct(p.unique_share)} % of records and named like an id: looks like a record id"
    return DIRECT, (f"name suggests an identifier shared by records ({p.distinct:,} distinct values: a household, "
                    "school or other group id); exclude it, or make it the PSU/cluster if it is one")


@register_rule("quasi-identifier by name or label")
def _qi_named(p: Profile) -> tuple[str, str] | None:
    topic = qi_topic(p.name_tokens)
    source = "name"
    if topic is None:
        topic, source = qi_topic(p.label_tokens), "label"
    if topic is None:
        return None
    limit = many_distinct_limit(p.n_records)
    if p.distinct > limit or (p.numeric and not p.whole and p.distinct > MAX_CATEGORIES):
        return ANALYSIS, (f"{source} suggests {topic}, but its {p.distinct:,} distinct values make it a measurement; "
                          "recode it into groups to use it as a quasi-identifier")
    return QI, f"{source} suggests {topic} ({p.distinct:,} distinct values), which others may know about a person"


@register_rule("near-unique code")
def _near_unique(p: Profile) -> tuple[str, str] | None:
    if p.numeric and not p.whole:
        return None
    if p.unique_share >= NEAR_UNIQUE and p.distinct > MAX_CATEGORIES:
        return DIRECT, f"unique in {_pct(p.unique_share)} % of records: looks like a record id"
    return None


@register_rule("measurement")
def _measurement(p: Profile) -> tuple[str, str] | None:
    if p.numeric and p.distinct > MAX_CATEGORIES:
        return ANALYSIS, f"numeric with {p.distinct:,} distinct values: a measurement for analysis"
    return None


@register_rule("few categories")
def _categorical(p: Profile) -> tuple[str, str] | None:
    if 2 <= p.distinct <= MAX_CATEGORIES:
        return QI, f"{p.distinct} categories: a categorical variable others may know"
    return None


@register_rule("other")
def _other(p: Profile) -> tuple[str, str] | None:
    return OTHER, (f"{p.distinct:,} distinct text values: too many for a quasi-identifier as it stands "
                   "(recode it first)")


# -- result ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Suggestion:
    """The suggested role of one variable, with the reason in plain words and the counts shown beside it."""

    variable: str
    label: str
    role: str
    reason: str
    rule: str
    distinct: int
    missing: int


@dataclass(frozen=True)
class RoleGuidance:
    """Suggestions for every variable, in column order."""

    suggestions: tuple[Suggestion, ...]
    n_records: int

    def role_of(self, variable: str) -> str:
        for s in self.suggestions:
            if s.variable == variable:
                return s.role
        raise KeyError(variable)

    @property
    def assignments(self) -> dict[str, str]:
        return {s.variable: s.role for s in self.suggestions}

    def roles(self) -> Roles:
        """The suggestions as :class:`Roles` (what "Use these roles" applies when nothing is changed)."""
        return roles_from_assignments(self.assignments)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"variable": s.variable, "label": s.label, "distinct": s.distinct,
                              "missing": s.missing, "role": s.role, "reason": s.reason}
                             for s in self.suggestions],
                            columns=["variable", "label", "distinct", "missing", "role", "reason"])

    def to_json(self) -> dict[str, Any]:
        r = self.roles()
        return {"n_records": self.n_records,
                "variables": self.to_frame().to_dict(orient="records"),
                "roles": r.to_dict()}


def suggest_roles(data: Dataset | pd.DataFrame, labels: Mapping[str, str] | None = None) -> RoleGuidance:
    """Suggest a role for every variable of ``data`` (see the module docstring for the rules, in order).

    ``labels`` (variable -> label) adds to or overrides a Dataset's own variable labels; a bare frame has
    no missing codes, so only empty cells are missing.
    """
    # read by its attributes, not isinstance: a dashboard server that reloads edited modules holds datasets of
    # the class as first imported
    if not isinstance(data, pd.DataFrame) and hasattr(data, "frame") and hasattr(data, "meta_of"):
        frame = data.frame
        label_of = {c: data.meta_of(c).label or "" for c in data.columns}
        masks = {c: data.missing_mask(c) for c in data.columns}
    elif isinstance(data, pd.DataFrame):
        frame = data
        label_of = {str(c): "" for c in frame.columns}
        masks = {str(c): frame[c].isna().to_numpy() for c in frame.columns}
    else:
        raise InputError("Role suggestions need a table of data.")
    label_of.update({str(k): str(v) for k, v in (labels or {}).items() if v})
    out: list[Suggestion] = []
    weight_taken = False
    for col in frame.columns:
        name = str(col)
        p = profile(frame[col], name, label_of.get(name), masks[name])
        role, reason, rule = OTHER, "", "other"
        for r in RULES:
            hit = r.match(p)
            if hit is not None:
                (role, reason), rule = hit, r.name
                break
        if role == WEIGHT:
            if weight_taken:
                role, reason = OTHER, reason + "; another weight was suggested first (a replicate weight?)"
            weight_taken = True
        out.append(Suggestion(name, p.label, role, reason, rule, p.distinct, p.n_missing))
    return RoleGuidance(tuple(out), len(frame))


def roles_from_assignments(assignments: Mapping[str, str]) -> Roles:
    """One role per variable (as in the Data page's role table) -> :class:`Roles`.

    At most one weight, stratum, PSU/cluster and finite population correction: two variables given the
    same single role is an :class:`InputError` naming them.
    """
    by_role: dict[str, list[str]] = {r: [] for r in ROLES}
    for var, role in assignments.items():
        if role not in by_role:
            raise InputError(f"Unknown role '{role}' for {var}. Roles: {', '.join(ROLES)}.")
        by_role[role].append(var)
    for single in (WEIGHT, STRATUM, PSU, FPC):
        if len(by_role[single]) > 1:
            raise InputError(f"Only one variable can be the {ROLE_WORDS[single]}: {', '.join(by_role[single])}.")

    def one(role: str) -> str | None:
        return by_role[role][0] if by_role[role] else None

    return Roles(qis=tuple(by_role[QI]), weight=one(WEIGHT), strata=one(STRATUM), psu=one(PSU),
                 outcomes=tuple(by_role[ANALYSIS]), direct_ids=tuple(by_role[DIRECT]), fpc=one(FPC))
