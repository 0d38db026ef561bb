"""The `titangrade` command: db upgrade/current, tokens create/list/revoke (hash stored, token printed once),
start-up checks."""
from __future__ import annotations

import os
import subprocess
import sys

from sqlalchemy import select

from service.auth.models import Identity, Membership, Token
from service.auth.service import hash_token, principal_for_token


def _cli(*args: str, db_url: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, TITANGRADE_DATABASE_URL=db_url, **env)
    return subprocess.run([sys.executable, "-m", "service.cli", *args], capture_output=True, text=True,
                          env=full, timeout=120)


def test_db_upgrade_then_tokens_create_list_revoke(tmp_path):
    from service.db import head_revision, make_engine, make_sessionmaker

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    refused = _cli("tokens", "create", "--role", "learner", "--user", "ann", "--course", "c9", db_url=url)
    assert refused.returncode != 0 and "titangrade db upgrade" in refused.stderr
    assert _cli("db", "upgrade", db_url=url).returncode == 0
    head = head_revision()
    assert f"schema at {head} (code expects {head})" in _cli("db", "current", db_url=url).stdout
    made = _cli("tokens", "create", "--role", "instructor", "--user", "tim", "--course", "c9", "--expires-days", "7",
                db_url=url)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    global_instructor = _cli("tokens", "create", "--role", "instructor", "--user", "tim", db_url=url)
    assert global_instructor.returncode != 0 and "needs a course" in global_instructor.stderr
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        row = s.scalar(select(Token))
        identity = s.get(Identity, row.identity_id)
        assert (identity.issuer, identity.subject, identity.global_role) == ("titangrade", "tim", None)
        assert [(m.course, m.role) for m in s.scalars(select(Membership))] == [("c9", "instructor")]
        assert row.token_hash == hash_token(token) and token not in row.token_hash
        assert 6.9 < (row.expires_at - row.created_at).total_seconds() / 86400 < 7.1
        assert principal_for_token(s, token=token).can_teach("c9")
    listed = _cli("tokens", "list", db_url=url).stdout
    assert "tim" in listed and "c9" in listed and "active" in listed and token not in listed
    assert _cli("tokens", "revoke", str(row.id), db_url=url).returncode == 0
    assert "tim" not in _cli("tokens", "list", db_url=url).stdout
    assert "revoked" in _cli("tokens", "list", "--all", db_url=url).stdout
    with make_sessionmaker(engine)() as s:
        assert principal_for_token(s, token=token) is None
    assert _cli("tokens", "revoke", "999", db_url=url).returncode != 0
    engine.dispose()


def test_prod_worker_without_secret_refuses_to_start(tmp_path):
    done = _cli("worker", db_url=f"sqlite:///{tmp_path / 'x.db'}", TITANGRADE_MODE="prod")
    assert done.returncode != 0 and "TITANGRADE_SECRET_KEY" in done.stderr
