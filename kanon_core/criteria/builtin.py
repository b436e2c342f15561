"""The criteria shipped with kanon; importing this module registers each one's command-line prefix."""

from . import k_anonymity  # noqa: F401
