"""A submission (the notebook and its grade) and its persisted progress events."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    insert,
    select,
)
from sqlalchemy.orm import Mapped, mapped_column

from grading.progress import Event, kind_of
from service.auth.models import LOCAL_ISSUER, Identity  # registers the FK target wherever submissions are used
from service.courses.lateness import counted_score
from service.db import Base, utcnow
from service.states import SubmissionStatus


def _local_identity(context) -> int:
    """A row written with only a user name (a script, a benchmark, an older test) belongs to the local
    (issuer "titangrade") identity of that name, made if missing. The API always sets identity_id itself."""
    name = context.get_current_parameters()["user"]
    conn = context.connection
    found = conn.execute(select(Identity.id).where(Identity.issuer == LOCAL_ISSUER, Identity.subject == name)).scalar()
    if found is None:
        found = conn.execute(
            insert(Identity)
            .values(issuer=LOCAL_ISSUER, subject=name, name=name, created_at=utcnow())
            .returning(Identity.id)
        ).scalar_one()
    return found


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        UniqueConstraint("identity_id", "idempotency_key", name="uq_submission_idempotency"),
        # covers the intake's rate and attempt limits, per learner, course and exercise (batch._limit_counts)
        Index("ix_submissions_learner_limits", "identity_id", "course", "exercise_id", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    identity_id: Mapped[int] = mapped_column(ForeignKey(Identity.id), index=True, default=_local_identity)
    user: Mapped[str] = mapped_column(String(200), index=True)  # the identity's name when submitted (display)
    course: Mapped[str] = mapped_column(String(200), index=True)
    exercise_id: Mapped[str] = mapped_column(String(100), index=True)
    lang: Mapped[str] = mapped_column(String(8), default="en")
    attempt: Mapped[int] = mapped_column(Integer)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    request_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)  # binds the Idempotency-Key
    run: Mapped[int] = mapped_column(Integer, default=1)  # grading run: 1 at intake, +1 per regrade
    notebook: Mapped[bytes] = mapped_column(LargeBinary)
    status: Mapped[str] = mapped_column(String(20), default=SubmissionStatus.QUEUED, index=True)
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
    # lateness against the learner's due time (service/courses/lateness.py), set at upload, recomputed when the
    # schedule or an extension changes, kept by a regrade (the submission time is created_at)
    late_by_s: Mapped[int] = mapped_column(Integer, default=0)
    penalty_percent: Mapped[float] = mapped_column(Float, default=0.0)

    @property
    def effective_score(self) -> float | None:
        """Before any late penalty: the override if any, else the auto score."""
        return self.manual_score if self.manual_score is not None else self.score

    @property
    def final_score(self) -> float | None:
        """The score that counts: the override if any (final, no penalty on top), else the auto score after
        the late penalty."""
        return counted_score(manual=self.manual_score, raw=self.score, penalty_percent=self.penalty_percent)

    def lateness_fields(self, *, manual_score: float | None) -> dict:
        """What a grade event says about time and lateness (docs/lms.md); `final_score` with `manual_score` as
        the override in force (an override event passes its new score)."""
        return {
            "submitted_at": self.created_at.replace(tzinfo=dt.UTC).isoformat(timespec="milliseconds"),
            "late": self.late_by_s > 0,
            "late_by_s": self.late_by_s,
            "penalty_percent": self.penalty_percent,
            "final_score": counted_score(manual=manual_score, raw=self.score, penalty_percent=self.penalty_percent),
        }


def _current_run(context) -> int:
    """An event belongs to the submission's current run, read in the inserting transaction."""
    submission_id = context.get_current_parameters()["submission_id"]
    run = context.connection.execute(select(Submission.run).where(Submission.id == submission_id)).scalar()
    return run or 1


class ProgressEvent(Base):
    """One progress event of one grading run; streams follow the current run (service/submissions/events.py)."""

    __tablename__ = "progress_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    run: Mapped[int] = mapped_column(Integer, default=_current_run)
    event: Mapped[str] = mapped_column(String(20))
    data: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)

    @classmethod
    def of(cls, *, submission_id: str, event: Event) -> ProgressEvent:
        """The row of one typed event (grading/progress.py): every writer stores its events this way."""
        return cls(submission_id=submission_id, event=kind_of(event)[:20], data=event.data())
