"""Global recoding as steps: generalize variables to hierarchy levels, or recode one variable.

Global recoding changes a value the same way in every record (Wilson et al., RTI: the officer's main tool; Sweeney
2002: full-domain generalization). Both steps are pure and deterministic and carry everything they need
(:class:`GeneralizeStep` embeds its hierarchies as plain rows), so a saved recipe replays on its own.

Previews (:func:`preview_step`) show the counts per new value and the effect on risk before a step is
applied, so the officer sees what a recode buys.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..dataset import Dataset, MissingSemantics, QIMatrix, VariableMeta
from ..errors import InputError
from ..io import cell_text
from ..progress import Progress, report
from ..steps import Step, register_step
from .hierarchy import Hierarchy, format_number, value_key


# -- generalization -------------------------------------------------------------------------------------------
def generalized_column(ds: Dataset, column: str, hierarchy: Hierarchy, level: int,
                       keep_missing_codes: bool = True) -> pd.Series:
    """The column with every value replaced by its label at ``level``; an empty cell stays empty and a
    declared missing code keeps its code (:func:`kept_missing_codes`; blank without ``keep_missing_codes``, as
    steps recorded before codes were kept replay).

    Values are matched to hierarchy rows robustly (see :meth:`Hierarchy.match`); a value without a row
    is an :class:`InputError` naming only the count.
    """
    if column not in ds.frame.columns:
        raise InputError(f"Unknown variable '{column}'.")
    hierarchy = hierarchy if hierarchy.name else hierarchy.with_name(column)
    qm = ds.qi_matrix([column])
    tabs = hierarchy.tables(qm.values[0], qm.labels[0])
    codes = qm.codes[:, 0]
    labels = np.array(tabs.labels[level] + (None,), dtype=object)
    table = np.asarray(tabs.table[level])
    gen = np.full(len(codes), len(tabs.labels[level]), dtype=np.int64)  # missing (and an all-missing column)
    seen = codes >= 0
    gen[seen] = table[codes[seen]]
    out = labels[gen]
    if keep_missing_codes:
        kept = kept_missing_codes(ds, column)
        refuse_labels_written_as_codes(column, tabs.labels[level], kept.texts)
        out[kept.cells] = kept.written
    return pd.Series(out, index=ds.frame.index, name=column, dtype=object)


@dataclasses.dataclass(frozen=True)
class KeptMissingCodes:
    """A generalized variable's declared missing codes as its release keeps them: ``cells`` marks the records
    holding one, ``written`` their text there (as a release writes the code), ``texts`` every declared code's
    text (:func:`missing_code_text`)."""

    cells: np.ndarray
    written: np.ndarray
    texts: tuple[str, ...]


def missing_code_text(code: Any, meta: VariableMeta) -> str:
    """A declared missing code as a generalized variable keeps it: the text a release writes for it, in the
    variable's own way of writing numbers."""
    return cell_text(code, meta.float_style)


def generalized_meta(meta: VariableMeta) -> VariableMeta:
    """A generalized variable's metadata: its label, and its declared missing codes as text with their value
    labels (the other values' labels belonged to the values the hierarchy replaced). One rule for the
    in-memory step and the engines' releases."""
    texts = tuple(dict.fromkeys(missing_code_text(c, meta) for c in meta.missing_codes))
    labels = {missing_code_text(c, meta): str(lab) for c, lab in meta.value_labels.items()
              if any(c == d for d in meta.missing_codes)}
    return VariableMeta(label=meta.label, value_labels=labels, missing_codes=texts)


def refuse_labels_written_as_codes(column: str, labels: Sequence[Any], texts: Sequence[str]) -> None:
    """Refuse a generalization whose new label is written as one of the variable's declared missing codes
    (:func:`generalized_meta`): the release declares every code missing, even one no record holds, so the
    label's records would read as missing, wildcards to every count. Names the variable, never the label."""
    if set(texts) & {str(lab) for lab in labels if lab is not None}:
        raise InputError(f"A label of the hierarchy of '{column}' is written as one of its declared missing codes: "
                         "its records would read as missing. Rename the label.")


