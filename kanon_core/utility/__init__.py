"""Utility: what a treatment costs the analyst (Wilson et al., RTI section 4, Angiuli & Waldo).

* :mod:`.design` -- survey design (weights, strata, PSUs) and Taylor-linearization variances;
* :mod:`.survey` -- weighted percentages and means with design-based CIs (agree with R ``survey``);
* :mod:`.formula`, :mod:`.regression` -- survey-weighted linear/logistic regression, ``svyglm`` SEs;
* :mod:`.compare` -- before vs after percentages, CI overlap and summaries;
* :mod:`.model_compare` -- the three regression models of Wilson et al., RTI table 4;
* :mod:`.bias` -- bias of means and correlations, suppressed cells, entropy;
* :mod:`.plots` -- plotly figures for all of the above.

The names below are imported on first use (PEP 562), so importing one light submodule -- the command
line needs only :mod:`.design` to build its options -- does not load scipy for the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "bias_of_correlations": "bias",
    "bias_of_means": "bias",
    "entropy_table": "bias",
    "suppressed_cells": "bias",
    "DistributionComparison": "compare",
    "compare_distributions": "compare",
    "LONELY_PSU_CHOICES": "design",
    "SurveyDesign": "design",
    "ModelComparison": "model_compare",
    "compare_models": "model_compare",
    "RegressionResult": "regression",
    "regress": "regression",
    "MeanEstimate": "survey",
    "ProportionEstimates": "survey",
    "estimate_proportions": "survey",
    "mean": "survey",
    "proportions": "survey",
}

__all__ = [
    "LONELY_PSU_CHOICES",
    "DistributionComparison",
    "MeanEstimate",
    "ModelComparison",
    "ProportionEstimates",
    "RegressionResult",
    "SurveyDesign",
    "bias_of_correlations",
    "bias_of_means",
    "compare_distributions",
    "compare_models",
    "entropy_table",
    "estimate_proportions",
    "mean",
    "proportions",
    "regress",
    "suppressed_cells",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .bias import bias_of_correlations, bias_of_means, entropy_table, suppressed_cells
    from .compare import DistributionComparison, compare_distributions
    from .design import LONELY_PSU_CHOICES, SurveyDesign
    from .model_compare import ModelComparison, compare_models
    from .regression import RegressionResult, regress
    from .survey import MeanEstimate, ProportionEstimates, estimate_proportions, mean, proportions
