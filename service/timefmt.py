"""Timestamps leave the service in one form: RFC 3339 with an explicit offset (`2026-11-30T12:00:00.000+00:00`).

The database stores naive UTC (service.db.utcnow); this module is where the offset is attached.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import PlainSerializer, WithJsonSchema


def rfc3339(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat(timespec="milliseconds")


Timestamp = Annotated[
    dt.datetime, PlainSerializer(rfc3339, return_type=str), WithJsonSchema({"type": "string", "format": "date-time"})
]
