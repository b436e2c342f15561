#!/usr/bin/env bash
# Set up everything and run every test: lint, unit and property tests, AppTest page tests, the
# real-browser test in Debian's Chromium, and the R cross-checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/system_deps.sh
.venv/bin/ruff check .
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}
# the whole run is bounded as well (it takes about 10 minutes): a hang ends it, with the stacks printed
timeout -k 60 2400 .venv/bin/python -m pytest -n 2 --dist loadfile -q -rs -p no:cacheprovider "$@"
