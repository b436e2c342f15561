"""Declaring values missing as a recorded step, for several variables at once.

kanon never treats text such as "NA" or "null" as missing on a guess (it may be Namibia's country code,
and a missing value is a wildcard that hides a unique record). When a user decides that such text does
mean "missing", :class:`DeclareMissingValues` adds it to the variables' declared missing codes; being a
step, the decision is in the history, the recipe and the report, and ``kanon apply`` replays it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, ClassVar

import pandas as pd

from .dataset import Dataset
from .errors import InputError
from .io import missing_like_values, typed_codes
from .progress import Progress
from .steps import Step, register_step


@register_step
@dataclasses.dataclass(frozen=True)
class DeclareMissingValues(Step):
    """Add values to the declared missing codes of variables: ``values = ((column, (code, ...)), ...)``.

    Codes already declared are kept; the data themselves are unchanged (a declared code stays in the
    release and is declared there, see :mod:`kanon_core.export`).
    """

    kind: ClassVar[str] = "declare_missing_values"
    values: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def __post_init__(self) -> None:
        for pair in self.values:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                    and isinstance(pair[1], tuple)):
                raise InputError("Values to declare missing must be pairs of a variable and its codes.")

    @classmethod
    def missing_like(cls, ds: Dataset) -> DeclareMissingValues:
        """The step declaring every missing-like text of ``ds`` missing ("NA", "null", ...; see
        :func:`kanon_core.io.missing_like_values`), in column order."""
        found = missing_like_values(ds)
        return cls(tuple((col, tuple(texts)) for col, texts in found.items()))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(col for col, _ in self.values)

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        if not self.values:
            raise InputError("No values to declare missing.")
        unknown = [col for col in self.columns if col not in ds.frame.columns]
        if unknown:
            raise InputError(f"Cannot declare missing values of unknown variable(s): {', '.join(unknown)}.")
        meta = dict(ds.meta)
        for col, codes in self.values:
            m = ds.meta_of(col)
            added = tuple(c for c in typed_codes(ds.frame[col], codes) if c not in m.missing_codes)
            meta[col] = dataclasses.replace(m, missing_codes=tuple(m.missing_codes) + added)
        return ds.with_frame(ds.frame, meta)

    def describe(self) -> str:
        parts = [f"{col} ({', '.join(map(str, codes))})" for col, codes in self.values]
        return "Declare missing: " + "; ".join(parts)

    def describe_without_values(self) -> str:
        return "Declare missing: " + "; ".join(f"{col} ({len(codes)} value(s))" for col, codes in self.values)


def holds_numbers(series: pd.Series) -> bool:
    """Whether ``series`` is a column of numbers for :func:`text_codes_for_numbers`: a numeric type (not a
    boolean one) and at least one value (a column with no value at all is read as numbers, though nothing
    says what it would hold)."""
    numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
    return bool(numeric and series.notna().any())


def text_codes_for_numbers(numbers: bool, codes: Iterable[Any]) -> int:
    """How many of ``codes`` stay text once typed to a column of numbers (:func:`kanon_core.io.typed_codes`),
    when ``numbers`` says the column is one (:func:`holds_numbers`; an engine knows it from the column's typed
    distinct values): such a code can match no cell, so declaring it declares nothing (a typo, or a code
    meant for another variable). 0 for any other column. The one rule of
    :func:`refuse_text_codes_on_numbers`, whichever path read the column.

    Where the codes are given for this file (the command line's ``--missing-codes``) such a code is refused.
    :class:`DeclareMissingValues` keeps accepting it: the step is replayed on the next wave, where a text
    declared missing in this wave ("NA") may no longer occur and the column then reads as numbers."""
    if not numbers:
        return 0
    return sum(isinstance(c, str) for c in typed_codes(pd.Series([], dtype="float64"), list(codes)))


def refuse_text_codes_on_numbers(column: str, numbers: bool, codes: Iterable[Any]) -> None:
    """Refuse missing codes given on the command line (``--missing-codes``) for ``column`` when some are text
    and the column holds numbers (:func:`text_codes_for_numbers`): in memory once the file is read
    (:func:`kanon_core.cli.common.with_missing_codes`), out of core where an engine types the column
    (:class:`GivenMissingCodes`). The codes themselves are not repeated: they can be values of the data."""
    text = text_codes_for_numbers(numbers, codes)
    if text:  # it could match no cell: refused, never a silent no-op
        raise InputError(f"--missing-codes gives {text} text code(s) for '{column}', which holds numbers: no cell "
                         f"can match them; give its missing codes as numbers (e.g. '{column}=-9').")


class GivenMissingCodes(dict):
    """Missing codes given for this very file (the command line's ``--missing-codes``), variable -> codes as
    text. The engines take any mapping of codes; given this one, they refuse a text code for a column of
    numbers where they type the column (:func:`kanon_core.engines.table.declared_meta`,
    :func:`refuse_text_codes_on_numbers`), as the in-memory path refuses it. Codes read back from a release's
    labels, or replayed from a recipe (:class:`DeclareMissingValues`), come as a plain mapping and are
    matched as they are."""
