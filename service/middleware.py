"""RequestGuard: what happens to every request before a route runs.

1. A trailing slash is dropped (`/api/v1/submissions/` is `/api/v1/submissions`, no 307 redirect).
2. Under /api/v1 (docs and schema excepted) the caller is authenticated from the headers alone; an
   unauthenticated request gets its 401 before a byte of its body is read. A good credential's principal
   is reused for `auth_cache_s` seconds (service/auth/cache.py), without a thread hop or a query. A lookup
   that finds the database unreachable is a 503 with Retry-After, as on every route.
3. The body is capped: the notebook limit (+ multipart framing) for uploads, `JSON_BODY_LIMIT` elsewhere;
   by Content-Length when sent, and by counting the stream when not (chunked uploads). A browser's too
   large upload from a page's form goes back to that page with a notice (`too_large_pages`).

SecurityHeaders wraps the whole app, outside Starlette's error middleware, so every answer gets `nosniff`
and every HTML answer (pages, /lti/ pages, error pages, a 500) the pages' CSP, framing and referrer
headers, unless the route set its own (the deep-link page allows its platform's origin).

RequestId wraps even that: every answer echoes an `X-Request-ID` (the caller's, if it is a short token of
safe characters, else a fresh one), and every log line written while the request runs carries it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.auth.authenticators import Authenticator, CredentialRejected, authenticate
from service.errors import DatabaseUnavailable, preferred_lang
from service.http_errors import BodyTooLarge, error_response, too_large_text
from service.messages import ERRORS
from service.outage import is_unavailable
from service.telemetry import logs

JSON_BODY_LIMIT = 64 * 1024
MULTIPART_SLACK = 64 * 1024  # boundaries, part headers and the exercise_id field around the notebook


class RequestGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        api_prefix: str,
        public_paths: Sequence[str],
        upload_paths: Sequence[str],
        authenticators: Sequence[Authenticator],
        too_large_pages: dict[str, str] | None = None,
    ) -> None:
        self.app = app
        self.api_prefix = api_prefix
        self.public = frozenset(public_paths)
        self.uploads = frozenset(upload_paths)
        self.too_large_pages = dict(too_large_pages or {})  # a page's upload path -> where a browser goes
        self.authenticators = list(authenticators)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if len(path) > 1 and path.endswith("/"):
            raw_path = (scope.get("raw_path") or b"").rstrip(b"/") or b"/"
            scope = dict(scope, path=path.rstrip("/") or "/", raw_path=raw_path)
            path = scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        lang = preferred_lang(headers.get("accept-language"))
        state = scope["app"].state
        if path.startswith(self.api_prefix + "/") and path not in self.public:
            cache = state.credential_cache
            key = cache.key(headers) if cache.enabled else None
            principal = cache.get(key) if key is not None else None
            try:
                if principal is None:
                    generation = cache.generation()
                    principal = await run_in_threadpool(self._authenticate, state.read_sessions, headers)
                    if principal is not None and key is not None:
                        cache.put(key, principal, generation=generation)
            except CredentialRejected as exc:
                await self._reject(scope, receive, send, exc.zh if lang == "zh" else exc.message, exc.challenge)
                return
            except Exception as exc:  # the credential could not be looked up: 503 while the database is away
                if not is_unavailable(exc):
                    raise
                err = DatabaseUnavailable(retry_after_s=state.settings.db_retry_after_s)
                response = error_response(err.status_code, err.code, err.text(lang), err.headers)
                await response(scope, receive, send)
                return
            if principal is None:
                message = ERRORS.text("send_bearer_token", lang)
                await self._reject(scope, receive, send, message, self.authenticators[0].challenge)
                return
            scope.setdefault("state", {})["principal"] = principal
        limit = state.settings.max_upload_bytes + MULTIPART_SLACK if path in self.uploads else JSON_BODY_LIMIT
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            page = self.too_large_pages.get(path)
            if page is not None and "text/html" in headers.get("accept", ""):  # a browser's upload form
                await RedirectResponse(page, status_code=303)(scope, receive, send)
                return
            await error_response(413, "too_large", too_large_text(limit, lang))(scope, receive, send)
            return
        await self.app(scope, _capped(receive, limit), send)

    def _authenticate(self, sessions, headers):
        with sessions() as session:
            try:
                return authenticate(session, headers, self.authenticators)
            finally:
                session.commit()  # end the read transaction (and its snapshot) before the route runs

    @staticmethod
    async def _reject(scope: Scope, receive: Receive, send: Send, message: str, challenge: str) -> None:
        response = error_response(401, "not_authenticated", message, {"WWW-Authenticate": challenge})
        await response(scope, receive, send)


def _capped(receive: Receive, limit: int) -> Receive:
    seen = 0

    async def wrapped():
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(limit)
        return message

    return wrapped


# Only our own scripts and styles run (an injected inline <script> is refused by the browser too), nothing
# frames a page, forms post only to us. service/web/core.py:render sends the same.
PAGE_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'self'"
)
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": PAGE_CSP,
    "Referrer-Policy": "same-origin",
}


class SecurityHeaders:
    """Adds `nosniff` to every answer and PAGE_HEADERS to every text/html answer, keeping any the route set.
    X-Frame-Options is added only with the default CSP: a route with its own CSP decides its framing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                if headers.get("content-type", "").lower().startswith("text/html"):
                    own_csp = "content-security-policy" in headers
                    for name, value in PAGE_HEADERS.items():
                        if name == "X-Frame-Options" and own_csp:
                            continue
                        headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install_security_headers(app) -> None:
    """Wrap the app's whole middleware stack (error pages and 500s included) in SecurityHeaders."""
    build = app.build_middleware_stack

    def build_wrapped() -> ASGIApp:
        return SecurityHeaders(build())

    app.build_middleware_stack = build_wrapped


REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_MAX = 128  # characters; a longer id is replaced, never cut (a cut id would match nothing)
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")  # nothing that could forge a log line or header


def request_id_from(value: str | None) -> str:
    """The caller's request id if it is 1..REQUEST_ID_MAX safe characters, else a fresh one (32 hex)."""
    if value and len(value) <= REQUEST_ID_MAX and _SAFE_REQUEST_ID.fullmatch(value):
        return value
    return uuid.uuid4().hex


class RequestId:
    """Binds the request's id for logging (service/telemetry/logs.py) and echoes it in the answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = next((v for k, v in scope.get("headers", []) if k.lower() == b"x-request-id"), None)
        request_id = request_id_from(sent.decode("latin-1") if sent is not None else None)
        scope.setdefault("state", {})["request_id"] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        with logs.bind(request_id=request_id):
            await self.app(scope, receive, send_with_id)


def install_request_id(app) -> None:
    """Wrap everything, security headers and error pages included, in RequestId (call it last)."""
    build = app.build_middleware_stack

    def build_wrapped() -> ASGIApp:
        return RequestId(build())

    app.build_middleware_stack = build_wrapped
