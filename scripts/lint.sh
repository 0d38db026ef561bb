#!/usr/bin/env bash
# Lint and type-check: ruff rules, ruff format (check only), mypy and the import contracts (lint-imports),
# configured in pyproject.toml.
#   bash scripts/lint.sh            # grading/ service/ exercises/lab/
#   bash scripts/lint.sh grading    # only these paths
# Runs every tool even when one fails, then exits 1 if any did. .ci/run runs it after install and before the
# tests, so a finding fails CI; fix with `ruff check --fix` / `ruff format`, or by hand (see pyproject.toml).
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/ruff ] && [ -x .venv/bin/mypy ] && [ -x .venv/bin/lint-imports ] || {
  echo "ruff/mypy/lint-imports missing: run bash scripts/install.sh" >&2; exit 2; }
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(grading service exercises/lab)
status=0
echo "== ruff check ${paths[*]}"
.venv/bin/ruff check "${paths[@]}" || status=1
echo "== ruff format --check ${paths[*]}"
.venv/bin/ruff format --check --output-format concise "${paths[@]}" || status=1  # ruff format --diff shows the changes
echo "== mypy ${paths[*]}"
.venv/bin/mypy "${paths[@]}" || status=1
echo "== lint-imports (the contracts in pyproject.toml [tool.importlinter], always the whole tree)"
.venv/bin/lint-imports --no-cache || status=1  # it reads the packages of the working directory
exit $status
