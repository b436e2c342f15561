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

__all__ = ["CRITERIA", "Criterion", "Evaluation", "KAnonymity", "criteria_syntax", "failing_records",
           "parse_criteria", "parse_criterion", "register_criterion"]