def kept_missing_codes(ds: Dataset, column: str) -> KeptMissingCodes:
    """Why a generalization keeps declared missing codes: a code such as -9 "refused" is a fact about the
    interview, not a value of the quasi-identifier, and every risk count already reads it as missing. A
    release that blanked it could no longer tell a refusal from a suppressed or empty cell, and its labels
    would lose the code. The column becomes one of labels (text), so each code is kept as the text a release
    writes for it and declared as that text (:func:`generalized_meta`)."""
    m = ds.meta_of(column)
    series = ds.frame[column]
    cells = (ds.missing_mask(column) & series.notna().to_numpy(dtype=bool) if m.missing_codes
             else np.zeros(len(series), dtype=bool))
    written = np.array([missing_code_text(v, m) for v in series[cells].tolist()], dtype=object)
    return KeptMissingCodes(cells, written, generalized_meta(m).missing_codes)


def suppress_small_classes(ds: Dataset, qis: Sequence[str], k: int) -> tuple[Dataset, int]:
    """Blank every QI of the records whose class is smaller than ``k`` (ARX's record suppression).

    Under wildcard semantics a blanked record matches every record, so no other record's class shrinks
    and one pass suffices; under category semantics the blanked records form a class of their own, which
    is exempt from k (as in ARX, where suppressed records are removed from the release).
    """
    from ..risk.classes import class_sizes

    if k <= 1:
        return ds, 0
    fk = class_sizes(ds.qi_matrix(qis).codes, ds.missing)
    return blank_records(ds, qis, fk < k)


def blank_records(ds: Dataset, qis: Sequence[str], records: np.ndarray) -> tuple[Dataset, int]:
    """Blank every QI of the chosen records (a boolean mask); returns the data and their number.

    Through :func:`~kanon_core.treat.suppress.apply_mask`, as local suppression blanks cells: an integer column
    keeps its integers (a nullable integer type), where pandas' own masking made it float and the release wrote
    every age 34 as ``34.0``."""
    from .suppress import apply_mask

    records = np.asarray(records, dtype=bool)
    n = int(records.sum())
    if n == 0:
        return ds, 0
    qis = list(qis)
    frame = apply_mask(ds.frame, qis, np.repeat(records[:, None], len(qis), axis=1))
    return ds.with_frame(frame, ds.meta), n


