#!/usr/bin/env bash
# Set up everything and run every test: lint, unit and property tests, AppTest page tests, the
# real-browser test in Debian's Chromium, and the R cross-checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/system_deps.sh
.venv/bin/ruff check .
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}
.venv/bin/python -m pytest -n 2 --dist loadfile -q -rs -p no:cacheprovider "$@"
