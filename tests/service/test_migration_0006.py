"""Migration 0006: queued and past jobs are re-keyed from the learner's display name to its identity, so
fair share after an upgrade sees one learner per identity (two "alice"s from two issuers stay two)."""
from __future__ import annotations

from alembic import command
from sqlalchemy import text

from service.db import _alembic_config, current_revision, transaction


def _learners(engine) -> dict[str, str]:
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT submission_id, learner FROM jobs")).all())


def test_0006_rekeys_jobs_by_identity_and_back(db_engine, sessions, add_submission):
    with transaction(sessions) as s:
        local, _ = add_submission(s, user="alice")
        lms, _ = add_submission(s, user="alice", issuer="https://lms.example")
        ids = {local.id: local.identity_id, lms.id: lms.identity_id}
    assert local.identity_id != lms.identity_id
    cfg = _alembic_config(db_engine)
    command.downgrade(cfg, "0005")
    assert _learners(db_engine) == {local.id: "alice", lms.id: "alice"}  # what 0005 kept: the display name
    command.upgrade(cfg, "0006")
    assert current_revision(db_engine) == "0006"
    assert _learners(db_engine) == {sid: f"identity:{iid}" for sid, iid in ids.items()}
    command.upgrade(cfg, "head")
