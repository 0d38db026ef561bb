"""Per-course settings an instructor may change (a missing row means the service-wide defaults)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class CourseSettings(Base):
    __tablename__ = "course_settings"

    course: Mapped[str] = mapped_column(String(200), primary_key=True)
    # off | training | all: which exercises' queued attempts a newer attempt supersedes; null = the default
    supersede: Mapped[str | None] = mapped_column(String(10), nullable=True)
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")  # IANA name: how the course's times are shown
    updated_by: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
