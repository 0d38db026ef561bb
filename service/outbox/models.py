"""The outbox's rows: grade events, their per-target deliveries, and the attempt log of each delivery.

`OutboxDelivery` is not tied to one kind of target: `target_kind` names the sender ("webhook", "lti") and
`target_id` the row of that kind, so every kind shares claiming, retries, dead-lettering and replay
(service/outbox/delivery.py).
"""

from __future__ import annotations

import datetime as dt
import enum

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class DeliveryStatus(enum.StrEnum):
    """Where a delivery stands. `disabled`: held, not sent, because its target answered 410 Gone (Standard
    Webhooks: stop sending); re-enabling the target makes its held deliveries pending again. `dropped`: not
    sent, because its sender found it overtaken (an LTI "Pending" score after the final one, see
    service/lti/ags.py); nothing retries it."""

    PENDING = "pending"
    DELIVERED = "delivered"
    DEAD = "dead"
    DISABLED = "disabled"
    DROPPED = "dropped"


class OutboxEvent(Base):
    """One row per stored grade, written in the score's transaction (service/grades/service.py), and one per
    received submission that has a receiver, written with the submission (service/submissions/received.py);
    the loop fans each out into deliveries (delivered_at = fanned out) and sends them with retries."""

    __tablename__ = "grade_outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(40))
    payload: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class OutboxDelivery(Base):
    """One outbox event on its way to one target: pending -> delivered, or dead after the retry window, or
    disabled (held) while its target is disabled. A target is disabled exactly while it has a disabled row."""

    __tablename__ = "outbox_deliveries"
    __table_args__ = (UniqueConstraint("event_id", "target_kind", "target_id", name="uq_delivery_event_target"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("grade_outbox.id", ondelete="CASCADE"), index=True)
    target_kind: Mapped[str] = mapped_column(String(20))
    target_id: Mapped[int] = mapped_column(Integer, index=True)
    course: Mapped[str] = mapped_column(String(200), index=True)
    event_type: Mapped[str] = mapped_column(String(60))
    message_id: Mapped[str] = mapped_column(String(64), index=True)  # webhook-id: the same on every retry
    body: Mapped[str] = mapped_column(Text)  # the exact JSON sent, fixed at fan-out so retries are identical
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)  # a DeliveryStatus
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)
    window_started_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    last_error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class DeliveryAttempt(Base):
    """The log of one try: HTTP status (None if no response), latency, error, a bounded response excerpt."""

    __tablename__ = "delivery_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("outbox_deliveries.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    latency_ms: Mapped[float] = mapped_column(Float)
    ok: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str] = mapped_column(Text, default="")
    response_excerpt: Mapped[str] = mapped_column(Text, default="")
