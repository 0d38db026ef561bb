"""LTI endpoints: the tool's browser-facing URLs under /lti (login, launch, sign-in hand-off, JWKS, config)
and platform registration under /api/v1/lti/platforms (admins). Thin wrappers over service/lti; the
picker's form posts (deep-link answer, binding) are in service/lti/picker_routes.py."""

from __future__ import annotations

import html
from typing import Annotated
from urllib.parse import parse_qs, quote, urlsplit

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from service.db import transaction
from service.deps import (
    AdminUser,
    CatalogueDep,
    JwksCacheDep,
    KeyStoreDep,
    LtiLimitsDep,
    PlatformCallsDep,
    SessionDep,
    SessionFactoryDep,
    SettingsDep,
    WebSecretDep,
)
from service.errors import NotFound, preferred_lang
from service.lti import advantage, binding, deep_link, enter, launch, links, picker, service, storage, unbound
from service.lti.errors import LtiError
from service.lti.limits import LtiLimits
from service.lti.models import LtiPlatform, PlatformRef
from service.lti.tokens import LTI, unverified_issuer
from service.lti.urls import frame_origins, origin
from service.openapi import errors
from service.patterns import PRINTABLE_NAME
from service.timefmt import Timestamp
from service.web.core import LANG_COOKIE
from service.web.i18n import LANGS
from service.web.learner import start_session

# Browser-facing (form posts and redirects between the LMS and the tool), not part of the JSON API's schema.
tool = APIRouter(prefix="/lti", tags=["lti"], include_in_schema=False)
api = APIRouter(prefix="/lti/platforms", tags=["lti"])
FORM_FIELD_CHARS = 16 * 1024


class PlatformCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, pattern=PRINTABLE_NAME)
    issuer: str = Field(min_length=1, max_length=500, pattern=PRINTABLE_NAME)
    client_id: str = Field(min_length=1, max_length=200, pattern=PRINTABLE_NAME)
    auth_login_url: str = Field(min_length=1, max_length=2000, pattern=PRINTABLE_NAME)
    auth_token_url: str = Field(min_length=1, max_length=2000, pattern=PRINTABLE_NAME)
    keyset_url: str = Field(min_length=1, max_length=2000, pattern=PRINTABLE_NAME)
    deployment_ids: list[Annotated[str, Field(min_length=1, max_length=255, pattern=PRINTABLE_NAME)]] = Field(
        min_length=1, max_length=50
    )


class PlatformPublic(BaseModel):
    id: int
    name: str
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    keyset_url: str
    deployment_ids: list[str]
    created_at: Timestamp
    status: str = "active"  # or pending: registered itself, awaits an admin's approval


def to_public(row: LtiPlatform) -> PlatformPublic:
    return PlatformPublic(
        id=row.id,
        name=row.name,
        issuer=row.issuer,
        client_id=row.client_id,
        auth_login_url=row.auth_login_url,
        auth_token_url=row.auth_token_url,
        keyset_url=row.keyset_url,
        deployment_ids=list(row.deployment_ids),
        created_at=row.created_at,
        status=row.status,
    )


@api.post("", status_code=201, response_model=PlatformPublic, responses=errors(403, 409, 422))
def add_platform(body: PlatformCreate, user: AdminUser, session: SessionDep) -> PlatformPublic:
    row = service.create(session, **body.model_dump())
    session.commit()
    return to_public(row)


@api.get("", response_model=list[PlatformPublic], responses=errors(403))
def list_platforms(user: AdminUser, session: SessionDep) -> list[PlatformPublic]:
    return [to_public(r) for r in service.list_all(session)]


@api.delete("/{platform_id}", status_code=204, responses=errors(403, 404))
def remove_platform(platform_id: Annotated[int, Path(ge=1, le=2**31 - 1)], user: AdminUser, session: SessionDep):
    if service.remove(session, platform_id=platform_id) is None:
        raise NotFound(f"no LTI platform {platform_id}", code="platform_not_found")
    session.commit()


def tool_urls(settings) -> dict[str, str]:
    base = settings.lti_tool_url.rstrip("/")
    return {
        "login_url": base + "/lti/login",
        "launch_url": base + "/lti/launch",
        "redirect_url": base + "/lti/launch",
        "deep_linking_url": base + "/lti/launch",
        "jwks_url": base + "/lti/jwks",
    }


def _limit(limits: LtiLimits, request: Request, endpoint: str, issuer: str | None) -> None:
    """Per client IP and per platform, before any database work (service/lti/limits.py)."""
    client_ip = request.client.host if request.client else "unknown"
    limits.check(endpoint, client_ip=client_ip, issuer=issuer)


def _issuer_hint(id_token: str) -> str | None:
    """The unverified issuer of a launch's id_token: it only picks the rate bucket."""
    try:
        return unverified_issuer(id_token) or None
    except LtiError:
        return None


