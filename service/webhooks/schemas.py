"""What the webhooks API sends and receives (never ORM rows; a secret only when it is made)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from service.patterns import PRINTABLE_NAME, CleanDescription
from service.timefmt import TimeOrNaiveIn, Timestamp


class EndpointCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=8, max_length=2000, pattern=PRINTABLE_NAME, description="http(s) URL; in prod mode a public address"
    )
    event_types: list[Annotated[str, Field(max_length=64, pattern=PRINTABLE_NAME)]] = Field(
        min_length=1,
        max_length=4,
        description="grade.stored, grade.changed, submission.not_gradable, submission.received (only if listed)",
    )
    description: CleanDescription = ""
    secret: str | None = Field(
        None, max_length=200, pattern=PRINTABLE_NAME, description="whsec_...; generated when left out"
    )


class EndpointPublic(BaseModel):
    id: int
    course: str
    url: str
    event_types: list[str]
    description: str
    rotating: bool = Field(description="an old secret still signs too, until previous_expires_at")
    previous_expires_at: Timestamp | None
    created_at: Timestamp
    disabled: bool = Field(False, description="its receiver answered 410 Gone; nothing is sent until re-enabled")
    disabled_at: Timestamp | None = Field(None, description="when the 410 Gone came")
    disabled_reason: str = Field("", description="the answer that disabled it")
    held: int = Field(0, description="deliveries waiting for it to be re-enabled")


class EnableAnswer(EndpointPublic):
    resumed: int = Field(description="held deliveries sent again now (with a fresh retry window)")


class EndpointWithSecret(EndpointPublic):
    secret: str = Field(description="shown once: verify deliveries with it (Standard Webhooks)")


class RotateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    secret: str | None = Field(
        None, max_length=200, pattern=PRINTABLE_NAME, description="whsec_...; generated when left out"
    )


class AttemptPublic(BaseModel):
    attempt: int
    started_at: Timestamp
    status_code: int | None
    latency_ms: float
    ok: bool
    error: str


class DeliveryPublic(BaseModel):
    id: int
    event_id: int
    event_type: str
    webhook_id: str = Field(description="the webhook-id header: the same on every retry and replay")
    status: str = Field(description="pending | delivered | dead | disabled (held while the endpoint is disabled)")
    attempts: int
    next_attempt_at: Timestamp | None
    last_error: str
    created_at: Timestamp
    delivered_at: Timestamp | None
    log: list[AttemptPublic]


class DeliveryList(BaseModel):
    items: list[DeliveryPublic]


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    event_id: int | None = Field(None, ge=1, le=2**31 - 1, description="one event (data.event_id of a delivery)")
    since: TimeOrNaiveIn | None = Field(None, description="every event of the course created at or after this")
    until: TimeOrNaiveIn | None = Field(None, description="... and before this (default: now)")


class ReplayAccepted(BaseModel):
    queued: int
    delivery_ids: list[int]
