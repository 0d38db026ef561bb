"""Timestamps leave the service in one form: RFC 3339 with an explicit offset (`2026-11-30T12:00:00.000+00:00`).

The database stores naive UTC (service.db.utcnow); this module is where the offset is attached.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import AwareDatetime, BeforeValidator, PlainSerializer, WithJsonSchema


def rfc3339(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat(timespec="milliseconds")


Timestamp = Annotated[
    dt.datetime, PlainSerializer(rfc3339, return_type=str), WithJsonSchema({"type": "string", "format": "date-time"})
]


def _text_only(value: object) -> object:
    """A time the API takes is RFC 3339 text, as its schema says: pydantic would also read a number as
    seconds since 1970 (`"opens_at": 0` became a schedule of 1970, which schemathesis flagged)."""
    if value is not None and not isinstance(value, str | dt.datetime):
        raise ValueError("must be an RFC 3339 date-time string")
    return value


# Times a client sends: RFC 3339 text (with an offset for TimeIn; TimeOrNaiveIn reads a bare one as UTC).
TimeIn = Annotated[AwareDatetime, BeforeValidator(_text_only)]
TimeOrNaiveIn = Annotated[dt.datetime, BeforeValidator(_text_only)]
