"""`titangrade webhooks ...` and `titangrade intake ...` against a real database, and migration 0004."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess

from alembic import command
from sqlalchemy import select, text


def _cli(*args: str, db_url: str) -> subprocess.CompletedProcess:
    """The command in this process (each subprocess would spend seconds importing): exit code, stdout, stderr."""
    from service.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("TITANGRADE_DATABASE_URL")
    os.environ["TITANGRADE_DATABASE_URL"] = db_url
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
                if isinstance(exc.code, str):
                    err.write(exc.code)
    finally:
        if old is None:
            del os.environ["TITANGRADE_DATABASE_URL"]
        else:
            os.environ["TITANGRADE_DATABASE_URL"] = old
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_webhooks_and_intake_commands(sqlite_template, tmp_path):
    import shutil

    from service.db import make_engine, make_sessionmaker
    from service.webhooks.models import WebhookEndpoint

    db = tmp_path / "cli.db"
    shutil.copyfile(sqlite_template, db)
    url = f"sqlite:///{db}"
    added = _cli("webhooks", "add", "--course", "c1", "--url", "https://lms.example.edu/h", "--events",
                 "grade.stored", db_url=url)
    assert added.returncode == 0, added.stderr
    secret = added.stdout.split("secret (shown once): ")[1].strip()
    assert secret.startswith("whsec_")
    listed = _cli("webhooks", "list", db_url=url)
    assert "https://lms.example.edu/h" in listed.stdout and secret not in listed.stdout
    bad = _cli("webhooks", "add", "--course", "c1", "--url", "https://x.example/h", "--events", "nope", db_url=url)
    assert bad.returncode != 0 and "event types must be some of" in bad.stderr
    rotated = _cli("webhooks", "rotate", "1", db_url=url)
    assert rotated.returncode == 0 and secret not in rotated.stdout and "whsec_" in rotated.stdout
    assert "old secret until" in _cli("webhooks", "list", db_url=url).stdout
    assert _cli("webhooks", "replay", "1", "--since", "2000-01-01T00:00:00Z", db_url=url).returncode == 0
    assert _cli("webhooks", "deliver", "--burst", db_url=url).returncode == 0
    assert _cli("webhooks", "remove", "1", db_url=url).returncode == 0
    missing = _cli("webhooks", "remove", "1", db_url=url)
    assert missing.returncode != 0 and "does not exist" in missing.stderr
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        row = s.scalar(select(WebhookEndpoint))
        assert row.removed_at is not None and row.previous_secret == secret
    engine.dispose()
    intake = _cli("intake", "add", "--course", "c1", "--name", "gitea", "--issuer", "https://git.example", db_url=url)
    assert intake.returncode == 0 and "integration=gitea" in intake.stdout and "whsec_" in intake.stdout
    assert "gitea" in _cli("intake", "list", db_url=url).stdout
    again = _cli("intake", "add", "--course", "c1", "--name", "gitea", "--issuer", "x", db_url=url)
    assert again.returncode != 0 and "already has an intake integration" in again.stderr
    own = _cli("intake", "add", "--course", "c1", "--name", "forge", db_url=url)  # no --issuer: its own namespace
    assert own.returncode == 0 and "issuer intake:c1:forge" in own.stdout
    assert _cli("intake", "confirm-issuer", "1", db_url=url).returncode == 0
    assert _cli("intake", "rotate", "1", db_url=url).returncode == 0
    assert _cli("intake", "remove", "1", db_url=url).returncode == 0
    assert "gitea" not in _cli("intake", "list", db_url=url).stdout


def test_0004_marks_existing_outbox_rows_dispatched_and_downgrades(db_engine):
    from service.db import _alembic_config, current_revision

    cfg = _alembic_config(db_engine)
    command.downgrade(cfg, "0002")
    with db_engine.begin() as conn:
        conn.execute(text("INSERT INTO identities (issuer, subject, name, created_at) "
                          "VALUES ('titangrade', 'ann', 'ann', '2026-11-01')"))
        ident = conn.execute(text("SELECT id FROM identities")).scalar()
        conn.execute(text("INSERT INTO submissions (id, identity_id, \"user\", course, exercise_id, lang, attempt, "
                          "run, notebook, status, max_score, message, created_at) VALUES ('s1', :i, 'ann', 'c1', "
                          "'ch05.svc_sum', 'en', 1, 1, :nb, 'graded', 3.0, '', '2026-11-01')"),
                     {"i": ident, "nb": b"{}"})
        conn.execute(text("INSERT INTO grade_outbox (submission_id, kind, payload, created_at) "
                          "VALUES ('s1', 'grade.stored', '{}', '2026-11-01')"))
    command.upgrade(cfg, "0004")
    assert current_revision(db_engine) == "0004"
    with db_engine.connect() as conn:
        assert conn.execute(text("SELECT delivered_at FROM grade_outbox")).scalar() is not None
        assert conn.execute(text("SELECT count(*) FROM outbox_deliveries")).scalar() == 0
    command.downgrade(cfg, "0002")
    with db_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM grade_outbox")).scalar() == 1
    command.upgrade(cfg, "head")
