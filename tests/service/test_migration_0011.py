"""Migration 0011: the submission_requests table with its one-open-per-submission index; down (the table goes,
nothing else changes) and up again, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from service.db import _alembic_config, current_revision

ROW = (
    "INSERT INTO submission_requests (submission_id, course, exercise_id, identity_id, author, kind, text, status, "
    "created_at) VALUES (:sid, 'c1', 'ch05.svc_sum', :who, 'alice', 'regrade', 'look again', :status, :at)"
)


def _submission(engine) -> tuple[str, int]:
    with engine.begin() as conn:
        who = conn.execute(
            text("INSERT INTO identities (issuer, subject, name, created_at) VALUES ('titangrade', 'alice', 'alice', "
                 ":at) RETURNING id"), {"at": dt.datetime(2026, 12, 3)}).scalar_one()  # fmt: skip
        conn.execute(
            text('INSERT INTO submissions (id, identity_id, "user", course, exercise_id, lang, attempt, run, notebook, '
                 "status, max_score, message, created_at) VALUES (:sid, :who, 'alice', 'c1', 'ch05.svc_sum', "
                 "'en', 1, 1, :nb, 'graded', 3, '', :at)"),
            {"sid": "a" + "0" * 31, "who": who, "nb": b"{}", "at": dt.datetime(2026, 12, 3)},
        )  # fmt: skip
    return "a" + "0" * 31, who


def test_0011_adds_the_requests_table_and_goes_down_again(db_engine):
    cfg = _alembic_config(db_engine)
    before = ScriptDirectory.from_config(cfg).get_revision("0011").down_revision
    command.downgrade(cfg, before)
    assert "submission_requests" not in inspect(db_engine).get_table_names()
    sid, who = _submission(db_engine)
    command.upgrade(cfg, "0011")
    assert current_revision(db_engine) == "0011"
    indexes = {ix["name"]: ix for ix in inspect(db_engine).get_indexes("submission_requests")}
    assert indexes["ix_submission_requests_course_status"]["column_names"] == ["course", "status", "created_at"]
    assert indexes["uq_submission_requests_one_open"]["unique"]
    at = dt.datetime(2026, 12, 3, 10)
    with db_engine.begin() as conn:
        conn.execute(text(ROW), {"sid": sid, "who": who, "status": "open", "at": at})
        conn.execute(text(ROW), {"sid": sid, "who": who, "status": "answered", "at": at})  # not open: fine
    with pytest.raises(IntegrityError), db_engine.begin() as conn:
        conn.execute(text(ROW), {"sid": sid, "who": who, "status": "open", "at": at})
    command.downgrade(cfg, before)
    assert "submission_requests" not in inspect(db_engine).get_table_names()
    with db_engine.connect() as conn:  # the submission it was about is untouched
        assert conn.execute(text("SELECT status FROM submissions")).scalar_one() == "graded"
    command.upgrade(cfg, "head")
    assert "submission_requests" in inspect(db_engine).get_table_names()
