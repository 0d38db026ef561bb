"""create_app: the FastAPI application (routes under /api/v1, JSON errors, state built from Settings)."""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from grading.errors import InvalidSubmission
from grading.exercise import Catalogue
from service.config import Settings
from service.courses.routes import router as courses_router
from service.db import make_engine, make_sessionmaker
from service.errors import ServiceError
from service.exercises.routes import router as exercises_router
from service.ops import router as ops_router
from service.queue import service as queue
from service.submissions.routes import router as submissions_router

API_PREFIX = "/api/v1"
UPLOAD_PATH = API_PREFIX + "/submissions"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(_: Request, exc: ServiceError):
        return _error(exc.status_code, exc.code, exc.message)

    @app.exception_handler(InvalidSubmission)
    async def _invalid(_: Request, exc: InvalidSubmission):
        return _error(exc.status_code, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError):
        parts = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()]
        return _error(422, "invalid_request", "; ".join(parts) or "the request is malformed")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = str(exc.detail)
        if exc.status_code == 400 and request.url.path.rstrip("/") == UPLOAD_PATH:
            code = "malformed_multipart"
            message = (f"the request body is not valid multipart/form-data ({message}); send the notebook as a "
                       "file field: curl -F notebook=@mine.ipynb -F exercise_id=ch07.wordle_reward ...")
        elif exc.status_code in (404, 405):
            message = (f"{request.method} {request.url.path}: {message.lower()}; "
                       f"the API is listed at {API_PREFIX}/docs")
        return _error(exc.status_code, code, message)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception):
        return _error(500, "internal_error", f"unexpected server error ({type(exc).__name__}); it has been logged")


def _install_size_limit(app: FastAPI, max_bytes: int) -> None:
    """Refuse oversized uploads from Content-Length before the multipart body is read."""
    @app.middleware("http")
    async def _limit(request: Request, call_next):
        if request.method == "POST" and request.url.path.rstrip("/") == UPLOAD_PATH:
            length = request.headers.get("content-length")
            if length and length.isdigit() and int(length) > max_bytes + 64 * 1024:
                return _error(413, "too_large", f"the upload is larger than {max_bytes // (1024 * 1024)} MB; "
                              "clear large outputs from the notebook and submit again")
        return await call_next(request)


def create_app(settings: Settings, *, catalogue: Catalogue | None = None, engine=None) -> FastAPI:
    """Build the app from validated settings; the engine and catalogue are created here, never at import."""
    app = FastAPI(title="titangrade", version="1", description="Grades TorchTitan Wordle course notebooks.",
                  openapi_url=API_PREFIX + "/openapi.json", docs_url=API_PREFIX + "/docs", redoc_url=None)
    app.state.settings = settings
    app.state.engine = engine if engine is not None else make_engine(settings.database_url)
    app.state.sessions = make_sessionmaker(app.state.engine)
    app.state.catalogue = catalogue or Catalogue(settings.exercises_root, settings.reference_root)

    def max_devices() -> int:
        """The most accelerators any worker seen in the last day offers (rows outlive a worker restart)."""
        with app.state.sessions() as session:
            offered = [w.devices for w in queue.live_workers(session, within_s=86400)]
            session.commit()
        return max([0, *offered])

    app.state.max_devices = max_devices
    _install_error_handlers(app)
    _install_size_limit(app, settings.max_upload_bytes)
    app.include_router(ops_router)
    for router in (submissions_router, exercises_router, courses_router):
        app.include_router(router, prefix=API_PREFIX)
    return app
