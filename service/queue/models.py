"""The job queue (one row per grading run, leased by a worker) and worker heartbeats.

`job_row` is the one place a new job's columns are chosen: the intake's batch INSERT and `queue.enqueue`
(regrades) both file what it returns, so every path (upload, LTI, signed intake, regrade) queues the same row.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String, Text, false
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
    learner: Mapped[str] = mapped_column(String(200), default="")  # learner_key: fair share is per identity
    lane: Mapped[str] = mapped_column(String(10), default="short")
    priority: Mapped[int] = mapped_column(Integer, default=0)  # lower runs first; bulk regrades are 100
    devices: Mapped[int] = mapped_column(Integer, default=0)
    # a device job that runs on CPU ranks on a worker with fewer than `devices` accelerators (the manifest's
    # "cpu" fallback); a worker that has them waits for them instead
    cpu_fallback: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
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


def learner_key(identity_id: int) -> str:
    """Fair share and the per-learner cap count per identity (issuer + subject), never per display name:
    two learners called "alice" from two platforms are two learners, and a renamed learner stays one."""
    return f"identity:{identity_id}"


def job_row(
    *,
    submission_id: str,
    learner: str,
    lane: str,
    priority: int,
    devices: int,
    world_size: int,
    max_attempts: int,
    now: dt.datetime,
    superseded_by: str | None = None,
    cpu_fallback: bool = False,
) -> dict[str, Any]:
    """The columns of a new job (a dict: the intake inserts many with one executemany, `enqueue` makes a
    `Job` of it). `superseded_by`: a later attempt in the same intake batch replaced this submission before
    any worker saw it, so its job is stored cancelled, exactly as `queue.cancel_queued` would leave it."""
    cancelled = superseded_by is not None
    return {
        "submission_id": submission_id,
        "status": JobStatus.CANCELLED if cancelled else JobStatus.QUEUED,
        "learner": learner,
        "lane": lane,
        "priority": priority,
        "devices": devices,
        "cpu_fallback": cpu_fallback,
        "world_size": world_size,
        "max_attempts": max_attempts,
        "available_at": now,
        "created_at": now,
        "finished_at": now if cancelled else None,
        "last_error": f"superseded by {superseded_by}" if cancelled else "",
    }


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
