"""Signed intake: verify a Standard Webhooks signature before reading anything, then file the submission
for the learner the integration vouches for, exactly like an upload (same validation, limits, queue).

Idempotent on webhook-id: a redelivery returns the first submission; the same id with another body is a 422.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session
from standardwebhooks import Webhook, WebhookVerificationError

from service.auth.principal import Principal
from service.auth.service import get_or_create_identity, memberships, set_membership
from service.db import utcnow
from service.errors import NotAuthenticated, NotFound, ServiceError, clip
from service.http_errors import validation_text
from service.intake.models import IntakeIntegration
from service.patterns import PRINTABLE
from service.submissions.models import Submission
from service.webhooks import signing


class Learner(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, max_length=200, pattern=PRINTABLE, description="the learner's id at the issuer")
    issuer: str | None = Field(
        None, max_length=200, pattern=PRINTABLE, description="must be the integration's issuer if given"
    )
    name: str | None = Field(None, max_length=200, pattern=PRINTABLE)


class IntakeSubmission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    learner: Learner
    course: str | None = Field(None, max_length=200, description="must be the integration's course if given")
    exercise_id: str | None = Field(None, max_length=200, description="defaults to the notebook's metadata")
    lang: str = Field("en", pattern="^(en|zh)$")
    notebook: dict | str = Field(description="the .ipynb as a JSON object, or its text")


def _rejected(message: str, code: str) -> NotAuthenticated:
    return NotAuthenticated(message, code=code, headers={"WWW-Authenticate": 'Webhook realm="titangrade-intake"'})


def integration_named(session: Session, name: str | None) -> IntakeIntegration:
    row = (
        session.scalar(
            select(IntakeIntegration).where(IntakeIntegration.name == name, IntakeIntegration.removed_at.is_(None))
        )
        if name
        else None
    )
    if row is None:
        raise _rejected(
            f"unknown intake integration {clip(name or '')!r}; send ?integration=NAME as registered "
            "with POST /api/v1/courses/{course}/intake",
            "unknown_integration",
        )
    return row


def verify(integration: IntakeIntegration, *, raw: bytes, headers: Mapping[str, str]) -> str:
    """The webhook-id of a correctly signed, fresh request (any live secret); else a 401 naming the problem."""
    if not all(headers.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature")):
        raise _rejected(
            "sign the request (Standard Webhooks): the headers webhook-id, webhook-timestamp and "
            "webhook-signature are required",
            "signature_missing",
        )
    if len(headers["webhook-id"]) > 150:
        raise _rejected("webhook-id is longer than 150 characters", "signature_invalid")
    problem = "no signature matches"
    for secret in signing.live_secrets(
        integration.secret, integration.previous_secret, integration.previous_expires_at, utcnow()
    ):
        try:
            Webhook(secret).verify(raw, dict(headers), json_parse=False)
            return headers["webhook-id"]
        except WebhookVerificationError as exc:
            problem = str(exc)
        except (ValueError, UnicodeDecodeError):  # malformed signature list or base64, or a body not UTF-8
            problem = "malformed webhook-signature or body"
    if "too old" in problem or "too new" in problem:
        raise _rejected(
            "webhook-timestamp is more than 5 minutes from the server's clock; sign the request "
            "when sending it (and check the sender's clock)",
            "stale_timestamp",
        )
    raise _rejected(
        f"the signature does not verify ({problem.lower()}); sign `webhook-id.webhook-timestamp.body` "
        "with the integration's secret",
        "signature_invalid",
    )


def parse(raw: bytes) -> tuple[IntakeSubmission, bytes]:
    """The request and the notebook's bytes; 422 naming the field on a bad body."""
    try:
        body = IntakeSubmission.model_validate_json(raw)
    except ValidationError as exc:
        raise ServiceError(
            validation_text([dict(e) for e in exc.errors()], "en"), code="invalid_request", status_code=422
        ) from None
    notebook = body.notebook.encode() if isinstance(body.notebook, str) else json.dumps(body.notebook).encode()
    return body, notebook


