"""A variable of a large file aggregated for weighted percentages (:mod:`kanon_core.utility.survey_aggregate`):
one ``GROUP BY`` on the design variables and the variable, by the engine, the file never loaded.

The keys are typed and declared missing codes applied as the in-memory reader does
(:func:`kanon_core.engines.table.encode_keys`), weights are checked with the records' messages, and a
missing stratum or PSU is refused as the records' design refuses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..dataset import VariableMeta, check_weight_total
from ..errors import InputError
from ..utility.design import DEFAULT_LONELY_PSU
from ..utility.survey_aggregate import (
    AGGREGATE_COLUMNS,
    DesignAggregate,
    check_design_keys,
    proportions_of_aggregate,
    scaled_square_sums,
)
from .base import Engine, EngineSettings
from .source import Source
from .sql import SQUARED_WEIGHTS
from .table import typed_aggregate

if TYPE_CHECKING:
    from ..utility.compare import DistributionComparison


def design_aggregate(engine: Engine, source: Source, variable: str, weight: str | None = None,
                     strata: str | None = None, psu: str | None = None, fpc: str | None = None,
                     missing_codes: Mapping[str, Sequence[str]] | None = None,
                     settings: EngineSettings | None = None) -> DesignAggregate:
    """The :class:`DesignAggregate` of ``variable`` in the file, by ``engine``."""
    settings = settings or EngineSettings()
    roles = {"stratum": strata, "psu": psu, "fpc": fpc}
    keys = [c for c in roles.values() if c] + [variable]
    agg, (codes, values, _, meta, _) = typed_aggregate(engine, source, keys, weight, missing_codes, settings,
                                                       f"{engine.name}: weighted counts of {variable}")
    n = agg.column("n").to_numpy().astype(np.int64)
    typed = {}
    for j, c in enumerate(keys):
        typed[c] = np.array([*values[j], None], dtype=object)[codes[:, j]]  # code -1 takes the appended None
    none = np.full(len(n), None, dtype=object)
    w = n.astype(np.float64) if weight is None else agg.column("w").to_numpy().astype(np.float64)
    if weight is not None:
        check_weight_total(w, weight)  # the records' words, whichever estimate reads the aggregate
    parts = [(n.astype(np.float64), 0)] if weight is None else \
        [(agg.column(c).to_numpy().astype(np.float64), e) for c, _, _, e in SQUARED_WEIGHTS]
    w2, shift = scaled_square_sums(parts, w)
    frame = pd.DataFrame({
        role: pd.Series(typed[c] if c else none, dtype=object) for role, c in roles.items()
    } | {
        "value": pd.Series(typed[variable], dtype=object),
        "n": n,
        "w": w,
        "w2": w2,
    })
    m = meta.get(variable, VariableMeta())
    out = DesignAggregate(frame[list(AGGREGATE_COLUMNS)], psu is not None, fpc is not None, dict(m.value_labels),
                          m.label, w2_shift=shift)
    check_design_keys(out, {k: v for k, v in (("stratum", strata), ("psu", psu)) if v})
    return out


def _has_values(agg: DesignAggregate) -> bool:
    """Whether some record of the aggregate has a value (not every cell missing or suppressed)."""
    f = agg.frame
    return bool((f["n"].to_numpy()[f["value"].notna().to_numpy()] > 0).any())


def compare_at_scale(engine: Engine, before: Source, after: Source, variables: Sequence[str],
                     recodes: Mapping[str, Mapping[Any, Any]] | None = None, weight: str | None = None,
                     strata: str | None = None, psu: str | None = None, fpc: str | None = None,
                     ci: str = "wald", level: float = 0.95, lonely_psu: str = DEFAULT_LONELY_PSU,
                     missing_codes: Mapping[str, Sequence[str]] | None = None,
                     settings: EngineSettings | None = None) -> DistributionComparison:
    """Wilson et al.'s before-and-after table (:func:`kanon_core.utility.compare.compare_distributions`) of a
    large file and its release, each aggregated by the engine.

    In memory the recoding of a variable is read off the records that have a value in both files; here the
    records are never paired, so the recoding is given: ``recodes[v]`` maps each original value to its
    released value (the generalization the release was written with; a variable not listed is compared as
    it is). The release must hold the original's records with only that recoding and blanked cells, as a
    generalization or suppression written by kanon does: then a category absent from the release lost every
    record to suppression, and the table equals the in-memory one (tested).
    """
    from ..utility.compare import (
        NO_ESTIMATES,
        TABLE_COLUMNS,
        DistributionComparison,
        comparison_frame,
        summarize,
        value_key,
    )

    variables = list(variables)
    if not variables:
        raise InputError("Choose at least one variable to compare.")
    if weight and weight not in after.columns:
        # in memory the release's records take the original's weights; here the records are never paired, and
        # equal weights against a weighted original would mix a change of weighting into the treatment's effect
        raise InputError(f"The release has no weight variable '{weight}', so its percentages cannot be weighted "
                         "as the original's; keep the weight in the release to compare them.")
    settings = settings or EngineSettings()
    frames = []
    n_before = 0
    for v in variables:
        agg_o = design_aggregate(engine, before, v, weight, strata, psu, fpc, missing_codes, settings)
        agg_t = design_aggregate(engine, after, v, weight, strata, psu, fpc, missing_codes, settings)
        n_before = int(agg_o.frame["n"].sum())
        if int(agg_t.frame["n"].sum()) != n_before:
            raise InputError(f"The file and the release have {n_before:,} and {int(agg_t.frame['n'].sum()):,} "
                             "records; comparing percentages needs the same records in both.")
        mapping = dict((recodes or {}).get(v, {}))
        seen_o = {value_key(x) for x in agg_o.frame["value"] if x is not None}
        shown_t = [x for x in agg_t.frame["value"] if x is not None]
        merged_codes = any(value_key(k) != value_key(t) for k, t in mapping.items())
        recoded = merged_codes or any(value_key(x) not in seen_o for x in shown_t)
        labels_o = dict(agg_o.value_labels)
        if recoded:
            frame = agg_o.frame.copy()
            frame["value"] = frame["value"].map(lambda x, m=mapping: None if x is None else m.get(x, x)).astype(object)
            agg_o = dataclasses.replace(agg_o, frame=frame)
            labels_o = {**labels_o, **dict(agg_t.value_labels)}
        est_o, est_t = (proportions_of_aggregate(agg, v, labels, ci, level, lonely_psu).table
                        if _has_values(agg) else NO_ESTIMATES
                        for agg, labels in ((agg_o, labels_o), (agg_t, agg_t.value_labels)))
        kept = {value_key(x) for x in shown_t}  # every released value is a kept original one (see above)
        frames.append(comparison_frame(v, agg_o.label or v, est_o, est_t, recoded, kept))
    table = pd.concat(frames, ignore_index=True)[TABLE_COLUMNS]
    parts = [f"{n_before} records", f"weight {weight}" if weight else "equal weights"]
    parts += [f"strata ({strata})"] * bool(strata) + [f"PSUs ({psu})"] * bool(psu)
    return DistributionComparison(table=table, summary=summarize(table), ci_method=ci, level=level,
                                  design=", ".join(parts))
