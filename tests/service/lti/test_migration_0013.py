"""Migration 0013 (LTI resource links bound to exercises, the line item's deployment) up, down and up again on
SQLite and PostgreSQL: a line item made before it keeps its row with no deployment, a resource link is
unique per (platform, deployment, context, link id), and the downgrade drops both without touching the rest."""
from __future__ import annotations

import datetime as dt

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from service.db import _alembic_config, current_revision

LINK = ("INSERT INTO lti_resource_links (platform_id, deployment_id, context_id, resource_link_id, course, "
        "exercise_id, bound_by, created_at, updated_at) VALUES (1, 'd', 'c', :link, 'k', 'ch05.svc_sum', 'launch', "
        ":at, :at)")


def test_0013_up_and_down(db_engine):
    cfg = _alembic_config(db_engine)
    command.downgrade(cfg, "0009")
    at = dt.datetime(2026, 12, 3)
    with db_engine.begin() as conn:
        conn.execute(text("INSERT INTO lti_platforms (name, issuer, client_id, auth_login_url, auth_token_url, "
                          "keyset_url, deployment_ids, created_at) VALUES ('p', 'https://lms.example', 'c', "
                          "'https://lms.example/a', 'https://lms.example/t', 'https://lms.example/k', '[\"d\"]', :at)"),
                     {"at": at})
        conn.execute(text("INSERT INTO lti_line_items (platform_id, url, course, exercise_id, created_at) "
                          "VALUES (1, 'https://lms.example/li/1', 'k', 'ch05.svc_sum', :at)"), {"at": at})
    assert "lti_resource_links" not in inspect(db_engine).get_table_names()
    command.upgrade(cfg, "0013")
    assert current_revision(db_engine) == "0013"
    with db_engine.connect() as conn:
        assert conn.execute(text("SELECT deployment_id FROM lti_line_items")).all() == [(None,)]
    with db_engine.begin() as conn:
        conn.execute(text(LINK), {"link": "rl-1", "at": at})
    with pytest.raises(IntegrityError), db_engine.begin() as conn:
        conn.execute(text(LINK), {"link": "rl-1", "at": at})
    command.downgrade(cfg, "0009")
    assert "lti_resource_links" not in inspect(db_engine).get_table_names()
    assert "deployment_id" not in {c["name"] for c in inspect(db_engine).get_columns("lti_line_items")}
    with db_engine.connect() as conn:
        assert conn.execute(text("SELECT url FROM lti_line_items")).all() == [("https://lms.example/li/1",)]
    command.upgrade(cfg, "head")
    assert "lti_resource_links" in inspect(db_engine).get_table_names()
