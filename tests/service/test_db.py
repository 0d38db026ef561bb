"""Schema management: upgrade to head, refuse an old schema unless migrating, refuse an unknown one."""
from __future__ import annotations

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