def idempotency_key(integration: IntakeIntegration, webhook_id: str) -> str:
    return f"intake:{integration.id}:{webhook_id}"


def earlier(session: Session, *, key: str, raw: bytes) -> Submission | None:
    """The submission this webhook-id already made; the same id with a different body is a 422."""
    sub = session.scalar(select(Submission).where(Submission.idempotency_key == key).limit(1))
    if sub is not None and sub.request_hash != body_hash(raw):
        raise ServiceError(
            f"webhook-id {clip(key.split(':', 2)[2])!r} was already used for a different request "
            f"(submission {sub.id}); a new submission needs a new webhook-id",
            code="idempotency_key_reused",
            status_code=422,
        )
    return sub


def body_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def learner_principal(session: Session, *, integration: IntakeIntegration, body: IntakeSubmission) -> Principal:
    """The learner as the integration names them (its own issuer only), enrolled in its course if new there."""
    if body.course not in (None, integration.course):
        raise ServiceError(
            f"integration {integration.name!r} files into course {integration.course!r}, not {clip(body.course)!r}",
            code="wrong_course",
            status_code=403,
        )
    if body.learner.issuer not in (None, integration.issuer):
        raise ServiceError(
            f"integration {integration.name!r} vouches for learners of issuer "
            f"{integration.issuer!r} only, not {clip(body.learner.issuer)!r}",
            code="wrong_issuer",
            status_code=403,
        )
    identity = get_or_create_identity(
        session, issuer=integration.issuer, subject=body.learner.subject, name=body.learner.name
    )
    member = memberships(session, identity_id=identity.id)
    if integration.course not in member:
        set_membership(session, identity=identity, course=integration.course, role="learner")
        member[integration.course] = "learner"
    return Principal(
        identity_id=identity.id,
        issuer=identity.issuer,
        subject=identity.subject,
        name=identity.name,
        memberships={integration.course: member[integration.course]},
        scope=integration.course,
        via=f"intake:{integration.name}",
    )


# ---- integration verbs (admin/instructor API and CLI) ------------------------------------------------


def create(session: Session, *, name: str, course: str, issuer: str, by: str = "") -> IntakeIntegration:
    if session.scalar(select(IntakeIntegration.id).where(IntakeIntegration.name == name)) is not None:
        raise ServiceError(
            f"an intake integration named {clip(name)!r} exists already; pick another name",
            code="conflict",
            status_code=409,
        )
    row = IntakeIntegration(name=name, course=course, issuer=issuer, secret=signing.new_secret(), created_by=by)
    session.add(row)
    session.flush()
    return row


def list_for(session: Session, *, course: str | None) -> list[IntakeIntegration]:
    stmt = select(IntakeIntegration).where(IntakeIntegration.removed_at.is_(None)).order_by(IntakeIntegration.id)
    if course is not None:
        stmt = stmt.where(IntakeIntegration.course == course)
    return list(session.scalars(stmt))


def get(session: Session, *, course: str | None, integration_id: int) -> IntakeIntegration:
    row = session.get(IntakeIntegration, integration_id)
    if row is None or row.removed_at is not None or (course is not None and row.course != course):
        raise NotFound(
            f"intake integration {integration_id} does not exist; list them with GET /api/v1/courses/{{course}}/intake"
        )
    return row


def rotate(session: Session, *, integration: IntakeIntegration, overlap_s: float) -> str:
    integration.previous_secret = integration.secret
    integration.previous_expires_at = utcnow() + dt.timedelta(seconds=overlap_s)
    integration.secret = signing.new_secret()
    return integration.secret


def remove(session: Session, *, integration: IntakeIntegration) -> None:
    integration.removed_at = utcnow()
    integration.name = f"{integration.name[:60]}~removed-{integration.id}"  # the name can be registered again
