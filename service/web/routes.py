"""Mounts the pages on the app: routers, static files, and what a page does without a session."""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from service.web import learner, staff
from service.web.core import HERE, BadForm, SignInRequired, local_path, render
from service.web.i18n import t

UPLOAD_PATH = "/submit"


def install(app: FastAPI) -> None:
    app.include_router(learner.router)
    app.include_router(staff.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.exception_handler(SignInRequired)
    async def to_sign_in(request: Request, exc: SignInRequired):
        target = local_path(request.url.path if request.method == "GET" else "/exercises")
        return RedirectResponse("/login?next=" + target, status_code=303)

    @app.exception_handler(BadForm)
    async def bad_form(request: Request, exc: BadForm):
        from service.web.core import page_lang

        return render(request, "message.html", status_code=403, message=t("bad_form", page_lang(request)))
