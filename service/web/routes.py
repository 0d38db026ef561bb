"""Mounts the pages on the app: routers, static files, and what a page does without a session."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from grading.errors import InvalidSubmission
from service.errors import ServiceError, from_engine
from service.web import learner, schedule_pages, staff
from service.web.core import HERE, BadForm, SignInRequired, local_path, page_lang, render
from service.web.i18n import t

UPLOAD_PATH = "/submit"


def _is_page(request: Request) -> bool:
    """Errors become pages on the web pages, and on /lti/ only for a browser (an LMS launch asks for
    text/html); /api/ and LTI's API clients keep the JSON error body."""
    path = request.url.path
    if path.startswith("/api/"):
        return False
    return not path.startswith("/lti/") or "text/html" in request.headers.get("accept", "")


def install(app: FastAPI) -> None:
    app.include_router(learner.router)
    app.include_router(staff.router)
    app.include_router(schedule_pages.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.exception_handler(SignInRequired)
    async def to_sign_in(request: Request, exc: SignInRequired):
        target = local_path(request.url.path if request.method == "GET" else "/exercises")
        return RedirectResponse("/login?next=" + quote(target, safe="/"), status_code=303)

    api_service_error = app.exception_handlers.get(ServiceError)
    api_engine_error = app.exception_handlers.get(InvalidSubmission)

    @app.exception_handler(ServiceError)
    async def service_error_page(request: Request, exc: ServiceError):
        """The API keeps its JSON errors; a page shows the same message as a page."""
        if not _is_page(request) and api_service_error is not None:
            return await api_service_error(request, exc)  # type: ignore[misc]  # registered as async
        page = render(request, "message.html", status_code=exc.status_code, message=exc.text(page_lang(request)))
        page.headers.update(exc.headers)  # e.g. Retry-After on a 429
        return page

    @app.exception_handler(InvalidSubmission)
    async def page_engine_error(request: Request, exc: InvalidSubmission):
        if not _is_page(request) and api_engine_error is not None:
            return await api_engine_error(request, exc)  # type: ignore[misc]  # registered as async
        return await service_error_page(request, from_engine(exc))

    @app.exception_handler(BadForm)
    async def bad_form(request: Request, exc: BadForm):
        return render(request, "message.html", status_code=403, message=t("bad_form", page_lang(request)))
