"""Privacy criteria as objects (k-anonymity, l-diversity, t-closeness, individual risk), combined with AND."""

from .base import Criterion, Evaluation, failing_records

__all__ = ["Criterion", "Evaluation", "failing_records"]
