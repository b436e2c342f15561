"""Suppressed cells an intruder can restore from the other variables of the release.

Local suppression blanks a quasi-identifier's cell, but the release still shows the record's other
variables. When one of them determines the blanked one -- a school or PSU code that lies in one region, a
municipality code and its province, a household id and the household's region -- every other record with
the same value of it shows the blanked value, and an intruder reading the release alone writes it back.
Counting people from the intruder's side (:func:`kanon_core.risk.intruder.findable_below_k`) on the
restored release then shows what the suppression really protects.

The attack counted here: a released variable v (any other column of the release, QI or not) determines QI
q in the release -- no value of v is shown with two values of q -- and a suppressed cell of q is on a record
showing v, where other records with the same value of v show q; the cell is *restorable* when that value
is the one suppressed. In rounds: a cell written back shows its value to the next round (a school gives back
a region, and the region then gives back what it determines), until a round restores nothing. One variable at
a time: an intruder combining variables may restore more, so the count is a lower bound on what the release
gives away. Cells missing in the input are not suppressed cells
and are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..dataset import Dataset
from ..history import History
from .intruder import findable_below_k, released_codes

NOT_COUNTED_AT_SCALE = (
    "Suppressed cells that another released variable gives back (a school code gives back its region) are "
    "counted on the records in memory only, and were not counted here: before releasing, check that no released "
    "variable determines a suppressed quasi-identifier (recode such a variable or leave it out), or run the "
    "suppression in memory, where they are counted.")
"""What an out-of-core suppression says instead of :meth:`Restoration.sentence`: the attack is counted on the
records (:func:`restorable_cells`), which an out-of-core engine does not hold, and a release whose suppression
was not checked for it must not read as checked."""


@dataclass(frozen=True)
class Restoration:
    """Suppressed cells restorable from single released variables, and the people then findable below k.

    ``by_variable[q]``: restorable cells of QI q; ``via[q]``: the released variable that restores most of them.
    ``findable_before`` and ``findable_after``: people of the step's input with fewer than k consistent
    released records, on the release as written and with the restorable cells written back."""

    k: int
    n_suppressed: int
    n_restorable: int
    by_variable: dict[str, int] = field(default_factory=dict)
    via: dict[str, str] = field(default_factory=dict)
    findable_before: int = 0
    findable_after: int = 0

    def to_json(self) -> dict:
        """The finding for a command's JSON summary (names and counts)."""
        return {"cells": self.n_restorable, "by_variable": dict(self.by_variable), "via": dict(self.via),
                "findable_below_k_after_restoring": self.findable_after}

    def sentence(self) -> str:
        """The finding in words: variable names and counts, never a value."""
        if not self.n_restorable:
            return (f"None of the {self.n_suppressed:,} suppressed cells can be restored from a single other "
                    "variable of the release.")
        pairs = ", ".join(f"{q} from {v} ({self.by_variable[q]:,})" for q, v in self.via.items())
        return (f"{self.n_restorable:,} of the {self.n_suppressed:,} suppressed cells can be restored from another "
                f"variable of the release ({pairs}): every other record with that variable's value shows the "
                f"suppressed value. With them restored, {self.findable_after:,} "
                f"{'person is' if self.findable_after == 1 else 'people are'} findable among fewer "
                f"than {self.k} released records (as written: {self.findable_before:,}). Suppress the determining "
                "variable with the QI (a linked variable), recode it, or leave it out of the release.")


