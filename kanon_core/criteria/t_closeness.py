"""t-closeness (Li et al. 2007) of a sensitive variable as a criterion: no class is farther than t from the file.

Written ``t=0.2:income`` (the distance chosen from the variable: ordered for numbers without value labels, equal otherwise) or
``t=0.2:income:equal`` / ``t=0.2:income:ordered``. A class fails when the Earth Mover's Distance between
its distribution of the variable and the file's, as :func:`kanon_core.risk.closeness.t_closeness_classes`
computes it (ARX's definitions; missing sensitive values left out), exceeds t.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import MissingSemantics
from ..errors import InputError
from .base import Evaluation, parse_number, quote_name, register_criterion, split_arguments

DISTANCES = ("auto", "equal", "ordered")
TOLERANCE = 1e-12
"""A class fails only when its distance exceeds t by more than this (rounding of the distance)."""


@dataclass(frozen=True)
class TCloseness:
    """Every class's distribution of ``sensitive`` is within EMD ``t`` of the whole file's.

    **Monotonicity.** The file's distribution Q does not depend on the node. Under category semantics a
    class of a more general node is a merge of classes below, and its distribution of observed values is
    their mixture weighted by their observed counts (a class with none observed is at distance 0 and
    adds nothing). Both distances are convex in the class's distribution (the equal distance is half an
    L1 norm of P - Q, the ordered one a sum of absolute cumulative differences), so the mixture is no
    farther from Q than its farthest part: a merge of passing classes passes. **Monotonic without
    suppression under category semantics.** With suppression it is not: a passing class merged with a
    failing one may fail (its records then join the suppressed ones, the failing count grows). Under
    wildcard semantics the records joining a class are not whole passing classes: not monotonic.
    """

    t: float
    sensitive_var: str
    distance: str = "auto"

    def __post_init__(self) -> None:
        if self.distance not in DISTANCES:
            raise InputError(f"The t-closeness distance must be one of {', '.join(DISTANCES)}.")
        if not 0.0 <= self.t <= 1.0:
            raise InputError("t must be between 0 and 1.")
        if not self.sensitive_var:
            raise InputError("Name the sensitive variable of t-closeness (t=0.2:variable).")

    @property
    def name(self) -> str:
        return "t-closeness"

    @property
    def spec(self) -> str:
        tail = "" if self.distance == "auto" else f":{self.distance}"
        return f"t={self.t:g}:{quote_name(self.sensitive_var)}{tail}"

    @property
    def sensitive(self) -> tuple[str, ...]:
        return (self.sensitive_var,)

    def monotonic_at(self, suppression_limit: int, missing: MissingSemantics = "category") -> bool:
        return suppression_limit == 0 and missing == "category"

    def failing_classes(self, ev: Evaluation) -> np.ndarray:
        from ..risk.closeness import t_closeness_classes

        return t_closeness_classes(ev.table, self.sensitive_var, ev.missing, self.distance) > self.t + TOLERANCE


@register_criterion("t", "t=T:S[:equal|ordered] (t-closeness of variable S)")
def parse_t(text: str) -> TCloseness:
    parts = split_arguments(text)
    if len(parts) not in (2, 3) or not parts[1]:
        raise InputError("Write t-closeness as t=0.2:S or t=0.2:S:equal (S the sensitive variable, in double quotes "
                         'when its name holds ":").')
    distance = parts[2].lower() if len(parts) == 3 else "auto"
    return TCloseness(parse_number(parts[0], "t", low=0.0, high=1.0), parts[1], distance)
