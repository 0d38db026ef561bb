"""LTI errors: a 4xx whose code names what failed (the platform's admin reads them in the browser)."""

from __future__ import annotations

from grading.messages import Message
from service.errors import ServiceError


class LtiError(ServiceError):
    status_code, code = 400, "lti_invalid"

    def __init__(
        self, code: str, message: Message | str, *, status_code: int = 400, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message, code=code, status_code=status_code, headers=headers)
