#!/usr/bin/env bash
# Set up and open the dashboard on the bundled sample data (served on localhost only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}  # see app.py
exec .venv/bin/python -m kanon_app.serve "$@"  # loads the libraries, then streamlit run app.py
