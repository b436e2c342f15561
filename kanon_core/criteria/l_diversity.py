"""l-diversity (Machanavajjhala et al. 2007) of a sensitive variable as a criterion: distinct, entropy, recursive.

Written ``l=3:occupation`` (distinct l >= 3), ``l=entropy:3:occupation`` (entropy l = exp(H) >= 3) and
``l=recursive:C,L:occupation`` (recursive (c,l)-diversity with constant c and l, in the order of the name
"(c,l)": ``l=recursive:3,2:occupation`` is c = 3, l = 2). A class fails when its l, as
:func:`kanon_core.risk.diversity.l_diversity_classes` computes it (sdcMicro's readings, missing sensitive
values counted as described there), is below the required l.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import MissingSemantics
from ..errors import InputError
from .base import Evaluation, parse_number, quote_name, register_criterion, split_arguments

KINDS = ("distinct", "entropy", "recursive")


@dataclass(frozen=True)
class LDiversity:
    """Every class holds at least ``l`` well-represented values of ``sensitive`` (``kind``: how counted).

    **Monotonicity.** Generalizing only adds records to a record's class: under category semantics
    classes merge; under wildcard semantics the records matching a record stay matching and others may
    join.

    * *distinct*: the distinct observed values of a class, plus one for its missing values when it has an
      observed one, can only grow when records join. A record failing at a more general node therefore
      failed below: **monotonic at every suppression limit, under both semantics.**
    * *entropy*: the entropy of a mixture is at least the smallest entropy of its parts (concavity), and
      the missing values form one more category, so a merge of passing classes passes: **monotonic
      without suppression under category semantics.** With suppression it is not: a passing class
      {x, y} merged with a failing {x, x, x, x, x, x} gives a failing class, so its records join the
      suppressed ones and the failing count grows. Under wildcard semantics the records that join a class
      are not whole passing classes, so a passing class can fail above: not monotonic.
    * *recursive (c,l)*: Machanavajjhala et al. show that the union of two (c,l)-diverse classes is
      (c,l)-diverse (missing values are left out; a class with none observed fails): **monotonic without
      suppression under category semantics**, and not with suppression or under wildcard semantics, by the
      same examples.
    """

    l: float  # noqa: E741 - the letter of the definition
    sensitive_var: str
    kind: str = "distinct"
    c: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"The l-diversity kind must be one of {', '.join(KINDS)}.")
        if not self.l >= 1:
            raise InputError("l must be at least 1.")
        if self.kind != "recursive" and self.c is not None:
            raise InputError("The constant c applies to recursive (c,l)-diversity only.")
        if self.kind == "recursive":
            from ..risk.diversity import check_recursive_c  # (imported where used, as below)

            check_recursive_c(self.c)
        if not self.sensitive_var:
            raise InputError("Name the sensitive variable of l-diversity (l=3:variable).")

    @property
    def name(self) -> str:
        return f"{self.kind}-l-diversity"

    @property
    def spec(self) -> str:
        var = quote_name(self.sensitive_var)
        if self.kind == "distinct":
            return f"l={self.l:g}:{var}"
        if self.kind == "entropy":
            return f"l=entropy:{self.l:g}:{var}"
        return f"l=recursive:{self.c:g},{self.l:g}:{var}"

    @property
    def sensitive(self) -> tuple[str, ...]:
        return (self.sensitive_var,)

    def monotonic_at(self, suppression_limit: int, missing: MissingSemantics = "category") -> bool:
        if self.kind == "distinct":
            return True
        return suppression_limit == 0 and missing == "category"

    @property
    def holds_when_records_join(self) -> bool:
        """Added records never remove a distinct value; they can lower a class's entropy or its recursive l."""
        return self.kind == "distinct"

    def failing_classes(self, ev: Evaluation) -> np.ndarray:
        from ..risk.diversity import l_diversity_classes

        values = l_diversity_classes(ev.table, self.sensitive_var, ev.missing, self.kind, self.c)
        # entropy l is exp(H), computed in floating point: a class at exactly l must not fail by rounding
        tol = 1e-9 * self.l if self.kind == "entropy" else 0.0
        return values < self.l - tol


@register_criterion("l", "l=L:S (distinct), l=entropy:L:S, l=recursive:C,L:S (l-diversity of variable S)")
def parse_l(text: str) -> LDiversity:
    parts = split_arguments(text)
    if len(parts) == 2:
        kind, (num, var) = "distinct", parts
    elif len(parts) == 3 and parts[0].lower() in KINDS:
        kind, num, var = parts[0].lower(), parts[1], parts[2]
    else:
        raise InputError("Write l-diversity as l=3:S, l=entropy:3:S or l=recursive:C,L:S (S the sensitive variable, "
                         'in double quotes when its name holds ":").')
    if kind == "recursive":
        c_text, sep, l_text = num.partition(",")
        if not sep:
            raise InputError("Write recursive (c,l)-diversity as l=recursive:C,L:S, for example l=recursive:3,2:S.")
        c = parse_number(c_text.strip(), "c", low=0.0)
        if c <= 0:
            raise InputError("c must be above 0.")
        return LDiversity(parse_number(l_text.strip(), "l", low=1), var, kind, c)
    return LDiversity(parse_number(num.strip(), "l", integer=kind == "distinct", low=1), var, kind)
