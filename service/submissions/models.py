"""A submission (the notebook and its grade) and its persisted progress events."""
from __future__ import annotations

import datetime as dt

from sqlalchemy import (JSON, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text,
                        UniqueConstraint)
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("user", "idempotency_key", name="uq_submission_idempotency"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user: Mapped[str] = mapped_column(String(200), index=True)
    course: Mapped[str] = mapped_column(String(200), index=True)
    exercise_id: Mapped[str] = mapped_column(String(100), index=True)
    lang: Mapped[str] = mapped_column(String(8), default="en")
    attempt: Mapped[int] = mapped_column(Integer)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    notebook: Mapped[bytes] = mapped_column(LargeBinary)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_score: Mapped[float] = mapped_column(Float)
    manual_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    result: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    grading_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    graded_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    superseded_by: Mapped[str | None] = mapped_column(String(32), nullable=True)  # a later attempt's id

    @property
    def effective_score(self) -> float | None:
        return self.manual_score if self.manual_score is not None else self.score


class ProgressEvent(Base):
    __tablename__ = "progress_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(20))
    data: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
