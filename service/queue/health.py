"""Queue health for operators: why runs failed or were retried (grouped by cause), which workers stopped
beating, and how long the oldest queued job of each lane has waited.

Everything is derived from what the rows already store, so an outage stays visible after recovery: a job
keeps its last fault in `last_error` when it is retried and later succeeds (queue.complete leaves it), and a
failed job stays failed when its submission is regraded (a regrade files a new job). A job counts in the
window when it was last created, claimed or finished inside it; only its last fault is known, so a job that
hit two causes counts under the later one. Workers are dead once their heartbeat is older than `lease_s`,
the moment their jobs' leases can be reaped (service/config.py).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.auth.principal import Principal
from service.db import utcnow
from service.queue.causes import Cause, cause_of, example, lost_on_worker
from service.queue.models import Job, WorkerBeat
from service.states import JobStatus
from service.submissions import service as submissions
from service.submissions.models import Submission

LANES = ("short", "long")
MAX_FAULT_ROWS = 20_000  # the newest faulted jobs read per request; `sampled` says when there were more
MAX_NOT_GRADABLE = 50
MAX_HELD_LISTED = 20


@dataclass(slots=True, kw_only=True)
class CauseCount:
    """Jobs of one cause in the window, by what became of them."""

    cause: Cause
    failed: int = 0  # attempts spent: the submission was recorded not gradable
    recovered: int = 0  # retried or handed back, then graded
    retrying: int = 0  # queued again or running again now
    example: str = ""  # the newest raw text of this cause, trimmed
    last_at: dt.datetime | None = None

    @property
    def total(self) -> int:
        return self.failed + self.recovered + self.retrying


@dataclass(frozen=True, slots=True, kw_only=True)
class LaneHealth:
    lane: str
    queued: int
    oldest_age_s: float | None  # since the oldest queued job was filed; None when nothing waits
    oldest_job_id: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerHealth:
    id: str
    host: str
    pid: int
    slots: int
    devices: int
    device_kind: str
    alive: bool
    heartbeat_at: dt.datetime
    heartbeat_age_s: float
    held: list[int] = field(default_factory=list)  # jobs still running under this worker's lease
    reaped: int = 0  # jobs of this worker requeued or failed by the reaper in the window


@dataclass(frozen=True, slots=True, kw_only=True)
class NotGradable:
    submission_id: str
    exercise_id: str
    course: str
    user: str
    cause: Cause
    example: str
    failed_at: dt.datetime | None
    status_now: str  # the submission's status today (graded again after a regrade, say)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueHealth:
    generated_at: dt.datetime
    window_s: float
    dead_after_s: float
    lanes: list[LaneHealth]
    jobs: dict[str, int]
    causes: list[CauseCount]
    sampled: bool  # more faulted jobs than MAX_FAULT_ROWS in the window: the newest were counted
    workers: list[WorkerHealth]
    not_gradable: list[NotGradable]

    @property
    def live_workers(self) -> list[WorkerHealth]:
        return [w for w in self.workers if w.alive]

    @property
    def dead_workers(self) -> list[WorkerHealth]:
        return [w for w in self.workers if not w.alive]


def _touched():
    """When a job last changed hands: finished, else last claimed, else filed."""
    return func.coalesce(Job.finished_at, Job.claimed_at, Job.created_at)


def oldest_queued(session: Session, *, now: dt.datetime | None = None) -> list[LaneHealth]:
    """Per lane (short and long always, any other lane found too): queued jobs and the oldest one's age."""
    now = now or utcnow()
    rows = session.execute(
        select(Job.lane, func.count(), func.min(Job.created_at))
        .where(Job.status == JobStatus.QUEUED)
        .group_by(Job.lane)
    ).all()
    found = {lane: (n, oldest) for lane, n, oldest in rows}
    out = []
    for lane in [*LANES, *sorted(set(found) - set(LANES))]:
        n, oldest = found.get(lane, (0, None))
        oldest_id = None
        if oldest is not None:
            oldest_id = session.scalar(
                select(Job.id)
                .where(Job.status == JobStatus.QUEUED, Job.lane == lane, Job.created_at == oldest)
                .order_by(Job.id)
                .limit(1)
            )
        age = max((now - oldest).total_seconds(), 0.0) if oldest is not None else None
        out.append(LaneHealth(lane=lane, queued=n, oldest_age_s=age, oldest_job_id=oldest_id))
    return out


