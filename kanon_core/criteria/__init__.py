"""Privacy criteria as objects (k-anonymity, l-diversity, t-closeness, individual risk), combined with AND."""

from .base import (
    CRITERIA,
    Criterion,
    Evaluation,
    criteria_syntax,
    failing_records,
    parse_criteria,
    parse_criterion,
    register_criterion,
)
from .k_anonymity import KAnonymity
from .l_diversity import LDiversity
from .risk import MaxIndividualRisk
from .t_closeness import TCloseness

__all__ = ["CRITERIA", "Criterion", "Evaluation", "KAnonymity", "LDiversity", "MaxIndividualRisk", "TCloseness",
           "criteria_syntax", "failing_records", "parse_criteria", "parse_criterion", "register_criterion"]