@register_step
@dataclasses.dataclass(frozen=True)
class GeneralizeStep(Step):
    """Full-domain generalization: each variable to one level of its hierarchy (Sweeney's ``GT[...]``).

    ``hierarchies`` holds each generalized variable's hierarchy as rows of texts (original, level 1, ...,
    ``*``) so the recipe needs no side file. With ``suppress_k`` > 1 the records whose class (on ``qis``,
    default the QI role) is still smaller than ``suppress_k`` are then blanked: the result of an optimal
    search with a suppression limit replays as this one step. With ``criteria`` (specs such as
    ``l=3:occupation``, :mod:`kanon_core.criteria`) the records of classes failing any of them are blanked
    instead; recipes written before criteria existed have none and replay as before.

    ``keep_missing_codes``: a generalized variable keeps its declared missing codes (:func:`kept_missing_codes`),
    as every step made now does (:meth:`build`). Recipes and projects written before codes were kept have no
    such field and replay as they were recorded, the codes blank, so their recorded results still verify.
    """

    kind: ClassVar[str] = "generalize"
    levels: Mapping[str, int] = dataclasses.field(default_factory=dict)
    hierarchies: Mapping[str, tuple[tuple[str, ...], ...]] = dataclasses.field(default_factory=dict)
    suppress_k: int = 0
    qis: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()
    keep_missing_codes: bool = False

    def __post_init__(self) -> None:
        if self.criteria:
            from ..criteria import parse_criterion

            object.__setattr__(self, "criteria", tuple(parse_criterion(c).spec for c in self.criteria))
        levels = {str(v): int(lv) for v, lv in dict(self.levels).items()}
        hier = {str(v): tuple(tuple(str(c) for c in r) for r in rows) for v, rows in dict(self.hierarchies).items()}
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "hierarchies", hier)
        object.__setattr__(self, "qis", tuple(self.qis))
        for v, lv in levels.items():
            if lv < 0:
                raise InputError(f"The level of '{v}' must be 0 or more.")
            if lv > 0 and v not in hier:
                raise InputError(f"Variable '{v}' is generalized but its hierarchy is not given.")

    def __hash__(self) -> int:  # dict fields: hash the canonical JSON form
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    @classmethod
    def build(
        cls,
        levels: Mapping[str, int],
        hierarchies: Mapping[str, Hierarchy],
        suppress_k: int = 0,
        qis: Sequence[str] = (),
        criteria: Sequence[str] = (),
        keep_missing_codes: bool = True,
    ) -> GeneralizeStep:
        """Embed the hierarchies of the variables generalized above level 0."""
        missing = [v for v, lv in levels.items() if lv > 0 and v not in hierarchies]
        if missing:
            raise InputError(f"No hierarchy given for {', '.join(missing)}.")
        rows = {v: hierarchies[v].rows for v, lv in levels.items() if lv > 0}
        return cls(dict(levels), rows, int(suppress_k), tuple(qis), tuple(criteria), bool(keep_missing_codes))

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if not self.criteria:  # the form recipes had before criteria existed
            d.pop("criteria", None)
        if not self.keep_missing_codes:  # the form recipes had before declared codes were kept
            d.pop("keep_missing_codes", None)
        return d

    def hierarchy(self, column: str) -> Hierarchy:
        return Hierarchy(self.hierarchies[column], column)

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        unknown = [v for v in self.levels if v not in ds.frame.columns]
        if unknown:
            raise InputError(f"Cannot generalize unknown variable(s): {', '.join(unknown)}.")
        frame = ds.frame.copy()
        meta = dict(ds.meta)
        todo = [(v, lv) for v, lv in sorted(self.levels.items()) if lv > 0]
        for i, (v, lv) in enumerate(todo):
            report(progress, i / max(1, len(todo)), "Generalizing")
            h = self.hierarchy(v)
            if lv > h.max_level:
                raise InputError(f"Variable '{v}' has hierarchy levels 0 to {h.max_level}; level {lv} does not exist.")
            frame[v] = generalized_column(ds, v, h, lv, self.keep_missing_codes)
            # the values' labels are gone with them; the declared missing codes are kept, as text (or, in a
            # step recorded before they were kept, blank with the variable's label alone)
            meta[v] = (generalized_meta(ds.meta_of(v)) if self.keep_missing_codes
                       else VariableMeta(label=ds.meta_of(v).label))
        out = ds.with_frame(frame, meta)
        if self.criteria:
            from ..criteria.apply import suppress_failing

            out, _ = suppress_failing(out, self.qis or out.roles.qis or tuple(self.levels), self.criteria)
        elif self.suppress_k > 1:
            qis = self.qis or out.roles.qis or tuple(self.levels)
            out, _ = suppress_small_classes(out, qis, self.suppress_k)
        report(progress, 1.0, "Generalized")
        return out

    def cautions(self, before: Dataset, after: Dataset) -> list[str]:
        """On a file other than the one the search chose this step for, the records it suppresses may be too
        few to protect each other: blank on every QI, they are one class of the release, consistent with every
        person (:func:`~kanon_core.criteria.apply.blanked_group_fails`); fewer than k of them single their people
        out. The search never chooses such a node; a replay says so when the file makes one."""
        if not (self.criteria or self.suppress_k > 1):
            return []
        from ..criteria.apply import blank_group_of

        qis = self.qis or after.roles.qis or tuple(self.levels)
        n, fails = blank_group_of(after, qis, self.suppression_criteria)
        return [self.blank_group_caution(n)] if fails else []

    @property
    def suppression_criteria(self) -> list[str]:
        """The criteria whose failing records the step suppresses (``k=suppress_k`` without criteria)."""
        return list(self.criteria) or [f"k={self.suppress_k}"]

    def blank_group_caution(self, n: int) -> str:
        """What a replay says when the ``n`` records blank on every QI fail the step's criteria as a group (the
        one wording, in memory and at scale)."""
        return (f"on this file the {n:,} record(s) blank on every quasi-identifier (those it suppresses, and any "
                f"blank before) do not meet {' and '.join(self.suppression_criteria)} as the one group they form: "
                "their people can be found among them. Search for the optimal generalization on this file again.")

    def describe(self) -> str:
        parts = [f"{v} to level {lv}" for v, lv in sorted(self.levels.items()) if lv > 0]
        text = "Generalize " + (", ".join(parts) if parts else "nothing (all at level 0)")
        if self.criteria:
            text += "; suppress records of classes failing " + " and ".join(self.criteria)
        elif self.suppress_k > 1:
            text += f"; suppress records in classes smaller than {self.suppress_k}"
        return text


