"""Migration 0008: intake integrations made with a free-text issuer become `unconfirmed` (refused until an
admin confirms them), names are unique per course, the limits index gains the course, and revoked web
sessions get their table; down again and up, on SQLite and PostgreSQL."""
from __future__ import annotations

import datetime as dt

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from service.db import _alembic_config, current_revision

ROW = ("INSERT INTO intake_integrations (name, course, issuer, secret, created_by, created_at) "
       "VALUES (:name, :course, :issuer, 's', 'x', :at)")


def _insert(engine, **values) -> None:
    with engine.begin() as conn:
        conn.execute(text(ROW), {"at": dt.datetime(2026, 11, 30), **values})


def test_0008_marks_free_issuers_unconfirmed_and_makes_names_per_course(db_engine):
    cfg = _alembic_config(db_engine)
    command.downgrade(cfg, "0007")
    _insert(db_engine, name="lms", course="c1", issuer="titangrade")
    _insert(db_engine, name="own", course="c1", issuer="intake:c1:own")
    command.upgrade(cfg, "0008")
    assert current_revision(db_engine) == "0008"
    with db_engine.connect() as conn:
        kinds = dict(conn.execute(text("SELECT name, issuer_kind FROM intake_integrations")).all())
    assert kinds == {"lms": "unconfirmed", "own": "own"}
    _insert(db_engine, name="lms", course="c2", issuer="intake:c2:lms")  # another course: the same name is fine
    with pytest.raises(IntegrityError):
        _insert(db_engine, name="lms", course="c1", issuer="intake:c1:lms")
    limits = {ix["name"]: ix["column_names"] for ix in inspect(db_engine).get_indexes("submissions")}
    assert limits["ix_submissions_learner_limits"] == ["identity_id", "course", "exercise_id", "status", "created_at"]
    assert "web_session_revocations" in inspect(db_engine).get_table_names()
    command.downgrade(cfg, "0007")  # names global again: the later "lms" is renamed, nothing is lost
    with db_engine.connect() as conn:
        names = sorted(r[0] for r in conn.execute(text("SELECT name FROM intake_integrations")))
    assert len(names) == 3 and names[0] == "lms" and names[1].startswith("lms~dup-")
    command.upgrade(cfg, "head")
