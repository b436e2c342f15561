"""The criteria shipped with kanon; importing this module registers each one's command-line prefix."""

from . import k_anonymity, l_diversity, risk, t_closeness  # noqa: F401
