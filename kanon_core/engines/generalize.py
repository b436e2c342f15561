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
                              missing_codes: dict, out, settings: EngineSettings, batch=None,
                              aggregate: tuple | None = None) -> None:
    """The release of a generalization found on the class table, written by the engine: each QI recoded
    through its hierarchy at the chosen level, the records of classes still smaller than k blanked on every
    QI, with the labels sidecar of the input's labels and declared missing codes (a declared code the search
    counted as missing must read as missing in the release too, or the written file is not k-anonymous), as
    the in-memory writer does. Within ``batch`` (an :class:`~kanon_core.outputs.OutputBatch`) or in a batch of
    its own. ``aggregate``: what :func:`~kanon_core.engines.table.aggregate_table` gave for ``table`` (its raw
    keys, each key row's class, the metadata), when the caller has it; else the raw keys are aggregated again
    if they are needed (:class:`RawWays`)."""
    from contextlib import nullcontext

    from ..outputs import OutputBatch
    from .api import labelled_columns
    from .local_suppression import write_release_labels
    from .source import open_source
    from .table import aggregate_table

    # a QI can hold declared missing codes only when the labels or the command line name it
    named = set(labelled_columns(open_source(source), missing_codes)) & set(qis)
    def ways() -> RawWays:
        found = aggregate or aggregate_table(engine, open_source(source), qis, None, missing_codes, settings)[1:]
        return RawWays.of(table, *found)

    recodes, suppress = _generalized_release(table, qis, list(hs), list(tabs), levels, k, missing,
                                             ways if named else None)
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


@dataclass(frozen=True)
class RawWays:
    """Every way the file writes its classes: per row of the engine's raw aggregate (the QIs' values as read,
    before declared missing codes are merged), the class codes of the row (``codes``, -1 missing), the raw
    values (``raw[j]``, None when empty) and the QIs' metadata (their declared codes' style)."""

    codes: Any
    raw: list
    meta: dict

    @classmethod
    def of(cls, table, keys, class_of_row, meta: dict) -> RawWays:
        """From :func:`~kanon_core.engines.table.aggregate_table`'s raw keys and each key row's class in
        ``table`` (its class table, or one with the same values: the codes are the values' ranks)."""
        return cls(table.codes[class_of_row], [keys.column(f"k{j}").to_pylist() for j in range(keys.num_columns)],
                   meta)


def _generalized_release(table, qis, hierarchies, tabs, levels, k, missing, ways=None):
    """Mapping tables (value -> value at the chosen level) and the classes to blank (smaller than k).

    Each value's label is read from the level tables the search used (``tabs[j]``, made by :func:`level_tables`
    from the class table's values and their value labels), not matched against the hierarchy a second time:
    a rematch of the bare values, without their labels, refused a coded variable whose hierarchy is written
    with the labels (1 labelled "Male" against the row "Male"), after a search that had accepted it.

    The classes to blank are keyed on the values the release writes, which the engine joins on. A class with
    a missing value is written in as many ways as the file writes that value (empty, or each declared missing
    code, which the release keeps: :func:`~kanon_core.treat.recode.kept_missing_codes`), so such classes are
    listed once per way the file has (``ways()``, :class:`RawWays`); keyed on empty alone, a record holding
    a code escaped its blanking."""
    import numpy as np
    import pandas as pd

    if isinstance(levels, dict):
        levels = [int(levels[q]) for q in qis]
    recodes: dict[str, dict] = {}
    looked_up = []
    for j, q in enumerate(qis):
        vals = list(table.values[j])
        if levels[j] > 0 and vals:
            labels = tabs[j].labels[levels[j]]
            new = [labels[g] for g in np.asarray(tabs[j].table[levels[j]]).tolist()]
            recodes[q] = dict(zip(vals, new, strict=True))
            looked_up.append(np.array([*new, None], dtype=object))
        else:
            looked_up.append(np.array([*vals, None], dtype=object))
    if not k or k <= 1:
        return recodes, None
    lookups = [t.table[lv] for t, lv in zip(tabs, levels, strict=True)]
    gen = table.generalize(lookups)
    fk = gen.class_sizes(missing).fk
    from ..classtable import through_lookup
    from ..risk.keys import group_ids

    def small(codes: np.ndarray) -> np.ndarray:
        """Whether each row of class codes falls in a generalized class smaller than k."""
        mapped = np.column_stack([through_lookup(codes[:, j], lookups[j]) for j in range(len(qis))])
        gid, _ = group_ids(np.vstack([gen.codes, mapped]))
        of_gid = np.full(int(gid.max()) + 1, -1, np.int64)
        of_gid[gid[: gen.n_classes]] = np.arange(gen.n_classes)
        return fk[of_gid[gid[gen.n_classes:]]] < k

    small_class = small(table.codes)
    if not small_class.any():
        return recodes, None
    if ways is not None and (table.codes[small_class] < 0).any():
        from ..dataset import VariableMeta
        from ..treat.recode import missing_code_text

        w = ways()
        rows = small(w.codes)
        cols = {}
        for j, q in enumerate(qis):
            code, raw = w.codes[rows, j], [v for v, r in zip(w.raw[j], rows, strict=True) if r]
            m = w.meta.get(q, VariableMeta())
            cols[q] = [looked_up[j][c] if c >= 0 else None if v is None else
                       missing_code_text(v, m) if levels[j] > 0 else v for c, v in zip(code.tolist(), raw, strict=True)]
        frame = pd.DataFrame(cols, dtype=object)
    else:
        frame = pd.DataFrame({q: looked_up[j][table.codes[small_class, j]] for j, q in enumerate(qis)})
    frame = frame.drop_duplicates()
    for q in qis:
        frame[f"suppress_{q}"] = True
    return recodes, frame.reset_index(drop=True)
