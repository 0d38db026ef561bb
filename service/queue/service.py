"""The job queue on the database: enqueue, claim with a lease, renew, fenced finish, reap expired leases.

PostgreSQL claims with `FOR UPDATE SKIP LOCKED`; SQLite runs the same single `UPDATE ... WHERE id =
(SELECT ...) RETURNING` inside `BEGIN IMMEDIATE` (see service.db), which is atomic because SQLite has one
writer. Every write of a job's outcome checks the lease token (fencing), so a worker whose lease expired
can never overwrite the grade stored by the worker that reclaimed the job.
"""
from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, false, func, or_, select, update
from sqlalchemy.orm import Session

from service.db import utcnow
from service.grades.models import OutboxEvent
from service.queue.models import Job, WorkerBeat
from service.submissions.models import ProgressEvent, Submission

INTERACTIVE_PRIORITY = 0
SINGLE_REGRADE_PRIORITY = 10
BULK_REGRADE_PRIORITY = 100
TERMINAL_STATUSES = ("graded", "error", "not_gradable")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimedJob:
    """What a worker holds while grading: ids and the lease token that fences its writes."""

    job_id: int
    submission_id: str
    lease_token: str
    attempt: int
    lane: str
    devices: int
    world_size: int


def enqueue(session: Session, *, submission_id: str, lane: str, priority: int, devices: int,
            world_size: int, max_attempts: int) -> Job:
    job = Job(submission_id=submission_id, lane=lane, priority=priority, devices=devices,
              world_size=world_size, max_attempts=max_attempts, available_at=utcnow())
    session.add(job)
    session.add(ProgressEvent(submission_id=submission_id, event="queued", data={"priority": priority}))
    return job


def claim(session: Session, *, worker_id: str, lanes: Sequence[str], free_devices: int,
          max_world_size: int, lease_s: float, fits: Sequence[tuple[str, int, int]] | None = None) -> ClaimedJob | None:
    """Atomically take the next job this worker can run, or None. `fits` (a cluster executor's
    (lane, devices, world_size) shapes that can start now) narrows the choice to those shapes."""
    now = utcnow()
    candidate = (select(Job.id)
                 .where(Job.status == "queued", Job.lane.in_(list(lanes)), Job.devices <= free_devices,
                        Job.world_size <= max_world_size, Job.available_at <= now)
                 .order_by(Job.priority, Job.id).limit(1))
    if fits is not None:
        candidate = candidate.where(or_(false(), *(and_(Job.lane == lane, Job.devices == d, Job.world_size == w)
                                                   for lane, d, w in fits)))
    if session.get_bind().dialect.name == "postgresql":
        candidate = candidate.with_for_update(skip_locked=True)
    token = uuid.uuid4().hex
    row = session.execute(
        update(Job).where(Job.id == candidate.scalar_subquery())
        .values(status="running", lease_token=token, worker_id=worker_id, attempts=Job.attempts + 1,
                lease_expires_at=now + dt.timedelta(seconds=lease_s))
        .returning(Job.id, Job.submission_id, Job.attempts, Job.lane, Job.devices, Job.world_size)
        .execution_options(synchronize_session=False)).first()
    if row is None:
        return None
    session.execute(update(Submission).where(Submission.id == row.submission_id)
                    .values(status="running", started_at=now).execution_options(synchronize_session=False))
    session.add(ProgressEvent(submission_id=row.submission_id, event="claimed",
                              data={"worker": worker_id, "attempt": row.attempts}))
    return ClaimedJob(job_id=row.id, submission_id=row.submission_id, lease_token=token, attempt=row.attempts,
                      lane=row.lane, devices=row.devices, world_size=row.world_size)


def renew(session: Session, *, held: Sequence[ClaimedJob], lease_s: float) -> set[int]:
    """Extend the leases this worker holds; returns the job ids whose lease was lost."""
    expires = utcnow() + dt.timedelta(seconds=lease_s)
    lost = set()
    for job in held:
        result = session.execute(update(Job).where(Job.id == job.job_id, Job.lease_token == job.lease_token,
                                                   Job.status == "running")
                                 .values(lease_expires_at=expires).execution_options(synchronize_session=False))
        if result.rowcount != 1:
            lost.add(job.job_id)
    return lost


def _fence(session: Session, job: ClaimedJob, **values: Any) -> bool:
    """Update the job only if this worker still holds its lease."""
    result = session.execute(update(Job).where(Job.id == job.job_id, Job.lease_token == job.lease_token,
                                               Job.status == "running")
                             .values(**values).execution_options(synchronize_session=False))
    return result.rowcount == 1


