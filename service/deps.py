"""FastAPI dependencies as `Annotated` aliases: everything a route uses comes from here, so its signature
lists its collaborators (settings, database sessions, the catalogue, the upload writer, event-stream slots,
LTI keys and limits, the caller).

app.py puts the collaborators on `app.state`; routes never read it, they name a dependency from here. Error handlers,
which cannot use Depends, read the settings through `settings_of`.

They are `async def` because they do no I/O (the session connects lazily, in the route's thread): FastAPI
runs a plain `def` dependency in the thread pool, and on a busy machine each such hop costs more than
the dependency itself (an intake request made eight of them).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from grading.exercise import Catalogue
from service.auth.principal import Principal
from service.config import Settings
from service.errors import Forbidden, NotAuthenticated, preferred_lang
from service.lti.calls import PlatformCalls
from service.lti.keys import KeyStore, key_store
from service.lti.limits import LtiLimits
from service.lti.tokens import JwksCache
from service.messages import error
from service.outbox.receivers import Receivers
from service.outbox.ssrf import AddressPolicy, make_client
from service.submissions.stream_slots import StreamSlots
from service.submissions.writer import UploadWriter

T = TypeVar("T")
SessionFactory = sessionmaker[Session]
_MAKE_ONCE = threading.Lock()

# Declares the bearer scheme in OpenAPI (so /docs has "Authorize"); the check itself ran in RequestGuard.
bearer_scheme = HTTPBearer(
    auto_error=False, scheme_name="bearer", description="an API token: `Authorization: Bearer tg_...`"
)


def settings_of(conn: HTTPConnection) -> Settings:
    """The app's settings as they are now (tests swap them); for error handlers and middleware."""
    return conn.app.state.settings


def _made_once(request: Request, name: str, make: Callable[[], T]) -> T:
    """`app.state.<name>`, made on first use: an app that never serves LTI or a stream never builds their
    parts, and they are built from the settings of that moment."""
    state = request.app.state
    with _MAKE_ONCE:
        found = getattr(state, name, None)
        if found is None:
            found = make()
            setattr(state, name, found)
        return found


async def get_settings(request: Request) -> Settings:
    return settings_of(request)


async def get_catalogue(request: Request) -> Catalogue:
    return request.app.state.catalogue


async def get_session(request: Request) -> AsyncIterator[Session]:
    session = request.app.state.sessions()  # no connection yet: the route's first query (in its thread) makes it
    try:
        yield session
    finally:
        await run_in_threadpool(session.close)  # may roll back over the network: never on the event loop


async def get_session_factory(request: Request) -> SessionFactory:
    """The sessionmaker itself, for routes that open sessions of their own (pages, event streams, LTI's
    separate transactions) or hand it to work that outlives the request."""
    return request.app.state.sessions


async def get_read_session_factory(request: Request) -> SessionFactory:
    """Sessions for lookups that write nothing: on SQLite they do not wait for the writer (service/db.py)."""
    return request.app.state.read_sessions


async def get_upload_writer(request: Request) -> UploadWriter:
    """The process's upload writer: stores many uploads per transaction (service/submissions/writer.py)."""
    return request.app.state.intake


async def get_receivers(request: Request) -> Receivers:
    """Who listens for "submission received" (service/outbox/receivers.py; put together in service/wiring.py)."""
    return request.app.state.receivers


async def get_max_devices(request: Request) -> Callable[[], int]:
    """Asks the database for the most accelerators a live worker offers; call it only when it matters."""
    return request.app.state.max_devices


async def get_stream_slots(request: Request) -> StreamSlots:
    """The cap on the event streams one identity holds open in this process."""
    per_identity = settings_of(request).events_max_streams_per_identity
    return _made_once(request, "stream_slots", lambda: StreamSlots(per_identity))


async def get_jwks_cache(request: Request) -> JwksCache:
    """LTI platforms' keysets, fetched through the address-checking client and cached."""
    settings = settings_of(request)

    def make() -> JwksCache:
        client = make_client(
            AddressPolicy.from_settings(settings), timeout_s=settings.webhook_timeout_s, max_connections=4
        )
        return JwksCache(client, ttl_s=settings.lti_jwks_cache_s, refetch_s=settings.lti_jwks_refetch_s)

    return _made_once(request, "lti_jwks", make)


async def get_lti_limits(request: Request) -> LtiLimits:
    """Rate limits of the LTI endpoints per client IP and per platform (service/lti/limits.py)."""
    settings = settings_of(request)
    return _made_once(request, "lti_limits", lambda: LtiLimits.from_settings(settings))


async def get_platform_calls(request: Request) -> PlatformCalls:
    """The client for LTI Advantage services the tool calls (rosters, line items, results, registration)."""
    settings = settings_of(request)
    return _made_once(request, "lti_calls", lambda: PlatformCalls.from_settings(settings))


async def get_key_store(request: Request) -> KeyStore:
    """The tool's own signing keys (LTI JWKS, deep-linking answers); reading them is left to the route."""
    return key_store(settings_of(request))


async def get_web_secret(request: Request) -> str:
    """The service secret signs session cookies; in dev without one, a per-process random secret
    (sessions then end when the server restarts, and several server processes need TITANGRADE_SECRET_KEY)."""
    settings = settings_of(request)
    return _made_once(request, "web_secret", lambda: settings.secret_key or secrets.token_urlsafe(48))


async def get_lang(accept_language: Annotated[str | None, Header(include_in_schema=False)] = None) -> str:
    return preferred_lang(accept_language)


SettingsDep = Annotated[Settings, Depends(get_settings)]
CatalogueDep = Annotated[Catalogue, Depends(get_catalogue)]
SessionDep = Annotated[Session, Depends(get_session)]
SessionFactoryDep = Annotated[SessionFactory, Depends(get_session_factory)]
ReadSessionFactoryDep = Annotated[SessionFactory, Depends(get_read_session_factory)]
UploadWriterDep = Annotated[UploadWriter, Depends(get_upload_writer)]
MaxDevicesDep = Annotated[Callable[[], int], Depends(get_max_devices)]
ReceiversDep = Annotated[Receivers, Depends(get_receivers)]
StreamSlotsDep = Annotated[StreamSlots, Depends(get_stream_slots)]
JwksCacheDep = Annotated[JwksCache, Depends(get_jwks_cache)]
LtiLimitsDep = Annotated[LtiLimits, Depends(get_lti_limits)]
KeyStoreDep = Annotated[KeyStore, Depends(get_key_store)]
PlatformCallsDep = Annotated[PlatformCalls, Depends(get_platform_calls)]
WebSecretDep = Annotated[str, Depends(get_web_secret)]
LangDep = Annotated[str, Depends(get_lang)]


async def get_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)] = None
) -> Principal:
    """The caller that RequestGuard authenticated (it answers 401 itself before a route runs)."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        raise NotAuthenticated(error("send_bearer"))
    return principal


CurrentUser = Annotated[Principal, Depends(get_principal)]


async def require_staff(user: CurrentUser) -> Principal:
    if not user.is_staff:
        raise Forbidden(error("staff_only"))
    return user


async def require_admin(user: CurrentUser) -> Principal:
    if not user.is_admin:
        raise Forbidden(error("admin_only"))
    return user


StaffUser = Annotated[Principal, Depends(require_staff)]
AdminUser = Annotated[Principal, Depends(require_admin)]
