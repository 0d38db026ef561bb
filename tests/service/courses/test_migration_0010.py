"""Migration 0010: schedules, extensions, the course's zone and each submission's stored lateness; existing
submissions are on time (there was no schedule), and down again and up, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from service.db import _alembic_config, current_revision

AT = dt.datetime(2026, 11, 30)


def test_0010_adds_deadlines_and_leaves_old_submissions_on_time(db_engine):
    cfg = _alembic_config(db_engine)
    command.downgrade(cfg, "0009")
    assert "exercise_schedules" not in inspect(db_engine).get_table_names()
    with db_engine.begin() as conn:
        ident = conn.execute(
            text("INSERT INTO identities (issuer, subject, name, created_at) VALUES ('titangrade', 'al', 'al', :at) "
                 "RETURNING id"), {"at": AT}).scalar_one()
        conn.execute(text(
            "INSERT INTO submissions (id, identity_id, user, course, exercise_id, lang, attempt, run, notebook, "
            "status, max_score, message, created_at) VALUES ('s1', :i, 'al', 'c1', 'e1', 'en', 1, 1, :nb, "
            "'graded', 3, '', :at)".replace(" user,", ' "user",')), {"i": ident, "nb": b"{}", "at": AT})
        conn.execute(text("INSERT INTO course_settings (course, updated_by, updated_at) VALUES ('c1', 'x', :at)"),
                     {"at": AT})
    command.upgrade(cfg, "0010")
    assert current_revision(db_engine) == "0010"
    with db_engine.begin() as conn:
        assert conn.execute(text("SELECT late_by_s, penalty_percent FROM submissions")).one() == (0, 0.0)
        assert conn.execute(text("SELECT timezone FROM course_settings")).scalar_one() == "UTC"
        conn.execute(text("INSERT INTO exercise_schedules (course, exercise_id, due_at, updated_at) "
                          "VALUES ('c1', 'e1', :at, :at)"), {"at": AT})
        assert conn.execute(text("SELECT late_kind, late_percent FROM exercise_schedules")).one() == ("none", 0.0)
        ext = ("INSERT INTO extensions (course, identity_id, exercise_id, due_at, granted_at) "
               "VALUES ('c1', :i, 'e1', :at, :at)")
        conn.execute(text(ext), {"i": ident, "at": AT})
    with pytest.raises(IntegrityError), db_engine.begin() as conn:  # one extension per learner and exercise
        conn.execute(text(ext), {"i": ident, "at": AT})
    command.downgrade(cfg, "0009")
    names = inspect(db_engine).get_table_names()
    assert "extensions" not in names and "exercise_schedules" not in names
    assert "late_by_s" not in {c["name"] for c in inspect(db_engine).get_columns("submissions")}
    command.upgrade(cfg, "head")
