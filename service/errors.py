"""Errors a client can cause, each with a stable code, an HTTP status and a message naming the fix."""
from __future__ import annotations


class ServiceError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status_code:
            self.status_code = status_code


class NotAuthenticated(ServiceError):
    status_code, code = 401, "not_authenticated"


class Forbidden(ServiceError):
    status_code, code = 403, "forbidden"


class NotFound(ServiceError):
    status_code, code = 404, "not_found"


class TooMany(ServiceError):
    status_code, code = 429, "rate_limited"


class Unsatisfiable(ServiceError):
    status_code, code = 422, "resources_unavailable"
