"""The browser binding of a launch: a random cookie set at /lti/login, whose sha256 is stored with the login
state, the sign-in ticket and the deep-linking pick. Only the browser that started the login can spend them,
so an attacker's own state, ticket or pick completed in a victim's browser is refused (login CSRF).

The cookie is `HttpOnly`, scoped to `/lti`, and lives as long as a login and its follow-ups. Over https
(prod, or an https tool URL) it is `SameSite=None; Secure`: the launch is a cross-site form POST from the
LMS, and in a framed launch every request is cross-site. In dev over http it is `SameSite=Lax`, which
browsers send on the launch only when the LMS is on the same site (e.g. both on 127.0.0.1).

Over https a second cookie with the same value, `Partitioned` (CHIPS), keeps a framed flow (login, launch,
picker, answer) working where the browser blocks unpartitioned third-party cookies but keeps partitioned
ones (Chrome's third-party-cookie blocking): it lives only in the LMS's partition. The first one is what
reaches a new top-level tab (the framed sign-in hand-off). Either one binds: they carry the same value.
"""

from __future__ import annotations

import hashlib
import secrets

from starlette.requests import Request
from starlette.responses import Response

from service.lti.errors import LtiError

COOKIE = "tg_lti_browser"
FRAMED_COOKIE = "tg_lti_browser_p"  # the same value, Partitioned: for the LMS frame when 3rd-party cookies are blocked
VALUE_CHARS = 43  # token_urlsafe(32)


def digest(value: str) -> str:
    return hashlib.sha256(("lti-browser:" + value).encode()).hexdigest()


def sent(request: Request) -> str | None:
    """The binding cookie's value when the request carries a well-formed one (unpartitioned or framed)."""
    for name in (COOKIE, FRAMED_COOKIE):
        value = request.cookies.get(name, "")
        if len(value) == VALUE_CHARS and value.replace("-", "").replace("_", "").isalnum():
            return value
    return None


def sent_digest(request: Request) -> str | None:
    value = sent(request)
    return digest(value) if value else None


def required_digest(request: Request) -> str:
    """The digest of the request's binding cookie; a request without one is refused (400 lti_wrong_browser)."""
    found = sent_digest(request)
    if found is None:
        raise wrong_browser()
    return found


def wrong_browser() -> LtiError:
    return LtiError(
        "lti_wrong_browser",
        "this launch was not started in this browser (its sign-in cookie is missing or different); "
        "start again from the LMS. If the LMS shows titangrade in a frame and the browser blocks "
        "third-party cookies, set the tool to open in a new window",
    )


def bind(request: Request, response: Response, *, settings, value: str, max_age_s: float) -> None:
    """Set (or refresh) the binding cookie on the login's redirect."""
    secure = settings.mode == "prod" or settings.lti_tool_url.startswith("https:") or request.url.scheme == "https"
    response.set_cookie(
        COOKIE,
        value,
        max_age=int(max_age_s),
        path="/lti",
        httponly=True,
        secure=secure,
        samesite="none" if secure else "lax",
    )
    if secure:  # Partitioned needs Secure (and SameSite=None to be sent in the frame's cross-site requests)
        # written out: http.cookies (so Starlette's set_cookie) knows Partitioned only from Python 3.14
        response.headers.append(
            "set-cookie",
            f"{FRAMED_COOKIE}={value}; HttpOnly; Max-Age={int(max_age_s)}; Path=/lti; SameSite=none; Secure; "
            "Partitioned",
        )


def value_for(request: Request) -> str:
    """The browser's existing binding value (several tabs may launch at once), else a fresh random one."""
    return sent(request) or secrets.token_urlsafe(32)
