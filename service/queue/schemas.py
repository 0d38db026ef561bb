"""What the queue health API sends (GET /api/v1/queue/health): service/queue/health.py's report, public."""

from __future__ import annotations

from pydantic import BaseModel, Field

from service.queue.causes import Cause
from service.queue.health import QueueHealth
from service.timefmt import rfc3339


class LanePublic(BaseModel):
    lane: str
    queued: int
    oldest_age_s: float | None = Field(description="seconds since the oldest queued job was filed; null: none waits")
    oldest_job_id: int | None


class CausePublic(BaseModel):
    """Jobs whose last fault was this cause, touched (filed, claimed or finished) in the window."""

    cause: Cause = Field(description="a fixed key derived from the stored fault text (service/queue/causes.py)")
    total: int
    failed: int = Field(description="attempts spent: the submission was recorded not gradable")
    recovered: int = Field(description="retried or handed back, then graded")
    retrying: int = Field(description="queued or running again now")
    example: str = Field(description="the newest raw fault text of this cause, trimmed")
    last_at: str | None = Field(description="RFC 3339")


class WorkerPublic(BaseModel):
    id: str
    host: str
    pid: int
    slots: int
    devices: int
    device_kind: str
    alive: bool = Field(description="false once its heartbeat is older than lease_s (dead or stopped)")
    heartbeat_at: str | None = Field(description="RFC 3339")
    heartbeat_age_s: float
    held: list[int] = Field(description="ids of jobs still running under its lease (at most 20)")
    reaped: int = Field(description="its jobs whose lease expired and were taken back, in the window")


class NotGradablePublic(BaseModel):
    submission_id: str
    exercise_id: str
    course: str
    user: str
    cause: Cause
    example: str
    failed_at: str | None = Field(description="RFC 3339")
    status_now: str = Field(description="the submission's status now (e.g. graded after a regrade)")


class QueueHealthPublic(BaseModel):
    generated_at: str | None = Field(description="RFC 3339")
    window_s: float
    dead_after_s: float = Field(description="a worker is dead after this long without a heartbeat (lease_s)")
    lanes: list[LanePublic]
    jobs: dict[str, int] = Field(description="all jobs by status")
    causes: list[CausePublic] = Field(description="most jobs first")
    sampled: bool = Field(description="true when the window held more faulted jobs than were counted (newest)")
    workers_live: int
    workers_dead: int
    workers: list[WorkerPublic] = Field(description="live first, then dead; those seen in the window")
    not_gradable: list[NotGradablePublic] = Field(description="newest first, at most 50, only ones you may read")


def to_public(report: QueueHealth) -> QueueHealthPublic:
    return QueueHealthPublic(
        generated_at=rfc3339(report.generated_at),
        window_s=report.window_s,
        dead_after_s=report.dead_after_s,
        lanes=[LanePublic(**vars_of(lane)) for lane in report.lanes],
        jobs=report.jobs,
        causes=[
            CausePublic(
                cause=c.cause,
                total=c.total,
                failed=c.failed,
                recovered=c.recovered,
                retrying=c.retrying,
                example=c.example,
                last_at=rfc3339(c.last_at),
            )
            for c in report.causes
        ],
        sampled=report.sampled,
        workers_live=len(report.live_workers),
        workers_dead=len(report.dead_workers),
        workers=[
            WorkerPublic(
                **{
                    **vars_of(w),
                    "heartbeat_at": rfc3339(w.heartbeat_at),
                    "heartbeat_age_s": round(w.heartbeat_age_s, 1),
                }
            )
            for w in report.workers
        ],
        not_gradable=[
            NotGradablePublic(**{**vars_of(n), "failed_at": rfc3339(n.failed_at)}) for n in report.not_gradable
        ],
    )


def vars_of(obj) -> dict:
    """A slotted dataclass's fields as a dict (dataclasses.asdict would deep-copy the lists)."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}
