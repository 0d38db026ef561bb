"""Log set-up for every titangrade process: one JSON object per line, or a human-readable line.

The ids a line can carry (request, submission, job, attempt) live in a context variable: the request-id
middleware binds `request_id` for one HTTP request, the worker binds a job's ids while it claims or
stores it, the grading process while it grades. Code that logs passes nothing: the formatter reads them.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

LOG_FORMATS = ("json", "text")
ID_FIELDS = ("request_id", "submission_id", "job_id", "attempt")
_ids: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("titangrade_log_ids", default={})  # noqa: B039 (never mutated: bind copies)
F = TypeVar("F", bound=Callable[..., Any])


def current_ids() -> dict[str, Any]:
    """The ids bound in this context (a copy)."""
    return dict(_ids.get())


@contextlib.contextmanager
def bind(**ids: Any) -> Iterator[None]:
    """Add ids to every log line written inside the block (None values are left out); nests."""
    token = _ids.set({**_ids.get(), **{k: v for k, v in ids.items() if v is not None}})
    try:
        yield
    finally:
        _ids.reset(token)


def bind_job(job: Any) -> contextlib.AbstractContextManager[None]:
    """Bind a claimed job's ids (anything with job_id, submission_id and attempt)."""
    return bind(submission_id=job.submission_id, job_id=job.job_id, attempt=getattr(job, "attempt", None))


def job_scoped(job_of: Callable[..., Any]) -> Callable[[F], F]:
    """Decorate a function whose log lines should carry a job's ids: `job_of` gets the same arguments
    and returns the job (or ticket)."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with bind_job(job_of(*args, **kwargs)):
                return function(*args, **kwargs)

        return wrapped  # type: ignore[return-value]

    return decorate


def rfc3339(created_s: float) -> str:
    """A record's time as RFC 3339 in UTC with milliseconds, e.g. 2026-12-02T16:25:22.123Z."""
    moment = dt.datetime.fromtimestamp(created_s, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the bound ids, and a traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": rfc3339(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_ids.get())
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """For a person at a terminal: `time level logger [ids] message`."""

    def format(self, record: logging.LogRecord) -> str:
        ids = " ".join(f"{k}={v}" for k, v in _ids.get().items())
        head = f"{rfc3339(record.created)} {record.levelname:<7} {record.name}"
        text = f"{head} [{ids}] {record.getMessage()}" if ids else f"{head} {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def formatter(log_format: str) -> logging.Formatter:
    return TextFormatter() if log_format == "text" else JsonFormatter()


def configure(*, log_format: str | None = None, level: int = logging.INFO) -> None:
    """Install the root handler (stderr) once per process. It runs before the settings are loaded, so the
    format comes from `TITANGRADE_LOG_FORMAT` here; an unknown value logs JSON, and the settings' own
    validation (service/config.py `log_format`) then refuses to start with a message that names it."""
    chosen = log_format or os.environ.get("TITANGRADE_LOG_FORMAT", "json")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(chosen if chosen in LOG_FORMATS else "json"))
    logging.basicConfig(level=level, handlers=[handler])
    logging.getLogger("alembic").setLevel(logging.WARNING)
