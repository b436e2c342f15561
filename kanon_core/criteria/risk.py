"""Maximum individual risk (Benedetti & Franconi) as a criterion: no record's re-identification risk above r.

Written ``risk=0.05`` (the approximation sdcMicro uses by default) or ``risk=0.05:exact``. A class fails
when the individual risk of its records, :func:`kanon_core.risk.individual.individual_risk` on the class's
fk and Fk (the summed sampling weights; without weights the risk is 1 / fk), exceeds the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import MissingSemantics
from ..errors import InputError
from .base import Evaluation, register_criterion

METHODS = ("approx", "exact")


@dataclass(frozen=True)
class MaxIndividualRisk:
    """Every record's Benedetti–Franconi risk is at most ``threshold``.

    **Not declared monotonic.** Generalizing raises both fk and Fk of a record's class, and the estimate
    depends on their ratio pk = fk / Fk through different branches (fk = 1, fk = 2, fk > 2, fk = Fk): a
    class with few records of large weight merged with records of small weight gets a larger pk, and no
    argument that the risk cannot rise for every possible weights is known to us. The search therefore
    evaluates it at every node that could be optimal, which keeps the result exact. (Without sampling
    weights the risk is 1 / fk and the criterion is k-anonymity with k the smallest integer above
    1 / threshold, which is monotonic; write that as ``k=`` to get the pruning.)
    """

    threshold: float
    method: str = "approx"

    def __post_init__(self) -> None:
        from ..risk.individual import check_max_risk

        if self.method not in METHODS:
            raise InputError(f"The risk method must be one of {', '.join(METHODS)}.")
        object.__setattr__(self, "threshold", check_max_risk(self.threshold))

    @property
    def name(self) -> str:
        return "maximum-individual-risk"

    @property
    def spec(self) -> str:
        return f"risk={self.threshold:g}" + ("" if self.method == "approx" else f":{self.method}")

    @property
    def sensitive(self) -> tuple[str, ...]:
        return ()

    @property
    def weighted(self) -> bool:
        """It reads the sampling weights (Fk); a search must carry them."""
        return True

    def monotonic_at(self, suppression_limit: int, missing: MissingSemantics = "category") -> bool:
        return False

    def failing_classes(self, ev: Evaluation) -> np.ndarray:
        from ..risk.individual import individual_risk

        risk = individual_risk(ev.sizes.fk_all, ev.sizes.Fk_all, self.method)
        return ~(risk <= self.threshold)  # an undefined risk (NaN) fails: it is not shown to be small


@register_criterion("risk", "risk=R[:exact] (maximum individual risk, Benedetti & Franconi)")
def parse_risk(text: str) -> MaxIndividualRisk:
    head, _, method = text.partition(":")
    try:
        r = float(head.strip())
    except ValueError:
        raise InputError("Write the maximum individual risk as risk=0.05 (a probability).") from None
    return MaxIndividualRisk(r, method.strip().lower() or "approx")
