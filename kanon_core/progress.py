"""Progress reporting and cooperative cancellation for heavy computations.

Heavy functions (MINUC search, suppression, lattice search) accept ``progress: Progress | None``.
They call ``progress.update(fraction, message)`` now and then; ``update`` raises
:class:`~kanon_core.errors.Cancelled` once ``cancel()`` has been called, so a UI or a test can stop a
run at the next checkpoint without threads being killed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import Cancelled


@dataclass
class Progress:
    """A progress sink with a cancel flag.

    ``callback(fraction, message)`` receives a fraction in [0, 1] (monotone non-decreasing) and a short
    message without data values.
    """

    callback: Callable[[float, str], None] | None = None
    _cancelled: bool = field(default=False, repr=False)
    last_fraction: float = 0.0

    def update(self, fraction: float, message: str = "") -> None:
        if self._cancelled:
            raise Cancelled("The computation was cancelled.")
        fraction = min(1.0, max(self.last_fraction, float(fraction)))
        self.last_fraction = fraction
        if self.callback is not None:
            self.callback(fraction, message)

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled


def report(progress: Progress | None, fraction: float, message: str = "") -> None:
    """Update ``progress`` when given; a no-op otherwise (keeps call sites short)."""
    if progress is not None:
        progress.update(fraction, message)


def scaled_progress(progress: Progress | None, lo: float, hi: float, label: str) -> Progress | None:
    """A progress for one part of a computation: the part's [0, 1] maps into [lo, hi] of the whole, its
    messages are prefixed with ``label``, and a cancel of the whole stops the part at its next checkpoint."""
    if progress is None:
        return None

    def forward(fraction: float, message: str) -> None:  # the parent raises Cancelled when cancelled
        progress.update(lo + (hi - lo) * fraction, f"{label}: {message}" if message else label)

    return Progress(forward)
