"""A variable of a large file aggregated for weighted percentages (:mod:`kanon_core.utility.survey_aggregate`):
one ``GROUP BY`` on the design variables and the variable, by the engine, the file never loaded.

The keys are typed and declared missing codes applied as the in-memory reader does
(:func:`kanon_core.engines.table.encode_keys`), weights are checked with the records' messages, and a
missing stratum or PSU is refused as the records' design refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from ..utility.survey_aggregate import AGGREGATE_COLUMNS, DesignAggregate, check_design_keys
from .base import Engine, EngineSettings
from .source import Source
from .table import check_weights, encode_keys


def design_aggregate(engine: Engine, source: Source, variable: str, weight: str | None = None,
                     strata: str | None = None, psu: str | None = None, fpc: str | None = None,
                     missing_codes: Mapping[str, Sequence[str]] | None = None,
                     settings: EngineSettings | None = None) -> DesignAggregate:
    """The :class:`DesignAggregate` of ``variable`` in the file, by ``engine``."""
    settings = settings or EngineSettings()
    roles = {"stratum": strata, "psu": psu, "fpc": fpc}
    for c in [variable, *(v for v in (weight, *roles.values()) if v)]:
        if c not in source.columns:
            raise InputError(f"'{c}' is not a variable of the data.")
    keys = [c for c in roles.values() if c] + [variable]
    settings.say(f"{engine.name}: weighted counts of {variable}")
    agg = engine.aggregate(source, keys, weight, settings)
    if weight is not None:
        check_weights(agg, weight)
    codes, values, _, _, _ = encode_keys(source, agg, keys, None, missing_codes)
    n = agg.column("n").to_numpy().astype(np.int64)
    typed = {}
    for j, c in enumerate(keys):
        typed[c] = np.array([*values[j], None], dtype=object)[codes[:, j]]  # code -1 takes the appended None
    none = np.full(len(n), None, dtype=object)
    frame = pd.DataFrame({
        role: pd.Series(typed[c] if c else none, dtype=object) for role, c in roles.items()
    } | {
        "value": pd.Series(typed[variable], dtype=object),
        "n": n,
        "w": n.astype(np.float64) if weight is None else agg.column("w").to_numpy().astype(np.float64),
        "w2": n.astype(np.float64) if weight is None else agg.column("w2").to_numpy().astype(np.float64),
    })
    out = DesignAggregate(frame[list(AGGREGATE_COLUMNS)], psu is not None, fpc is not None)
    check_design_keys(out, {k: v for k, v in (("stratum", strata), ("psu", psu)) if v})
    return out
