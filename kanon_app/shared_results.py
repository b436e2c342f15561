"""Results that are pure functions of dataset objects, shared by the sessions that hold those very objects.

A :class:`~kanon_core.dataset.Dataset` is immutable, and every session opens on one and the same object,
the default sample (:func:`kanon_app.state.default_sample`). Its first page reads every column (the role
suggestions, the variable summary, the "NA"-like texts, the value labels) and counts the risk of the first
version: about 0.4 s of a fresh session's first run on 2 cores, the same work for every officer. These
results are kept in the server's shared cache (kanon_app.cache: bounded by bytes, least recently used
evicted) under the identity of the dataset objects they were computed on, checked by weak references, so
a result is only ever found for the objects it was computed on (never for a later object at the same
address, nor for another session's upload with the same content). The launcher (kanon_app.serve) computes
the default sample's before the server answers. The results are read, never modified, by the pages.

Each page still keeps its own memo of the result (kanon_app.state.memo, per session and version): this
layer only spares the computation.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from kanon_core.dataset import Dataset

from .cache import shared

T = TypeVar("T")


def on_data(datasets: tuple[Dataset, ...], name: str, params: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, a pure function of ``datasets`` and ``params``, computed once for these very objects."""
    key = ("on-data", tuple(id(d) for d in datasets), name, params)
    entry = shared().get(key)
    if entry is not None:
        refs, value = entry
        if all(ref() is d for ref, d in zip(refs, datasets, strict=True)):
            return value
    value = compute()
    shared().put(key, (tuple(weakref.ref(d) for d in datasets), value))
    return value


def role_guidance(ds: Dataset) -> Any:
    """The role suggestions of the Data page (:func:`kanon_core.guidance.suggest_roles`)."""
    from kanon_core.guidance import suggest_roles

    return on_data((ds,), "role_guidance", None, lambda: suggest_roles(ds))


def variable_summary(ds: Dataset) -> Any:
    """The Data page's table of variables (:func:`kanon_core.describe.variable_summary`)."""
    from kanon_core.describe import variable_summary as summary

    return on_data((ds,), "variable_summary", None, lambda: summary(ds))


def missing_like_counts(ds: Dataset) -> Any:
    """Cells holding text other programs read as missing (:func:`kanon_core.io.missing_like_counts`)."""
    from kanon_core.io import missing_like_counts as counts

    return on_data((ds,), "missing_like_counts", None, lambda: counts(ds))


def class_sizes(ds: Dataset, qis: tuple[str, ...]) -> Any:
    """The class sizes of ``qis`` under the dataset's semantics, with its weights and the wildcard split
    (:func:`kanon_core.risk.classes.compute_class_sizes`): counted once per dataset and QIs for the
    timeline's risk line and the Risk page's summary, whatever k and alpha."""
    from kanon_core.risk.classes import compute_class_sizes

    return on_data((ds,), "class_sizes", tuple(qis), lambda: compute_class_sizes(
        ds.qi_matrix(list(qis)).codes, ds.missing, ds.weights(), wildcard_split=True))


def version_risk(original: Dataset, ds: Dataset, k: int, alpha: float = 1.0) -> Any:
    """The timeline's risk line of a version (:func:`kanon_core.risk.timeline.version_risk`), on the
    version's shared class sizes (its own count when its weights cannot be read: the line needs none)."""
    from kanon_core.errors import KanonError
    from kanon_core.risk.timeline import version_risk as risk

    def compute() -> Any:
        try:
            sizes = class_sizes(ds, tuple(ds.roles.qis)) if ds.roles.qis else None
        except KanonError:
            sizes = None
        return risk(original, ds, k, alpha, sizes=sizes)

    return on_data((original, ds), "version_risk", (int(k), float(alpha)), compute)


def risk_summary(ds: Dataset, qis: tuple[str, ...], k: int, alpha: float = 1.0) -> Any:
    """The Risk page's summary (:func:`kanon_core.risk.summary.risk_summary`) on ``qis`` with the dataset's
    semantics and weights, on the dataset's shared class sizes."""
    from kanon_core.risk.summary import risk_summary as summary

    return on_data((ds,), "risk_summary", (tuple(qis), int(k), float(alpha)),
                   lambda: summary(ds.qi_matrix(list(qis)), k, ds.missing, ds.weights(), alpha=alpha,
                                   sizes=class_sizes(ds, tuple(qis))))


def labelable(ds: Dataset, max_codes: int) -> list[str]:
    """The variables with between 1 and ``max_codes`` distinct observed values (the labels editor's
    choice), a list of the caller's own."""
    def compute() -> tuple[str, ...]:
        return tuple(c for c in ds.columns
                     if 0 < int(ds.frame[c][~ds.missing_mask(c)].nunique()) <= max_codes)

    return list(on_data((ds,), "labelable", int(max_codes), compute))


def first_pages(ds: Dataset, k: int) -> Any:
    """Compute what the Data page, the timeline and the Risk page read of a version that is its own original
    (a session's first version), at the session's k, and return the Risk page's summary (None without QIs):
    the launcher's warm-up calls it on the default sample."""
    from .labels_ui import MAX_CODES

    role_guidance(ds)
    variable_summary(ds)
    missing_like_counts(ds)
    labelable(ds, MAX_CODES)
    if not ds.roles.qis:
        return None
    version_risk(ds, ds, k)
    return risk_summary(ds, tuple(ds.roles.qis), k)
