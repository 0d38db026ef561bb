"""Every error response has one shape, `{"error": {"code", "message"}}`, with the headers HTTP asks for
(WWW-Authenticate on 401, Retry-After on 429 and 503, Allow on 405) and the message in the caller's language.
A database that cannot be reached is a 503 on every route (service/outage.py decides); other database
errors stay 500s."""

from __future__ import annotations

import logging
import sqlite3

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from grading.errors import InvalidSubmission
from service.deps import settings_of
from service.errors import DatabaseUnavailable, ServiceError, clip, from_engine, preferred_lang
from service.messages import ERRORS, error
from service.outage import describe, is_unavailable

log = logging.getLogger("titangrade.api")
API_DOCS = "/api/v1/docs"


class ErrorDetail(BaseModel):
    code: str = Field(description="stable, machine-readable")
    message: str = Field(description="what went wrong and how to fix it, in the Accept-Language (en or zh)")


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


class BodyTooLarge(StarletteHTTPException):
    """Raised while the body streams in; an HTTPException so FastAPI's body parsing passes it through."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, detail=f"the request body is larger than {limit} bytes")
        self.limit = limit


def too_large_text(limit: int, lang: str) -> str:
    return ERRORS.text("body_too_large", lang, limit=limit)


# Validation error types whose pydantic message is written for people; any other type gets a plain
# "is not valid", so Python internals (e.g. "pop expected at most 1 argument") never reach a client.
_READABLE = (
    "missing",
    "int_parsing",
    "int_type",
    "float_parsing",
    "float_type",
    "string_type",
    "bool_parsing",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "string_too_short",
    "string_too_long",
    "literal_error",
    "enum",
    "json_invalid",
    "finite_number",
    "dict_type",
    "model_attributes_type",
    "list_type",
    "int_from_float",
    "bool_type",
    "too_long",
    "too_short",
)


def validation_text(errors: list[dict], lang: str) -> str:
    return ERRORS.text("request_invalid", lang, problems=validation_problems(errors, lang), docs=API_DOCS)


def validation_problems(errors: list[dict], lang: str) -> str:
    """What is wrong with which field, for people (the API's body and the pages' error page)."""
    parts = []
    for err in errors[:5]:
        loc = ".".join(clip(p, 40) for p in err.get("loc", ()) if p not in ("body",)) or "body"
        kind = str(err.get("type", ""))
        if kind == "missing":
            what = ERRORS.text("field_required", lang)
        elif loc.endswith("notebook"):
            what = ERRORS.text("field_not_a_file", lang)
        elif kind in _READABLE:
            what = clip(err.get("msg", "is not valid"), 200)
        else:
            what = ERRORS.text("field_invalid", lang)
        parts.append(f"{loc}: {what}")
    if len(errors) > 5:
        parts.append(f"... and {len(errors) - 5} more")
    return "; ".join(parts)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route accepts at this path (Starlette's own 405 names only the first route's)."""
    allowed = [
        m
        for m in ("GET", "POST", "PUT", "PATCH", "DELETE")
        if any(route.matches({**request.scope, "method": m})[0] is Match.FULL for route in request.app.routes)
    ]
    return allowed


def install_error_handlers(app: FastAPI) -> None:
    def lang_of(request: Request) -> str:
        return preferred_lang(request.headers.get("accept-language"))

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError):
        headers = dict(exc.headers)
        if exc.status_code == 401 and "WWW-Authenticate" not in headers:
            headers["WWW-Authenticate"] = 'Bearer realm="titangrade"'
        return error_response(exc.status_code, exc.code, exc.text(lang_of(request)), headers)

    @app.exception_handler(InvalidSubmission)
    async def _invalid(request: Request, exc: InvalidSubmission):
        err = from_engine(exc)
        return error_response(err.status_code, err.code, err.text(lang_of(request)))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        return error_response(422, "invalid_request", validation_text(list(exc.errors()), lang_of(request)))

    @app.exception_handler(RecursionError)
    async def _too_deep(request: Request, exc: RecursionError):
        err = ServiceError(error("nesting_too_deep"), code="nesting_too_deep", status_code=422)
        return error_response(422, err.code, err.text(lang_of(request)))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        lang = lang_of(request)
        where = f"{request.method} {clip(request.url.path)}"
        headers = dict(exc.headers or {})
        if isinstance(exc, BodyTooLarge) or exc.status_code == 413:
            return error_response(413, "too_large", too_large_text(getattr(exc, "limit", 0), lang))
        if exc.status_code == 400:
            if isinstance(exc.__cause__, RecursionError):
                return await _too_deep(request, exc.__cause__)
            if "multipart" in request.headers.get("content-type", ""):
                return error_response(400, "malformed_multipart", ERRORS.text("malformed_multipart", lang))
            return error_response(400, "malformed_body", ERRORS.text("malformed_body", lang))
        if exc.status_code == 408:  # service/http_deadlines.py: the body came too slowly
            return error_response(408, "request_timeout", clip(exc.detail, 300), headers)
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
            message = ERRORS.text(
                "method_not_allowed", lang, where=where, method=request.method, allowed=headers["Allow"]
            )
            return error_response(405, "method_not_allowed", message, headers)
        if exc.status_code == 404:
            message = ERRORS.text("no_such_endpoint", lang, where=where, docs=API_DOCS)
            return error_response(404, "not_found", message, headers)
        return error_response(exc.status_code, "http_error", clip(exc.detail, 300), headers)

    async def _database(request: Request, exc: Exception):
        if not is_unavailable(exc):  # a bug, not an outage: the 500 below, with its traceback logged
            raise exc
        log.warning("database unavailable on %s %s: %s", request.method, clip(request.url.path), describe(exc))
        err = DatabaseUnavailable(retry_after_s=settings_of(request).db_retry_after_s)
        handler = app.exception_handlers[ServiceError]  # looked up now: web pages answer with a page
        response = await handler(request, err)  # type: ignore[misc]  # registered as async
        response.headers.setdefault("Retry-After", err.headers["Retry-After"])
        return response

    for database_error in (SQLAlchemyError, sqlite3.Error, psycopg.Error):
        app.add_exception_handler(database_error, _database)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, clip(request.url.path))
        return error_response(
            500, "internal_error", f"unexpected server error ({type(exc).__name__}); it has been logged"
        )
