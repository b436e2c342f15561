"""The data model: an immutable microdata set with variable roles, labels and missing-value rules.

A :class:`Dataset` is never mutated. Treatments (recoding, suppression, dropping a variable, a role
change) return a new ``Dataset``; :mod:`kanon_core.history` chains them into versions.

Quasi-identifiers are encoded once to compact integer codes (:class:`QIMatrix`): all counting works on
those codes with numpy, labels are only used for display.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from .errors import InputError

MissingSemantics = Literal["wildcard", "category"]
MISSING_SEMANTICS: tuple[MissingSemantics, ...] = ("wildcard", "category")
MISSING_CODE = -1
"""Integer code of a missing QI value in a :class:`QIMatrix`."""

MISSING_HELP = (
    "**wildcard** (default, as sdcMicro): a missing value may stand for any value, so a record with a "
    "missing (or suppressed) value matches every record that agrees on its other quasi-identifiers. "
    "Suppression therefore makes a record blend in. "
    "**category**: missing is a value of its own; records only match records missing the same variables."
)


def check_semantics(missing: str) -> MissingSemantics:
    if missing not in MISSING_SEMANTICS:
        raise InputError(f"Missing-value semantics must be one of {', '.join(MISSING_SEMANTICS)}, not '{missing}'.")
    return missing  # type: ignore[return-value]


@dataclass(frozen=True)
class Roles:
    """What each variable is for. Direct identifiers are excluded from any release by default."""

    qis: tuple[str, ...] = ()
    weight: str | None = None
    strata: str | None = None
    psu: str | None = None
    outcomes: tuple[str, ...] = ()
    direct_ids: tuple[str, ...] = ()
    fpc: str | None = None
    """Finite population correction (R's ``svydesign(fpc = ~COL)``): population size or sampling fraction of
    the first stage, constant within stratum. Last, with a default, so older recipes and projects load."""

    def role_of(self, column: str) -> str:
        if column in self.qis:
            return "quasi-identifier"
        if column == self.weight:
            return "weight"
        if column == self.strata:
            return "stratum"
        if column == self.psu:
            return "PSU/cluster"
        if column == self.fpc:
            return "finite population correction"
        if column in self.outcomes:
            return "outcome"
        if column in self.direct_ids:
            return "direct identifier"
        return "other"

    def to_dict(self) -> dict[str, Any]:
        return {
            "qis": list(self.qis),
            "weight": self.weight,
            "strata": self.strata,
            "psu": self.psu,
            "outcomes": list(self.outcomes),
            "direct_ids": list(self.direct_ids),
            # written only when set, so files of designs without fpc are unchanged
            **({"fpc": self.fpc} if self.fpc is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Roles:
        return cls(
            qis=tuple(d.get("qis", ())),
            weight=d.get("weight"),
            strata=d.get("strata"),
            psu=d.get("psu"),
            outcomes=tuple(d.get("outcomes", ())),
            direct_ids=tuple(d.get("direct_ids", ())),
            fpc=d.get("fpc"),
        )


@dataclass(frozen=True)
class VariableMeta:
    """Labels carried from SPSS/Stata/SAS files (or a sidecar) and user-declared missing codes.

    ``float_style`` is how a float variable's text is written, as it was read from a text file, so an
    untreated cell is released with its own text: "repr" (Python's shortest round-trip form, whole
    numbers as "2.0") or "plain" (the same without a trailing ".0", as R, Stata and Excel write "2").
    """

    label: str | None = None
    value_labels: Mapping[Any, str] = field(default_factory=dict)
    missing_codes: tuple[Any, ...] = ()
    float_style: str = "repr"


@dataclass(frozen=True)
class QIMatrix:
    """Quasi-identifiers as integer codes: ``codes[i, j]`` is record i's code on QI j, -1 if missing.

    ``values[j][c]`` is the original value behind code c of QI j and ``labels[j][c]`` its display label.
    Codes follow the sorted order of the values, so ordinal variables keep their order.
    """

    names: tuple[str, ...]
    codes: np.ndarray
    values: tuple[tuple[Any, ...], ...]
    labels: tuple[tuple[str, ...], ...]

    @property
    def n_records(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_qis(self) -> int:
        return int(self.codes.shape[1])

    @property
    def cardinalities(self) -> np.ndarray:
        return np.array([len(v) for v in self.values], dtype=np.int64)

    @property
    def missing_mask(self) -> np.ndarray:
        return self.codes == MISSING_CODE

    def subset(self, qis: Sequence[str]) -> QIMatrix:
        idx = [self.names.index(q) for q in qis]
        return QIMatrix(
            names=tuple(self.names[i] for i in idx),
            codes=self.codes[:, idx],
            values=tuple(self.values[i] for i in idx),
            labels=tuple(self.labels[i] for i in idx),
        )


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, (bool, np.bool_)):
        return (0, int(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return (0, float(value))
    return (1, str(value))


def missing_mask(series: pd.Series, missing_codes: Sequence[Any] = ()) -> np.ndarray:
    """True where a value is NA or one of the declared missing codes."""
    mask = series.isna().to_numpy()
    if len(missing_codes):
        mask = mask | series.isin(list(missing_codes)).to_numpy()
    return mask


def encode_column(
    series: pd.Series, missing_codes: Sequence[Any] = (), value_labels: Mapping[Any, str] | None = None
) -> tuple[np.ndarray, tuple[Any, ...], tuple[str, ...]]:
    """Encode one variable to int32 codes (missing -> -1), returning codes, values and labels.

    One hash pass (``pd.factorize``, which groups values by Python equality as ``pd.unique`` and a dict do:
    1, 1.0 and True are one value) gives each cell its distinct value; the distinct values are then sorted
    and each cell's code is its value's rank. A dict lookup per cell gave the same codes several times
    slower, and every risk count, comparison and report encodes its variables this way."""
    miss = missing_mask(series, missing_codes)
    observed = series[~miss]
    numbers = _plain_numbers(observed)
    if numbers is not None:  # ints or floats: hashed and sorted as numbers, the order _sort_key gives them
        first_codes, uniques = pd.factorize(numbers)
        order = np.argsort(uniques, kind="stable")
        values = tuple(uniques[order].tolist())
    else:
        first_codes, uniques = pd.factorize(observed.to_numpy(dtype=object))
        order = sorted(range(len(uniques)), key=lambda i: _sort_key(uniques[i]))
        values = tuple(uniques[i] for i in order)
    rank = np.empty(len(uniques), dtype=np.int32)
    rank[order] = np.arange(len(uniques), dtype=np.int32)
    codes = np.full(len(series), MISSING_CODE, dtype=np.int32)
    if len(values):
        codes[~miss] = rank[first_codes]
    labels_map = value_labels or {}
    labels = tuple(_label_for(v, labels_map) for v in values)
    return codes, values, labels


def _plain_numbers(observed: pd.Series) -> np.ndarray | None:
    """The observed cells of a column of integers or floats (numpy's or pandas' nullable types, missing cells
    already left out) as a numpy array, else None. Their ``tolist()`` gives the Python ints and floats the
    object path gives, and sorting them as numbers is :func:`_sort_key`'s order (no NaN is left)."""
    dtype = observed.dtype
    if isinstance(dtype, np.dtype):
        return observed.to_numpy() if dtype.kind in "iuf" else None
    if isinstance(dtype, (pd.Int64Dtype, pd.Int32Dtype, pd.Int16Dtype, pd.Int8Dtype)):
        return observed.to_numpy(dtype=np.int64)
    if isinstance(dtype, (pd.Float64Dtype, pd.Float32Dtype)):
        return observed.to_numpy(dtype=np.float64)
    return None


def _label_for(value: Any, value_labels: Mapping[Any, str]) -> str:
    if value in value_labels:
        return str(value_labels[value])
    if isinstance(value, float) and value.is_integer():
        iv = int(value)
        if iv in value_labels:
            return str(value_labels[iv])
        return str(iv)
    return str(value)


@dataclass(frozen=True, eq=False)
class Dataset:
    """An immutable microdata set: the frame, per-variable metadata, roles and missing semantics.

    ``frame`` must not be modified in place by anyone: treatments copy it. Identity (``is``) is the
    dataset's identity; caches key on :attr:`fingerprint` or on a version id, not on the frame.
    """

    frame: pd.DataFrame
    meta: Mapping[str, VariableMeta] = field(default_factory=dict)
    roles: Roles = field(default_factory=Roles)
    missing: MissingSemantics = "wildcard"
    name: str = "data"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_frame(self.frame)
        check_semantics(self.missing)
        validate_roles(self.frame, self.roles)

    # -- metadata -----------------------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.frame.columns]

    @property
    def n_records(self) -> int:
        return len(self.frame)

    def meta_of(self, column: str) -> VariableMeta:
        return self.meta.get(column, VariableMeta())

    def value_label(self, column: str, value: Any) -> str:
        return _label_for(value, self.meta_of(column).value_labels)

    def missing_mask(self, column: str) -> np.ndarray:
        return missing_mask(self.frame[column], self.meta_of(column).missing_codes)

    # -- encodings ----------------------------------------------------------------------------------------
    def qi_matrix(self, qis: Sequence[str] | None = None) -> QIMatrix:
        """Integer codes of the given QIs (default: the QI role). Cached per dataset and column."""
        qis = tuple(self.roles.qis if qis is None else qis)
        if not qis:
            raise InputError("Choose at least one quasi-identifier.")
        for q in qis:
            if q not in self.frame.columns:
                raise InputError(f"Quasi-identifier '{q}' is not a variable of the data.")
        twice = sorted({q for q in qis if qis.count(q) > 1})
        if twice:  # a QI counted twice changes every count and optimum made on the matrix
            raise InputError(f"Quasi-identifier(s) listed twice: {', '.join(twice)}.")
        encoded = [self._encoded(q) for q in qis]
        codes = np.column_stack([e[0] for e in encoded]) if encoded else np.empty((self.n_records, 0), np.int32)
        return QIMatrix(
            names=qis,
            codes=np.ascontiguousarray(codes, dtype=np.int32),
            values=tuple(e[1] for e in encoded),
            labels=tuple(e[2] for e in encoded),
        )

    def _encoded(self, column: str) -> tuple[np.ndarray, tuple[Any, ...], tuple[str, ...]]:
        key = ("encoded", column)
        if key not in self._cache:
            m = self.meta_of(column)
            self._cache[key] = encode_column(self.frame[column], m.missing_codes, m.value_labels)
        return self._cache[key]

    def encoded_value(self, name: str, column: str, compute: Callable[[], Any]) -> Any:
        """A value made from one column's encoding alone (its cells and metadata, which never change), computed
        once per dataset and kept with the encodings (so a change of roles keeps it too)."""
        key = ("encoded", name, column)
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def weights(self) -> np.ndarray | None:
        """The sampling weights as float64 (validated: numeric, finite, positive, none missing)."""
        if self.roles.weight is None:
            return None
        key = ("weights", self.roles.weight)
        if key not in self._cache:
            w = self.roles.weight
            # a declared missing code is a missing weight, not a weight of that value
            declared = self.frame[w].where(~self.missing_mask(w)) if self.meta_of(w).missing_codes else self.frame[w]
            self._cache[key] = validate_weights(declared, w)
        return self._cache[key]

    @property
    def fingerprint(self) -> str:
        """A content hash of the frame (values and column names), for recipes and caches."""
        if "fingerprint" not in self._cache:
            import hashlib

            h = hashlib.sha256()
            h.update("\x1f".join(self.columns).encode("utf-8"))
            h.update(pd.util.hash_pandas_object(self.frame, index=False).to_numpy().tobytes())
            self._cache["fingerprint"] = h.hexdigest()
        return self._cache["fingerprint"]

    # -- derivations (new datasets, never in-place) -----------------------------------------------------
    def with_roles(self, roles: Roles) -> Dataset:
        return replace(self, roles=roles, _cache={k: v for k, v in self._cache.items() if k[0] == "encoded"})

    def with_missing(self, missing: MissingSemantics) -> Dataset:
        return replace(self, missing=check_semantics(missing), _cache=dict(self._cache))

    def with_frame(self, frame: pd.DataFrame, meta: Mapping[str, VariableMeta] | None = None) -> Dataset:
        """A new dataset with a new frame; roles pointing at dropped columns are removed."""
        cols = set(map(str, frame.columns))
        r = self.roles
        roles = Roles(
            qis=tuple(q for q in r.qis if q in cols),
            weight=r.weight if r.weight in cols else None,
            strata=r.strata if r.strata in cols else None,
            psu=r.psu if r.psu in cols else None,
            outcomes=tuple(q for q in r.outcomes if q in cols),
            direct_ids=tuple(q for q in r.direct_ids if q in cols),
            fpc=r.fpc if r.fpc in cols else None,
        )
        new_meta = dict(self.meta if meta is None else meta)
        return Dataset(frame=frame, meta={k: v for k, v in new_meta.items() if k in cols}, roles=roles,
                       missing=self.missing, name=self.name)

    def release_frame(self) -> pd.DataFrame:
        """The frame as it would be released: direct identifiers dropped."""
        return self.frame.drop(columns=list(self.roles.direct_ids))


def validate_frame(frame: pd.DataFrame) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise InputError("The data must be a table.")
    if frame.shape[1] == 0:
        raise InputError("The file has no columns.")
    if len(frame) == 0:
        raise InputError("The file has no records (0 rows).")
    names = [str(c) for c in frame.columns]
    # empty names first: several of them would otherwise be reported as the duplicated name ""
    unnamed = [position for position, name in enumerate(names, start=1) if not name.strip()]
    if unnamed:
        raise InputError(no_name_message(unnamed))
    # counted in one pass: comparing every name with every other takes minutes on 20,000 columns
    dupes = sorted(name for name, times in Counter(names).items() if times > 1)
    if dupes:
        raise InputError(f"Duplicated column names: {', '.join(dupes)}. Rename them so each variable is unique.")


def no_name_message(positions: Sequence[int], where: str = "") -> str:
    """The refusal of columns without a name, by position (from 1): each one up to ten, then how many more,
    so that the message stays one readable line however many columns lack a name."""
    if len(positions) == 1:
        return f"Column {positions[0]} has no name{where}: name every column."
    shown = [str(p) for p in positions[:10]]
    listed = f"{', '.join(shown)} and {len(positions) - 10} more" if len(positions) > 10 else \
        f"{', '.join(shown[:-1])} and {shown[-1]}"
    return f"Columns {listed} have no name{where}: name every column."


def validate_roles(frame: pd.DataFrame, roles: Roles) -> None:
    cols = set(map(str, frame.columns))
    named = list(roles.qis) + list(roles.outcomes) + list(roles.direct_ids)
    named += [c for c in (roles.weight, roles.strata, roles.psu, roles.fpc) if c is not None]
    unknown = [c for c in named if c not in cols]
    if unknown:
        raise InputError(f"Unknown variable(s) in roles: {', '.join(unknown)}.")
    if len(set(roles.qis)) != len(roles.qis):
        raise InputError("A quasi-identifier is listed twice.")
    clash = set(roles.qis) & set(roles.direct_ids)
    if clash:
        raise InputError(f"A variable cannot be both quasi-identifier and direct identifier: {', '.join(sorted(clash))}.")
    if roles.weight is not None and roles.weight in roles.qis:
        raise InputError("The weight cannot also be a quasi-identifier.")


def validate_weights(series: pd.Series, name: str) -> np.ndarray:
    """Sampling weights must be numeric, finite and strictly positive for every record, with a finite total."""
    numeric = pd.to_numeric(series, errors="coerce")
    non_numeric = int((numeric.isna() & series.notna()).sum())
    if non_numeric:
        raise InputError(f"Weight '{name}' has {non_numeric} non-numeric value(s).")
    n_missing = int(numeric.isna().sum())
    if n_missing:
        raise InputError(f"Weight '{name}' is missing for {n_missing} record(s); every record needs a weight.")
    w = numeric.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(w)):
        raise InputError(f"Weight '{name}' has infinite values.")
    n_bad = int((w <= 0).sum())
    if n_bad:
        raise InputError(f"Weight '{name}' has {n_bad} zero or negative value(s); weights must be positive.")
    check_weight_total(w, name)
    return w


