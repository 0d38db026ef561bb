#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: system packages for the sandbox, then a venv (.venv) with the
# project, the training stack (torch 2.13 CPU, torchtitan 0.3.0, verl 0.9.1) and the test tools.
# Skips the pip work when pyproject.toml has not changed since the last successful install.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f scripts/install-system-deps.sh ]; then bash scripts/install-system-deps.sh; fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.titangrade-installed
want=$(sha256sum pyproject.toml scripts/install.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip wheel
  .venv/bin/pip install -q -e ".[training,dev]"
  # verl's extras pin torch==2.11; its runtime needs are in our training extra, so install it alone.
  .venv/bin/pip install -q --no-deps "verl==0.9.1"
  echo "$want" > "$stamp"
fi
# axe-core (the accessibility engine the browser tests load into each page), from the npm registry,
# pinned; kept out of the served static files because only the tests use it.
AXE=.node/node_modules/axe-core/axe.min.js
if [ ! -f "$AXE" ] && command -v npm >/dev/null; then
  npm install --prefix .node --no-save --no-audit --no-fund --silent axe-core@4.14.1 >/dev/null
fi
# Open edX's LTI 1.3 consumer (lti-consumer-xblock) for tests/service/lti/test_openedx_platform.py, in its
# own venv (.lms-venv), run as a separate platform process: it pulls Django, XBlock and Django REST
# framework, which titangrade does not use. PyJWT needs cryptography for RS256 and lti-consumer-xblock does
# not pull it. Not fatal here: without it that test fails, naming this script.
lms_want="lti-consumer-xblock==11.4.4 cryptography==50.0.2"
if [ "$(cat .lms-venv/.titangrade-installed 2>/dev/null)" != "$lms_want" ]; then
  if { [ -x .lms-venv/bin/python ] || "$PY" -m venv .lms-venv; } && .lms-venv/bin/pip install -q $lms_want; then
    echo "$lms_want" > .lms-venv/.titangrade-installed
  else
    echo "install.sh: .lms-venv (Open edX's LTI consumer) not installed; test_openedx_platform.py will fail" >&2
  fi
fi
