"""Fan-out: each new outbox event becomes one delivery per interested target, in one transaction.

A kind of target plugs in with a `TargetSource` (which targets want this event, and the exact body to send
them) and a `Sender` (service/outbox/protocol.py). Webhook endpoints and LTI line items are the two kinds
today (registered in service/wiring.py); neither touches claiming, retries, dead-lettering or replay.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from service.auth.models import Identity
from service.db import utcnow
from service.outbox.models import DeliveryStatus, OutboxDelivery, OutboxEvent
from service.outbox.protocol import TargetSource
from service.states import SubmissionStatus
from service.submissions.models import Submission

PENDING, DISABLED = DeliveryStatus.PENDING, DeliveryStatus.DISABLED
RECEIVED = "submission.received"  # an outbox kind and its public type: written at intake, only with a receiver
EVENT_TYPES: tuple[str, ...] = ("grade.stored", "grade.changed", "submission.not_gradable", RECEIVED)


def public_type(event: OutboxEvent, *, graded_before: bool) -> str | None:
    """The event type receivers see, or None for outbox rows that change nothing (a failed regrade).
    `graded_before`: an earlier outbox row of the same submission stored or overrode a grade."""
    if event.kind == RECEIVED:
        return RECEIVED
    if event.kind == "grade.overridden":
        return "grade.changed"
    if event.kind != "grade.stored":
        return None
    if (event.payload or {}).get("status") == SubmissionStatus.NOT_GRADABLE:
        return "submission.not_gradable"
    return "grade.changed" if graded_before else "grade.stored"


def _graded_before(session: Session, events: Sequence[OutboxEvent]) -> dict[int, bool]:
    """For each event: did an earlier row of its submission store (or override) a gradable result?"""
    subs = {e.submission_id for e in events}
    history: dict[str, list[tuple[int, dict]]] = {}
    for sid, event_id, payload in session.execute(
        select(OutboxEvent.submission_id, OutboxEvent.id, OutboxEvent.payload).where(
            OutboxEvent.submission_id.in_(subs), OutboxEvent.kind.in_(("grade.stored", "grade.overridden"))
        )
    ):
        history.setdefault(sid, []).append((event_id, payload or {}))
    return {
        e.id: any(
            i < e.id and p.get("status") != SubmissionStatus.NOT_GRADABLE for i, p in history.get(e.submission_id, ())
        )
        for e in events
    }


def _learners(session: Session, events: Sequence[OutboxEvent]) -> dict[str, dict[str, str]]:
    rows = session.execute(
        select(Submission.id, Identity.issuer, Identity.subject)
        .join(Identity, Submission.identity_id == Identity.id)
        .where(Submission.id.in_({e.submission_id for e in events}))
    )
    return {sid: {"issuer": issuer, "subject": subject} for sid, issuer, subject in rows}


def disabled_targets(session: Session, *, kind: str | None = None) -> set[tuple[str, int]]:
    """(kind, id) of every disabled target: those with a held delivery (see delivery.hold_target)."""
    stmt = (
        select(OutboxDelivery.target_kind, OutboxDelivery.target_id)
        .where(OutboxDelivery.status == DeliveryStatus.DISABLED.value)
        .distinct()
    )
    if kind is not None:
        stmt = stmt.where(OutboxDelivery.target_kind == kind)
    return {(k, i) for k, i in session.execute(stmt)}


def deliveries_for(
    session: Session,
    *,
    events: Sequence[OutboxEvent],
    sources: Sequence[TargetSource],
    only: tuple[str, int] | None = None,
    fresh: bool = False,
) -> list[OutboxDelivery]:
    """New delivery rows for `events` (all targets, or `only` one (kind, id)), skipping targets that have one.
    `fresh`: the events were never fanned out, so they have no deliveries yet (saves the lookups). A disabled
    target's new deliveries are held (disabled) until it is re-enabled."""
    if not events:
        return []
    before, learners = _graded_before(session, events), _learners(session, events)
    held = disabled_targets(session)
    have: set[tuple[int, str, int]] = set()
    message_ids: dict[int, str] = {}
    if not fresh:
        for event_id, kind, target_id, message_id in session.execute(
            select(
                OutboxDelivery.event_id, OutboxDelivery.target_kind, OutboxDelivery.target_id, OutboxDelivery.message_id
            ).where(OutboxDelivery.event_id.in_([e.id for e in events]))
        ):
            have.add((event_id, kind, target_id))
            message_ids[event_id] = message_id
    wanted: dict[tuple[str, str, str], list[int]] = {}  # (source kind, course, type) -> target ids
    made = []
    for event in events:
        event_type = public_type(event, graded_before=before[event.id])
        course = (event.payload or {}).get("course")
        if event_type is None or not course:
            continue
        message_id = message_ids.get(event.id) or "msg_" + uuid.uuid4().hex  # one webhook-id per event
        for source in sources:
            key = (source.kind, course, event_type)
            if key not in wanted:
                wanted[key] = source.targets(session, course=course, event_type=event_type)
            for target_id in wanted[key]:
                skip = only is not None and only != (source.kind, target_id)
                if skip or (event.id, source.kind, target_id) in have:
                    continue
                accepts = getattr(source, "accepts", None)  # optional finer filter (LTI: exercise, issuer)
                if accepts is not None and not accepts(
                    event=event, target_id=target_id, learner=learners.get(event.submission_id)
                ):
                    continue
                made.append(
                    OutboxDelivery(
                        event_id=event.id,
                        target_kind=source.kind,
                        target_id=target_id,
                        course=course,
                        event_type=event_type,
                        message_id=message_id,
                        status=(DISABLED if (source.kind, target_id) in held else PENDING).value,
                        attempts=0,
                        body=source.body(
                            event=event,
                            event_type=event_type,
                            target_id=target_id,
                            learner=learners.get(event.submission_id),
                        ),
                        next_attempt_at=utcnow(),
                        last_error="",
                    )
                )
    session.add_all(made)
    return made


def fan_out(session: Session, *, sources: Sequence[TargetSource], limit: int = 500) -> int:
    """Turn undispatched outbox rows into deliveries (caller commits); returns the events handled."""
    stmt = select(OutboxEvent).where(OutboxEvent.delivered_at.is_(None)).order_by(OutboxEvent.id).limit(limit)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    events = list(session.scalars(stmt))
    if not events:
        return 0
    with session.no_autoflush:
        deliveries_for(session, events=events, sources=sources, fresh=True)
    session.execute(
        update(OutboxEvent)
        .where(OutboxEvent.id.in_([e.id for e in events]))
        .values(delivered_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    session.flush()
    return len(events)
