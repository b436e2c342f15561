from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

settings.register_profile(
    "kanon", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
# CI draws the same examples on every run, so that a submission passes or fails on its code alone; the
# "explore" profile draws many fresh ones to hunt for new counterexamples between releases.
settings.register_profile(
    "ci", deadline=None, max_examples=100, derandomize=True, suppress_health_check=list(HealthCheck)
)
settings.register_profile(
    "explore", deadline=None, max_examples=2000, suppress_health_check=list(HealthCheck), print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kanon"))
