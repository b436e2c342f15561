"""Information loss of a treated version against the original: Prec, the loss metric, discernibility.

Three views of how much detail a treatment took, per quasi-identifier and overall:

* **Prec** (Sweeney 2002): ``1 - mean over cells of h / |DGH|``, where h is the hierarchy level the
  cell's released value sits at and |DGH| the hierarchy's height (its top level, ``*``). A suppressed cell
  counts as fully generalized (h = |DGH|), a value released as it was (and standing for itself alone) as
  level 0, with or without a hierarchy. Any other released value needs the hierarchy: one that is no label
  of the original value's hierarchy row (a free recode) makes Prec undefined for that variable (NaN).
* **Loss metric** LM (Iyengar 2002): a released value that stands for M of the variable's |A| original
  values costs ``(M - 1) / (|A| - 1)``; a suppressed cell costs 1. M is read from the data (the distinct
  original values among the records released with that value), so LM needs no hierarchy and covers any
  recoding, global or local.
* **Discernibility** (Bayardo & Agrawal): each kept record is charged the size of its class (the sum of
  squared class sizes for a partition), each suppressed record the number of records n; under wildcard
  semantics a record's class is the records matching it, as everywhere in kanon. It is the lattice search's
  definition (:func:`kanon_core.treat.metrics.discernibility`, called here), so the Recode page and the
  Compare page give one number for one release: a record is suppressed when all its QIs are missing after
  and some was observed before, and under wildcard semantics a kept record's class is the records it matched
  at the release's node before suppression (a suppressed record counted with its original value's label at
  the level the generalization step applied). **Records per class** is ``n / classes``, the suppressed
  records forming one class (:func:`kanon_core.treat.metrics.average_class_size`, the lattice's ``aecs``).

Cells missing in the original carry no information and are left out of Prec and LM, and so are cells whose
value a step declared a missing code (-9 "refused": :func:`kanon_core.utility.suppressed.declared_later`),
which the release still holds and a search run after that step reads as missing from the start. The cells
charged as suppressed are therefore the suppressed cells of :func:`~kanon_core.utility.suppressed.suppressed_mask`,
the one count of them every table shows. Prec is computed by
:func:`kanon_core.treat.metrics.precision_loss`, the function the Recode page's lattice search uses, each
cell charged the level its generalization step applied (:func:`version_levels`), so a generalization has the
same Prec on both pages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..errors import InputError
from ..history import History
from ..io import cell_text
from ..treat.hierarchy import Hierarchy, value_key
from ..treat.recode import is_text_column
from .suppressed import declared_later

WHY_NO_PREC = "recoded without a hierarchy, or no cell measured"
"""Why a variable's Prec is undefined, as every table that shows it says (its ``cells`` column tells which)."""
WHY_NO_LOSS_METRIC = "no cell measured"
"""Why a variable's loss metric is undefined: every cell missing in the original or declared missing."""


@dataclass(frozen=True)
class InformationLoss:
    """Per-QI table and overall figures (``prec`` NaN when some QI has no usable hierarchy)."""

    table: pd.DataFrame
    prec: float
    loss_metric: float
    discernibility_original: int
    discernibility_treated: int
    avg_class_original: float
    avg_class_treated: float

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame([
            {"measure": "Prec (1 = nothing generalized)", "original": 1.0, "treated": self.prec},
            {"measure": "Loss metric LM (0 = nothing lost)", "original": 0.0, "treated": self.loss_metric},
            {"measure": "Discernibility (sum of squared class sizes)", "original": self.discernibility_original,
             "treated": self.discernibility_treated},
            {"measure": "Records per class", "original": self.avg_class_original,
             "treated": self.avg_class_treated},
        ])


@dataclass(frozen=True)
class _Pairs:
    """Distinct (original, treated) values of one variable's observed cells, with their record counts.

    Values are keys in their column's type (:func:`cell_key`); ``treated`` is None where the cell was suppressed;
    ``row`` is the original value's hierarchy row (-1: none, or no hierarchy); ``treated_text`` says how the
    released values compare with hierarchy labels (as written, or by value).
    """

    original: list[str | None]
    treated: list[str | None]
    count: list[int]
    row: list[int]
    treated_text: bool


def cell_key(value: object, text: bool) -> str | None:
    """A value's key in its column's type, as the recode step matches cells: in a text column the text as
    written ("012" and "12" are two values), in a number column :func:`value_key` (12 and 12.0 are one).

    For an integer both give its digits, so a number released as the text a hierarchy gives it ("30") is
    still the value it was."""
    return cell_text(value) if text else value_key(value)


