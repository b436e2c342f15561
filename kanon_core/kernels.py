"""kanon's compiled kernels, made ready before an officer's first click: ``kanon kernels``.

numba compiles a kernel the first time it is called with a new kind of arguments and keeps the machine code
in its cache (``cache=True``), next to the module, until the module's file changes. So the first call after
an install or an update waits for the compiler: measured on 2 cores, the exact suppression of the bundled
sample took 21 s the first time and 1.1-1.5 s afterwards, the MINUC search about 25 s. The dashboard's
launcher loads the families its first pages use (:data:`START_FAMILIES`); the rest would wait for the first
click that needs them. :func:`warm` runs every family's public entry points on a small made-up file, with the
same kinds of arguments as a real file gives (codes of a :class:`~kanon_core.dataset.Dataset`, missing cells,
weights), so every kernel is compiled once, ahead of time; ``scripts/setup.sh`` runs it after an install or a
change of kanon's code. Nothing of any file is read or kept.

Each family is registered once (:func:`family`) and names the kernel modules it covers, so a new kernel
module without a family fails the tests (``tests/test_kernels.py``), which also check, on the bundled
sample, that a family's warm-up leaves nothing for the real calls to compile.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .dataset import Dataset, Roles
from .errors import InputError


@dataclass(frozen=True)
class KernelFamily:
    """Kernels that one part of kanon calls, and how to call them all on made-up data."""

    name: str
    modules: tuple[str, ...]
    """The kernel modules this family compiles (``kanon_core``-relative, e.g. ``risk._minuc_kernel``)."""
    run: Callable[[], None]
    why: str
    """What waits for these kernels when they are not ready: shown by ``kanon kernels --list``."""


@dataclass(frozen=True)
class WarmTime:
    """One family's warm-up: its seconds, and how many signatures numba compiled for it (0: none needed)."""

    family: str
    seconds: float
    compiled: int
    """Kernel signatures compiled (not read from numba's cache) during the warm-up."""


FAMILIES: dict[str, KernelFamily] = {}


