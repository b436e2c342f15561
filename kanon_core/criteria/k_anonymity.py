"""k-anonymity (Sweeney 2002) as a criterion: a class fails when fewer than k records match it.

"Match" follows the file's missing-value semantics (:mod:`kanon_core.risk.classes`): under category
semantics a record's class is its group of identical QI values; under wildcard semantics it is every
record that agrees with it wherever both are observed. sdcMicro's ``alpha`` weighs the wildcard matches
(a record with a missing QI and another key counts ``alpha``), written ``k=5:alpha=0.5``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import MissingSemantics
from ..errors import InputError
from ..risk.classes import alpha_count, check_alpha
from .base import Evaluation, parse_number, register_criterion


@dataclass(frozen=True)
class KAnonymity:
    """Every record's class (fk, at ``alpha``) has at least ``k`` records; records of smaller classes fail.

    **Monotonic, with and without suppression, under both semantics.** Generalizing maps equal values to
    equal values and keeps a missing value missing, so two records that match at a node still match at
    every more general node (category: same class; wildcard: agreeing wherever both are observed). A
    record's matches can therefore only be added to, never lost, and each match keeps its weight: a
    complete record stays complete and a record with r's exact key keeps it, so a match counted in full
    stays in full while an ``alpha`` match may become a full one. fk(r) never decreases, so a record
    failing (fk < k) at a more general node failed at every node below it: the set of failing records
    shrinks, which is the promise of :mod:`.base` at every suppression limit.
    """

    k: int
    alpha: float = 1.0

    def __post_init__(self) -> None:
        if int(self.k) != self.k or self.k < 1:
            raise InputError("k must be a whole number of at least 1.")
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "alpha", check_alpha(self.alpha))

    @property
    def name(self) -> str:
        return "k-anonymity"

    @property
    def spec(self) -> str:
        return f"k={self.k}" if self.alpha == 1.0 else f"k={self.k}:alpha={self.alpha:g}"

    @property
    def sensitive(self) -> tuple[str, ...]:
        return ()

    def monotonic_at(self, suppression_limit: int, missing: MissingSemantics = "category") -> bool:
        return True

    @property
    def holds_when_records_join(self) -> bool:
        """More records in a class (blanked ones joining it under wildcard semantics) only raise its count."""
        return True

    def failing_classes(self, ev: Evaluation) -> np.ndarray:
        sizes = ev.sizes
        if self.alpha == 1.0:
            fk = sizes.fk_all
        elif sizes.fk_wild is None:  # counted without the wildcard split: only category semantics needs none
            if ev.missing == "wildcard" and bool((ev.table.codes < 0).any()):
                raise ValueError("k-anonymity with alpha < 1 needs class sizes counted with wildcard_split=True.")
            fk = sizes.fk_all
        else:
            fk = alpha_count(sizes.fk_all, sizes.fk_wild, self.alpha)
        return np.asarray(fk) < self.k

    def describe(self) -> str:
        extra = "" if self.alpha == 1.0 else f" (wildcard matches weigh {self.alpha:g})"
        return f"every record shares its QI values with at least {self.k - 1} other(s){extra}"


@register_criterion("k", "k=K[:alpha=A] (k-anonymity; alpha as sdcMicro's)")
def parse_k(text: str) -> KAnonymity:
    head, _, opt = text.partition(":")
    k = parse_number(head.strip(), "k", integer=True, low=1)
    alpha = 1.0
    if opt:
        key, sep, val = opt.partition("=")
        if key.strip().lower() != "alpha" or not sep:
            raise InputError("Write k-anonymity as k=5 or k=5:alpha=0.5.")
        alpha = parse_number(val.strip(), "alpha", low=0.0, high=1.0)
    return KAnonymity(int(k), alpha)
