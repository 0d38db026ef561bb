"""The "submission received" outbox row, written by the intake's batch (batch.py) in the transaction that stores
the submission, its job and its `queued` event, but only for a submission that has a receiver: a line item of
its course and exercise on the platform the learner launched from (LTI passback sends a `Pending` score), or a
webhook endpoint of its course subscribed to `submission.received`. Who listens is asked of the outbox's
targets (service/outbox/receivers.py, put together in service/wiring.py) in one indexed query per batch;
uploads nobody listens for get no row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import cast

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from service.outbox.models import OutboxEvent
from service.outbox.receivers import Receivers
from service.outbox.targets import RECEIVED
from service.states import SubmissionStatus
from service.timefmt import rfc3339

_INSERT = insert(cast(Table, OutboxEvent.__table__)).inline()  # built once, as the batch's other statements


def outbox_rows(session: Session, rows: Sequence[dict], receivers: Receivers | None) -> list[dict]:
    """The outbox rows of the batch's queued submissions that someone listens for. `rows` are batch rows
    (submission columns and `_issuer`, the learner's identity issuer); no `receivers`: no rows (a caller
    outside the app, such as a script or a test of the limits, that wired no outbox targets)."""
    queued = [r for r in rows if r["status"] == SubmissionStatus.QUEUED]
    if receivers is None or not queued:
        return []
    interest = receivers.wanted(session, courses={r["course"] for r in queued})
    return [
        event_row(r)
        for r in queued
        if interest.wants(course=r["course"], exercise_id=r["exercise_id"], issuer=r["_issuer"])
    ]


def event_row(row: dict) -> dict:
    """The outbox row of one received submission. Its `created_at` is the submission's, which is the LTI
    `Pending` score's timestamp: older than any grade of it, so a platform never keeps it over the final."""
    at: dt.datetime = row["created_at"]
    return {
        "submission_id": row["id"],
        "kind": RECEIVED,
        "payload": {
            "submission_id": row["id"],
            "user": row["user"],
            "course": row["course"],
            "exercise_id": row["exercise_id"],
            "status": SubmissionStatus.QUEUED,
            "max_score": row["max_score"],
            "attempt": row["attempt"],
            "timestamp": rfc3339(at),
            "submitted_at": rfc3339(at),
            "late": (row.get("late_by_s") or 0) > 0,
            "late_by_s": row.get("late_by_s") or 0,
            "penalty_percent": row.get("penalty_percent") or 0,
        },
        "created_at": at,
        "delivered_at": None,
    }


def insert_events(conn, events: list[dict]) -> None:
    """One executemany INSERT, in the batch's transaction (and its PostgreSQL pipeline)."""
    if events:
        conn.execute(_INSERT, events)
