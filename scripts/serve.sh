#!/usr/bin/env bash
# The README's start command: set up if needed, then start the API and local workers (SQLite file in
# the working directory, development mode unless TITANGRADE_* settings say otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/titangrade serve "$@"