def _pairs(original: Dataset, treated: Dataset, q: str, h: Hierarchy | None) -> _Pairs:
    """The distinct (original, treated) pairs of ``q``'s observed cells, keys computed once per distinct value
    of each version; the original values are matched to ``h``'s rows as a generalization matches them
    (:meth:`Hierarchy.match`: text codes by their text, numbers by value)."""
    qo, qt = original.qi_matrix([q]), treated.qi_matrix([q])
    co, ct = qo.codes[:, 0].astype(np.int64), qt.codes[:, 0].astype(np.int64)
    o_text, t_text = is_text_column(original.frame[q]), is_text_column(treated.frame[q])
    ko = np.array([cell_key(v, o_text) for v in qo.values[0]] + [None], dtype=object)
    kt = np.array([cell_key(v, t_text) for v in qt.values[0]] + [None], dtype=object)
    rows = h.match(qo.values[0], qo.labels[0]) if h is not None else np.full(len(qo.values[0]), -1)
    obs = (co >= 0) & ~declared_later(original, treated, q)  # a code a step declared missing took nothing
    pair = co[obs] * (len(kt) + 1) + np.where(ct[obs] >= 0, ct[obs], len(kt) - 1)
    uniq, counts = np.unique(pair, return_counts=True)
    first = uniq // (len(kt) + 1)
    return _Pairs(ko[first].tolist(), kt[uniq % (len(kt) + 1)].tolist(), counts.tolist(),
                  np.asarray(rows, dtype=np.int64)[first].tolist(), t_text)


def _cell_costs(p: _Pairs, h: Hierarchy | None, applied: int | None = None) -> tuple[float, float, int, int]:
    """Mean LM cost, mean h/|DGH| (NaN without a usable hierarchy), observed and suppressed cells.

    A released value's level h is ``applied``, the level a generalization step set the variable to, when the
    value is that level's label on the original value's row: a hierarchy may keep a value as itself at a
    level (20 -> 20 -> *) or repeat a label over levels (90 -> 80+ -> 80+ -> *), and Sweeney's Prec charges
    a full-domain generalization's level to every cell, as the lattice search does. Otherwise (no step
    known, or a later recode) a value released as it was and standing for itself alone is level 0, and any
    other the lowest level whose label it is.

    M, the original values a released value stands for, comes from the hierarchy when the released value is
    a label on the original value's row (all leaves under that label), else from the data (the distinct
    original values released with it — a lower bound, exact for recodes the data shows in full). Labels
    compare with released values in the released column's type (:func:`cell_key`).
    """
    n_obs = int(sum(p.count))
    if not n_obs:
        return float("nan"), float("nan"), 0, 0
    n_domain = max(len(set(p.original)), h.n_values if h is not None else 0)
    seen: dict[str, int] = {}
    for b in p.treated:
        if b is not None:
            seen[b] = seen.get(b, 0) + 1  # pairs are distinct: one per original value released as b
    labels = [[cell_key(x, p.treated_text) for x in r] for r in h.rows] if h is not None else []
    leaves: dict[tuple[int, str | None], int] = {}
    for row in labels:
        for lv, lab in enumerate(row):
            leaves[(lv, lab)] = leaves.get((lv, lab), 0) + 1
    lm_total, gen_total, n_sup = 0.0, 0.0, 0
    for a, b, count, r in zip(p.original, p.treated, p.count, p.row, strict=True):
        at_applied = applied is not None and r >= 0 and 0 < applied < len(labels[r]) and labels[r][applied] == b
        if b is None:
            lm, gen = 1.0, 1.0
            n_sup += count
        elif b == a and seen.get(b, 1) == 1 and not at_applied:  # released as it was, for itself alone: level 0
            lm, gen = 0.0, 0.0
        else:
            level = applied if at_applied else next(
                (lv for lv, lab in enumerate(labels[r]) if lv > 0 and lab == b), None) if r >= 0 else None
            m = leaves[(level, b)] if level is not None else seen.get(b, 1)
            lm = (m - 1) / (n_domain - 1) if n_domain > 1 else 0.0
            gen = float("nan") if level is None or h is None else level / h.max_level
        lm_total += lm * count
        gen_total += gen * count
    return lm_total / n_obs, gen_total / n_obs, n_obs, n_sup