def cause_counts(session: Session, *, since: dt.datetime) -> tuple[list[CauseCount], bool, dict[str, int]]:
    """Faulted jobs touched since `since`, grouped by cause (most jobs first), whether the read was capped,
    and per worker id how many of its leases the reaper took back."""
    rows = session.execute(
        select(Job.status, Job.last_error, _touched().label("at"))
        .where(Job.last_error != "", Job.status != JobStatus.CANCELLED, _touched() >= since)
        .order_by(_touched().desc(), Job.id.desc())
        .limit(MAX_FAULT_ROWS + 1)
    ).all()
    sampled = len(rows) > MAX_FAULT_ROWS
    counts: dict[Cause, CauseCount] = {}
    reaped: dict[str, int] = defaultdict(int)
    for status, text, at in rows[:MAX_FAULT_ROWS]:
        cause = cause_of(text)
        count = counts.get(cause)
        if count is None:  # rows come newest first: the first one seen is the example
            count = counts[cause] = CauseCount(cause=cause, example=example(text), last_at=at)
        if status == JobStatus.FAILED:
            count.failed += 1
        elif status == JobStatus.DONE:
            count.recovered += 1
        else:
            count.retrying += 1
        if (worker := lost_on_worker(text)) is not None:
            reaped[worker] += 1
    ordered = sorted(counts.values(), key=lambda c: (-c.total, list(Cause).index(c.cause)))
    return ordered, sampled, dict(reaped)


def workers(
    session: Session, *, dead_after_s: float, since: dt.datetime, reaped: dict[str, int], now: dt.datetime
) -> list[WorkerHealth]:
    """Workers that beat since `since`: live first, then dead (newest heartbeat first), with their jobs."""
    beats = list(session.scalars(select(WorkerBeat).where(WorkerBeat.heartbeat_at >= since)))
    held: dict[str, list[int]] = defaultdict(list)
    if beats:
        for worker_id, job_id in session.execute(
            select(Job.worker_id, Job.id)
            .where(Job.status == JobStatus.RUNNING, Job.worker_id.in_([b.id for b in beats]))
            .order_by(Job.id)
        ):
            held[str(worker_id)].append(job_id)
    out = []
    for b in beats:
        age = max((now - b.heartbeat_at).total_seconds(), 0.0)
        out.append(
            WorkerHealth(
                id=b.id,
                host=b.host,
                pid=b.pid,
                slots=b.slots,
                devices=b.devices,
                device_kind=b.device_kind,
                alive=age <= dead_after_s,
                heartbeat_at=b.heartbeat_at,
                heartbeat_age_s=age,
                held=held.get(b.id, [])[:MAX_HELD_LISTED],
                reaped=reaped.get(b.id, 0),
            )
        )
    return sorted(out, key=lambda w: (not w.alive, w.heartbeat_age_s, w.id))


def not_gradable(session: Session, *, user: Principal, since: dt.datetime) -> list[NotGradable]:
    """The newest runs given up in the window (failed jobs) of submissions `user` may read, even when the
    submission was regraded since: the failed job row stays."""
    rows = session.execute(
        select(Job.last_error, Job.finished_at, Submission)
        .join(Submission, Submission.id == Job.submission_id)
        .where(Job.status == JobStatus.FAILED, Job.finished_at >= since, submissions.visible(user))
        .order_by(Job.finished_at.desc(), Job.id.desc())
        .limit(MAX_NOT_GRADABLE)
    ).all()
    return [
        NotGradable(
            submission_id=sub.id,
            exercise_id=sub.exercise_id,
            course=sub.course,
            user=sub.user,
            cause=cause_of(text),
            example=example(text),
            failed_at=at,
            status_now=sub.status,
        )
        for text, at, sub in rows
    ]


def jobs_by_status(session: Session) -> dict[str, int]:
    found = dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
    return {str(status): found.get(status, 0) for status in JobStatus}


def build(session: Session, *, user: Principal, window_s: float, dead_after_s: float) -> QueueHealth:
    """The whole report for `user` (a staff member): job counts are the system's, the not-gradable list
    only the submissions `user` may read."""
    now = utcnow()
    since = now - dt.timedelta(seconds=window_s)
    causes, sampled, reaped = cause_counts(session, since=since)
    return QueueHealth(
        generated_at=now,
        window_s=window_s,
        dead_after_s=dead_after_s,
        lanes=oldest_queued(session, now=now),
        jobs=jobs_by_status(session),
        causes=causes,
        sampled=sampled,
        workers=workers(session, dead_after_s=dead_after_s, since=since, reaped=reaped, now=now),
        not_gradable=not_gradable(session, user=user, since=since),
    )
