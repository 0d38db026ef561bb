"""Building the `titangrade` parser (every `--help`, `titangrade submit`) imports neither SQLAlchemy nor
FastAPI: each command imports what it needs when it runs (service/cli.py, service/commands.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("sqlalchemy", "fastapi", "uvicorn", "httpx", "service.wiring", "service.bootstrap")


def test_building_the_parser_loads_no_database_or_web_stack():
    code = (
        "import sys; from service.cli import build_parser; build_parser(); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
