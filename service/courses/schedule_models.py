"""When an exercise of a course opens and is due, its late policy, and per-learner extensions.

No row: the exercise is always open and nothing is late. Times are naive UTC, as every stored time.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Float, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.auth.models import Identity
from service.db import Base, utcnow


class ExerciseSchedule(Base):
    __tablename__ = "exercise_schedules"

    course: Mapped[str] = mapped_column(String(200), primary_key=True)
    exercise_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    opens_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    due_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    late_kind: Mapped[str] = mapped_column(String(10), default="none")  # service/courses/lateness.py LateKind
    late_percent: Mapped[float] = mapped_column(Float, default=0.0)  # per started day or hour
    floor_percent: Mapped[float] = mapped_column(Float, default=0.0)
    updated_by: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class Extension(Base):
    """One learner's own due time for one exercise of a course (it replaces the exercise's)."""

    __tablename__ = "extensions"
    __table_args__ = (UniqueConstraint("course", "identity_id", "exercise_id", name="uq_extension"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    course: Mapped[str] = mapped_column(String(200), index=True)
    identity_id: Mapped[int] = mapped_column(ForeignKey(Identity.id, ondelete="CASCADE"), index=True)
    exercise_id: Mapped[str] = mapped_column(String(100))
    due_at: Mapped[dt.datetime] = mapped_column(DateTime)
    granted_by: Mapped[str] = mapped_column(String(200), default="")
    granted_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
