"""`titangrade webhooks ...` against a real database, and migration 0004."""
from __future__ import annotations

from alembic import command
from sqlalchemy import select, text

from cli_support import cli


def test_webhooks_commands(sqlite_template, tmp_path):
    import shutil

    from service.db import make_engine, make_sessionmaker
    from service.webhooks.models import WebhookEndpoint

    db = tmp_path / "cli.db"
    shutil.copyfile(sqlite_template, db)
    url = f"sqlite:///{db}"
    added = cli("webhooks", "add", "--course", "c1", "--url", "https://lms.example.edu/h", "--events",
                 "grade.stored", db_url=url)
    assert added.returncode == 0, added.stderr
    secret = added.stdout.split("secret (shown once): ")[1].strip()
    assert secret.startswith("whsec_")
    listed = cli("webhooks", "list", db_url=url)
    assert "https://lms.example.edu/h" in listed.stdout and secret not in listed.stdout
    bad = cli("webhooks", "add", "--course", "c1", "--url", "https://x.example/h", "--events", "nope", db_url=url)
    assert bad.returncode != 0 and "event types must be some of" in bad.stderr
    rotated = cli("webhooks", "rotate", "1", db_url=url)
    assert rotated.returncode == 0 and secret not in rotated.stdout and "whsec_" in rotated.stdout
    assert "old secret until" in cli("webhooks", "list", db_url=url).stdout
    assert cli("webhooks", "replay", "1", "--since", "2000-01-01T00:00:00Z", db_url=url).returncode == 0
    assert cli("webhooks", "deliver", "--burst", db_url=url).returncode == 0
    assert cli("webhooks", "remove", "1", db_url=url).returncode == 0
    missing = cli("webhooks", "remove", "1", db_url=url)
    assert missing.returncode != 0 and "does not exist" in missing.stderr
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        row = s.scalar(select(WebhookEndpoint))
        assert row.removed_at is not None and row.previous_secret == secret
    engine.dispose()


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
