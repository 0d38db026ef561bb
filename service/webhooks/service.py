"""Webhook endpoint verbs (create, list, get, rotate, remove, enable), the delivery log, and replay."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from service.db import utcnow
from service.errors import Conflict, NotFound, ServiceError, clip
from service.outbox.models import DeliveryAttempt, DeliveryStatus, OutboxDelivery, OutboxEvent
from service.outbox.protocol import TargetSource
from service.outbox.ssrf import AddressPolicy, EndpointRefused, check_url
from service.outbox.targets import EVENT_TYPES, deliveries_for
from service.webhooks import signing
from service.webhooks.models import WebhookEndpoint
from service.webhooks.targets import WebhookTargets


def _check_types(event_types: Sequence[str]) -> list[str]:
    unknown = [t for t in event_types if t not in EVENT_TYPES]
    if unknown or not event_types:
        raise ServiceError(
            f"event types must be some of {', '.join(EVENT_TYPES)}; got "
            f"{', '.join(clip(t, 40) for t in unknown) or 'none'}",
            code="invalid_event_types",
            status_code=422,
        )
    return list(dict.fromkeys(event_types))


def create(
    session: Session,
    *,
    course: str,
    url: str,
    event_types: Sequence[str],
    policy: AddressPolicy,
    description: str = "",
    secret: str | None = None,
    by: str = "",
) -> WebhookEndpoint:
    """Register an endpoint (its URL checked against the address policy); the secret is generated unless given."""
    try:
        check_url(url, policy)
    except EndpointRefused as exc:
        raise ServiceError(str(exc), code="endpoint_refused", status_code=422) from None
    if secret is not None and not signing.valid_secret(secret):
        raise ServiceError(
            "a secret must be whsec_ followed by base64 of 24-64 random bytes; or leave it out and one is generated",
            code="invalid_secret",
            status_code=422,
        )
    row = WebhookEndpoint(
        course=course,
        url=url,
        event_types=_check_types(event_types),
        description=description,
        secret=secret or signing.new_secret(),
        created_by=by,
    )
    session.add(row)
    session.flush()
    return row


def list_for(session: Session, *, course: str | None) -> list[WebhookEndpoint]:
    stmt = select(WebhookEndpoint).where(WebhookEndpoint.removed_at.is_(None)).order_by(WebhookEndpoint.id)
    if course is not None:
        stmt = stmt.where(WebhookEndpoint.course == course)
    return list(session.scalars(stmt))


def get(session: Session, *, course: str | None, endpoint_id: int) -> WebhookEndpoint:
    row = session.get(WebhookEndpoint, endpoint_id)
    if row is None or row.removed_at is not None or (course is not None and row.course != course):
        where = f" in course {clip(course)}" if course else ""
        raise NotFound(
            f"webhook endpoint {endpoint_id} does not exist{where}; list them with "
            "GET /api/v1/courses/{course}/webhooks"
        )
    return row


def rotate(session: Session, *, endpoint: WebhookEndpoint, overlap_s: float, secret: str | None = None) -> str:
    """A new secret; the old one keeps signing (a second signature) for `overlap_s`."""
    if secret is not None and not signing.valid_secret(secret):
        raise ServiceError(
            "a secret must be whsec_ followed by base64 of 24-64 random bytes", code="invalid_secret", status_code=422
        )
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_expires_at = utcnow() + dt.timedelta(seconds=overlap_s)
    endpoint.secret = secret or signing.new_secret()
    return endpoint.secret


def remove(session: Session, *, endpoint: WebhookEndpoint) -> None:
    """Stop sending to it; pending deliveries are dead-lettered on their next claim (the log is kept)."""
    endpoint.removed_at = utcnow()


@dataclass(frozen=True, slots=True, kw_only=True)
class Disabled:
    """Why and since when an endpoint is disabled, and how many deliveries wait for it."""

    since: dt.datetime | None
    reason: str
    held: int


def disabled(session: Session, *, endpoint_ids: Sequence[int]) -> dict[int, Disabled]:
    """The disabled endpoints among `endpoint_ids` (a 410 Gone from the receiver disables one)."""
    if not endpoint_ids:
        return {}
    held = (OutboxDelivery.target_kind == "webhook") & OutboxDelivery.target_id.in_(list(endpoint_ids))
    disabled_rows = held & (OutboxDelivery.status == DeliveryStatus.DISABLED.value)
    counts = dict(
        session.execute(
            select(OutboxDelivery.target_id, func.count()).where(disabled_rows).group_by(OutboxDelivery.target_id)
        ).all()
    )
    out: dict[int, Disabled] = {}
    for target_id, n in counts.items():
        gone = session.execute(  # the 410 that disabled it: the newest held delivery that has an error
            select(OutboxDelivery.id, OutboxDelivery.last_error)
            .where(disabled_rows, OutboxDelivery.target_id == target_id, OutboxDelivery.last_error != "")
            .order_by(OutboxDelivery.id.desc())
            .limit(1)
        ).first()
        since = session.scalar(
            select(func.max(DeliveryAttempt.started_at))
            .join(OutboxDelivery, DeliveryAttempt.delivery_id == OutboxDelivery.id)
            .where(held, OutboxDelivery.target_id == target_id, DeliveryAttempt.status_code == 410)
        )
        out[target_id] = Disabled(since=since, reason=gone[1] if gone else "disabled", held=int(n))
    return out


def enable(session: Session, *, endpoint: WebhookEndpoint) -> int:
    """Re-enable a disabled endpoint: its held deliveries are sent now, with a fresh retry window. Returns
    how many; 0 if it was not disabled."""
    result = session.execute(
        update(OutboxDelivery)
        .where(
            OutboxDelivery.target_kind == "webhook",
            OutboxDelivery.target_id == endpoint.id,
            OutboxDelivery.status == DeliveryStatus.DISABLED.value,
        )
        .values(status=DeliveryStatus.PENDING.value, next_attempt_at=utcnow(), window_started_at=None)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def deliveries(
    session: Session, *, endpoint: WebhookEndpoint, status: str | None = None, limit: int = 100
) -> list[OutboxDelivery]:
    stmt = (
        select(OutboxDelivery)
        .where(OutboxDelivery.target_kind == "webhook", OutboxDelivery.target_id == endpoint.id)
        .order_by(OutboxDelivery.id.desc())
        .limit(limit)
    )
    if status:
        stmt = stmt.where(OutboxDelivery.status == status)
    return list(session.scalars(stmt))


def attempts(session: Session, *, delivery_ids: Sequence[int]) -> dict[int, list[DeliveryAttempt]]:
    out: dict[int, list[DeliveryAttempt]] = {i: [] for i in delivery_ids}
    for row in session.scalars(
        select(DeliveryAttempt).where(DeliveryAttempt.delivery_id.in_(list(delivery_ids))).order_by(DeliveryAttempt.id)
    ):
        out[row.delivery_id].append(row)
    return out


def replay(
    session: Session,
    *,
    endpoint: WebhookEndpoint,
    event_id: int | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    sources: Sequence[TargetSource] | None = None,
) -> list[int]:
    """Send again one event, or every event of the endpoint's course created in [since, until), whatever
    their state; events the endpoint never got (registered later) get a delivery now. Same webhook-id,
    a fresh retry window. Returns the delivery ids queued."""
    if event_id is None and since is None:
        raise ServiceError(
            "say what to replay: `event_id`, or `since` (and optionally `until`) as RFC 3339 times",
            code="replay_unspecified",
            status_code=422,
        )
    stmt = select(OutboxEvent).order_by(OutboxEvent.id)
    if event_id is not None:
        stmt = stmt.where(OutboxEvent.id == event_id)
    if since is not None:
        stmt = stmt.where(OutboxEvent.created_at >= since)
    if until is not None:
        stmt = stmt.where(OutboxEvent.created_at < until)
    if disabled(session, endpoint_ids=[endpoint.id]):
        raise Conflict(
            f"webhook endpoint {endpoint.id} is disabled (its receiver answered 410 Gone); re-enable it first "
            f"with POST /api/v1/courses/{{course}}/webhooks/{endpoint.id}/enable, which also sends what it held",
            code="endpoint_disabled",
        )
    events = [e for e in session.scalars(stmt) if (e.payload or {}).get("course") == endpoint.course]
    if event_id is not None and not events:
        raise NotFound(f"event {event_id} does not exist in course {clip(endpoint.course)}")
    deliveries_for(session, events=events, sources=sources or [WebhookTargets()], only=("webhook", endpoint.id))
    session.flush()
    ids = list(
        session.scalars(
            select(OutboxDelivery.id).where(
                OutboxDelivery.event_id.in_([e.id for e in events]),
                OutboxDelivery.target_kind == "webhook",
                OutboxDelivery.target_id == endpoint.id,
            )
        )
    )
    if ids:
        session.execute(
            update(OutboxDelivery)
            .where(OutboxDelivery.id.in_(ids))
            .values(
                status="pending",
                next_attempt_at=utcnow(),
                window_started_at=None,
                lease_token=None,
                lease_expires_at=None,
            )
            .execution_options(synchronize_session=False)
        )
    return ids