def suppressed_records(original: Dataset, treated: Dataset, qis: Sequence[str]) -> np.ndarray:
    """The records a treatment suppressed on ``qis``: every QI missing in ``treated`` and some QI cell suppressed
    (observed before, missing after: :func:`kanon_core.utility.suppressed.suppressed_mask`). A record keeping
    an observed QI value is kept, with wildcards for its blanked cells (local suppression)."""
    from .suppressed import suppressed_mask

    codes = treated.qi_matrix(list(qis)).codes
    return (codes < 0).all(axis=1) & suppressed_mask(original, treated, list(qis)).mask.any(axis=1)


def _node_codes(original: Dataset, treated: Dataset, qis: Sequence[str], hierarchies: Mapping[str, Hierarchy],
                levels: Mapping[str, int], sup: np.ndarray) -> np.ndarray:
    """The release's QI codes with each suppressed record given back the values it had before suppression:
    its original value's label at the level a generalization step applied (:func:`version_levels`, with the
    step's hierarchy), its original value where no level is known (not generalized). Kept records keep their
    released values; codes compare as :func:`cell_key` keys in the released column's type."""
    tq = treated.qi_matrix(list(qis))
    out = tq.codes.astype(np.int64).copy()
    rows_sup = np.flatnonzero(sup)
    for j, q in enumerate(qis):
        t_text = is_text_column(treated.frame[q])
        index = {cell_key(v, t_text): c for c, v in enumerate(tq.values[j])}
        qo = original.qi_matrix([q])
        co = qo.codes[rows_sup, 0].astype(np.int64)
        h, lv = hierarchies.get(q), int(levels.get(q, 0))
        match = h.match(qo.values[0], qo.labels[0]) if h is not None and lv > 0 else None
        keys: list[str | None] = []
        for c in range(len(qo.values[0])):
            r = int(match[c]) if match is not None else -1
            value = h.rows[r][min(lv, len(h.rows[r]) - 1)] if match is not None and r >= 0 else qo.values[0][c]
            keys.append(cell_key(value, t_text))
        for i, c in zip(rows_sup.tolist(), co.tolist(), strict=True):
            if c < 0:
                out[i, j] = -1
                continue
            out[i, j] = index.setdefault(keys[c], len(index))
    return out


def _release_discernibility(original: Dataset, treated: Dataset, qis: Sequence[str],
                            hierarchies: Mapping[str, Hierarchy], levels: Mapping[str, int],
                            fk_given: np.ndarray | None) -> tuple[float, float]:
    """The release's discernibility and records per class by the lattice search's definitions
    (:func:`kanon_core.treat.metrics.discernibility`, :func:`~kanon_core.treat.metrics.average_class_size`):
    a kept record is charged its class size at the release's node (under wildcard semantics the records it
    matched before suppression, :func:`_node_codes`), a suppressed record (:func:`suppressed_records`) the
    number of records; the suppressed records form one class."""
    from ..risk.classes import class_sizes
    from ..risk.keys import group_ids
    from ..treat.metrics import average_class_size, discernibility

    n = treated.n_records
    sup = suppressed_records(original, treated, qis)
    codes = treated.qi_matrix(list(qis)).codes
    if not sup.any() or treated.missing == "category":
        # category semantics: a kept record's class is its equal records, none of them suppressed
        fk = fk_given if fk_given is not None and not sup.any() else None
        if fk is None:
            fk = np.zeros(n, dtype=np.int64)
            fk[~sup] = class_sizes(codes[~sup], treated.missing)
    else:
        fk = class_sizes(_node_codes(original, treated, qis, hierarchies, levels, sup), treated.missing)
    if len(fk) != n:
        raise ValueError("The class sizes given are not of these records.")
    kept_classes = len(group_ids(codes[~sup])[1]) if (~sup).any() else 0
    return discernibility(np.ones(n), fk, sup, n), average_class_size(n, kept_classes, bool(sup.any()))