# -- single-variable recode -----------------------------------------------------------------------------------
@register_step
@dataclasses.dataclass(frozen=True)
class RecodeStep(Step):
    """Recode one variable: merge categories into one, and/or top- and bottom-code.

    * ``merge`` + ``into``: the listed values become ``into`` (default: the smallest if all are numbers,
      else their texts joined by ``/``). In a text column a value given as text matches the cells written
      exactly so (the codes ``"012"`` and ``"12"`` are two categories); numbers, and every value in a numeric
      column, match by :func:`value_key` (``"5"`` finds 5; a number in a text column still finds the codes
      with its value, as recipes written with numbers expect).
    * ``top`` (``bottom``): values >= ``top`` (<= ``bottom``) become ``top_value`` (``bottom_value``),
      by default the bound itself, i.e. clipping (Near & Abuah; sdcMicro's ``topBotCoding``). Only for
      numeric columns: the digits of a text code are not a quantity.

    Declared missing codes are never recoded. Value labels follow: merged values lose theirs, the new
    value gets the merged labels joined (when the variable had labels or the new value is a number),
    a top (bottom) code is labelled "90 or more" ("16 or less").
    """

    kind: ClassVar[str] = "recode"
    column: str = ""
    merge: tuple[Any, ...] = ()
    into: Any = None
    top: float | None = None
    bottom: float | None = None
    top_value: Any = None
    bottom_value: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "merge", tuple(self.merge))
        if not self.column:
            raise InputError("Choose the variable to recode.")
        if not self.merge and self.top is None and self.bottom is None:
            raise InputError("A recode needs categories to merge, a top code or a bottom code.")
        if self.merge and len(self.merge) < 2 and self.into is None:
            raise InputError("Merging needs at least two categories (or a new value to recode into).")
        for word, bound in (("top", self.top), ("bottom", self.bottom)):
            if bound is not None and not _finite(bound):
                # NaN passes no comparison (nothing would be coded) and is not valid JSON in a saved recipe
                raise InputError(f"The {word} code must be a finite number.")
        if self.top is not None and self.bottom is not None and self.bottom >= self.top:
            raise InputError("The bottom code must be below the top code.")
        for word, value in (("merge into", self.into), ("top-code into", self.top_value),
                            ("bottom-code into", self.bottom_value)):
            if isinstance(value, str) and value == "":
                # in memory "" is a category like any other, but a release writes it as an empty cell, which
                # every reader takes for a missing value: the risk would have counted a group the file blanks
                raise InputError(f"A recode cannot {word} an empty value (a release would write a missing cell); "
                                 "name the new category, or suppress the values instead.")

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        col = self.column
        if col not in ds.frame.columns:
            raise InputError(f"Cannot recode unknown variable '{col}'.")
        series = ds.frame[col]
        miss = ds.missing_mask(col)
        m = ds.meta_of(col)
        labels = dict(m.value_labels)
        if pd.api.types.is_datetime64_any_dtype(series.dtype):
            # merged dates would become text beside dates, and a recipe cannot hold a timestamp
            raise InputError(f"'{col}' holds dates: generalize it with a date hierarchy (year, quarter, month) "
                             "instead of merging or top-coding.")
        self._check_targets(series, m.missing_codes)
        if self.top is not None or self.bottom is not None:
            series, labels = self._top_bottom(series, miss, labels)
        if self.merge:
            series, labels = self._merge(series, miss, labels, bool(m.value_labels))
        frame = ds.frame.copy()
        frame[col] = series
        meta = dict(ds.meta)
        meta[col] = dataclasses.replace(m, value_labels=labels)  # keeps how numbers are written
        report(progress, 1.0, "Recoded")
        return ds.with_frame(frame, meta)

    def _check_targets(self, series: pd.Series, missing_codes: Sequence[Any]) -> None:
        """Refuse a value to recode into that is a declared missing code of the variable (the records would
        silently become missing, wildcards to every count), or that is not a number in a numeric variable
        (the column would be neither); names the variable, never the value."""
        text = is_text_column(series)
        declared = {merge_key(c, text) for c in missing_codes}
        for word, value in (("merge into", self.into), ("top-code into", self.top_value),
                            ("bottom-code into", self.bottom_value)):
            if value is None:
                continue
            if merge_key(value, text) in declared:
                raise InputError(f"The value to {word} is a declared missing code of '{self.column}': the records "
                                 "would become missing. Choose another value.")
            if _holds_numbers(series) and not _real_number(value):
                raise InputError(f"'{self.column}' holds numbers: the value to {word} must be a finite number.")

    def _top_bottom(self, series: pd.Series, miss: np.ndarray, labels: dict) -> tuple[pd.Series, dict]:
        observed = series[~miss & series.notna().to_numpy(dtype=bool)]
        if is_text_column(series) and any(isinstance(v, str) for v in pd.unique(observed.to_numpy(dtype=object))):
            raise InputError(f"Top/bottom coding needs a numeric variable; '{self.column}' holds text codes.")
        num = pd.to_numeric(series, errors="coerce")
        if int((num.isna() & ~pd.Series(miss, index=series.index) & series.notna()).sum()):
            raise InputError(f"Top/bottom coding needs a numeric variable; '{self.column}' has non-numeric values.")
        out = series
        for bound, value, above, word in (
            (self.top, self.top_value, True, "or more"),
            (self.bottom, self.bottom_value, False, "or less"),
        ):
            if bound is None:
                continue
            repl = bound if value is None else value
            cond = ((num >= bound) if above else (num <= bound)).fillna(False).to_numpy(dtype=bool) & ~miss
            kept = _kept_label(out, miss, cond, repl, labels)  # a code outside the coded range keeps its records
            out = _replace(out, cond, repl)
            for v in num[cond].unique().tolist():
                labels.pop(v, None)
                labels.pop(_as_int(v), None)
            labels[_as_int(repl)] = " / ".join([*kept, f"{format_number(bound)} {word}"])
        return out, labels

    def _merge(self, series: pd.Series, miss: np.ndarray, labels: dict, had_labels: bool) -> tuple[pd.Series, dict]:
        cond, present = _merge_cells(series, miss, self.merge)
        if not cond.any():
            raise InputError(f"None of the values to merge occur in '{self.column}'.")
        numeric = all(_is_number(v) for v in present)
        into = self.into
        if into is not None and _holds_numbers(series) and not _real_number(into):
            # a text (or True, NaN) among numbers would make the column neither, as the Recode page refuses it
            raise InputError(f"'{self.column}' holds numbers: the value to merge into must be a finite number.")
        texts = [str(labels.get(v, labels.get(_as_int(v), _text(v)))) for v in present]
        if into is None:
            into = _as_int(min(present, key=float)) if numeric else "/".join(texts)
        else:  # merged into a code that has records of its own: the category holds both, and says so
            texts += _kept_label(series, miss, cond, into, labels)
        out = _replace(series, cond, into)
        for v in present:
            labels.pop(v, None)
            labels.pop(_as_int(v), None)
        if had_labels or isinstance(into, (int, float, np.integer, np.floating)):
            labels[into] = " / ".join(texts)
        return out, labels

    def describe(self) -> str:
        parts = []
        if self.merge:
            parts.append(f"merge {len(self.merge)} categories" + (f" into {self.into}" if self.into is not None else ""))
        if self.top is not None:
            parts.append(f"top-code at {format_number(self.top)}")
        if self.bottom is not None:
            parts.append(f"bottom-code at {format_number(self.bottom)}")
        return f"Recode {self.column}: " + ", ".join(parts)

    def describe_without_values(self) -> str:
        parts = [f"merge {len(self.merge)} categories"] * bool(self.merge)
        parts += ["top-code"] * (self.top is not None) + ["bottom-code"] * (self.bottom is not None)
        return f"Recode {self.column}: " + ", ".join(parts)


