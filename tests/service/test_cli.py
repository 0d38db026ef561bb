"""The `titangrade` command: db upgrade/current, tokens create (hash stored, token printed), start-up checks."""
from __future__ import annotations

import os
import subprocess
import sys

from sqlalchemy import select

from service.auth.models import Token
from service.auth.service import hash_token


def _cli(*args: str, db_url: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, TITANGRADE_DATABASE_URL=db_url, **env)
    return subprocess.run([sys.executable, "-m", "service.cli", *args], capture_output=True, text=True,
                          env=full, timeout=120)


def test_db_upgrade_then_tokens_create(tmp_path):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    refused = _cli("tokens", "create", "--role", "learner", "--user", "ann", db_url=url)
    assert refused.returncode != 0 and "titangrade db upgrade" in refused.stderr
    assert _cli("db", "upgrade", db_url=url).returncode == 0
    from service.db import head_revision

    head = head_revision()  # the newest migration file, so this holds as revisions are added
    assert head != "0001" and f"schema at {head} (code expects {head})" in _cli("db", "current", db_url=url).stdout
    made = _cli("tokens", "create", "--role", "instructor", "--user", "tim", "--course", "c9", db_url=url)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    from service.db import make_engine, make_sessionmaker

    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        row = s.scalar(select(Token))
        assert (row.user, row.role, row.course) == ("tim", "instructor", "c9")
        assert row.token_hash == hash_token(token) and token not in row.token_hash
    engine.dispose()


def test_prod_worker_without_secret_refuses_to_start(tmp_path):
    done = _cli("worker", db_url=f"sqlite:///{tmp_path / 'x.db'}", TITANGRADE_MODE="prod")
    assert done.returncode != 0 and "TITANGRADE_SECRET_KEY" in done.stderr
