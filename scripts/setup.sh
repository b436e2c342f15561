#!/usr/bin/env bash
# Set up kanon on a fresh Debian machine with Python 3.11: a virtual environment with the pinned
# dependencies (requirements.lock) and kanon itself (editable). Re-running is cheap: the install is
# skipped while the lock file is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "kanon needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1))." >&2
  exit 1
fi
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "Installing python3-venv ..."
  as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -qq && as_root apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.kanon-lock-$(sha256sum requirements.lock pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "Installing pinned dependencies into .venv ..."
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.lock
  .venv/bin/python -m pip install -q --no-deps -e .
  rm -f .venv/.kanon-lock-*
  touch "$stamp"
fi
# numba compiles each kernel at its first call and keeps it in its cache until the module's file changes
# (its time or size): compiled here once, ahead of time, so no first suppression, search or MINUC count
# waits for the compiler (about a minute on 2 cores; `kanon kernels`). Redone when kanon's code changes.
kernels=.venv/.kanon-kernels-$( (echo "$stamp"; find kanon_core -name '*.py' -printf '%p %T@ %s\n' | sort) \
  | sha256sum | cut -c1-16)
if [ ! -f "$kernels" ]; then
  echo "Compiling kanon's kernels into numba's cache (after an install or a change of kanon's code) ..."
  .venv/bin/python -m kanon_core kernels
  rm -f .venv/.kanon-kernels-*
  touch "$kernels"
fi
