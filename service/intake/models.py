"""Intake integrations: an LMS or repository host that may file submissions into one course, signing
each request (Standard Webhooks) with its own secret and vouching for learners of its own issuer."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from sqlalchemy import DateTime, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class IssuerKind(StrEnum):
    """Whose identities an integration may act for."""

    OWN = "own"  # its own namespace, intake:<course>:<name>, derived at creation
    LINKED = "linked"  # an admin linked it to another issuer (the local one, an LTI platform's)
    UNCONFIRMED = "unconfirmed"  # made before 0008 with a free-text issuer: refused until an admin confirms it


class IntakeIntegration(Base):
    __tablename__ = "intake_integrations"
    # names are a course's own: another course may use the same one, and nobody learns that it does
    __table_args__ = (UniqueConstraint("course", "name", name="uq_intake_integrations_course_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), index=True)  # named in the intake URL (?integration=)
    course: Mapped[str] = mapped_column(String(200), index=True)
    issuer: Mapped[str] = mapped_column(String(200))  # learners it sends are identities of this issuer
    issuer_kind: Mapped[str] = mapped_column(String(20), default=IssuerKind.OWN)
    linked_by: Mapped[str | None] = mapped_column(String(200), nullable=True)  # the admin who linked the issuer
    secret: Mapped[str] = mapped_column(String(200))
    previous_secret: Mapped[str | None] = mapped_column(String(200), nullable=True)
    previous_expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    removed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
