"""What the MINUCs pages say about a cost estimate that stopped at its time budget
(:attr:`kanon_core.risk.minucs.CostEstimate.at_least`): what is known, "at least" what is bounded, and never a
lower bound shown as a cost."""

from __future__ import annotations

import math

from kanon_core.risk.minucs import CostEstimate
from kanon_core.risk.minucs_by_subsets import METHOD_TEXT


def _figure(value: float, bound: float, text: str, unknown: str) -> str:
    """One figure of an estimate its budget stopped: "about" when known all the same (it did not depend on the
    search), else "at least" its lower bound (``text`` holds ``{}`` for the number), else ``unknown``."""
    if math.isfinite(value):
        return "about " + text.format(value)
    return "at least " + text.format(bound) if bound > 0 else unknown


def bounded_estimate_text(est: CostEstimate, what: str = "distinct records") -> str:
    """What a page says when the estimate stopped at its time budget: a lower bound is never shown as a
    cost, and is rounded down (``what``: the rows searched, "distinct records" or "classes")."""
    bound = est.at_least
    assert bound is not None
    seconds = _figure(est.seconds, math.floor(bound.seconds * 10) / 10, "**{:,.1f} s**", "an unknown time")
    minucs = _figure(est.minucs, math.floor(bound.minucs), "**{:,.0f} MINUCs**", "an unknown number of MINUCs")
    memory = _figure(est.memory_bytes / 2**20, math.floor(bound.memory_bytes / 2**20), "{:,.0f} MB",
                     "an unknown amount of memory")
    return (f"The estimate stopped at its time limit ({bound.budget_seconds:,.1f} s) with {bound.rows_searched:,} "
            f"of its {est.sampled_rows:,} sampled {what} (of {est.n_distinct_rows:,}) searched to the "
            f"end, so the cost of the search is not known. Extrapolated from what it searched, the search would "
            f"take {seconds}, find {minucs} and hold {memory}, found {METHOD_TEXT[est.method]}. "
            "Fewer quasi-identifiers or a maximum size make it smaller.")