def _kept_label(series: pd.Series, miss: np.ndarray, cond: np.ndarray, target: Any, labels: dict) -> list[str]:
    """The label (else the text) of ``target`` when records outside ``cond`` already hold it: recoding into an
    existing code adds to its category, so the new label names both (merging 1 and 2 into 3 = "Clerk" is
    "Farmer / Laborer / Clerk", not "Farmer / Laborer" for the clerks too); [] when it is a new code."""
    hit, present = _merge_cells(series, miss, (target,))
    if not (hit & ~cond).any():
        return []
    v = present[0]
    return [str(labels.get(v, labels.get(_as_int(v), _text(v))))]


def _merge_cells(series: pd.Series, miss: np.ndarray, merge: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """The cells to merge, and the data's own value behind each value to merge (its first cell in record
    order, in the order given, repeats dropped), so a text code keeps its form: merging ZIP codes given as the
    numbers 2138 and 2139 gives "02138", not the number 2138.

    Keys tell the two ways of matching apart (see :class:`RecodeStep`): ``("text", t)`` for a text given for
    a text column, ``("value", value_key)`` otherwise; a cell of a text column has both keys.
    """
    text = is_text_column(series)
    wanted = [merge_key(v, text) for v in merge]
    wanted_set = set(wanted)
    observed = ~miss & series.notna().to_numpy(dtype=bool)
    first: dict[tuple[str, str | None], Any] = {}
    hits = []
    for cell in pd.unique(series[observed].to_numpy(dtype=object)):  # in record order
        keys = cell_keys(cell, text)
        if not wanted_set.isdisjoint(keys):
            hits.append(cell)
            for k in keys:
                first.setdefault(k, cell)
    cond = series.isin(hits).to_numpy(dtype=bool) & observed if hits else np.zeros(len(series), dtype=bool)
    present = list(dict.fromkeys(first[k] for k in wanted if k in first))
    return cond, present


def merge_key(v: Any, text_column: bool) -> tuple[str, str | None]:
    """How a value to merge is matched: a text in a text column as written, anything else by value_key."""
    if text_column and isinstance(v, str):
        return ("text", v)
    return ("value", value_key(v))


def cell_keys(cell: Any, text_column: bool) -> tuple[tuple[str, str | None], ...]:
    """The keys a cell answers to: its written text (text columns only) and its value_key."""
    if not text_column:
        return (("value", value_key(cell)),)
    return (("text", cell_text(cell)), ("value", value_key(cell)))


def is_text_column(series: pd.Series) -> bool:
    """A column of text (object or string dtype), whose codes compare as written: "012" is not "12"."""
    return series.dtype == object or pd.api.types.is_string_dtype(series.dtype)


def _finite(x: Any) -> bool:
    """True for a finite number (a bound read from a recipe may be anything)."""
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _text(v: Any) -> str:
    """How a value reads in a merged label: numbers without a spurious ``.0``, texts as they are."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return format_number(float(v))
    return str(v)


def _holds_numbers(series: pd.Series) -> bool:
    """A column of numbers (not booleans): what a merge keeps so by recoding into a number."""
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def _real_number(v: Any) -> bool:
    """A finite int or float (not a boolean, nor a number written as text)."""
    return (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
            and math.isfinite(float(v)))


def _is_number(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, float, np.integer, np.floating)):
        return True
    try:
        float(str(v))
    except ValueError:
        return False
    return True


def _as_int(v: Any) -> Any:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _replace(series: pd.Series, cond: np.ndarray, value: Any) -> pd.Series:
    """``series`` with ``value`` where ``cond``, widening the dtype only when the value needs it."""
    if not cond.any():
        return series
    dtype = series.dtype
    if pd.api.types.is_numeric_dtype(dtype) and isinstance(value, (int, float, np.integer, np.floating)):
        if pd.api.types.is_integer_dtype(dtype) and not float(value).is_integer():
            series = series.astype("Float64")
        return series.mask(pd.Series(cond, index=series.index), value)
    out = series.astype(object).copy()
    out[cond] = value
    return out


# -- previews -----------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RecodePreview:
    """What a step would do: counts per new value, the risk before/after, and the would-be data."""

    counts: pd.DataFrame
    risk: pd.DataFrame
    dataset: Dataset


def level_counts(ds: Dataset, column: str, hierarchy: Hierarchy, level: int) -> pd.DataFrame:
    """Records and original values per generalized value at ``level`` (hierarchy order)."""
    qm = ds.qi_matrix([column])
    tabs = hierarchy.tables(qm.values[0], qm.labels[0])
    codes = qm.codes[:, 0]
    g = tabs.table[level]
    labels = tabs.labels[level]
    records = np.bincount(g[codes[codes >= 0]], minlength=len(labels))
    originals = np.bincount(g, minlength=len(labels))
    out = pd.DataFrame({"value": list(labels), "records": records, "original values": originals})
    n_missing = int((codes < 0).sum())
    if n_missing:
        out = pd.concat([out, pd.DataFrame({"value": ["(missing)"], "records": [n_missing], "original values": [0]})],
                        ignore_index=True)
    return out


def changed_counts(before: Dataset, after: Dataset, columns: Sequence[str]) -> pd.DataFrame:
    """For each column: records and number of original values behind each new value."""
    frames = []
    for c in columns:
        if c not in after.frame.columns:
            continue
        b = before.qi_matrix([c]).codes[:, 0]
        qa = after.qi_matrix([c])
        a = qa.codes[:, 0]
        n_new = len(qa.values[0])
        ok = a >= 0
        records = np.bincount(a[ok], minlength=n_new)
        pairs = np.unique(np.stack([a[ok & (b >= 0)], b[ok & (b >= 0)]], axis=1), axis=0)
        originals = np.bincount(pairs[:, 0], minlength=n_new) if len(pairs) else np.zeros(n_new, np.int64)
        df = pd.DataFrame({"variable": c, "value": list(qa.labels[0]), "records": records,
                           "original values": originals})
        n_missing = int((~ok).sum())
        if n_missing:
            df = pd.concat([df, pd.DataFrame({"variable": [c], "value": ["(missing)"], "records": [n_missing],
                                              "original values": [0]})], ignore_index=True)
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["variable", "value", "records", "original values"])
    return pd.concat(frames, ignore_index=True)


def risk_effect(
    before: Dataset, after: Dataset, k: int = 3, qis: Sequence[str] | None = None, minucs: bool = False,
    minucs_before: Any = None,
) -> pd.DataFrame:
    """Risk measures on ``qis`` before and after: violations of k, sample uniques, patterns, smallest class.

    ``minucs=True`` adds the number of MINUCs (minimal unsafe combinations, one count per record and
    combination, as :func:`kanon_core.risk.minucs.find_minucs` finds them for ``k``); it is the costly
    part, so it is opt-in. The search after takes the MINUCs of the records the change did not touch from
    the search before (:mod:`kanon_core.risk.minucs_carry`), which ``minucs_before`` may give (every MINUC of
    ``before`` on ``qis`` at ``k``, e.g. the MINUCs page's; anything else is ignored).
    """
    from ..risk.classes import class_sizes
    from ..risk.keys import group_ids

    qis = tuple(before.roles.qis if qis is None else qis)
    if not qis:
        raise InputError("Choose at least one quasi-identifier.")
    rows = []
    measures: dict[str, list[int]] = {}
    matrices = []
    for ds in (before, after):
        present = tuple(q for q in qis if q in ds.frame.columns)
        qm = ds.qi_matrix(present)
        matrices.append(qm)
        codes = qm.codes
        fk = class_sizes(codes, ds.missing)
        vals = {
            f"Records in classes smaller than {k}": int((fk < k).sum()),
            "Sample uniques (class of 1)": int((fk == 1).sum()),
            "Distinct QI patterns": int(len(group_ids(codes)[1])),
            "Smallest class size": int(fk.min()),
        }
        for name, v in vals.items():
            measures.setdefault(name, []).append(v)
    if minucs:
        measures["MINUCs"] = _minuc_counts(matrices[0], matrices[1], k, before.missing, after.missing, minucs_before)
    for name, (b, a) in measures.items():
        rows.append({"measure": name, "before": b, "after": a, "change": a - b})
    return pd.DataFrame(rows)


def _minuc_counts(qb: QIMatrix, qa: QIMatrix, k: int, missing_before: MissingSemantics,
                  missing_after: MissingSemantics, found: Any) -> list[int]:
    """MINUCs before and after, the search after carrying over the untouched records' MINUCs."""
    from ..risk.minucs import find_minucs, summarize_minucs
    from ..risk.minucs_carry import plan_carry, prior_answers

    if found is None or not prior_answers(found, qb, k, missing_before, None):
        found = find_minucs(qb, k=k, missing=missing_before)
    carry = plan_carry(found, qb, qa, k, missing_after, None) if missing_after == missing_before else None
    return [int(found.total), int(summarize_minucs(qa, k=k, missing=missing_after, carry=carry).total)]


def preview_step(
    ds: Dataset, step: Step, k: int = 3, qis: Sequence[str] | None = None, minucs: bool = False,
    minucs_before: Any = None,
) -> RecodePreview:
    """Apply ``step`` to a copy and compare: the officer decides before a new version is made
    (``minucs``, ``minucs_before``: as :func:`risk_effect`)."""
    after = step.apply(ds)
    if isinstance(step, GeneralizeStep):
        cols = [v for v, lv in sorted(step.levels.items()) if lv > 0]
    elif isinstance(step, RecodeStep):
        cols = [step.column]
    else:
        cols = [c for c in after.columns if c in ds.frame.columns and not after.frame[c].equals(ds.frame[c])]
    return RecodePreview(
        counts=changed_counts(ds, after, cols),
        risk=risk_effect(ds, after, k, qis, minucs, minucs_before),
        dataset=after,
    )