def information_loss(
    original: Dataset,
    treated: Dataset,
    qis: Sequence[str] | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    counted: Sequence[np.ndarray] | None = None,
    levels: Mapping[str, int] | None = None,
) -> InformationLoss:
    """Prec (with ``hierarchies``), LM and discernibility of ``treated`` against ``original`` on ``qis``.

    ``levels`` gives the level a generalization step set a variable to (:func:`version_levels`), so that a
    hierarchy repeating a label over levels is charged the level applied (:func:`_cell_costs`).

    ``counted`` hands in both files' class sizes on ``qis`` (fk per record, each under its own missing
    semantics) when the caller has counted them already, e.g. the report for its risk tables."""
    from ..risk.classes import class_sizes
    from ..risk.keys import group_ids

    if original.n_records != treated.n_records:
        raise InputError("Information loss compares the same records; the versions differ in their number.")
    qis = list(original.roles.qis if qis is None else qis)
    if not qis:
        raise InputError("Choose at least one quasi-identifier.")
    absent = [q for q in qis if q not in treated.frame.columns or q not in original.frame.columns]
    if absent:
        raise InputError(f"Not in both versions (dropped?): {', '.join(absent)}.")
    from ..treat.metrics import average_class_size, discernibility, precision_loss

    rows = []
    lm_cells, n_cells = 0.0, 0
    gen_sums, observed = [], []
    for q in qis:
        h = (hierarchies or {}).get(q)
        lm, gen, n_obs, n_sup = _cell_costs(_pairs(original, treated, q, h), h, (levels or {}).get(q))
        gen_sums.append(gen * n_obs if n_obs else 0.0)
        observed.append(n_obs)
        prec_q = 1.0 - float(precision_loss(np.array([gen_sums[-1]]), np.array([n_obs])))
        rows.append({"variable": q, "cells": n_obs, "suppressed": n_sup, "loss_metric": lm, "prec": prec_q})
        if n_obs:
            lm_cells += lm * n_obs
            n_cells += n_obs
    codes_o = original.qi_matrix(qis).codes
    fk_o = class_sizes(codes_o, original.missing) if counted is None else np.asarray(counted[0])
    if len(fk_o) != original.n_records:
        raise ValueError("The class sizes given are not of these records.")
    n = original.n_records
    dm_o = discernibility(np.ones(n), fk_o, np.zeros(n, dtype=bool), n)
    avg_o = average_class_size(n, len(group_ids(codes_o)[1]), False)
    dm_t, avg_t = _release_discernibility(original, treated, qis, hierarchies or {}, levels or {},
                                          None if counted is None else np.asarray(counted[1]))
    return InformationLoss(
        table=pd.DataFrame(rows, columns=["variable", "cells", "suppressed", "loss_metric", "prec"]),
        prec=1.0 - float(precision_loss(np.array(gen_sums), np.array(observed, dtype=np.float64))),
        loss_metric=lm_cells / n_cells if n_cells else float("nan"),
        discernibility_original=int(dm_o), discernibility_treated=int(dm_t),
        avg_class_original=avg_o, avg_class_treated=avg_t,
    )


def version_hierarchies(
    history: History,
    vid: int | None = None,
    session: Mapping[str, Hierarchy] | None = None,
) -> dict[str, Hierarchy]:
    """The hierarchy each variable's information loss is measured with, for version ``vid`` (default current).

    A variable generalized by a step of the version's lineage is measured with the hierarchy that step
    used (the latest one): that hierarchy defined the release, whatever the officer edited afterwards.
    Every other variable takes the session's hierarchy (``session``: the Recode page's, when there is a
    session), else none. The Compare page and the report both call this, so they agree.
    """
    out: dict[str, Hierarchy] = dict(session or {})
    out.update({var: step.hierarchy(var) for var, _, step in _generalized(history, vid)})
    return out


def version_levels(history: History, vid: int | None = None) -> dict[str, int]:
    """The level each variable was last generalized to in version ``vid``'s lineage (default current), by the
    step whose hierarchy :func:`version_hierarchies` measures it with; variables never generalized are absent."""
    return {var: lv for var, lv, _ in _generalized(history, vid)}


def _generalized(history: History, vid: int | None) -> Iterator[tuple[str, int, Any]]:
    """(variable, level, step) for each variable a generalization step of version ``vid``'s lineage set above
    level 0 with a hierarchy of its own, in the lineage's order (a later step's entry wins in a dict): the one
    walk :func:`version_hierarchies` and :func:`version_levels` share, so they always name the same step."""
    from ..treat.recode import GeneralizeStep

    for v in history.lineage(vid):
        if isinstance(v.step, GeneralizeStep):
            for var, lv in v.step.levels.items():
                if lv > 0 and var in v.step.hierarchies:
                    yield var, int(lv), v.step


def hierarchies_fingerprint(hierarchies: Mapping[str, Hierarchy]) -> str:
    """A content hash of hierarchies (names and every row): a cache key that changes when one is edited."""
    import hashlib
    import json

    payload = json.dumps({str(v): [list(r) for r in h.rows] for v, h in sorted(hierarchies.items())},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
