"""Framed launches: the LTI pages an LMS shows in its own iframe may be framed by the platforms, and only
they; every other page keeps `frame-ancestors 'none'` (service/middleware.py).

- A page made for one launch (the picker, the deep-link answer, the framed sign-in link) names its own
  platform's origins (service/lti/urls.py:frame_origins) in its CSP.
- Any other HTML answer under /lti/ that kept the default CSP (an error page, the learner's "this link is
  not set up" message) may be framed by every registered platform: a launch that fails inside the LMS frame
  shows its message instead of the browser's "refused to connect". `LtiFraming` rewrites those headers.
"""

from __future__ import annotations

import time

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.lti import service as lti_service
from service.lti import urls
from service.lti.models import PlatformRef

PREFIX = "/lti/"
DEFAULT_FRAMING = "frame-ancestors 'none'"
ORIGINS_CACHE_S = 10.0  # a platform registered just now may frame the error pages within this long


def page_headers(frame_origins: str, *, form_action: str = "'self'") -> dict[str, str]:
    """The headers of an LTI page shown in the platform's frame: no script, our stylesheet only, forms post
    to `form_action`, and only `frame_origins` may frame it."""
    csp = (
        f"default-src 'none'; style-src 'self'; img-src 'self' data:; form-action {form_action}; "
        f"frame-ancestors {frame_origins}; base-uri 'none'"
    )
    return {"Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def registered_origins(sessions, *, allow_http: bool, extra: str) -> str:
    """The frame origins of every platform not removed, and LTI_FRAME_ANCESTORS; `'none'` if none."""
    with sessions() as session:
        rows = lti_service.list_all(session)
        session.commit()
    found: list[str] = []
    for row in rows:
        value = urls.frame_origins(PlatformRef.of(row), allow_http=allow_http, extra=extra)
        found += [o for o in value.split() if o != "'none'"]
    return " ".join(dict.fromkeys(found)) or "'none'"


class LtiFraming:
    """HTML answers under /lti/ with the pages' default headers (`frame-ancestors 'none'` and X-Frame-Options)
    may instead be framed by the registered platforms; X-Frame-Options goes (the CSP decides). Pages with
    their own CSP and other paths: untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._cached: tuple[float, str] | None = None

    async def _origins(self, state) -> str:
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < ORIGINS_CACHE_S:
            return self._cached[1]
        settings = state.settings
        value = await run_in_threadpool(
            registered_origins,
            state.read_sessions,
            allow_http=settings.mode == "dev",
            extra=settings.lti_frame_ancestors,
        )
        self._cached = (now, value)
        return value

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        state = scope["app"].state

        async def send_framable(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                csp = headers.get("content-security-policy", "")
                html = headers.get("content-type", "").lower().startswith("text/html")
                # only the pages' defaults (render() sends X-Frame-Options with them); a page with its own CSP
                # decided its framing, 'none' included
                if html and DEFAULT_FRAMING in csp and "x-frame-options" in headers:
                    origins = await self._origins(state)
                    if origins != "'none'":
                        headers["content-security-policy"] = csp.replace(DEFAULT_FRAMING, f"frame-ancestors {origins}")
                        del headers["x-frame-options"]
            await send(message)

        await self.app(scope, receive, send_framable)
