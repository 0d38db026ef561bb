"""Signed intake: verify a Standard Webhooks signature before reading anything, then file the submission
for the learner the integration vouches for, exactly like an upload (same validation, limits, queue).

Idempotent on webhook-id: a redelivery returns the first submission; the same id with another body is a 422.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Mapping
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session
from standardwebhooks import Webhook, WebhookVerificationError

from service.auth.principal import Principal
from service.auth.service import get_or_create_identity, memberships, set_membership
from service.db import utcnow
from service.errors import Forbidden, NotAuthenticated, NotFound, ServiceError, clip
from service.http_errors import validation_text
from service.intake.models import IntakeIntegration, IssuerKind
from service.patterns import PRINTABLE
from service.submissions.models import Submission
from service.webhooks import signing

OWN_PREFIX = "intake:"
ISSUER_MAX = 200  # identities.issuer and intake_integrations.issuer
NAME_PATTERN = r"^[A-Za-z0-9._-]+$"  # no ':', so intake:<course>:<name> names one course's integration
NAME_MAX = 60


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
    course: str | None = Field(
        None, max_length=200, pattern=PRINTABLE, description="must be the integration's course if given"
    )
    exercise_id: str | None = Field(
        None, max_length=200, pattern=PRINTABLE, description="defaults to the notebook's metadata"
    )
    lang: str = Field("en", pattern="^(en|zh)$")
    notebook: dict | str = Field(description="the .ipynb as a JSON object, or its text")


def _rejected(message: str, code: str) -> NotAuthenticated:
    return NotAuthenticated(message, code=code, headers={"WWW-Authenticate": 'Webhook realm="titangrade-intake"'})


def own_issuer(*, course: str, name: str) -> str:
    """An integration's own namespace: its learners are nobody else's (names hold no ':', so it parses)."""
    return f"{OWN_PREFIX}{course}:{name}"


def integration_named(session: Session, name: str | None, *, course: str | None = None) -> IntakeIntegration:
    """The live integration `?course=C&integration=NAME` names. Without a course (intake URLs made before
    names were per course) the oldest live one of that name, so a later namesake in another course cannot
    take over an existing URL."""
    row = None
    if name:
        stmt = select(IntakeIntegration).where(IntakeIntegration.name == name, IntakeIntegration.removed_at.is_(None))
        if course is not None:
            stmt = stmt.where(IntakeIntegration.course == course)
        row = session.scalar(stmt.order_by(IntakeIntegration.id).limit(1))
    if row is None:
        raise _rejected(
            f"unknown intake integration {clip(name or '')!r}; send ?course=COURSE&integration=NAME as "
            "registered with POST /api/v1/courses/{course}/intake",
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
    check_issuer(integration)
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
    return _enrolled(session, integration=integration, body=body)


def check_issuer(integration: IntakeIntegration) -> None:
    """403 for an integration whose issuer nobody vouched for (made before 0008 and not confirmed yet)."""
    if integration.issuer_kind == IssuerKind.UNCONFIRMED:
        raise ServiceError(
            f"integration {integration.name!r} was registered before intake issuers were namespaced and names "
            f"issuer {clip(integration.issuer)!r}; an admin must confirm that link (POST /api/v1/courses/"
            f"{integration.course}/intake/{integration.id}/confirm-issuer), or register it again without an issuer",
            code="issuer_unconfirmed",
            status_code=403,
        )


def _enrolled(session: Session, *, integration: IntakeIntegration, body: IntakeSubmission) -> Principal:
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


def create(
    session: Session,
    *,
    name: str,
    course: str,
    issuer: str | None = None,
    linked_by: str | None = None,
    by: str = "",
) -> IntakeIntegration:
    """A new integration of `course`. Its learners are identities of its own namespace; another issuer
    (the local one, an LTI platform's) only when an admin links it (`linked_by`, the admin's name)."""
    if not (len(name) <= NAME_MAX and re.fullmatch(NAME_PATTERN, name)):  # the CLI passes names unchecked
        raise ServiceError(
            f"intake integration name {clip(name)!r} is refused: use 1 to {NAME_MAX} letters, digits, '.', '_' "
            "or '-' (a ':' would make its issuer another course's namespace)",
            code="invalid_request",
            status_code=422,
        )
    if session.scalar(
        select(IntakeIntegration.id).where(IntakeIntegration.course == course, IntakeIntegration.name == name)
    ):
        raise ServiceError(
            f"this course already has an intake integration named {clip(name)!r}; pick another name",
            code="conflict",
            status_code=409,
        )
    own = own_issuer(course=course, name=name)
    if len(own) > ISSUER_MAX:
        raise ServiceError(
            f"the integration's issuer {OWN_PREFIX}<course>:<name> would be longer than {ISSUER_MAX} "
            "characters; pick a shorter name",
            code="invalid_request",
            status_code=422,
        )
    kind = IssuerKind.OWN
    if issuer is not None and issuer != own:
        if linked_by is None:
            raise Forbidden(
                f"only an admin can link an intake integration to issuer {clip(issuer)!r} (its learners would "
                f"be that issuer's identities); leave `issuer` out to use the integration's own {own!r}",
                code="issuer_link_requires_admin",
            )
        if issuer.startswith(OWN_PREFIX):
            raise ServiceError(
                f"issuer {clip(issuer)!r} is in the namespace of intake integrations ({OWN_PREFIX}...); "
                "link an LMS's or the local issuer instead",
                code="issuer_reserved",
                status_code=422,
            )
        kind = IssuerKind.LINKED
    row = IntakeIntegration(
        name=name,
        course=course,
        issuer=own if kind == IssuerKind.OWN else issuer,
        issuer_kind=kind,
        linked_by=linked_by if kind == IssuerKind.LINKED else None,
        secret=signing.new_secret(),
        created_by=by,
    )
    session.add(row)
    session.flush()
    return row


def confirm_issuer(session: Session, *, integration: IntakeIntegration, by: str) -> None:
    """An admin vouches for the issuer an integration made before 0008 names (it then works again)."""
    if integration.issuer_kind == IssuerKind.UNCONFIRMED:
        integration.issuer_kind, integration.linked_by = IssuerKind.LINKED, by


def intake_url(row: IntakeIntegration) -> str:
    """Where the integration POSTs its signed submissions."""
    return f"/api/v1/intake/submissions?{urlencode({'course': row.course, 'integration': row.name})}"


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
