"""Webhook endpoints of a course (instructors of the course, admins): register, list, rotate, remove,
re-enable after a 410 Gone, read the delivery log, replay. Thin wrappers over service.webhooks.service."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from service.db import utcnow
from service.deps import SessionDep, SettingsDep, StaffUser
from service.errors import Forbidden, clip
from service.messages import error
from service.openapi import errors
from service.outbox.models import OutboxDelivery
from service.outbox.ssrf import AddressPolicy
from service.params import COURSE, ROW_ID
from service.webhooks import service, signing
from service.webhooks.models import WebhookEndpoint
from service.webhooks.schemas import (
    AttemptPublic,
    DeliveryList,
    DeliveryPublic,
    EnableAnswer,
    EndpointCreate,
    EndpointPublic,
    EndpointWithSecret,
    ReplayAccepted,
    ReplayRequest,
    RotateRequest,
)

router = APIRouter(prefix="/courses/{course}/webhooks", tags=["webhooks"])


def _teacher(user, course: str) -> None:
    if not user.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))


def to_public(row: WebhookEndpoint, off: service.Disabled | None = None) -> EndpointPublic:
    rotating = len(signing.live_secrets(row.secret, row.previous_secret, row.previous_expires_at, utcnow())) > 1
    return EndpointPublic(
        disabled=off is not None,
        disabled_at=off.since if off else None,
        disabled_reason=off.reason if off else "",
        held=off.held if off else 0,
        id=row.id,
        course=row.course,
        url=row.url,
        event_types=row.event_types,
        description=row.description,
        rotating=rotating,
        previous_expires_at=row.previous_expires_at,
        created_at=row.created_at,
    )


def _delivery(row: OutboxDelivery, log) -> DeliveryPublic:
    return DeliveryPublic(
        id=row.id,
        event_id=row.event_id,
        event_type=row.event_type,
        webhook_id=row.message_id,
        status=row.status,
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
        last_error=row.last_error,
        created_at=row.created_at,
        delivered_at=row.delivered_at,
        log=[
            AttemptPublic(
                attempt=a.attempt,
                started_at=a.started_at,
                status_code=a.status_code,
                latency_ms=a.latency_ms,
                ok=a.ok,
                error=a.error,
            )
            for a in log
        ],
    )


@router.post("", status_code=201, response_model=EndpointWithSecret, responses=errors(403, 422))
def add_endpoint(
    course: COURSE, body: EndpointCreate, user: StaffUser, session: SessionDep, settings: SettingsDep
) -> EndpointWithSecret:
    """Register an endpoint for this course's grade events; the signing secret is in the answer, once."""
    _teacher(user, course)
    row = service.create(
        session,
        course=course,
        url=body.url,
        event_types=body.event_types,
        policy=AddressPolicy.from_settings(settings),
        description=body.description,
        secret=body.secret,
        by=user.name,
    )
    session.commit()
    return EndpointWithSecret(**to_public(row).model_dump(), secret=row.secret)


@router.get("", response_model=list[EndpointPublic], responses=errors(403))
def list_endpoints(course: COURSE, user: StaffUser, session: SessionDep) -> list[EndpointPublic]:
    _teacher(user, course)
    rows = service.list_for(session, course=course)
    off = service.disabled(session, endpoint_ids=[r.id for r in rows])
    return [to_public(r, off.get(r.id)) for r in rows]


@router.post("/{endpoint_id}/enable", response_model=EnableAnswer, responses=errors(403, 404))
def enable_endpoint(course: COURSE, endpoint_id: ROW_ID, user: StaffUser, session: SessionDep) -> EnableAnswer:
    """Re-enable an endpoint disabled by a 410 Gone: what it held is sent now. Harmless if it is enabled."""
    _teacher(user, course)
    row = service.get(session, course=course, endpoint_id=endpoint_id)
    resumed = service.enable(session, endpoint=row)
    session.commit()
    return EnableAnswer(**to_public(row).model_dump(), resumed=resumed)


@router.post("/{endpoint_id}/rotate", response_model=EndpointWithSecret, responses=errors(403, 404, 422))
def rotate_secret(
    course: COURSE,
    endpoint_id: ROW_ID,
    body: RotateRequest,
    user: StaffUser,
    session: SessionDep,
    settings: SettingsDep,
) -> EndpointWithSecret:
    """A new secret; the old one also signs every delivery until `previous_expires_at`."""
    _teacher(user, course)
    row = service.get(session, course=course, endpoint_id=endpoint_id)
    secret = service.rotate(session, endpoint=row, overlap_s=settings.webhook_rotation_overlap_s, secret=body.secret)
    session.commit()
    off = service.disabled(session, endpoint_ids=[row.id]).get(row.id)
    return EndpointWithSecret(**to_public(row, off).model_dump(), secret=secret)


@router.delete("/{endpoint_id}", status_code=204, responses=errors(403, 404))
def remove_endpoint(course: COURSE, endpoint_id: ROW_ID, user: StaffUser, session: SessionDep) -> None:
    _teacher(user, course)
    service.remove(session, endpoint=service.get(session, course=course, endpoint_id=endpoint_id))
    session.commit()


@router.get("/{endpoint_id}/deliveries", response_model=DeliveryList, responses=errors(403, 404))
def list_deliveries(
    course: COURSE,
    endpoint_id: ROW_ID,
    user: StaffUser,
    session: SessionDep,
    status: Literal["pending", "delivered", "dead", "disabled"] | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> DeliveryList:
    """Deliveries to this endpoint, newest first, each with its attempt log (status, latency, error)."""
    _teacher(user, course)
    row = service.get(session, course=course, endpoint_id=endpoint_id)
    rows = service.deliveries(session, endpoint=row, status=status, limit=limit)
    logs = service.attempts(session, delivery_ids=[r.id for r in rows])
    return DeliveryList(items=[_delivery(r, logs[r.id]) for r in rows])


@router.post(
    "/{endpoint_id}/replay", status_code=202, response_model=ReplayAccepted, responses=errors(403, 404, 409, 422)
)
def replay(
    course: COURSE, endpoint_id: ROW_ID, body: ReplayRequest, user: StaffUser, session: SessionDep
) -> ReplayAccepted:
    """Send one event, or a time range of the course's events, again (same webhook-id, fresh retry window)."""
    _teacher(user, course)
    row = service.get(session, course=course, endpoint_id=endpoint_id)
    ids = service.replay(
        session, endpoint=row, event_id=body.event_id, since=_naive(body.since), until=_naive(body.until)
    )
    session.commit()
    return ReplayAccepted(queued=len(ids), delivery_ids=ids)


def _naive(value: dt.datetime | None) -> dt.datetime | None:
    """Naive UTC, as stored; a time without an offset is taken as UTC."""
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt.UTC).replace(tzinfo=None)
