"""Utility: what a treatment costs the analyst (seed 000 section 4, seed 002).

* :mod:`.design` -- survey design (weights, strata, PSUs) and Taylor-linearization variances;
* :mod:`.survey` -- weighted percentages and means with design-based CIs (agree with R ``survey``);
* :mod:`.formula`, :mod:`.regression` -- survey-weighted linear/logistic regression, ``svyglm`` SEs;
* :mod:`.compare` -- before vs after percentages, CI overlap and summaries;
* :mod:`.model_compare` -- the three regression models of seed 000 table 4;
* :mod:`.bias` -- bias of means and correlations, suppressed cells, entropy;
* :mod:`.plots` -- plotly figures for all of the above.
"""

from .bias import bias_of_correlations, bias_of_means, entropy_table, suppressed_cells
from .compare import DistributionComparison, compare_distributions
from .design import LONELY_PSU_CHOICES, SurveyDesign
from .model_compare import ModelComparison, compare_models
from .regression import RegressionResult, regress
from .survey import MeanEstimate, ProportionEstimates, estimate_proportions, mean, proportions

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
