"""The job queue (one row per grading run, leased by a worker) and worker heartbeats."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow
from service.states import JobStatus


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_claim", "status", "lane", "priority", "id"),
        Index("ix_jobs_learner_status", "learner", "status"),
        Index("ix_jobs_recent_grants", "claimed_at", "learner", "lane"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(20), default=JobStatus.QUEUED)  # queued|running|done|failed|cancelled
    learner: Mapped[str] = mapped_column(String(200), default="")  # queue.learner_key: fair share is per identity
    lane: Mapped[str] = mapped_column(String(10), default="short")
    priority: Mapped[int] = mapped_column(Integer, default=0)  # lower runs first; bulk regrades are 100
    devices: Mapped[int] = mapped_column(Integer, default=0)
    world_size: Mapped[int] = mapped_column(Integer, default=1)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True, index=True)
    worker_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    available_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    claimed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)  # last grant, for fair share
    last_error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class WorkerBeat(Base):
    __tablename__ = "worker_heartbeats"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    slots: Mapped[int] = mapped_column(Integer)
    long_slots: Mapped[int | None] = mapped_column(Integer, nullable=True)  # slots that take long-lane jobs
    devices: Mapped[int] = mapped_column(Integer, default=0)
    device_kind: Mapped[str] = mapped_column(String(10), default="cpu")
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    heartbeat_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
