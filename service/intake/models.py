"""Intake integrations: an LMS or repository host that may file submissions into one course, signing
each request (Standard Webhooks) with its own secret and vouching for learners of its own issuer."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class IntakeIntegration(Base):
    __tablename__ = "intake_integrations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)  # named in the intake URL (?integration=)
    course: Mapped[str] = mapped_column(String(200), index=True)
    issuer: Mapped[str] = mapped_column(String(200))  # learners it sends are identities of this issuer
    secret: Mapped[str] = mapped_column(String(200))
    previous_secret: Mapped[str | None] = mapped_column(String(200), nullable=True)
    previous_expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    removed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