async def _params(request: Request) -> dict[str, str]:
    """Query and form fields as strings (login may be GET or POST; launch is a form post)."""
    params = dict(request.query_params.items())
    if request.method == "POST":
        form = await request.form()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    if any(len(v) > FORM_FIELD_CHARS for v in params.values()):
        raise LtiError("lti_parameter_too_long", "a login or launch parameter is longer than 16 KiB")
    return params


@tool.get("/config")
def config(settings: SettingsDep) -> dict[str, str]:
    """The URLs to enter in the LMS when registering titangrade as an LTI 1.3 tool."""
    return tool_urls(settings)


@tool.get("/jwks")
def jwks(keys: KeyStoreDep) -> dict:
    return keys.jwks()


@tool.api_route("/login", methods=["GET", "POST"], response_class=RedirectResponse, status_code=302)
async def login(request: Request, settings: SettingsDep, limits: LtiLimitsDep, open_session: SessionFactoryDep):
    params = await _params(request)
    _limit(limits, request, "login", params.get("iss"))
    browser = binding.value_for(request)  # the state is bound to this browser (login CSRF)

    store = storage.target(params)

    def run() -> tuple[str, str]:
        with transaction(open_session) as session:
            location = service.login_redirect(
                session,
                params=params,
                redirect_uri=tool_urls(settings)["launch_url"],
                ttl_s=settings.lti_state_ttl_s,
                browser_hash=binding.digest(browser),
            )
            platform = PlatformRef.of(service.find(session, issuer=params["iss"], client_id=params.get("client_id")))
        return location, frame_origins(platform, allow_http=settings.mode == "dev", extra=settings.lti_frame_ancestors)

    location, frames = await run_in_threadpool(run)
    resp: Response = RedirectResponse(location, status_code=302)
    if store is not None:  # the platform offers its storage: the binding goes there too (cookie-less frames)
        page, headers = storage.login_page(
            store=store,
            platform_origin=origin(location),
            state=parse_qs(urlsplit(location).query)["state"][0],
            value=browser,
            next_url=location,
            frame_origins=frames,
        )
        resp = HTMLResponse(page, headers=headers)
    follow_up_s = max(settings.lti_pick_ttl_s, enter.TICKET_TTL_S)
    binding.bind(request, resp, settings=settings, value=browser, max_age_s=settings.lti_state_ttl_s + follow_up_s)
    return resp


