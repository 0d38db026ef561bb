"""The signed intake endpoint (no bearer token: the Standard Webhooks signature authenticates it) and
the course's intake integrations (instructors of the course, admins)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from grading.pipeline import load_submission
from service.deps import AdminUser, CatalogueDep, MaxDevicesDep, ReceiversDep, SessionDep, SettingsDep, StaffUser
from service.errors import Forbidden, clip
from service.intake import service
from service.intake.models import IntakeIntegration, IssuerKind
from service.messages import error
from service.openapi import errors
from service.params import COURSE, ROW_ID
from service.patterns import PRINTABLE
from service.submissions import service as submissions
from service.submissions.routes import accepted_response
from service.submissions.schemas import SubmissionAccepted
from service.timefmt import Timestamp

INTAKE_PATH = "/intake/submissions"
router = APIRouter(tags=["intake"])


def _inline_schema(model: type[BaseModel]) -> dict:
    """The model's JSON schema with its $defs inlined (openapi_extra cannot add components)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[1]])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


SIGNED_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": _inline_schema(service.IntakeSubmission)}},
    }
}


@router.post(
    INTAKE_PATH,
    status_code=202,
    response_model=SubmissionAccepted,
    openapi_extra=SIGNED_BODY,
    responses={
        200: {"model": SubmissionAccepted, "description": "this webhook-id was seen: the first submission"},
        **errors(401, 403, 404, 413, 422, 429),
    },
)
async def signed_intake(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    max_devices: MaxDevicesDep,
    receivers: ReceiversDep,
    integration: Annotated[str | None, Query(max_length=100, pattern=PRINTABLE)] = None,
    course: Annotated[
        str | None, Query(max_length=200, pattern=PRINTABLE, description="the integration's course")
    ] = None,
):
    """File a submission for a learner, sent by an LMS or repository host and signed with its intake secret
    (headers webhook-id, webhook-timestamp, webhook-signature). Nothing is stored unless the signature holds."""
    raw = await request.body()
    headers = {k.lower(): v for k, v in request.headers.items()}
    named = (course, integration)
    return await run_in_threadpool(_file, session, settings, catalogue, max_devices, receivers, named, raw, headers)


def _file(session, settings, catalogue, max_devices, receivers, named, raw: bytes, headers: dict[str, str]) -> Response:
    row = service.integration_named(session, named[1], course=named[0])
    webhook_id = service.verify(row, raw=raw, headers=headers)
    service.check_issuer(row)  # before reading the body: an unconfirmed issuer files nothing
    body, notebook = service.parse(raw)
    key = service.idempotency_key(row, webhook_id)
    if (first := service.earlier(session, key=key, raw=raw)) is not None:
        return accepted_response(first, status=200)
    _, exercise = load_submission(
        notebook, exercise_id=body.exercise_id or None, catalogue=catalogue, max_bytes=settings.max_upload_bytes
    )
    submissions.check_capacity(
        exercise=exercise, max_devices=max_devices, max_world_size=settings.worker_max_world_size
    )
    learner = service.learner_principal(session, integration=row, body=body)
    sub, created = submissions.create(
        session,
        user=learner,
        exercise=exercise,
        course=row.course,
        notebook=notebook,
        lang=body.lang,
        idempotency_key=key,
        fingerprint=service.body_hash(raw),
        settings=settings,
        receivers=receivers,
    )
    return accepted_response(sub, status=202 if created else 200)


# ---- integrations of a course ------------------------------------------------------------------------


class IntegrationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1, max_length=service.NAME_MAX, pattern=service.NAME_PATTERN, description="used in ?integration="
    )
    issuer: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        pattern=PRINTABLE,
        description="leave out: its learners are identities of its own issuer, intake:<course>:<name>. "
        "Admins only: link it to another issuer (the local one, an LTI platform's), whose identities it then acts for",
    )


class IntegrationPublic(BaseModel):
    id: int
    name: str
    course: str
    issuer: str
    issuer_kind: IssuerKind = Field(
        description="own: its own namespace; linked: an admin linked the issuer; unconfirmed: made before "
        "issuers were namespaced, refused until an admin confirms it"
    )
    linked_by: str | None
    intake_url: str
    created_at: Timestamp
    previous_expires_at: Timestamp | None


class IntegrationWithSecret(IntegrationPublic):
    secret: str = Field(description="shown once: sign intake requests with it (Standard Webhooks)")


def _public(row: IntakeIntegration) -> IntegrationPublic:
    return IntegrationPublic(
        id=row.id,
        name=row.name,
        course=row.course,
        issuer=row.issuer,
        issuer_kind=IssuerKind(row.issuer_kind),
        linked_by=row.linked_by,
        intake_url=service.intake_url(row),
        created_at=row.created_at,
        previous_expires_at=row.previous_expires_at,
    )


def _teacher(user, course: str) -> None:
    if not user.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))


@router.post(
    "/courses/{course}/intake", status_code=201, response_model=IntegrationWithSecret, responses=errors(403, 409, 422)
)
def add_integration(
    course: COURSE, body: IntegrationCreate, user: StaffUser, session: SessionDep
) -> IntegrationWithSecret:
    """Let an LMS or repository host file submissions into this course; the secret is in the answer, once."""
    _teacher(user, course)
    row = service.create(
        session,
        name=body.name,
        course=course,
        issuer=body.issuer,
        linked_by=user.name if user.is_admin else None,
        by=user.name,
    )
    session.commit()
    return IntegrationWithSecret(**_public(row).model_dump(), secret=row.secret)


@router.get("/courses/{course}/intake", response_model=list[IntegrationPublic], responses=errors(403))
def list_integrations(course: COURSE, user: StaffUser, session: SessionDep) -> list[IntegrationPublic]:
    _teacher(user, course)
    return [_public(r) for r in service.list_for(session, course=course)]


@router.post(
    "/courses/{course}/intake/{integration_id}/rotate", response_model=IntegrationWithSecret, responses=errors(403, 404)
)
def rotate_integration(
    course: COURSE, integration_id: ROW_ID, user: StaffUser, session: SessionDep, settings: SettingsDep
) -> IntegrationWithSecret:
    """A new secret; requests signed with the old one are accepted until `previous_expires_at`."""
    _teacher(user, course)
    row = service.get(session, course=course, integration_id=integration_id)
    secret = service.rotate(session, integration=row, overlap_s=settings.webhook_rotation_overlap_s)
    session.commit()
    return IntegrationWithSecret(**_public(row).model_dump(), secret=secret)


@router.post(
    "/courses/{course}/intake/{integration_id}/confirm-issuer",
    response_model=IntegrationPublic,
    responses=errors(403, 404),
)
def confirm_issuer(course: COURSE, integration_id: ROW_ID, user: AdminUser, session: SessionDep) -> IntegrationPublic:
    """Admins: vouch for the issuer an integration registered before issuers were namespaced names, so it
    may act for that issuer's identities again."""
    row = service.get(session, course=course, integration_id=integration_id)
    service.confirm_issuer(session, integration=row, by=user.name)
    session.commit()
    return _public(row)


@router.delete("/courses/{course}/intake/{integration_id}", status_code=204, responses=errors(403, 404))
def remove_integration(course: COURSE, integration_id: ROW_ID, user: StaffUser, session: SessionDep) -> None:
    _teacher(user, course)
    service.remove(session, integration=service.get(session, course=course, integration_id=integration_id))
    session.commit()
