"""What every page needs: the signed-in principal from the session cookie, the language, CSRF, rendering.

Pages use the same service functions and permission checks as /api/v1; only the credential differs (a
session cookie instead of a bearer token). Templates autoescape everything (learner strings are hostile).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from service.auth.principal import Principal
from service.deps import SessionFactory, SessionFactoryDep, WebSecretDep
from service.errors import preferred_lang
from service.middleware import PAGE_HEADERS
from service.timefmt import rfc3339
from service.web import sessions
from service.web.i18n import LANGS, t

HERE = Path(__file__).parent
LANG_COOKIE = "tg_lang"
env = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters["rfc3339"] = rfc3339  # every time a page shows: RFC 3339 with its offset


class SignInRequired(Exception):
    """No valid session: the handler redirects to the sign-in page."""


class BadForm(Exception):
    """A POST without the session's CSRF token: the handler answers 403 with a page saying so."""


def page_lang(request: Request) -> str:
    chosen = request.cookies.get(LANG_COOKIE)
    if chosen in LANGS:
        return chosen
    return preferred_lang(request.headers.get("accept-language"))


class Viewer:
    """The signed-in caller as pages see them."""

    def __init__(self, principal: Principal, ws: sessions.WebSession, csrf: str, lang: str) -> None:
        self.principal, self.ws, self.csrf, self.lang = principal, ws, csrf, lang


def current_viewer(request: Request, secret: WebSecretDep, open_session: SessionFactoryDep) -> Viewer:
    ws = sessions.read_web_session(secret=secret, cookie=request.cookies.get(sessions.COOKIE))
    if ws is None:
        raise SignInRequired()
    with open_session() as session:
        principal = sessions.principal_for_session(session, ws=ws)
        session.commit()
    if principal is None:
        raise SignInRequired()
    return Viewer(principal, ws, sessions.csrf_token(secret=secret, ws=ws), page_lang(request))


ViewerDep = Annotated[Viewer, Depends(current_viewer)]


def optional_viewer(request: Request, secret: str, open_session: SessionFactory) -> Viewer | None:
    """The signed-in viewer for an error page (its header then offers navigation and sign-out), or None:
    no session, or one that cannot be looked up now (an error page never fails for want of it)."""
    if not request.cookies.get(sessions.COOKIE):
        return None
    try:
        return current_viewer(request, secret, open_session)
    except Exception:  # signed out, revoked, or the database away: the page without the signed-in header
        return None


async def checked_viewer(request: Request, viewer: ViewerDep, secret: WebSecretDep) -> Viewer:
    """A viewer whose POST carried the session's CSRF token in the `csrf` form field."""
    form = await request.form()
    if not sessions.csrf_ok(secret=secret, ws=viewer.ws, sent=str(form.get("csrf") or "")):
        raise BadForm()
    return viewer


PostViewerDep = Annotated[Viewer, Depends(checked_viewer)]


def render(
    request: Request,
    template: str,
    *,
    viewer: Viewer | None = None,
    status_code: int = 200,
    lang: str | None = None,
    **context,
) -> HTMLResponse:
    lang = lang or (viewer.lang if viewer else page_lang(request))
    html = env.get_template(template).render(
        request_path=_here(request),
        viewer=viewer,
        user=viewer.principal if viewer else None,
        lang=lang,
        csrf=viewer.csrf if viewer else "",
        T=lambda key, **kw: t(key, lang, **kw),
        **context,
    )
    return HTMLResponse(html, status_code=status_code, headers=PAGE_HEADERS)


# a page's view state: the gradebook's, and the statistics pages' (failed check, course, at-risk threshold)
VIEW_PARAMS = (
    *("policy", "sort", "dir", "q", "exercise", "status", "late", "page", "per_page"),
    *("check", "course", "threshold"),
)


def _here(request: Request) -> str:
    """Where a language switch comes back to: this page with its view state (a gradebook keeps its sort
    and filters: only those parameters, bounded, so no other text of a crafted link is carried into the
    page); after a form's POST, the path alone (its GET shows the form again)."""
    if request.method != "GET":
        return request.url.path
    kept = [(k, v[:200]) for k, v in request.query_params.multi_items() if k in VIEW_PARAMS][: len(VIEW_PARAMS)]
    return f"{request.url.path}?{urlencode(kept)}" if kept else request.url.path


def local_path(target: str | None, default: str = "/") -> str:
    """Only same-site paths are followed after a sign-in or language switch (no open redirect)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return default
