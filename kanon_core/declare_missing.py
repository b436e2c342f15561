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


def text_codes_on_numbers(series: pd.Series, codes: Iterable[Any]) -> int:
    """How many of ``codes`` stay text once typed to ``series`` (:func:`kanon_core.io.typed_codes`) when it is a
    column of numbers: such a code can match no cell, so declaring it declares nothing (a typo, or a code
    meant for another variable). 0 for a text column and for a column with no value at all (read as numbers,
    though nothing says what it would hold).

    Where the codes are given for this file (the command line's ``--missing-codes``) such a code is refused.
    :class:`DeclareMissingValues` keeps accepting it: the step is replayed on the next wave, where a text
    declared missing in this wave ("NA") may no longer occur and the column then reads as numbers."""
    if not (pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)):
        return 0
    if not series.notna().any():
        return 0
    return sum(isinstance(c, str) for c in typed_codes(series, list(codes)))
