"""Mounts the pages on the app: routers, static files, and what a page does without a session or on an error.

A browser never sees an API error body on a page path: every error there (an unknown path, a wrong method,
a bad query value, a server error) is a page in the page's language with a way back. The API (/api/), and
any client that does not ask for HTML, keep the JSON error bodies of service/http_errors.py."""

from __future__ import annotations

import json
import logging
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from grading.errors import InvalidSubmission
from service.deps import get_session_factory, get_web_secret
from service.errors import ServiceError, clip, from_engine
from service.http_errors import allowed_methods, too_large_text, validation_problems
from service.web import learner, requests_pages, schedule_pages, staff, stats_pages
from service.web.core import HERE, BadForm, SignInRequired, local_path, optional_viewer, page_lang, render
from service.web.i18n import t

UPLOAD_PATH = "/submit"
TOO_LARGE_PAGE = "/exercises?error=too_large"  # a browser's upload over the size limit (service/middleware.py)
log = logging.getLogger("titangrade.web")
HEADINGS = {401: "forbidden", 403: "forbidden", 404: "not_found", 405: "invalid", 413: "invalid"}
HEADINGS |= {400: "invalid", 409: "other", 422: "invalid", 429: "busy"}


def _is_page(request: Request) -> bool:
    """Errors become pages on the web pages, and on /lti/ only for a browser (an LMS launch asks for
    text/html); /api/ and LTI's API clients keep the JSON error body."""
    path = request.url.path
    if path.startswith("/api/"):
        return False
    return not path.startswith("/lti/") or "text/html" in request.headers.get("accept", "")


def _browser(request: Request) -> bool:
    """A browser asking for a page (outside /api/): an unknown path or a wrong method is then a page too;
    curl and scripts (no text/html in Accept) keep the JSON body."""
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get("accept", "")


def _heading(status: int, lang: str) -> str:
    kind = "server" if status >= 500 else HEADINGS.get(status, "other")
    return t(f"err_title_{kind}", lang)


async def error_page(request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """The error as a page: signed in, its header still has the navigation, language switch and sign-out."""
    viewer = await run_in_threadpool(
        optional_viewer, request, await get_web_secret(request), await get_session_factory(request)
    )
    lang = viewer.lang if viewer else page_lang(request)
    page = render(
        request, "message.html", viewer=viewer, status_code=status, message=message, heading=_heading(status, lang)
    )
    page.headers.update(headers or {})
    return page


def _page_above(request: Request) -> str | None:
    """The nearest page above a path that takes only POST (/teach/submissions/x/override -> the
    submission): where a reload or a language switch after a form's answer brings a browser."""
    parts = request.url.path.rstrip("/").split("/")
    while len(parts) > 1:
        parts.pop()
        candidate = "/".join(parts) or "/"
        if local_path(candidate, "") != candidate:  # never "//host": a Location must stay on this site
            continue
        scope = {**request.scope, "path": candidate, "method": "GET"}
        if any(route.matches(scope)[0] is Match.FULL for route in request.app.routes):
            return candidate
    return None


def _api_message(answer: Response) -> str:
    """The message of one of service/http_errors.py's JSON error bodies (a 400, 408, 413 ... on a page)."""
    try:
        return str(json.loads(bytes(answer.body))["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return ""


def install(app: FastAPI) -> None:
    app.include_router(learner.router)
    app.include_router(staff.router)
    app.include_router(requests_pages.router)
    app.include_router(stats_pages.router)
    app.include_router(schedule_pages.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.exception_handler(SignInRequired)
    async def to_sign_in(request: Request, exc: SignInRequired):
        target = local_path(request.url.path if request.method == "GET" else "/exercises")
        return RedirectResponse("/login?next=" + quote(target, safe="/"), status_code=303)

    api_service_error = app.exception_handlers.get(ServiceError)
    api_engine_error = app.exception_handlers.get(InvalidSubmission)
    api_http_error = app.exception_handlers[StarletteHTTPException]
    api_validation_error = app.exception_handlers[RequestValidationError]
    api_unexpected = app.exception_handlers[Exception]

    @app.exception_handler(ServiceError)
    async def service_error_page(request: Request, exc: ServiceError):
        """The API keeps its JSON errors; a page shows the same message as a page."""
        if not _is_page(request) and api_service_error is not None:
            return await api_service_error(request, exc)  # type: ignore[misc]  # registered as async
        return await error_page(request, exc.status_code, exc.text(page_lang(request)), exc.headers)

    @app.exception_handler(InvalidSubmission)
    async def page_engine_error(request: Request, exc: InvalidSubmission):
        if not _is_page(request) and api_engine_error is not None:
            return await api_engine_error(request, exc)  # type: ignore[misc]  # registered as async
        return await service_error_page(request, from_engine(exc))

    @app.exception_handler(BadForm)
    async def bad_form(request: Request, exc: BadForm):
        return await error_page(request, 403, t("bad_form", page_lang(request)))

    @app.exception_handler(StarletteHTTPException)
    async def http_error_page(request: Request, exc: StarletteHTTPException):
        api_answer = await api_http_error(request, exc)  # type: ignore[misc]  # registered as async
        if not _browser(request):
            return api_answer
        lang = page_lang(request)
        if exc.status_code == 405:
            above = _page_above(request) if request.method == "GET" else None
            if above is not None:  # a reload or language switch after a form's answer: the page it came from
                return RedirectResponse(above, status_code=303)
            allowed = ", ".join(allowed_methods(request))
            return await error_page(request, 405, t("page_wrong_method", lang, allowed=allowed), {"Allow": allowed})
        if exc.status_code == 404:
            return await error_page(request, 404, t("page_not_found", lang))
        if exc.status_code == 413:  # the body cap counting a stream (service/middleware.py)
            return await error_page(request, 413, too_large_text(getattr(exc, "limit", 0), lang))
        kept = {k: v for k, v in api_answer.headers.items() if k.lower() in ("retry-after", "allow")}
        return await error_page(request, api_answer.status_code, _api_message(api_answer), kept)

    @app.exception_handler(RequestValidationError)
    async def invalid_request_page(request: Request, exc: RequestValidationError):
        if not _browser(request):
            return await api_validation_error(request, exc)  # type: ignore[misc]  # registered as async
        lang = page_lang(request)
        problems = validation_problems(list(exc.errors()), lang)
        return await error_page(request, 422, t("page_invalid", lang, problems=problems))

    @app.exception_handler(Exception)
    async def unexpected_page(request: Request, exc: Exception):
        if not _browser(request):
            return await api_unexpected(request, exc)  # type: ignore[misc]  # registered as async
        log.exception("unexpected error on page %s %s", request.method, clip(request.url.path))
        return await error_page(request, 500, t("page_server_error", page_lang(request), error=type(exc).__name__))