def _store_outcome(session: Session, *, submission_id: str, status: str, score: float | None,
                   result: dict | None, message: str, grading_s: float | None) -> None:
    """Score, final progress event and outbox row: always written together, in the caller's transaction."""
    now = utcnow()
    sub = session.get(Submission, submission_id)
    kind = "grade.stored"
    if status == "not_gradable" and sub.result and sub.score is not None:
        # A failed regrade never destroys the grade an earlier run stored.
        status, score, kind = sub.result["status"], sub.score, "grade.regrade_failed"
        sub.message = f"a regrade could not run, the previous grade stands: {message}"
    else:
        sub.score, sub.result, sub.message = score, result, message
        sub.graded_at, sub.grading_s = now, grading_s
    sub.status = status
    session.add(ProgressEvent(submission_id=submission_id, event="done",
                              data={"status": status, "score": score, "max_score": sub.max_score}))
    session.add(OutboxEvent(submission_id=submission_id, kind=kind, payload={
        "submission_id": submission_id, "user": sub.user, "course": sub.course, "exercise_id": sub.exercise_id,
        "status": status, "score": score, "manual_score": sub.manual_score, "max_score": sub.max_score,
        "attempt": sub.attempt, "timestamp": now.isoformat() + "Z"}))


def complete(session: Session, *, job: ClaimedJob, result: dict) -> bool:
    """Store a grade if (and only if) the lease still holds; False means another worker owns the job now."""
    if not _fence(session, job, status="done", finished_at=utcnow(), lease_expires_at=None):
        return False
    _store_outcome(session, submission_id=job.submission_id, status=result["status"], score=result["score"],
                   result=result, message=result.get("message", ""), grading_s=result.get("duration_s"))
    return True


def fault(session: Session, *, job: ClaimedJob, error: str, retryable: bool, backoff_s: float,
          final: dict | None = None) -> str:
    """A grader fault: requeue while attempts remain, else not_gradable (storing the engine's `final`
    result if it produced one). Returns the new job status, or "lost" if the lease is gone."""
    current = session.get(Job, job.job_id)
    if retryable and current is not None and current.attempts < current.max_attempts:
        if _fence(session, job, status="queued", lease_token=None, worker_id=None, lease_expires_at=None,
                  last_error=error[:2000], available_at=utcnow() + dt.timedelta(seconds=backoff_s)):
            _requeued(session, job.submission_id, error)
            return "queued"
        return "lost"
    if not _fence(session, job, status="failed", finished_at=utcnow(), last_error=error[:2000],
                  lease_expires_at=None):
        return "lost"
    _store_outcome(session, submission_id=job.submission_id, status="not_gradable", score=None, result=final,
                   message=_not_gradable_message(error),
                   grading_s=final.get("duration_s") if final else None)
    return "failed"


def release(session: Session, *, job: ClaimedJob, reason: str) -> bool:
    """Give a job back unfinished (graceful shutdown): queued again at once, the attempt not counted."""
    if not _fence(session, job, status="queued", lease_token=None, worker_id=None, lease_expires_at=None,
                  attempts=Job.attempts - 1, available_at=utcnow(), last_error=reason[:2000]):
        return False
    _requeued(session, job.submission_id, reason)
    return True


def _not_gradable_message(error: str) -> str:
    return ("the grader failed on its side, so this attempt was not scored (it does not count against you): "
            f"{error[:500]}. Resubmit later or ask an instructor to regrade.")


def _requeued(session: Session, submission_id: str, reason: str) -> None:
    session.execute(update(Submission).where(Submission.id == submission_id)
                    .values(status="queued").execution_options(synchronize_session=False))
    session.add(ProgressEvent(submission_id=submission_id, event="requeued", data={"reason": reason[:500]}))


def reap_expired(session: Session) -> int:
    """Requeue jobs whose lease ran out (their worker died), or give up after max attempts."""
    now = utcnow()
    stmt = select(Job).where(Job.status == "running", Job.lease_expires_at < now).limit(50)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    reaped = 0
    for job in session.scalars(stmt):
        reason = f"lease expired on worker {job.worker_id} (attempt {job.attempts})"
        job.lease_token, job.worker_id, job.lease_expires_at, job.last_error = None, None, None, reason
        if job.attempts >= job.max_attempts:
            job.status, job.finished_at = "failed", now
            _store_outcome(session, submission_id=job.submission_id, status="not_gradable", score=None,
                           result=None, message=_not_gradable_message(reason), grading_s=None)
        else:
            job.status, job.available_at = "queued", now
            _requeued(session, job.submission_id, reason)
        reaped += 1
    return reaped


def beat(session: Session, *, worker_id: str, host: str, pid: int, slots: int, devices: int,
         device_kind: str) -> None:
    """Record that a worker is alive (and what it offers)."""
    row = session.get(WorkerBeat, worker_id)
    if row is None:
        session.add(WorkerBeat(id=worker_id, host=host, pid=pid, slots=slots, devices=devices,
                               device_kind=device_kind))
    else:
        row.heartbeat_at = utcnow()


def live_workers(session: Session, *, within_s: float) -> list[WorkerBeat]:
    since = utcnow() - dt.timedelta(seconds=within_s)
    return list(session.scalars(select(WorkerBeat).where(WorkerBeat.heartbeat_at >= since)))


def depth_by_lane(session: Session) -> dict[str, int]:
    rows = session.execute(select(Job.lane, func.count()).where(Job.status == "queued").group_by(Job.lane))
    return {lane: n for lane, n in rows}


def jobs_by_status(session: Session) -> dict[str, int]:
    return {status: n for status, n in session.execute(select(Job.status, func.count()).group_by(Job.status))}
