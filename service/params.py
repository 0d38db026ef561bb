"""Path and query parameters that several routers share, each with its bounds and text pattern.

A name a client sends may reach the database (PostgreSQL refuses NUL: a 500) or a log line, so every one
is printable, bounded, and valid Unicode (a lone surrogate fails the pattern): refused with a 422 naming it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from service.patterns import PRINTABLE_NAME

COURSE = Annotated[str, Path(max_length=200, pattern=PRINTABLE_NAME, description="the course id")]
EXERCISE = Annotated[str, Path(max_length=100, pattern=PRINTABLE_NAME, description="the exercise id")]
SUBMISSION = Annotated[str, Path(max_length=64, pattern=PRINTABLE_NAME, description="the submission id")]
ROW_ID = Annotated[int, Path(ge=1, le=2**31 - 1, description="the row id")]
COURSE_QUERY = Annotated[
    str | None,
    Query(max_length=200, pattern=PRINTABLE_NAME, description="one course you teach; default: all of them"),
]
