"""LTI Advantage endpoints: dynamic registration (`/lti/register`, opened by the LMS), approving a registered
platform (admins), a course's roster sync and status, and its line items and their results (the course's
instructors and admins). Thin wrappers over service/lti/{registration,nrps,lineitems}.py."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from service.db import transaction
from service.deps import (
    AdminUser,
    LtiLimitsDep,
    PlatformCallsDep,
    SessionDep,
    SessionFactoryDep,
    SettingsDep,
    StaffUser,
)
from service.errors import Forbidden, ServiceError, clip
from service.lti import lineitems, nrps, registration
from service.lti.errors import LtiError
from service.lti.routes import PlatformPublic, to_public
from service.messages import error
from service.openapi import errors
from service.params import COURSE
from service.patterns import PRINTABLE_NAME
from service.timefmt import Timestamp

tool = APIRouter(prefix="/lti", tags=["lti"], include_in_schema=False)
api = APIRouter(tags=["lti"])
ID = Annotated[int, Path(ge=1, le=2**31 - 1)]
PARAM_CHARS = 4096


class Approval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deployment_ids: list[Annotated[str, Field(min_length=1, max_length=255, pattern=PRINTABLE_NAME)]] = Field(
        default=[], max_length=50
    )


class RosterSync(BaseModel):
    course: str
    members: int
    added: int
    deactivated: int


class RosterState(BaseModel):
    context_id: str
    roster_service: bool
    synced_at: Timestamp | None
    members: int | None
    error: str | None


class LineItemPublic(BaseModel):
    id: int
    exercise_id: str
    url: str
    origin: str
    resource_link_id: str | None


class ResultPublic(BaseModel):
    user_id: str
    result_score: float | None
    result_maximum: float | None
    comment: str | None


class ResultsPublic(BaseModel):
    line_item: int
    exercise_id: str
    results: list[ResultPublic]
    invalid: int  # results the platform sent that were not valid (left out)


def _require_teacher(user, course: str) -> None:
    if not user.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))


@api.post("/lti/platforms/{platform_id}/approve", response_model=PlatformPublic, responses=errors(403, 404, 422))
def approve_platform(platform_id: ID, user: AdminUser, session: SessionDep, body: Approval | None = None):
    """Accept launches from a platform that registered itself (dynamic registration)."""
    row = registration.approve(session, platform_id=platform_id, deployment_ids=(body or Approval()).deployment_ids)
    session.commit()
    return to_public(row)


@api.post("/courses/{course}/lti/roster/sync", response_model=list[RosterSync], responses=errors(403, 409, 502))
def sync_roster(
    course: COURSE, user: StaffUser, open_session: SessionFactoryDep, calls: PlatformCallsDep, settings: SettingsDep
):
    """Read the course's roster from the platform now (Names and Role Provisioning Services)."""
    _require_teacher(user, course)
    outcomes = nrps.sync_course(open_session, calls=calls, course=course, max_members=settings.lti_roster_max_members)
    return [o.public() for o in outcomes]


@api.get("/courses/{course}/lti/roster", response_model=list[RosterState], responses=errors(403))
def roster_state(course: COURSE, user: StaffUser, session: SessionDep):
    """When the course's roster was last synced, how many members it had, and the last error."""
    _require_teacher(user, course)
    return nrps.status(session, course=course)


@api.get("/courses/{course}/lti/line-items", response_model=list[LineItemPublic], responses=errors(403))
def list_line_items(course: COURSE, user: StaffUser, session: SessionDep):
    _require_teacher(user, course)
    return [
        LineItemPublic(
            id=r.id, exercise_id=r.exercise_id, url=r.url, origin=r.origin, resource_link_id=r.resource_link_id
        )
        for r in lineitems.line_items(session, course=course)
    ]


@api.get(
    "/courses/{course}/lti/line-items/{line_item_id}/results",
    response_model=ResultsPublic,
    responses=errors(403, 404, 502),
)
def line_item_results(
    course: COURSE, line_item_id: ID, user: StaffUser, open_session: SessionFactoryDep, calls: PlatformCallsDep
):
    """The results the platform holds for one of the course's line items (AGS result service)."""
    _require_teacher(user, course)
    return lineitems.read_results(open_session, calls=calls, course=course, line_item_id=line_item_id)


async def _params(request: Request) -> dict[str, str]:
    params = dict(request.query_params.items())
    if request.method == "POST":
        form = await request.form()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    return params


@tool.api_route("/register", methods=["GET", "POST"], response_class=HTMLResponse)
async def register(
    request: Request,
    settings: SettingsDep,
    limits: LtiLimitsDep,
    calls: PlatformCallsDep,
    open_session: SessionFactoryDep,
):
    """LTI Dynamic Registration: the LMS opens this with `openid_configuration` and `registration_token`."""
    params = await _params(request)
    config_url = params.get("openid_configuration", "")
    framing = registration.frame_origin(config_url)
    client_ip = request.client.host if request.client else "unknown"
    try:
        if not config_url:
            raise LtiError(
                "lti_missing_parameter",
                "this is titangrade's LTI registration URL: paste it into the LMS's tool registration "
                "(it opens it with openid_configuration and registration_token)",
            )
        if any(len(v) > PARAM_CHARS for v in params.values()):
            raise LtiError(
                "lti_parameter_too_long", f"a registration parameter is longer than {PARAM_CHARS} characters"
            )
        limits.check("register", client_ip=client_ip, issuer=None)
        row = await run_in_threadpool(_register, params, settings, calls, open_session)
    except ServiceError as exc:
        page, headers = registration.page(
            title="titangrade was not registered", message=f"{exc.code}: {exc.message}", frame_origins=framing,
            close=False,
        )  # fmt: skip
        return HTMLResponse(page, status_code=exc.status_code, headers={**headers, **(exc.headers or {})})
    page, headers = registration.page(
        title="titangrade is registered",
        message=f"titangrade registered with {row.issuer} (client id {row.client_id}). A titangrade administrator "
        f"must approve it before the first launch: titangrade lti platforms approve {row.id}",
        frame_origins=framing,
        close=True,
    )
    return HTMLResponse(page, headers=headers)


def _register(params: dict[str, str], settings, calls, open_session):
    with open_session() as session:  # refuse early, before the platform is asked to register anything
        registration.check_room(session, max_pending=settings.lti_registration_max_pending)
    config, registered = registration.register(
        calls,
        config_url=params["openid_configuration"],
        registration_token=params.get("registration_token", ""),
        tool_url=settings.lti_tool_url,
        allow_http=settings.mode == "dev",
    )
    with transaction(open_session) as session:
        row = registration.record_pending(
            session, config=config, registered=registered, max_pending=settings.lti_registration_max_pending
        )
        session.flush()
        session.expunge(row)
    return row
