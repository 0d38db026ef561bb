"""Migration 0012: memberships gain `inactive_at`, platforms a `status` (every existing one active), LTI
contexts their roster state and line items their resource link and origin; down again (pending
registrations cannot be kept without a status, so they go) and up, on SQLite and PostgreSQL."""
from __future__ import annotations

import datetime as dt

from alembic import command
from sqlalchemy import inspect, text

from service.db import _alembic_config, current_revision

PLATFORM = ("INSERT INTO lti_platforms (name, issuer, client_id, auth_login_url, auth_token_url, keyset_url, "
            "deployment_ids, created_at) VALUES (:name, 'https://lms.example', :client, 'https://lms.example/a', "
            "'https://lms.example/t', 'https://lms.example/k', '[\"1\"]', :at)")


def columns(engine, table: str) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns(table)}


def test_0012_up_and_down(db_engine):
    cfg = _alembic_config(db_engine)
    command.downgrade(cfg, "0009")
    assert "inactive_at" not in columns(db_engine, "memberships")
    assert "status" not in columns(db_engine, "lti_platforms")
    with db_engine.begin() as conn:
        conn.execute(text(PLATFORM), {"name": "old", "client": "c-old", "at": dt.datetime(2026, 12, 1)})
    command.upgrade(cfg, "0012")
    assert current_revision(db_engine) == "0012"
    assert {"memberships_url", "roster_requested_at", "roster_synced_at", "roster_members", "roster_error"} <= columns(
        db_engine, "lti_contexts")
    assert {"resource_link_id", "origin"} <= columns(db_engine, "lti_line_items")
    with db_engine.begin() as conn:
        assert conn.execute(text("SELECT status FROM lti_platforms WHERE client_id = 'c-old'")).scalar() == "active"
        conn.execute(text(PLATFORM.replace("created_at)", "created_at, status)").replace(":at)", ":at, 'pending')")),
                     {"name": "new", "client": "c-new", "at": dt.datetime(2026, 12, 2)})
    command.downgrade(cfg, "0009")
    with db_engine.connect() as conn:
        assert [r[0] for r in conn.execute(text("SELECT client_id FROM lti_platforms"))] == ["c-old"]
    assert "origin" not in columns(db_engine, "lti_line_items")
    command.upgrade(cfg, "head")
    assert "inactive_at" in columns(db_engine, "memberships")
