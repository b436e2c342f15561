"""Generalization on a class table at scale: the optimal search on the table an engine aggregated, and
the release that search chose, written by the engine.

Used by ``kanon generalize`` with an out-of-core engine and by the dashboard's large-file Recode page; the
records are never expanded: the search reads the class table, and the release is a mapping table per QI
plus the list of classes to blank, applied by the engine while it streams the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import EngineSettings


def level_tables(table, qis: list[str], hierarchies: dict) -> tuple[list, list]:
    """Each QI's hierarchy (named after its QI) and its level lookup tables on the class table's codes."""
    hs, tabs = [], []
    for j, q in enumerate(qis):
        h = hierarchies[q] if hierarchies[q].name else hierarchies[q].with_name(q)
        hs.append(h)
        tabs.append(h.tables(table.values[j], table.labels[j]))
    return hs, tabs


def automatic_hierarchies(table, qis: list[str]) -> dict:
    """The automatic hierarchy of each QI (:func:`~kanon_core.treat.default_hierarchy.default_hierarchy`)
    from the class table: each distinct value weighted by its records, as the records would weigh it."""
    import numpy as np

    from ..treat.default_hierarchy import default_hierarchy_of_counts

    out = {}
    for j, q in enumerate(qis):
        codes = table.codes[:, j]
        seen = codes >= 0
        counts = np.bincount(codes[seen], weights=table.count[seen], minlength=len(table.values[j]))
        out[q] = default_hierarchy_of_counts(q, list(table.values[j]), list(table.labels[j]),
                                             np.rint(counts).astype(np.int64)).with_name(q)
    return out


def table_problem(table, hs: list, tabs: list, missing: str, alpha: float = 1.0):
    """The lattice problem on the class table: the search reads only the table, the records are never
    expanded."""
    from ..treat.lattice import LatticeProblem

    return LatticeProblem.from_table(table, tuple(t.table for t in tabs), missing=missing,
                                     level_labels=tuple(t.labels for t in tabs), hierarchies=tuple(hs), alpha=alpha)


@dataclass(frozen=True)
class OptimalAtScale:
    """The optimal generalization found on a class table, with what the release needs (the hierarchies and
    their level tables) and what the officer reads beside the search result: the classes before and after
    the chosen levels (before suppression) and each QI's number of generalized values."""

    result: Any  # kanon_core.treat.lattice.SearchResult
    hierarchies: tuple
    tabs: tuple
    n_classes_before: int
    n_classes_after: int
    n_values: dict[str, int]


def optimal_at_scale(table, qis: list[str], k: int, max_suppression: float, missing: str,
                     metric: str = "prec", progress=None) -> OptimalAtScale:
    """:func:`~kanon_core.treat.lattice.search_optimal` on the class table with automatic hierarchies
    (the dashboard's large-file Recode page)."""
    from ..treat.lattice import search_optimal

    hs, tabs = level_tables(table, qis, automatic_hierarchies(table, qis))
    result = search_optimal(table_problem(table, hs, tabs, missing), k, max_suppression, metric, progress=progress)
    levels = [result.levels[q] for q in qis]
    after = table.generalize([t.table[lv] for t, lv in zip(tabs, levels, strict=True)]).n_classes
    n_values = {q: len(t.labels[lv]) for q, t, lv in zip(qis, tabs, levels, strict=True)}
    return OptimalAtScale(result, tuple(hs), tuple(tabs), table.n_classes, after, n_values)


def write_generalized_release(engine, source, table, qis: list[str], hs, tabs, levels, k: int | None, missing: str,
                              missing_codes: dict, out, settings: EngineSettings, batch=None) -> None:
    """The release of a generalization found on the class table, written by the engine: each QI recoded
    through its hierarchy at the chosen level, the records of classes still smaller than k blanked on every
    QI, with the labels sidecar of the input's labels and declared missing codes (a declared code the search
    counted as missing must read as missing in the release too, or the written file is not k-anonymous), as
    the in-memory writer does. Within ``batch`` (an :class:`~kanon_core.outputs.OutputBatch`) or in a batch of
    its own."""
    from contextlib import nullcontext

    from ..outputs import OutputBatch
    from .local_suppression import write_release_labels
    from .source import open_source

    recodes, suppress = _generalized_release(table, qis, list(hs), list(tabs), levels, k, missing)
    with OutputBatch() if batch is None else nullcontext(batch) as b:
        target = b.temp_path(out) if engine.name != "spark" else out
        engine.release(source, target, qis=qis, recodes=recodes, suppress=suppress, missing_codes=missing_codes,
                       settings=settings, sidecar=False)
        write_release_labels(b, out, engine.release_labels(open_source(source), (), missing_codes,
                                                           recoded=tuple(recodes), settings=settings))


def release_recodes(table, qis: list[str], found: OptimalAtScale) -> dict[str, dict]:
    """Per generalized QI, each original value and its released value: the mapping tables the release was
    written with (:func:`write_generalized_release`), which a comparison of the file and its release needs."""
    recodes, _ = _generalized_release(table, qis, list(found.hierarchies), list(found.tabs), found.result.levels,
                                      None, "wildcard")
    return recodes


def _generalized_release(table, qis, hierarchies, tabs, levels, k, missing):
    """Mapping tables (value -> value at the chosen level) and the classes to blank (smaller than k).

    Each value's label is read from the level tables the search used (``tabs[j]``, made by :func:`level_tables`
    from the class table's values and their value labels), not matched against the hierarchy a second time:
    a rematch of the bare values, without their labels, refused a coded variable whose hierarchy is written
    with the labels (1 labelled "Male" against the row "Male"), after a search that had accepted it."""
    import numpy as np
    import pandas as pd

    if isinstance(levels, dict):
        levels = [int(levels[q]) for q in qis]
    recodes: dict[str, dict] = {}
    cols = {}
    for j, q in enumerate(qis):
        vals = list(table.values[j])
        if levels[j] > 0 and vals:
            labels = tabs[j].labels[levels[j]]
            new = [labels[g] for g in np.asarray(tabs[j].table[levels[j]]).tolist()]
            recodes[q] = dict(zip(vals, new, strict=True))
            looked = np.array([*new, None], dtype=object)
        else:
            looked = np.array([*vals, None], dtype=object)
        cols[q] = looked[table.codes[:, j]]  # code -1 takes the appended None
    if not k or k <= 1:
        return recodes, None
    lookups = [t.table[lv] for t, lv in zip(tabs, levels, strict=True)]
    gen = table.generalize(lookups)
    fk = gen.class_sizes(missing).fk
    # the generalized class of each class of the input table
    from ..risk.keys import group_ids

    mapped = np.column_stack([np.where(table.codes[:, j] >= 0, lookups[j][np.maximum(table.codes[:, j], 0)], -1)
                              for j in range(len(qis))]).astype(np.int32)
    gid, _ = group_ids(np.vstack([gen.codes, mapped]))
    of_gid = np.full(int(gid.max()) + 1, -1, np.int64)
    of_gid[gid[: gen.n_classes]] = np.arange(gen.n_classes)
    small_class = fk[of_gid[gid[gen.n_classes:]]] < k
    if not small_class.any():
        return recodes, None
    frame = pd.DataFrame({q: cols[q][small_class] for q in qis}).drop_duplicates()
    for q in qis:
        frame[f"suppress_{q}"] = True
    return recodes, frame.reset_index(drop=True)
