"""Schema management: upgrade to head, refuse an old schema unless migrating, refuse an unknown one."""
from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from service.db import SchemaMismatch, check_schema, current_revision, head_revision, make_engine


def test_fresh_database_is_refused_without_migration_then_upgraded(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'new.db'}")
    with pytest.raises(SchemaMismatch, match="titangrade db upgrade"):
        check_schema(engine, migrate=False)
    assert check_schema(engine, migrate=True) == head_revision() == current_revision(engine)
    assert check_schema(engine, migrate=False) == head_revision()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_unknown_schema_revision_is_refused(db_engine):
    with db_engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'zz_from_the_future'"))
    with pytest.raises(SchemaMismatch, match="unknown to this titangrade version"):
        check_schema(db_engine, migrate=True)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_fair_share_migration_gives_existing_jobs_their_learner(tmp_path, kind):
    """0003 on a database holding 0001-era rows: each job takes its submission's user, and it downgrades."""
    from alembic import command
    from sqlalchemy import create_engine

    from service.db import _alembic_config

    url = f"sqlite:///{tmp_path / 'old.db'}"
    dropper = None
    if kind == "postgres":
        import os
        from urllib.parse import quote

        pg_url = os.environ.get("TITANGRADE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
        admin = create_engine(pg_url)
        schema = f"tgmig_{uuid.uuid4().hex[:10]}"
        try:
            with admin.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        except Exception as exc:  # noqa: BLE001
            pytest.skip(f"PostgreSQL unavailable ({type(exc).__name__})")
        url = f"{pg_url}{'&' if '?' in pg_url else '?'}options={quote(f'-csearch_path={schema}')}"

        def dropper():
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    engine = make_engine(url)
    try:
        cfg = _alembic_config(engine)
        command.upgrade(cfg, "0001")
        with engine.begin() as conn:
            conn.execute(text("""INSERT INTO submissions (id, "user", course, exercise_id, lang, attempt, notebook,
                                 status, max_score, message, created_at) VALUES ('s1', 'ann', 'c', 'ch05.x', 'en', 1,
                                 :nb, 'queued', 3, '', CURRENT_TIMESTAMP)"""), {"nb": b"{}"})
            conn.execute(text("""INSERT INTO jobs (submission_id, status, lane, priority, devices, world_size, attempts,
                                 max_attempts, available_at, last_error, created_at) VALUES ('s1', 'queued', 'long',
                                 0, 0, 1, 0, 3, CURRENT_TIMESTAMP, '', CURRENT_TIMESTAMP)"""))
        command.upgrade(cfg, "0003")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT learner, claimed_at FROM jobs")).one() == ("ann", None)
        command.upgrade(cfg, "head")  # 0006 re-keys it by the identity 0002 made for ann
        with engine.connect() as conn:
            identity = conn.execute(text("SELECT identity_id FROM submissions")).scalar()
            assert conn.execute(text("SELECT learner FROM jobs")).scalar() == f"identity:{identity}"
        command.downgrade(cfg, "0001")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM jobs")).scalar() == 1  # no cascade lost the rows
            assert conn.execute(text("SELECT count(*) FROM submissions")).scalar() == 1
        command.upgrade(cfg, "head")  # and up again
    finally:
        engine.dispose()
        if dropper is not None:
            dropper()