@tool.post("/launch")
async def launch_(
    request: Request,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    limits: LtiLimitsDep,
    jwks_cache: JwksCacheDep,
    keys: KeyStoreDep,
    web_secret: WebSecretDep,
    open_session: SessionFactoryDep,
    calls: PlatformCallsDep,
):
    params = await _params(request)
    if not params.get("id_token") or not params.get("state"):
        raise LtiError("lti_missing_parameter", "a launch is a form post of id_token and state from the platform")
    _limit(limits, request, "launch", _issuer_hint(params["id_token"]))
    # only the browser that started the login (login CSRF): its cookie, or the value in the platform's storage
    browser_hash = storage.sent_digest(request, params, tool_url=settings.lti_tool_url)
    if browser_hash is None:
        store = storage.target(params)
        if store is None or params.get(storage.FIELD):
            raise binding.wrong_browser()

        def state_platform() -> PlatformRef:
            with transaction(open_session) as session:
                return launch.platform_of_state(session, state=params["state"])

        platform_ = await run_in_threadpool(state_platform)
        page, headers = storage.fetch_page(
            store=store,
            platform_origin=origin(platform_.auth_login_url),
            params=params,
            frame_origins=frame_origins(
                platform_, allow_http=settings.mode == "dev", extra=settings.lti_frame_ancestors
            ),
        )
        return HTMLResponse(page, headers=headers)
    # A browser (an LMS form post) is sent on to its page; API clients (Accept without text/html) keep JSON.
    browser = "text/html" in request.headers.get("accept", "")
    secret = web_secret if browser else ""
    allow_http = settings.mode == "dev"
    follow_ups: list[advantage.FollowUp] = []  # roster sync, line item: run after the answer (service/lti/advantage.py)

    def run() -> dict:
        with transaction(open_session) as session:  # spent in its own transaction: a replay fails even after an error
            login_state = service.consume_state(session, state=params["state"], browser_hash=browser_hash)
            platform = launch.platform_for_launch(session, platform_id=login_state.platform_id)
        # no transaction is open here: the keyset may be fetched from the platform (slow, or an attacker's)
        claims = launch.validate(
            id_token=params["id_token"],
            platform=platform,
            nonce=login_state.nonce,
            jwks=jwks_cache,
            leeway_s=settings.lti_clock_skew_s,
        )
        from_line_item = _line_item_exercise(claims, platform)
        tg_bind = {"tg_bind": params[storage.FIELD]} if binding.sent_digest(request) is None else {}
        page = {  # how a picker page would be shown: the launch's language, framed by its platform only
            "lang": picker.launch_lang(claims, preferred_lang(request.headers.get("accept-language"))),
            "frame": frame_origins(platform, allow_http=allow_http, extra=settings.lti_frame_ancestors),
        }
        with transaction(open_session) as session:  # nothing else is stored unless every check passes
            if claims[LTI + "message_type"] == "LtiDeepLinkingRequest":
                return (
                    page
                    | tg_bind
                    | deep_link.deep_link_request(
                        session,
                        platform=platform,
                        claims=claims,
                        catalogue=catalogue,
                        keys=keys,
                        ttl_s=settings.lti_pick_ttl_s,
                        browser_hash=browser_hash,
                        allow_http=allow_http,
                    )
                )
            done = launch.resource_link(
                session,
                platform=platform,
                claims=claims,
                catalogue=catalogue,
                session_s=settings.lti_session_s,
                from_line_item=from_line_item,
            )
            follow_ups.extend(
                advantage.after_launch(
                    session, platform=platform, claims=claims, launched=done, catalogue=catalogue, settings=settings
                )
            )
            if done.get("unbound"):  # an instructor chooses the exercise of this graded link
                return (
                    page
                    | tg_bind
                    | unbound.offer(
                        session,
                        platform=platform,
                        claims=claims,
                        course=done["course"],
                        catalogue=catalogue,
                        keys=keys,
                        ttl_s=settings.lti_pick_ttl_s,
                        browser_hash=browser_hash,
                    )
                )
            if browser:
                done["ticket"] = _ticket(session, platform.id, done, frame=page["frame"])
            return done

    def _line_item_exercise(claims: dict, platform) -> str | None:
        """A resource link naming no exercise: its binding, else its line item's resourceId, read from the
        platform with no transaction open."""
        wanted = links.needs_line_item(claims)
        if wanted is None:
            return None
        with transaction(open_session) as session:
            if links.bound_exercise(session, platform=platform, claims=claims) is not None:
                return None
        return links.fetch_resource_id(
            jwks_cache.client,
            keys=keys,
            platform=platform,
            url=wanted[0],
            scope=wanted[1],
            deployment_id=str(claims.get(LTI + "deployment_id")),
        )

    def _ticket(session, platform_id: int, done: dict, *, frame: str) -> str:
        return enter.issue_ticket(
            session,
            secret=secret,
            platform_id=platform_id,
            launched=done,
            session_s=settings.lti_session_s,
            browser_hash=browser_hash,
            frame_origins=frame,
        )

    done = await run_in_threadpool(run)
    answer = picker.launch_answer(done, browser=browser)
    answer.background = advantage.tasks(follow_ups, sessions=open_session, calls=calls)
    return answer


@tool.get("/enter")
async def enter_(
    request: Request, settings: SettingsDep, secret: WebSecretDep, open_session: SessionFactoryDep, ticket: str = ""
):
    """Spend a launch's one-time ticket in the browser that launched: set the session cookie (a first-party,
    top-level GET) and go to the page. In an iframe, spend nothing and offer to open this URL in a new tab
    instead (a page only the launch's platform may frame)."""
    if not ticket:
        raise LtiError("lti_missing_parameter", "this page is reached from an LTI launch; launch from the LMS")
    if request.headers.get("sec-fetch-dest") == "iframe":
        frame = str(enter.read_ticket(secret=secret, ticket=ticket).get("f") or "'none'")
        here = html.escape("/lti/enter?ticket=" + quote(ticket, safe=""))
        return HTMLResponse(
            f'<!doctype html><meta charset="utf-8"><title>titangrade</title><p><a href="{here}" '
            'target="_blank" rel="noopener">Open titangrade in a new tab</a></p>',
            headers={
                "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer",
                "Content-Security-Policy": f"default-src 'none'; frame-ancestors {frame}; base-uri 'none'",
            },
        )
    browser_hash = binding.required_digest(request)

    def run() -> tuple[str, str, str | None]:
        with transaction(open_session) as session:
            return enter.redeem_ticket(session, secret=secret, ticket=ticket, browser_hash=browser_hash)

    cookie, path, lang = await run_in_threadpool(run)
    resp = RedirectResponse(
        path, status_code=303, headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    )
    start_session(resp, settings, cookie=cookie)
    if lang in LANGS:  # the link was added in this language (the picker): its pages open in it
        resp.set_cookie(LANG_COOKIE, lang, max_age=365 * 86400, httponly=True, samesite="lax", path="/")
    return resp
