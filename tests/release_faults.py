"""A fault the release's read-back check must stop, shared by the tests of the check and of the pages that
rely on it: a CSV writer that blanks the first observed cell of a column."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kanon_core import export


def blank_first_cell_of(monkeypatch, column: str) -> None:
    """Make the CSV writer (:func:`kanon_core.export.csv_bytes`) blank the first non-missing cell of
    ``column`` in whatever it writes, for the rest of the test."""
    real: Callable = export.csv_bytes

    def blanking(frame, *args, **kwargs):
        frame = frame.copy()
        first = int(np.flatnonzero(frame[column].notna().to_numpy())[0])
        frame.loc[frame.index[first], column] = None
        return real(frame, *args, **kwargs)

    monkeypatch.setattr(export, "csv_bytes", blanking)
