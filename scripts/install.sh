#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: system packages for the sandbox, a venv with the project.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f scripts/install-system-deps.sh ]; then bash scripts/install-system-deps.sh; fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --upgrade pip wheel
.venv/bin/pip install -q -e ".[training,dev]"
# verl's own extras pin torch==2.11; its runtime needs are in the training extra, so skip its deps.
.venv/bin/pip install -q --no-deps "verl==0.9.1"
