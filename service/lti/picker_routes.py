"""The picker's form posts under /lti: the deep-linking answer (`/lti/deep-link`) and an unbound link's
binding (`/lti/bind`). Thin wrappers over service/lti/deep_link.py and service/lti/unbound.py; the launch
that shows the picker is in service/lti/routes.py."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from service.db import transaction
from service.deps import CatalogueDep, KeyStoreDep, SessionFactoryDep, SettingsDep, WebSecretDep
from service.errors import clip
from service.lti import binding, deep_link, enter, launch, picker, storage, unbound
from service.lti.errors import LtiError
from service.lti.routes import FORM_FIELD_CHARS, tool_urls
from service.lti.urls import frame_origins, origin
from service.messages import error

router = APIRouter(prefix="/lti", tags=["lti"], include_in_schema=False)


def _same_origin(request: Request, settings) -> None:
    """The picker's forms are posted from the tool's own page: a POST naming another origin is refused (the
    pick or bind token, bound to the browser, is the CSRF token; this is a second lock). No Origin, or
    `null` (privacy settings), is left to the token."""
    sent = request.headers.get("origin")
    if not sent or sent == "null":
        return
    own = {origin(str(request.base_url))} | ({origin(settings.lti_tool_url)} if settings.lti_tool_url else set())
    if sent.rstrip("/").lower() not in own:
        raise LtiError("lti_cross_origin", error("lti_cross_origin", origin=clip(sent)), status_code=403)


async def _form(request: Request) -> list[tuple[str, str]]:
    form = await request.form()
    items = [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
    if len(items) > 2000 or any(len(v) > FORM_FIELD_CHARS for _, v in items):
        raise LtiError("lti_parameter_too_long", "the picker form is too large")
    return items


@router.post("/deep-link", response_class=HTMLResponse)
async def deep_link_(
    request: Request,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    keys: KeyStoreDep,
    open_session: SessionFactoryDep,
):
    """The instructor's pick: answer with a page that posts the signed LtiDeepLinkingResponse to the LMS.
    The pick token is spent here, once, and only by the browser that made the deep-linking launch."""
    form = await _form(request)
    fields = dict(form)
    if not fields.get("pick_token"):
        raise LtiError("lti_missing_parameter", "send pick_token (from the deep-linking launch) and exercise_id")
    _same_origin(request, settings)
    browser_hash = storage.sent_digest(request, fields, tool_url=settings.lti_tool_url)
    if browser_hash is None:
        raise binding.wrong_browser()
    choices, target = deep_link.read_choices(form)

    def run() -> deep_link.DeepLinkAnswer:
        with transaction(open_session) as session:
            return deep_link.deep_link_response(
                session,
                pick_token=fields["pick_token"],
                choices=choices,
                target=target,
                catalogue=catalogue,
                keys=keys,
                launch_url=tool_urls(settings)["launch_url"],
                browser_hash=browser_hash,
                allow_http=settings.mode == "dev",
                frame_ancestors=settings.lti_frame_ancestors,
            )

    page, headers = deep_link.autopost(await run_in_threadpool(run))
    return HTMLResponse(page, headers=headers)


@router.post("/bind")
async def bind_(
    request: Request,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    keys: KeyStoreDep,
    web_secret: WebSecretDep,
    open_session: SessionFactoryDep,
):
    """An instructor's choice of exercise for an unbound graded link: bind it, then sign in as the launch
    would have (a browser: the one-time sign-in link; an API client: the launch's JSON)."""
    fields = dict(await _form(request))
    if not fields.get("bind_token") or not fields.get("exercise_id"):
        raise LtiError("lti_missing_parameter", "send bind_token (from the launch) and exercise_id")
    _same_origin(request, settings)
    browser_hash = storage.sent_digest(request, fields, tool_url=settings.lti_tool_url)
    if browser_hash is None:
        raise binding.wrong_browser()
    browser = "text/html" in request.headers.get("accept", "")
    allow_http = settings.mode == "dev"

    def run() -> dict:
        with transaction(open_session) as session:
            done, platform_id = unbound.redeem(
                session,
                bind_token=fields["bind_token"],
                exercise_id=fields["exercise_id"],
                catalogue=catalogue,
                keys=keys,
                browser_hash=browser_hash,
                session_s=settings.lti_session_s,
            )
            if browser:
                platform = launch.platform_for_launch(session, platform_id=platform_id)
                done["ticket"] = enter.issue_ticket(
                    session,
                    secret=web_secret,
                    platform_id=platform_id,
                    launched=done,
                    session_s=settings.lti_session_s,
                    browser_hash=browser_hash,
                    frame_origins=frame_origins(platform, allow_http=allow_http, extra=settings.lti_frame_ancestors),
                )
            return done

    return picker.launch_answer(await run_in_threadpool(run), browser=browser)
