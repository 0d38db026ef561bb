"""Migration 0002: users matched by name become identities (issuer titangrade) with memberships; tokens,
submissions, jobs and events survive the table rebuilds; downgrade goes back to name-keyed tokens."""
from __future__ import annotations

import datetime as dt

from alembic import command
from sqlalchemy import text

from service.auth.service import hash_token, principal_for_token
from service.db import _alembic_config, current_revision, make_sessionmaker

NOW = dt.datetime(2026, 11, 1, 12, 0, 0)
OLD_TOKENS = [  # token, user, role, course, revoked
    ("tok-root", "root", "admin", None, False),
    ("tok-tim", "tim", "instructor", "c1", False),
    ("tok-gil", "gil", "instructor", None, False),  # course-less instructor: used to mean every course
    ("tok-ann", "ann", "learner", None, False),  # filed under course "default"
    ("tok-bob", "bob", "learner", "c1", True),
]
OLD_SUBS = [("s-ann", "ann", "default"), ("s-bob", "bob", "c1"), ("s-zed", "zed", "c2")]  # zed had no token


def _insert_0001_rows(engine) -> None:
    with engine.begin() as conn:
        for token, user, role, course, revoked in OLD_TOKENS:
            conn.execute(text('INSERT INTO tokens (token_hash, "user", role, course, revoked, created_at) '
                              "VALUES (:h, :u, :r, :c, :rv, :t)"),
                         {"h": hash_token(token), "u": user, "r": role, "c": course, "rv": revoked, "t": NOW})
        for sid, user, course in OLD_SUBS:
            conn.execute(text('INSERT INTO submissions (id, "user", course, exercise_id, lang, attempt, '
                              "idempotency_key, notebook, status, max_score, message, created_at) VALUES "
                              "(:id, :u, :c, 'ch05.svc_sum', 'en', 1, :k, :nb, 'graded', 3.0, '', :t)"),
                         {"id": sid, "u": user, "c": course, "k": f"key-{sid}", "nb": b"{}", "t": NOW})
            conn.execute(text("INSERT INTO jobs (submission_id, status, lane, priority, devices, world_size, "
                              "attempts, max_attempts, available_at, last_error, created_at) VALUES "
                              "(:id, 'done', 'short', 0, 0, 1, 1, 3, :t, '', :t)"), {"id": sid, "t": NOW})
            for event in ("queued", "done"):
                conn.execute(text("INSERT INTO progress_events (submission_id, event, data, created_at) "
                                  "VALUES (:id, :e, '{}', :t)"), {"id": sid, "e": event, "t": NOW})


def test_0002_turns_names_into_identities_and_keeps_every_row(db_engine):
    cfg = _alembic_config(db_engine)
    command.downgrade(cfg, "0001")
    assert current_revision(db_engine) == "0001"
    _insert_0001_rows(db_engine)
    command.upgrade(cfg, "0002")
    with db_engine.connect() as conn:
        identities = {r.subject: (r.issuer, r.global_role) for r in conn.execute(text(
            "SELECT issuer, subject, global_role FROM identities"))}
        members = {(r.subject, r.course): r.role for r in conn.execute(text(
            "SELECT i.subject, m.course, m.role FROM memberships m JOIN identities i ON i.id = m.identity_id"))}
        owners = dict(conn.execute(text("SELECT s.id, i.subject FROM submissions s JOIN identities i "
                                        "ON i.id = s.identity_id")).all())
        children = [conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar() for t in ("jobs", "progress_events")]
        runs = {r[0] for r in conn.execute(text("SELECT run FROM progress_events"))} | {
            r[0] for r in conn.execute(text("SELECT run FROM submissions"))}
    assert identities == {u: ("titangrade", "admin" if u == "root" else None)
                          for u in ("root", "tim", "gil", "ann", "bob", "zed")}
    assert members == {("tim", "c1"): "instructor", ("ann", "default"): "learner", ("bob", "c1"): "learner",
                       ("zed", "c2"): "learner", ("gil", "c1"): "instructor", ("gil", "c2"): "instructor",
                       ("gil", "default"): "instructor"}
    assert owners == {"s-ann": "ann", "s-bob": "bob", "s-zed": "zed"}
    assert children == [3, 6] and runs == {1}  # the SQLite table rebuild cascaded nothing away
    command.upgrade(cfg, "head")  # the service's own token lookup reads today's schema (e.g. 0012's inactive_at)
    with make_sessionmaker(db_engine)() as s:
        root, tim, ann = (principal_for_token(s, token=t) for t in ("tok-root", "tok-tim", "tok-ann"))
        assert root.is_admin and tim.can_teach("c1") and not tim.can_teach("c2")
        assert ann.memberships == {"default": "learner"} and not ann.is_staff
        assert principal_for_token(s, token="tok-bob") is None  # revoked stays revoked
        s.commit()
    command.downgrade(cfg, "0001")
    with db_engine.connect() as conn:
        back = {r[0]: (r[1], r[2], bool(r[3])) for r in conn.execute(text(
            'SELECT "user", role, course, revoked FROM tokens'))}
        assert conn.execute(text("SELECT COUNT(*) FROM progress_events")).scalar() == 6
    assert back == {"root": ("admin", None, False), "tim": ("instructor", "c1", False),
                    "gil": ("instructor", None, False), "ann": ("learner", None, False),
                    "bob": ("learner", "c1", True)}
    command.upgrade(cfg, "head")