def family(name: str, modules: Sequence[str], why: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Register the decorated function as the warm-up of the kernel family ``name``."""

    def register(run: Callable[[], None]) -> Callable[[], None]:
        if name in FAMILIES:
            raise ValueError(f"kernel family {name} registered twice")
        FAMILIES[name] = KernelFamily(name, tuple(modules), run, why)
        return run

    return register


START_FAMILIES = ("minucs", "classes")
"""The families the dashboard's launcher loads before it answers: the first pages (Risk, MINUCs, the report)
use them, and loading them from numba's cache takes 0.3-0.5 s that a first click would otherwise wait."""


def made_up(n: int = 120, q: int = 5, missing: bool = True, seed: int = 0) -> Dataset:
    """A small file of ``n`` made-up records: ``q`` text quasi-identifiers of 2-6 categories (skewed, so that
    there are sample uniques, pairs and large classes), a few empty cells when ``missing``, a weight, a
    numeric and a binary outcome. The same kinds of columns as a survey file, nothing from any file."""
    rng = np.random.default_rng(seed)
    frame = {}
    for j in range(q):
        levels = 2 + j % 5
        p = np.arange(levels, 0, -1, dtype=float) ** 2
        values = rng.choice([f"c{j}_{v}" for v in range(levels)], size=n, p=p / p.sum()).astype(object)
        if missing:
            values[rng.random(n) < 0.04] = None  # an empty cell, as a file reader gives it
        frame[f"q{j}"] = values
    frame["weight"] = rng.uniform(0.5, 3.0, n)
    frame["score"] = rng.normal(50, 10, n)
    frame["flag"] = rng.integers(0, 2, n)
    qis = tuple(f"q{j}" for j in range(q))
    return Dataset(pd.DataFrame(frame), roles=Roles(qis=qis, weight="weight"))


@family("minucs", ("risk._minuc_kernel", "risk._minuc_summary"),
        "the MINUCs page's search and its sections, the report's MINUC counts, SUDA scores")
def _warm_minucs() -> None:
    from .risk.minucs import estimate_cost, find_minucs, minuc_rows, summarize_minucs
    from .risk.qid import minimal_qids_from_minucs, minimal_violating_qid
    from .risk.suda import suda_scores, value_suda_contributions

    for missing in (True, False):
        ds = made_up(missing=missing)
        qm = ds.qi_matrix()
        rows = minuc_rows(qm, ds.missing)  # the MINUCs page's distinct records, made as it opens
        for k in (2, 3):
            estimate_cost(qm, k=k, missing=ds.missing, rows=rows)
            find_minucs(qm, k=k, missing=ds.missing, rows=rows)
            summarize_minucs(qm, k=k, missing=ds.missing)  # the report's counts, no list kept
            result = find_minucs(qm, k=k, missing=ds.missing)
            result.totals_by_size(), result.records_with_minucs(), result.variable_contributions()
            result.value_contributions(qm), result.record_ranking(), result.count_containing(list(qm.names[:2]))
            if k == 2:  # SUDA scores are defined on sample uniques
                value_suda_contributions(result, suda_scores(result, qm), qm)
            minimal_qids_from_minucs(result)
            minimal_violating_qid(qm, k=k, missing=ds.missing)
    find_minucs(np.array([[0, 1], [0, 2], [1, 1]], dtype=np.int32), k=2)  # plain codes, as the command line's


@family("classes", ("risk._wildcard_kernel",),
        "every page's class sizes (fk) under the wildcard reading of missing values, and large files' joins")
def _warm_classes() -> None:
    from .risk.classes import compute_class_sizes

    for missing in (True, False):
        ds = made_up(missing=missing)
        codes = ds.qi_matrix().codes
        weights = ds.frame["weight"].to_numpy(float)
        for method in ("auto", "pairs", "scan"):
            for split in (True, False):
                compute_class_sizes(codes, "wildcard", weights, method=method, wildcard_split=split)
                compute_class_sizes(codes, "wildcard", None, method=method, wildcard_split=split)
            compute_class_sizes(codes, "wildcard", weights, method=method, alpha=0.5)
        compute_class_sizes(codes, "category", weights)
    rows = np.array([[0, 1], [0, -1], [1, 1]], dtype=np.int32)
    compute_class_sizes(rows, "wildcard", np.ones(3), method="pairs", wildcard_split=True)


@family("suppression", ("treat.suppress_direct", "treat.suppress_bits", "treat.suppress_category",
                        "treat.suppress_near", "treat.suppress_greedy", "treat.suppress_hitting",
                        "risk.intruder"),
        "the Suppress page and ``kanon suppress`` (every protection model), and the check of a release "
        "from an intruder's side")
def _warm_suppression() -> None:
    from .treat.suppress import _SOLVERS, suppress

    for missing in (True, False):
        ds = made_up(n=40, missing=missing)  # exact solves of a larger made-up file can take seconds
        for model, method in _SOLVERS:
            for k in (2, 3):
                suppress(ds, k, model=model, method=method)  # type: ignore[arg-type]
        suppress(ds, 2, importance=(("q1", 3.0),), protected=("q0",))


@family("lattice", ("treat._lattice_kernel", "treat._pairs_kernel"),
        "the Recode page's optimal generalization and ``kanon generalize`` (every metric, with and without "
        "suppression)")
def _warm_lattice() -> None:
    from .treat.default_hierarchy import default_hierarchies
    from .treat.lattice import build_problem, search_optimal

    for missing in (True, False):
        ds = made_up(n=200, missing=missing)
        problem = build_problem(ds, default_hierarchies(ds, ds.roles.qis), ds.roles.qis, sensitive=("flag",))
        for metric in ("prec", "dm", "aecs"):
            for limit in (0.0, 0.05):
                search_optimal(problem, 2, limit, metric)
        search_optimal(problem, 2, 0.05, "prec", k_minimal=True)
        search_optimal(problem, 2, 0.05, "prec", criteria=["l=2:flag"])


@family("l-diversity", ("risk.diversity",),
        "the Risk page's l-diversity of a sensitive variable, and searches with an l-diversity criterion")
def _warm_diversity() -> None:
    from .classtable import ClassTable
    from .risk.diversity import L_DIVERSITY_KINDS, l_diversity_classes

    for missing in (True, False):
        ds = made_up(missing=missing)
        table = ClassTable.from_dataset(ds, sensitive=("flag",))
        for kind in L_DIVERSITY_KINDS:
            l_diversity_classes(table, "flag", ds.missing, kind)


@family("large files", ("engines._codes_kernel", "engines._quote_kernel", "risk._subset_kernel"),
        "a large file's engine (the Data page's large-file panel, the scale commands): its codes, the check "
        "that its quoted cells are closed, and its MINUC counts by subsets")
def _warm_large_files() -> None:
    from .classtable import ClassTable
    from .engines._codes_kernel import rows_of_codes
    from .engines._quote_kernel import new_carry, new_field_carry, scan_fields, scan_quotes
    from .risk.minucs_by_subsets import summarize_minucs_by_subsets

    scan_quotes(np.frombuffer(b'a,"b""c"\n', dtype=np.uint8), ord(","), ord('"'), new_carry())
    scan_fields(np.frombuffer(b'a,"b""c",\n', dtype=np.uint8), ord(","), ord('"'), 2, new_field_carry())

    # the engine's dictionary indices and look-up tables are int32 (engines.table.codes_of_aggregate)
    rows_of_codes(np.array([[0, 1, -1], [1, 0, 0]], dtype=np.int32), np.array([[0, 1], [1, 0]], dtype=np.int32))
    for missing in (True, False):
        ds = made_up(missing=missing)
        for k in (2, 3):
            summarize_minucs_by_subsets(ClassTable.from_dataset(ds), k=k, missing=ds.missing)


_KERNEL = re.compile(r"^@numba\.njit", re.MULTILINE)


@functools.cache
def _kernel_module_names() -> tuple[str, ...]:
    """:func:`kernel_modules`, found once per process (walking the package takes 0.1-0.7 s)."""
    import kanon_core

    found = []
    for info in pkgutil.walk_packages(kanon_core.__path__, "kanon_core."):
        spec = importlib.util.find_spec(info.name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin, encoding="utf-8") as source:
            if _KERNEL.search(source.read()):
                found.append(info.name.removeprefix("kanon_core."))
    return tuple(sorted(found))


def kernel_modules() -> list[str]:
    """Every ``kanon_core`` module that defines a compiled kernel (found by reading the sources)."""
    return list(_kernel_module_names())


def _dispatchers(module_names: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """``(module.kernel, dispatcher)`` for every kernel defined in the named modules (imported if needed)."""
    from numba.core.registry import CPUDispatcher

    for name in module_names:
        module = importlib.import_module(name)  # (a loaded module is returned as it is)
        for attr, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.__module__ == name:
                yield f"{name.removeprefix('kanon_core.')}.{attr}", value


def compiled_signatures() -> dict[str, int]:
    """For every kernel of every kernel module (imported here): how many signatures numba holds (compiled or
    read from its cache) in this process."""
    return {key: len(d.signatures) for key, d in _dispatchers(f"kanon_core.{m}" for m in kernel_modules())}


def _compiled_total() -> int:
    """Signatures numba compiled in this process so far (cache misses). Only modules already imported can have
    compiled any, so the package is not walked (the launcher's warm-up calls this at every start)."""
    loaded = [name for name in list(sys.modules) if name.startswith("kanon_core.")]
    return sum(sum(d.stats.cache_misses.values()) for _, d in _dispatchers(loaded))


def warm(names: Iterable[str] | None = None, progress: Callable[[str], None] | None = None) -> list[WarmTime]:
    """Run the warm-up of the families ``names`` (default: all), in registration order; each family's kernels
    are then compiled (or read from numba's cache) for the kinds of arguments kanon gives them."""
    chosen = list(FAMILIES) if names is None else list(names)
    unknown = [n for n in chosen if n not in FAMILIES]
    if unknown:  # the names are not repeated: they may be mistyped input
        raise InputError(f"Kernel families are {', '.join(FAMILIES)}; "
                         f"{len(unknown)} given name(s) are not among them.")
    times = []
    for name in chosen:
        if progress:
            progress(name)
        before = _compiled_total()
        t0 = time.perf_counter()
        FAMILIES[name].run()
        times.append(WarmTime(name, time.perf_counter() - t0, _compiled_total() - before))
    return times