def restorable_cells(parent: Dataset, child: Dataset, qis: Sequence[str], k: int,
                     findable_before: int | None = None) -> Restoration:
    """The cells of ``qis`` that ``child`` (``parent`` with cells blanked) suppresses and that its other
    released variables restore (see the module docstring), and the people findable below ``k`` before and
    after restoring them, under ``parent``'s missing-value semantics (``findable_before``: that count on the
    release as written, when the caller has made it)."""
    qis = [q for q in qis if q in child.frame.columns and q in parent.frame.columns]
    if parent.n_records != child.n_records:
        raise ValueError("the step's input and output must hold the same records")
    codes = parent.qi_matrix(qis).codes.astype(np.int32)
    blanked = np.column_stack([child.missing_mask(q) & ~parent.missing_mask(q) for q in qis]) if qis else \
        np.zeros((parent.n_records, 0), dtype=bool)
    released = released_codes(codes, blanked)
    n_suppressed = int(blanked.sum())
    restored = np.zeros_like(blanked)
    by_variable: dict[str, int] = {}
    via: dict[str, str] = {}
    if n_suppressed:
        columns = list(child.release_frame().columns)
        others = {c: _released_column(child, c, qis, released) for c in columns if c not in qis}
        hits: dict[tuple[str, str], int] = {}  # (QI, variable): cells restored through it, over the rounds
        while True:  # rounds: a cell written back shows its QI to the next round, as it does to the intruder
            shown = np.where(restored, codes, released)
            observed = {c: others[c] if c in others else _released_column(child, c, qis, shown) for c in columns}
            found = False
            for j, q in enumerate(qis):
                left = blanked[:, j] & ~restored[:, j]
                if not left.any():
                    continue
                for v, vcode in observed.items():
                    if v == q:
                        continue
                    hit = _restored_by(vcode, shown[:, j], codes[:, j], left)  # of the cells left this round
                    if hit.any():
                        restored[:, j] |= hit
                        hits[q, v] = hits.get((q, v), 0) + int(hit.sum())
                        found = True
            if not found:
                break
        for j, q in enumerate(qis):
            if restored[:, j].any():
                by_variable[q] = int(restored[:, j].sum())
                via[q] = max((v for qq, v in hits if qq == q), key=lambda v: (hits[q, v], -columns.index(v)))
    missing = parent.missing
    if findable_before is not None:
        before = int(findable_before)
    else:
        before = findable_below_k(codes, released, k, missing) if qis else 0
    after = before
    if restored.any():
        after = findable_below_k(codes, np.where(restored, codes, released), k, missing)
    return Restoration(k=int(k), n_suppressed=n_suppressed, n_restorable=int(restored.sum()),
                       by_variable=by_variable, via=via, findable_before=before, findable_after=after)


def restorable_by_step(history: History, vid: int | None = None, k: int = 0) -> list[tuple[int, Restoration]]:
    """:func:`restorable_cells` for every cell-suppression step in version ``vid``'s lineage (default current),
    each on the step's own input and output at the step's k (``k`` for a step that names none, as suppression
    to a risk threshold; such steps are skipped when it is below 2), numbered as the lineage numbers them (the
    original is 0); only the steps with a restorable cell."""
    from ..steps import CELL_SUPPRESSION_KINDS, protected_k

    out = []
    lineage = history.lineage(vid)
    for i, v in enumerate(lineage[1:], start=1):
        step = v.step
        if step is None or step.kind not in CELL_SUPPRESSION_KINDS or v.parent is None:
            continue
        k_step = protected_k(step, k)
        if k_step < 2:
            continue
        parent = history.versions[v.parent].dataset
        found = restorable_cells(parent, v.dataset, tuple(getattr(step, "qis", ()) or parent.roles.qis), k_step)
        if found.n_restorable:
            out.append((i, found))
    return out


def _released_column(child: Dataset, column: str, qis: Sequence[str], released: np.ndarray) -> np.ndarray:
    """The column's codes as the release shows them, -1 where it shows nothing (missing or suppressed)."""
    if column in qis:
        shown = released[:, list(qis).index(column)]
        return np.where(shown >= 0, shown, -1)
    return child.qi_matrix([column]).codes[:, 0].astype(np.int64)


def _restored_by(vcode: np.ndarray, qcode: np.ndarray, truth: np.ndarray, blanked: np.ndarray) -> np.ndarray:
    """The blanked cells of one QI that one released variable restores. The variable must determine the QI in
    the release: no value of it is shown with two values of the QI (a school and its region), which an
    intruder reads off the release; a variable that merely happens to share a value with one other record (a
    test score) shows conflicts elsewhere and restores nothing. A blanked cell is then restored when its
    record shows the variable and some other record with that value shows the QI, and that QI value is the
    one blanked."""
    vcode = np.asarray(vcode, dtype=np.int64)
    both = (vcode >= 0) & (qcode >= 0)
    if not both.any():
        return np.zeros(len(vcode), dtype=bool)
    n_v = int(vcode.max()) + 1
    low = np.full(n_v, np.iinfo(np.int64).max, dtype=np.int64)
    high = np.full(n_v, -1, dtype=np.int64)
    np.minimum.at(low, vcode[both], qcode[both].astype(np.int64))
    np.maximum.at(high, vcode[both], qcode[both].astype(np.int64))
    if ((high >= 0) & (low != high)).any():
        return np.zeros(len(vcode), dtype=bool)  # some value of v is shown with two values of q: no dependency
    one_value = high  # the QI's single value per value of v, -1 where no record shows both
    guess = np.where(vcode >= 0, one_value[np.maximum(vcode, 0)], -1)
    return blanked & (guess >= 0) & (guess == truth)


__all__ = ["NOT_COUNTED_AT_SCALE", "Restoration", "restorable_by_step", "restorable_cells"]
