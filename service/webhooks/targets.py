"""Fan-out: each new outbox event becomes one delivery per interested target, in one transaction.

A target kind plugs in with a `TargetSource` (which targets want this event, and the exact body to send
them) and a `Sender` (service/webhooks/delivery.py). Webhook endpoints are the first kind; LTI grade
passback can register a second without touching claiming, retries, dead-lettering or replay.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.auth.models import Identity
from service.db import utcnow
from service.grades.models import OutboxEvent
from service.submissions.models import Submission
from service.timefmt import rfc3339
from service.webhooks.models import OutboxDelivery, WebhookEndpoint

EVENT_TYPES: tuple[str, ...] = ("grade.stored", "grade.changed", "submission.not_gradable")


class TargetSource(Protocol):
    kind: str

    def targets(self, session: Session, *, course: str, event_type: str) -> list[int]: ...

    def body(self, session: Session, *, event: OutboxEvent, event_type: str, target_id: int) -> str: ...


def public_type(session: Session, event: OutboxEvent) -> str | None:
    """The event type receivers see, or None for outbox rows that change nothing (a failed regrade)."""
    status = (event.payload or {}).get("status")
    if event.kind == "grade.overridden":
        return "grade.changed"
    if event.kind != "grade.stored":
        return None
    if status == "not_gradable":
        return "submission.not_gradable"
    earlier = session.scalars(select(OutboxEvent.payload).where(
        OutboxEvent.submission_id == event.submission_id, OutboxEvent.id < event.id,
        OutboxEvent.kind.in_(("grade.stored", "grade.overridden"))))
    graded_before = any((p or {}).get("status") != "not_gradable" for p in earlier)
    return "grade.changed" if graded_before else "grade.stored"


class WebhookTargets:
    """Endpoints of the event's course that subscribed to its type: {"type", "timestamp", "data"} bodies."""

    kind = "webhook"

    def targets(self, session: Session, *, course: str, event_type: str) -> list[int]:
        rows = session.execute(select(WebhookEndpoint.id, WebhookEndpoint.event_types)
                               .where(WebhookEndpoint.course == course, WebhookEndpoint.removed_at.is_(None)))
        return [endpoint_id for endpoint_id, types in rows if event_type in (types or ())]

    def body(self, session: Session, *, event: OutboxEvent, event_type: str, target_id: int) -> str:
        return envelope(session, event=event, event_type=event_type)


def envelope(session: Session, *, event: OutboxEvent, event_type: str) -> str:
    data = dict(event.payload or {})
    learner = session.execute(select(Identity.issuer, Identity.subject).join(
        Submission, Submission.identity_id == Identity.id).where(Submission.id == event.submission_id)).first()
    if learner is not None:
        data["learner"] = {"issuer": learner.issuer, "subject": learner.subject}
    data["event_id"] = event.id
    data["links"] = {"submission": f"/api/v1/submissions/{event.submission_id}"}
    return json.dumps({"type": event_type, "timestamp": rfc3339(event.created_at), "data": data},
                      separators=(",", ":"), sort_keys=True)


def default_sources() -> list[TargetSource]:
    return [WebhookTargets()]


def deliveries_for(session: Session, *, event: OutboxEvent, sources: Sequence[TargetSource],
                   only: tuple[str, int] | None = None, message_id: str | None = None) -> list[OutboxDelivery]:
    """New delivery rows for `event` (all targets, or `only` one (kind, id)); targets that have one are skipped."""
    event_type = public_type(session, event)
    course = (event.payload or {}).get("course")
    if event_type is None or not course:
        return []
    have = set(session.execute(select(OutboxDelivery.target_kind, OutboxDelivery.target_id)
                               .where(OutboxDelivery.event_id == event.id)).all())
    existing_id = session.scalar(select(OutboxDelivery.message_id).where(OutboxDelivery.event_id == event.id).limit(1))
    message_id = message_id or existing_id or "msg_" + uuid.uuid4().hex
    made = []
    for source in sources:
        for target_id in source.targets(session, course=course, event_type=event_type):
            if (source.kind, target_id) in have or (only is not None and only != (source.kind, target_id)):
                continue
            row = OutboxDelivery(event_id=event.id, target_kind=source.kind, target_id=target_id, course=course,
                                 event_type=event_type, message_id=message_id, status="pending", attempts=0,
                                 body=source.body(session, event=event, event_type=event_type, target_id=target_id),
                                 next_attempt_at=utcnow(), last_error="")
            session.add(row)
            made.append(row)
    return made


def fan_out(session: Session, *, sources: Sequence[TargetSource], limit: int = 500) -> int:
    """Turn undispatched outbox rows into deliveries (caller commits); returns the events handled."""
    stmt = select(OutboxEvent).where(OutboxEvent.delivered_at.is_(None)).order_by(OutboxEvent.id).limit(limit)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    events = list(session.scalars(stmt))
    now = utcnow()
    for event in events:
        deliveries_for(session, event=event, sources=sources)
        event.delivered_at = now  # "dispatched": handed to the per-target deliveries
    session.flush()
    return len(events)
