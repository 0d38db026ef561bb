#!/usr/bin/env bash
# The README's test command: set up if needed, then run the whole suite (SQLite and PostgreSQL).
# PostgreSQL is expected on 127.0.0.1:5432 (trust auth, database `test`); TITANGRADE_TEST_PG_URL overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# Generated exercise files (templates, solutions, answer files, mistake fixtures) must match their masters.
.venv/bin/titangrade exercises build --check | tail -n 20
exec .venv/bin/python -m pytest "$@"
