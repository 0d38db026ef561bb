"""A learner's regrade request or problem report on one submission, and the staff's answer."""

from __future__ import annotations

import datetime as dt
import enum

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from service.auth.models import Identity
from service.db import Base, utcnow


class RequestKind(enum.StrEnum):
    REGRADE = "regrade"  # "please look at my score again"
    PROBLEM = "problem"  # "something is wrong with this grading / exercise"


class RequestStatus(enum.StrEnum):
    """open -> answered (staff wrote an answer) -> closed; staff may close an open one without answering."""

    OPEN = "open"
    ANSWERED = "answered"
    CLOSED = "closed"


class SubmissionRequest(Base):
    __tablename__ = "submission_requests"
    __table_args__ = (
        # the course's list: open first, by age (service/requests/service.py:for_course)
        Index("ix_submission_requests_course_status", "course", "status", "created_at"),
        # one open request per submission, held by the database (two racing POSTs: one is a 409)
        Index(
            "uq_submission_requests_one_open",
            "submission_id",
            unique=True,
            sqlite_where=text("status = 'open'"),
            postgresql_where=text("status = 'open'"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    course: Mapped[str] = mapped_column(String(200))  # the submission's (it never changes): lists need no join
    exercise_id: Mapped[str] = mapped_column(String(100))
    identity_id: Mapped[int] = mapped_column(ForeignKey(Identity.id), index=True)  # the author
    author: Mapped[str] = mapped_column(String(200))  # the author's name when asked (display)
    kind: Mapped[str] = mapped_column(String(20))  # a RequestKind
    text: Mapped[str] = mapped_column(Text)  # cleaned (grading/text.py), at most TEXT_CHARS
    status: Mapped[str] = mapped_column(String(20), default=RequestStatus.OPEN)  # a RequestStatus
    answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    answered_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    answered_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    closed_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    closed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
