"""Webhook endpoints of a course: where its grade events go (their deliveries are outbox rows, service/outbox)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class WebhookEndpoint(Base):
    """Where a course's grade events go. The secret is kept as sent to the receiver (whsec_...): signing
    needs it in the clear, as in every Standard Webhooks sender; API responses show it only once."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    course: Mapped[str] = mapped_column(String(200), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    event_types: Mapped[list] = mapped_column(JSON)
    description: Mapped[str] = mapped_column(String(500), default="")
    secret: Mapped[str] = mapped_column(String(200))
    previous_secret: Mapped[str | None] = mapped_column(String(200), nullable=True)
    previous_expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    removed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