WEIGHT_SPACES = " \t\n\x0b\x0c\r"
"""The characters around a number that :func:`validate_weights` ignores in a text weight cell (C's isspace)."""

WEIGHT_TEXT_NUMBER = (r"[ \t\n\x0B\f\r]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t\n\x0B\f\r]*"
                      r"|[+-]?[iI][nN][fF](?:[iI][nN][iI][tT][yY])?")
"""The text weight cells :func:`validate_weights` reads as numbers, as a regular expression to match in full:
pandas' ``to_numeric`` reads a decimal number (sign, digits with an optional point, optional exponent) with
:data:`WEIGHT_SPACES` around it, and "inf" or "infinity" in any case with an optional sign and nothing around
it; every other text ("nan", "1_000", "0x10", "1,5", a non-breaking space, other digits than 0-9) is not a
number. A matched cell's value is the correctly rounded double of its text without the spaces. Written out
so that the out-of-core engines, whose own casts are more lenient (DuckDB reads "1_000" and "+-1") or less
(Polars refuses " 2"), read a weight cell as in memory; the syntax is common to Python, RE2 (DuckDB), Java
(Spark) and Rust (Polars): ASCII classes only, no flags, no anchors (each engine matches it in full)."""


def check_weight_total(weights: np.ndarray, name: str) -> None:
    """Refuse weights whose total overflows: every estimate divides by it (an infinite total would turn
    shares into 0 and NaN with numpy warnings, and regressions into aliased coefficients)."""
    with np.errstate(over="ignore"):
        total = np.asarray(weights, dtype=np.float64).sum()
    if not np.isfinite(total):
        raise InputError(f"Weight '{name}': the weights' total is too large to compute (overflow).")
