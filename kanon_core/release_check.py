"""A release read back as its users will read it, before it is written: every quasi-identifier must group the
records as the version whose risk was measured did.

The risk figures (class sizes, k-anonymity, the people findable below k) are computed on the treated version
in memory; what leaves is a file. The two agree only if writing and reading lose nothing that matters to an
intruder: which cells are missing (a missing cell is a wildcard), and which records share a value. A label
written as an empty cell, a number read back as text in a column of numbers, two codes written alike: each
would change the classes without changing the figures reported. So the files are read back here with the
same reader any kanon user (and the officer's next session) uses, :func:`kanon_core.io.load_dataset`, from a
private temporary folder that is removed at once, and compared with the treated version per quasi-identifier:

* the same cells missing (suppressed cells, declared missing codes and values missing before all count as
  missing on both sides);
* the same partition of the records observed on both sides: two records share a value in the file exactly
  when they share one in the treated version (values may be written differently, e.g. a Stata float, as long
  as no two are merged or split).

The check uses none of the writers' code, so a writer's fault cannot hide itself. A difference stops the
release with a one-line message that names the variable and counts cells, never values.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .dataset import Dataset
from .errors import KanonError


class ReleaseCheckError(KanonError):
    """The written release would not read back as the version that was checked (a fault of kanon's)."""


@dataclass(frozen=True)
class ColumnDifference:
    """How one quasi-identifier of the file read back differs from the checked version."""

    variable: str
    absent: bool = False
    """The variable is not in the file read back."""
    missing_differ: int = 0
    """Cells missing on one side and observed on the other."""
    grouping_differs: bool = False
    """Some records share a value on one side and not on the other."""

    def sentence(self) -> str:
        if self.absent:
            return f"'{self.variable}' is not in the file read back"
        parts = []
        if self.missing_differ:
            parts.append(f"{self.missing_differ:,} cell(s) of '{self.variable}' read back missing where the "
                         "checked version has a value, or the reverse")
        if self.grouping_differs:
            parts.append(f"the values of '{self.variable}' read back group the records differently")
        return "; ".join(parts)


def read_back(files: Sequence[tuple[Path, bytes]]) -> Dataset:
    """The release's data file (the first of ``files``, with its labels sidecar if any) as
    :func:`kanon_core.io.load_dataset` reads it, through a private temporary folder removed at once."""
    from .io import load_dataset

    with tempfile.TemporaryDirectory(prefix="kanon-check-") as folder:  # (created with mode 0700)
        for path, data in files:
            (Path(folder) / Path(path).name).write_bytes(data)
        return load_dataset(Path(folder) / Path(files[0][0]).name)


def differences(checked: Dataset, back: Dataset, variables: Sequence[str]) -> list[ColumnDifference]:
    """The quasi-identifiers ``variables`` on which ``back`` (a release read back) does not have the missing
    cells and the grouping of records of ``checked`` (the version whose risk was measured), in order."""
    if back.n_records != checked.n_records:
        return [ColumnDifference(v, missing_differ=abs(back.n_records - checked.n_records)) for v in variables]
    out = []
    for v in variables:
        if v not in back.frame.columns:
            out.append(ColumnDifference(v, absent=True))
            continue
        missing_checked, missing_back = checked.missing_mask(v), back.missing_mask(v)
        differ = int((missing_checked != missing_back).sum())
        both = ~missing_checked & ~missing_back
        regrouped = not _same_partition(checked.frame[v].to_numpy(dtype=object)[both],
                                        back.frame[v].to_numpy(dtype=object)[both])
        if differ or regrouped:
            out.append(ColumnDifference(v, missing_differ=differ, grouping_differs=regrouped))
    return out


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """True when equal values of ``a`` sit exactly where equal values of ``b`` do (the records' grouping)."""
    codes_a, uniques_a = pd.factorize(a)
    codes_b, uniques_b = pd.factorize(b)
    if len(uniques_a) != len(uniques_b):
        return False
    pairs = np.unique(codes_a.astype(np.int64) * max(len(uniques_b), 1) + codes_b)
    return len(pairs) == len(uniques_a)


def check_release(checked: Dataset, files: Sequence[tuple[Path, bytes]], variables: Sequence[str]) -> None:
    """Raise :class:`ReleaseCheckError` unless ``files`` (a release of ``checked``, as
    :func:`kanon_core.export.release_files` makes them) read back with the missing cells and the grouping of
    ``checked`` on every variable of ``variables``, the file's columns in that order (module docstring;
    matched by position, since Stata and SPSS files rename names they cannot hold)."""
    if not variables:
        return
    back = read_back(files)
    if len(back.frame.columns) == len(variables):  # by position: Stata and SPSS rename invalid names
        frame = back.frame.set_axis(list(variables), axis=1)
        back = back.with_frame(frame, {v: back.meta_of(b) for v, b in zip(variables, back.frame.columns, strict=True)})
    found = differences(checked, back, variables)
    if found:
        raise ReleaseCheckError("The release would not read back as the version whose risk was measured ("
                                + "; ".join(d.sentence() for d in found)
                                + "); nothing was written. This is a fault of kanon's: please report it.")


__all__ = ["ColumnDifference", "ReleaseCheckError", "check_release", "differences", "read_back"]
