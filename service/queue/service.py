"""The job queue on the database: enqueue, claim with a lease, renew, fenced finish, reap expired leases.

The queue only claims, fences and requeues; what a finished job stores is service.grades.record_grade.

The claim is fair share: within a lane and priority, the next job goes to the learner with the fewest
jobs running, then to the one granted a job longest ago (per-learner round robin), so one learner's burst
delays each other learner by about one job (that choice is service/queue/fair_share.py). PostgreSQL locks
the chosen row `FOR UPDATE SKIP LOCKED`; SQLite runs inside `BEGIN IMMEDIATE` (see service.db), which is
atomic because SQLite has one writer. Every write of a job's outcome checks the lease token (fencing), so a
worker whose lease expired can never overwrite the grade stored by the worker that reclaimed the job.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, Update, func, select, update
from sqlalchemy.orm import Session

from grading.progress import Claimed, Queued, Requeued
from grading.text import clean_text
from service.db import utcnow
from service.queue import fair_share
from service.queue.models import Job, WorkerBeat, job_row, learner_key
from service.states import JobStatus, SubmissionStatus
from service.submissions.models import ProgressEvent, Submission

INTERACTIVE_PRIORITY = 0
SINGLE_REGRADE_PRIORITY = 10
BULK_REGRADE_PRIORITY = 100
TERMINAL_STATUSES = (
    SubmissionStatus.GRADED,
    SubmissionStatus.ERROR,
    SubmissionStatus.NOT_GRADABLE,
    SubmissionStatus.SUPERSEDED,
)
CLAIM_TRIES = 4  # PostgreSQL with a per-learner cap: learners skipped because a concurrent claim filled them


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
    queued_at: dt.datetime | None = None  # naive UTC: when the job last became claimable (its queued phase)
    cpu_fallback: bool = False  # runs on CPU ranks where the worker has fewer than `devices` accelerators


def enqueue(
    session: Session,
    *,
    submission_id: str,
    lane: str,
    priority: int,
    devices: int,
    world_size: int,
    max_attempts: int,
    learner: str | None = None,
    cpu_fallback: bool = False,
) -> Job:
    """Add a job for a submission (its learner is looked up when not given: fair share is per learner)."""
    if learner is None:
        learner = learner_key(session.get_one(Submission, submission_id).identity_id)
    job = Job(
        **job_row(
            submission_id=submission_id,
            learner=learner,
            lane=lane,
            priority=priority,
            devices=devices,
            world_size=world_size,
            max_attempts=max_attempts,
            now=utcnow(),
            cpu_fallback=cpu_fallback,
        )
    )
    session.add(job)
    session.add(ProgressEvent.of(submission_id=submission_id, event=Queued(priority=priority)))
    return job


def claim(
    session: Session,
    *,
    worker_id: str,
    lanes: Sequence[str],
    free_devices: int,
    max_world_size: int,
    lease_s: float,
    policy: str = "fair",
    max_running_per_learner: int = 0,
    fits: Sequence[tuple[str, int, int]] | None = None,
    installed_devices: int | None = None,
) -> ClaimedJob | None:
    """Atomically take the next job this worker can run, or None. `fits` (a cluster executor's
    (lane, devices, world_size) shapes that can start now) narrows the choice to those shapes.
    `installed_devices` (a local worker's largest group of one kind): a job that falls back to the CPU and
    needs more devices than that is one this worker runs on CPU ranks, whatever `free_devices` says.

    SQLite: the whole transaction holds the single writer lock (BEGIN IMMEDIATE), so choosing and taking
    are one step. PostgreSQL: the chosen row is locked FOR UPDATE SKIP LOCKED, so concurrent workers never
    take the same job; with a per-learner cap the learner's running count is re-checked under an advisory
    lock, and a learner who reached the cap meanwhile is skipped.
    """
    now = utcnow()
    postgres = session.get_bind().dialect.name == "postgresql"
    skip: set[str] = set()
    for _ in range(CLAIM_TRIES):
        picked = session.execute(
            fair_share.candidate(
                now=now,
                lanes=lanes,
                free_devices=free_devices,
                max_world_size=max_world_size,
                policy=policy,
                max_running_per_learner=max_running_per_learner,
                skip_learners=skip,
                postgres=postgres,
                fits=fits,
                installed_devices=installed_devices,
            )
        ).first()
        if picked is None:
            return None
        if not (postgres and max_running_per_learner) or fair_share.learner_has_room(
            session, learner=picked.learner, cap=max_running_per_learner
        ):
            break
        skip.add(picked.learner)
    else:
        return None
    token = uuid.uuid4().hex
    row = session.execute(
        update(Job)
        .where(Job.id == picked.id, Job.status == JobStatus.QUEUED)
        .values(
            status=JobStatus.RUNNING,
            lease_token=token,
            worker_id=worker_id,
            attempts=Job.attempts + 1,
            lease_expires_at=now + dt.timedelta(seconds=lease_s),
            claimed_at=now,
        )
        .returning(
            Job.id,
            Job.submission_id,
            Job.attempts,
            Job.lane,
            Job.devices,
            Job.world_size,
            Job.available_at,
            Job.cpu_fallback,
        )
        .execution_options(synchronize_session=False)
    ).first()
    if row is None:
        return None
    session.execute(
        update(Submission)
        .where(Submission.id == row.submission_id)
        .values(status=SubmissionStatus.RUNNING, started_at=now)
        .execution_options(synchronize_session=False)
    )
    session.add(
        ProgressEvent.of(submission_id=row.submission_id, event=Claimed(worker=worker_id, attempt=row.attempts))
    )
    return ClaimedJob(
        job_id=row.id,
        submission_id=row.submission_id,
        lease_token=token,
        attempt=row.attempts,
        lane=row.lane,
        devices=row.devices,
        world_size=row.world_size,
        queued_at=row.available_at,
        cpu_fallback=bool(row.cpu_fallback),
    )


def cancel_queued(session: Session, *, submission_ids: Sequence[str], reason: str) -> list[str]:
    """Cancel the still-queued interactive jobs of these submissions; returns the submissions cancelled.
    A job a worker holds (running, or locked by a claim in flight on PostgreSQL) is never touched: the
    `status = 'queued'` condition is re-checked on the locked row."""
    if not submission_ids:
        return []
    rows = session.execute(
        update(Job)
        .where(
            Job.submission_id.in_(list(submission_ids)),
            Job.status == JobStatus.QUEUED,
            Job.priority == INTERACTIVE_PRIORITY,
        )
        .values(status=JobStatus.CANCELLED, finished_at=utcnow(), last_error=reason[:2000])
        .returning(Job.submission_id)
        .execution_options(synchronize_session=False)
    )
    return sorted({r.submission_id for r in rows})


def renew(session: Session, *, held: Sequence[ClaimedJob], lease_s: float) -> set[int]:
    """Extend the leases this worker holds; returns the job ids whose lease was lost."""
    expires = utcnow() + dt.timedelta(seconds=lease_s)
    lost = set()
    for job in held:
        result = _updated(
            session,
            update(Job)
            .where(Job.id == job.job_id, Job.lease_token == job.lease_token, Job.status == JobStatus.RUNNING)
            .values(lease_expires_at=expires)
            .execution_options(synchronize_session=False),
        )
        if result.rowcount != 1:
            lost.add(job.job_id)
    return lost


def _updated(session: Session, statement: Update) -> CursorResult:
    """Run an UPDATE; its result is a CursorResult (rowcount), which Session.execute's annotation does not say."""
    return cast(CursorResult, session.execute(statement))


def _fence(session: Session, job: ClaimedJob, **values: Any) -> bool:
    """Update the job only if this worker still holds its lease."""
    result = _updated(
        session,
        update(Job)
        .where(Job.id == job.job_id, Job.lease_token == job.lease_token, Job.status == JobStatus.RUNNING)
        .values(**values)
        .execution_options(synchronize_session=False),
    )
    return result.rowcount == 1


def complete(session: Session, *, job: ClaimedJob) -> bool:
    """Mark the job done if (and only if) the lease still holds; False means another worker owns it now.
    The caller stores the grade (service.grades.record_grade) in the same transaction when this is True."""
    return _fence(session, job, status=JobStatus.DONE, finished_at=utcnow(), lease_expires_at=None)


def fault(session: Session, *, job: ClaimedJob, error: str, retryable: bool, backoff_s: float) -> str:
    """A grader fault: requeue while attempts remain, else mark the job failed. Returns "queued", "failed"
    (the caller then records the submission as not_gradable) or "lost" (the lease is gone). The error may
    quote an exception raised by grading, so it is cleaned like any kernel string before it is stored."""
    error = clean_text(error)
    current = session.get(Job, job.job_id)
    if retryable and current is not None and current.attempts < current.max_attempts:
        if _fence(
            session,
            job,
            status=JobStatus.QUEUED,
            lease_token=None,
            worker_id=None,
            lease_expires_at=None,
            last_error=error[:2000],
            available_at=utcnow() + dt.timedelta(seconds=backoff_s),
        ):
            _requeued(session, job.submission_id, error)
            return JobStatus.QUEUED
        return "lost"
    if not _fence(
        session, job, status=JobStatus.FAILED, finished_at=utcnow(), last_error=error[:2000], lease_expires_at=None
    ):
        return "lost"
    return JobStatus.FAILED


def release(session: Session, *, job: ClaimedJob, reason: str, after_s: float = 0.0) -> bool:
    """Give a job back unfinished (graceful shutdown, or it never started): queued again after `after_s`,
    the attempt not counted."""
    if not _fence(
        session,
        job,
        status=JobStatus.QUEUED,
        lease_token=None,
        worker_id=None,
        lease_expires_at=None,
        attempts=Job.attempts - 1,
        available_at=utcnow() + dt.timedelta(seconds=after_s),
        last_error=clean_text(reason)[:2000],
    ):
        return False
    _requeued(session, job.submission_id, reason)
    return True


def _requeued(session: Session, submission_id: str, reason: str) -> None:
    session.execute(
        update(Submission)
        .where(Submission.id == submission_id)
        .values(status=SubmissionStatus.QUEUED)
        .execution_options(synchronize_session=False)
    )
    session.add(ProgressEvent.of(submission_id=submission_id, event=Requeued(reason=clean_text(reason)[:500])))


@dataclass(frozen=True, slots=True, kw_only=True)
class Expired:
    """A job whose lease ran out: requeued, or (`gave_up`) failed after its last attempt."""

    submission_id: str
    reason: str
    gave_up: bool


def reap_expired(session: Session) -> list[Expired]:
    """Requeue jobs whose lease ran out (their worker died), or give up after max attempts; the caller
    records a not_gradable grade for each job given up, in the same transaction."""
    now = utcnow()
    stmt = select(Job).where(Job.status == JobStatus.RUNNING, Job.lease_expires_at < now).limit(50)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    reaped = []
    for job in session.scalars(stmt):
        reason = f"lease expired on worker {job.worker_id} (attempt {job.attempts})"
        job.lease_token, job.worker_id, job.lease_expires_at, job.last_error = None, None, None, reason
        gave_up = job.attempts >= job.max_attempts
        if gave_up:
            job.status, job.finished_at = JobStatus.FAILED, now
        else:
            job.status, job.available_at = JobStatus.QUEUED, now
            _requeued(session, job.submission_id, reason)
        reaped.append(Expired(submission_id=job.submission_id, reason=reason, gave_up=gave_up))
    return reaped


def beat(
    session: Session,
    *,
    worker_id: str,
    host: str,
    pid: int,
    slots: int,
    devices: int,
    device_kind: str,
    long_slots: int | None = None,
) -> None:
    """Record that a worker is alive (and what it offers: `long_slots` of its slots take long-lane jobs)."""
    row = session.get(WorkerBeat, worker_id)
    if row is None:
        session.add(
            WorkerBeat(
                id=worker_id,
                host=host,
                pid=pid,
                slots=slots,
                devices=devices,
                device_kind=device_kind,
                long_slots=long_slots,
            )
        )
    else:  # what it offers can change while it runs (a Ray cluster gains or loses a node)
        row.heartbeat_at = utcnow()
        row.devices, row.device_kind = devices, device_kind


def live_workers(session: Session, *, within_s: float) -> list[WorkerBeat]:
    since = utcnow() - dt.timedelta(seconds=within_s)
    return list(session.scalars(select(WorkerBeat).where(WorkerBeat.heartbeat_at >= since)))


def depth_by_lane(session: Session) -> dict[str, int]:
    rows = session.execute(select(Job.lane, func.count()).where(Job.status == JobStatus.QUEUED).group_by(Job.lane))
    return dict(rows.all())


def jobs_by_status(session: Session) -> dict[str, int]:
    return dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
