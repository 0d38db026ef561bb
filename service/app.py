"""create_app: the FastAPI application (routes under /api/v1, JSON errors, state built from Settings)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Response

from grading.exercise import Catalogue
from service import bootstrap, http_deadlines, memory, signals, wiring
from service.auth import cache as credential_cache
from service.auth.authenticators import Authenticator, default_authenticators
from service.auth.routes import router as auth_router
from service.catalogue.routes import router as catalogue_router
from service.config import Settings
from service.courses.routes import router as courses_router
from service.courses.schedule_routes import router as schedule_router
from service.db import make_engine, read_sessions
from service.http_errors import install_error_handlers
from service.intake.routes import INTAKE_PATH
from service.intake.routes import router as intake_router
from service.lti.advantage_routes import api as lti_advantage_router
from service.lti.advantage_routes import tool as lti_register_router
from service.lti.framing import LtiFraming
from service.lti.picker_routes import router as lti_picker_router
from service.lti.routes import api as lti_api_router
from service.lti.routes import tool as lti_tool_router
from service.middleware import RequestGuard, install_request_id, install_security_headers
from service.openapi import build_openapi, docs_page
from service.ops import router as ops_router
from service.queue import service as queue
from service.queue.routes import router as queue_router
from service.requests.routes import router as requests_router
from service.submissions.routes import router as submissions_router
from service.submissions.writer import UploadWriter
from service.web.routes import TOO_LARGE_PAGE as WEB_TOO_LARGE_PAGE
from service.web.routes import UPLOAD_PATH as WEB_UPLOAD_PATH
from service.web.routes import install as install_web_pages
from service.webhooks.routes import router as webhooks_router

API_PREFIX = "/api/v1"
UPLOAD_PATH = API_PREFIX + "/submissions"
SIGNED_INTAKE_PATH = API_PREFIX + INTAKE_PATH  # authenticated by its Standard Webhooks signature, not a token
PUBLIC_PATHS = {
    API_PREFIX + "/openapi.json",
    API_PREFIX + "/docs",
    SIGNED_INTAKE_PATH,
}


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """On PostgreSQL, relay NOTIFYs of progress events written by other processes (grading processes,
    other workers) to this process's open event streams; SQLite streams poll (service/signals.py).
    At shutdown the intake writer stores the uploads already handed to it and refuses new ones (503).
    Meanwhile freed native memory is handed back every `malloc_trim_s` (service/memory.py)."""
    settings = app.state.settings
    listener = signals.listen_if_postgresql(
        settings.database_url,
        (signals.EVENTS,),
        retry_base_s=settings.db_retry_base_s,
        retry_max_s=settings.db_retry_max_s,
    )
    if app.state.intake.closed:  # the app is started again (tests): a fresh writer
        app.state.intake = _upload_writer(app)
    trimmer = memory.Trimmer(app.state.settings.malloc_trim_s).start()
    try:
        yield
    finally:
        trimmer.close()
        await asyncio.to_thread(app.state.intake.close)
        if listener is not None:
            listener.close()


def _upload_writer(app: FastAPI) -> UploadWriter:
    return UploadWriter(app.state.sessions, lambda: app.state.settings, receivers=app.state.receivers)


def app_from_environment() -> FastAPI:
    """The app of one extra API process (`serve --api-workers N`): settings from the same environment
    `serve` validated (it exports a generated dev secret first, so every process signs alike)."""
    from service.config import load_settings

    return create_app(load_settings())


def _no_store(response: Response) -> None:
    """Every API answer is the caller's own (grades, tokens, settings): no browser or proxy may keep a copy.
    Routes that build their own Response (CSV, event streams) set it there."""
    response.headers["Cache-Control"] = "no-store"


def create_app(
    settings: Settings,
    *,
    catalogue: Catalogue | None = None,
    engine=None,
    authenticators: Sequence[Authenticator] | None = None,
) -> FastAPI:
    """Build the app from validated settings; the engine and catalogue are created here, never at import.

    `authenticators` are asked in order (bearer tokens by default; LTI or session cookies can be added)."""
    app = FastAPI(
        title="titangrade",
        version="1",
        description="Grades TorchTitan Wordle course notebooks.",
        openapi_url=API_PREFIX + "/openapi.json",
        docs_url=None,  # served below from the service's own Swagger UI copy (service/openapi.py), not a CDN
        redoc_url=None,
        redirect_slashes=False,
        lifespan=_lifespan,
    )
    memory.limit_arenas(settings.malloc_arena_max)  # before `serve` starts its threads
    app.state.settings = settings
    app.state.engine = engine if engine is not None else make_engine(settings.database_url)
    app.state.sessions = bootstrap.sessions(app.state.engine)  # with the commit hooks (wake-ups, credential cache)
    app.state.read_sessions = read_sessions(app.state.engine)  # credential checks: no SQLite writer lock
    app.state.receivers = wiring.upload_receivers()  # who listens for "submission received"
    app.state.intake = _upload_writer(app)  # uploads: group commit per process
    app.state.catalogue = catalogue or Catalogue(settings.exercises_root, settings.reference_root)

    def max_devices() -> int:
        """The most accelerators any worker seen in the last day offers (rows outlive a worker restart)."""
        with app.state.sessions() as session:
            offered = [w.devices for w in queue.live_workers(session, within_s=86400)]
            session.commit()
        return max([0, *offered])

    app.state.max_devices = max_devices
    install_error_handlers(app)
    chosen = list(authenticators or default_authenticators())
    app.state.credential_cache = credential_cache.for_authenticators(chosen, ttl_s=settings.auth_cache_s)
    app.add_middleware(LtiFraming)  # /lti/ error pages may be framed by the registered platforms
    app.add_middleware(
        RequestGuard,
        api_prefix=API_PREFIX,
        public_paths=sorted(PUBLIC_PATHS),
        upload_paths=[UPLOAD_PATH, SIGNED_INTAKE_PATH, WEB_UPLOAD_PATH],
        too_large_pages={WEB_UPLOAD_PATH: WEB_TOO_LARGE_PAGE},
        authenticators=chosen,
    )
    http_deadlines.configure(settings)  # the header bounds of this process's uvicorn protocol
    app.add_middleware(http_deadlines.BodyDeadline, timeout_s=settings.http_body_timeout_s)  # outermost
    app.include_router(ops_router)
    app.include_router(lti_tool_router)  # browser-facing, outside /api/v1: platforms post here without a token
    app.include_router(lti_register_router)  # dynamic registration, opened by the LMS
    app.include_router(lti_picker_router)  # the picker's form posts (deep-link answer, binding an unbound link)
    for router in (
        submissions_router,
        catalogue_router,
        courses_router,
        schedule_router,
        auth_router,
        webhooks_router,
        intake_router,
        lti_api_router,
        queue_router,
        requests_router,
        lti_advantage_router,
    ):
        app.include_router(router, prefix=API_PREFIX, dependencies=[Depends(_no_store)])
    install_web_pages(app)  # HTML pages for learners and instructors (session cookie, same services)
    install_security_headers(app)  # CSP, framing, nosniff on every HTML answer (error pages included)
    install_request_id(app)  # outermost: every answer, a 500 included, echoes its X-Request-ID

    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, api_prefix=API_PREFIX, public_paths=PUBLIC_PATHS)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_api_route(
        API_PREFIX + "/docs",
        lambda: docs_page(title=app.title, openapi_url=API_PREFIX + "/openapi.json"),
        methods=["GET"],
        include_in_schema=False,
    )
    return app
