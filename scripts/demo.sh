#!/usr/bin/env bash
# Set up and open the dashboard on the bundled sample data (served on localhost only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/streamlit run app.py "$@"
