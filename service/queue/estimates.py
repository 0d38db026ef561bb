"""Honest waiting times: a queued job's position and estimated start and finish.

The estimate replays the queue: the jobs the claim would take first (the same fair-share or FIFO order),
each lasting the median grading time of recent runs of its exercise, are list-scheduled onto the slots of
the live workers that can run this lane, after the running jobs' remaining time. It ignores what cannot be
known (jobs that arrive later and jump ahead under fair share, retries, a per-learner cap), so it is a
forecast, re-computed on every read; docs/service.md states its measured error.
"""

from __future__ import annotations

import datetime as dt
import heapq
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.db import utcnow
from service.queue.fair_share import FAIR_SHARE_MEMORY_S
from service.queue.models import Job, WorkerBeat
from service.states import JobStatus
from service.submissions.models import Submission
from service.timefmt import rfc3339


@dataclass(frozen=True, slots=True, kw_only=True)
class QueuedJob:
    """What the ordering needs to know about one queued job."""

    id: int
    learner: str
    priority: int
    exercise_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitEstimate:
    position: int  # 1 = next to start
    workers_slots: int  # slots of live workers that can run this job
    typical_s: float | None  # median grading time of this exercise's recent runs
    basis_runs: int  # how many runs that median is taken from (0: the lane's median, or no history)
    start_in_s: float | None  # None: no live worker can run it now, or no grading history at all
    finish_in_s: float | None
    start_at: dt.datetime | None
    finish_at: dt.datetime | None

    def public(self) -> dict:
        def iso(t: dt.datetime | None) -> str | None:
            return rfc3339(t)  # RFC 3339 with offset, like every timestamp the API sends

        def rounded(x: float | None) -> float | None:
            return round(x, 1) if x is not None else None

        return {
            "position": self.position,
            "worker_slots": self.workers_slots,
            "typical_s": rounded(self.typical_s),
            "basis_runs": self.basis_runs,
            "start_in_s": rounded(self.start_in_s),
            "finish_in_s": rounded(self.finish_in_s),
            "start_at": iso(self.start_at),
            "finish_at": iso(self.finish_at),
        }


def claim_order(
    jobs: Iterable[QueuedJob], *, policy: str, running: dict[str, int], last_grant: dict[str, dt.datetime]
) -> list[QueuedJob]:
    """The order the claim would take these jobs if nothing else arrived: FIFO, or per-learner rounds
    (a learner's k-th waiting job goes in round k + jobs already running), oldest-served learner first."""
    jobs = sorted(jobs, key=lambda j: (j.priority, j.id))
    if policy != "fair":
        return jobs
    seen: dict[tuple[str, int], int] = defaultdict(int)
    keyed = []
    for job in jobs:
        rank = seen[(job.learner, job.priority)]
        seen[(job.learner, job.priority)] += 1
        grant = last_grant.get(job.learner)
        keyed.append(
            (
                (job.priority, running.get(job.learner, 0) + rank, grant is not None, grant or dt.datetime.min, job.id),
                job,
            )
        )
    return [job for _, job in sorted(keyed, key=lambda kv: kv[0])]


def schedule(
    *, ahead_s: Sequence[float], running_left_s: Sequence[float], slots: int, own_s: float
) -> tuple[float, float]:
    """List scheduling: when would a job of `own_s` start and end after `ahead_s` on `slots` slots?"""
    free = sorted(running_left_s)[:slots] + [0.0] * max(0, slots - len(running_left_s))
    heapq.heapify(free)
    for d in ahead_s:
        heapq.heappush(free, heapq.heappop(free) + d)
    start = heapq.heappop(free)
    return start, start + own_s


def median_grading_s(session: Session, *, exercise_ids: Iterable[str], recent: int) -> dict[str, tuple[float, int]]:
    """Median grading time (and the number of runs behind it) over each exercise's `recent` latest runs."""
    out = {}
    for exercise_id in set(exercise_ids):
        times = session.scalars(
            select(Submission.grading_s)
            .where(Submission.exercise_id == exercise_id, Submission.grading_s.is_not(None))
            .order_by(Submission.graded_at.desc())
            .limit(recent)
        ).all()
        known = [float(t) for t in times if t is not None]
        if known:
            out[exercise_id] = (statistics.median(known), len(known))
    return out


def lane_slots(workers: Sequence[WorkerBeat], *, lane: str, devices: int) -> int:
    """Slots of these workers that can take a job of this lane needing `devices` accelerators."""
    total = 0
    for w in workers:
        slots = w.slots if lane == "short" else (w.long_slots if w.long_slots is not None else max(1, w.slots - 1))
        if devices:
            slots = min(slots, w.devices // devices)
        total += max(0, slots)
    return total


def for_submission(
    session: Session, *, submission_id: str, policy: str, recent_runs: int, live_within_s: float
) -> WaitEstimate | None:
    """The estimate for a submission whose job is queued (None when it is not waiting)."""
    own = session.scalar(
        select(Job)
        .where(Job.submission_id == submission_id, Job.status == JobStatus.QUEUED)
        .order_by(Job.id.desc())
        .limit(1)
    )
    if own is None:
        return None
    now = utcnow()
    queued = [
        QueuedJob(id=r.id, learner=r.learner, priority=r.priority, exercise_id=r.exercise_id)
        for r in session.execute(
            select(Job.id, Job.learner, Job.priority, Submission.exercise_id)
            .join(Submission, Submission.id == Job.submission_id)
            .where(Job.status == JobStatus.QUEUED, Job.lane == own.lane)
        )
    ]
    # Running jobs hold slots: in the long lane only long jobs compete; short jobs can use any slot.
    running_stmt = (
        select(Job.learner, Job.lane, Job.claimed_at, Submission.exercise_id)
        .join(Submission, Submission.id == Job.submission_id)
        .where(Job.status == JobStatus.RUNNING)
    )
    if own.lane == "long":
        running_stmt = running_stmt.where(Job.lane == "long")
    running_rows = session.execute(running_stmt).all()
    running: dict[str, int] = defaultdict(int)
    for r in running_rows:
        if r.lane == own.lane:
            running[r.learner] += 1
    last_grant = {
        learner: at
        for learner, at in session.execute(
            select(Job.learner, func.max(Job.claimed_at))
            .where(Job.lane == own.lane, Job.claimed_at >= now - dt.timedelta(seconds=FAIR_SHARE_MEMORY_S))
            .group_by(Job.learner)
        )
        if at is not None
    }
    order = claim_order(queued, policy=policy, running=running, last_grant=last_grant)
    position = next((i for i, j in enumerate(order) if j.id == own.id), None)
    if position is None:  # claimed between the two reads (PostgreSQL, READ COMMITTED): not waiting any more
        return None
    medians = median_grading_s(
        session,
        exercise_ids={j.exercise_id for j in order[: position + 1]} | {r.exercise_id for r in running_rows},
        recent=recent_runs,
    )
    own_exercise = order[position].exercise_id
    fallback = statistics.median([m for m, _ in medians.values()]) if medians else None
    typical, runs = medians.get(own_exercise, (fallback, 0))
    since = now - dt.timedelta(seconds=live_within_s)
    workers = list(session.scalars(select(WorkerBeat).where(WorkerBeat.heartbeat_at >= since)))
    slots = lane_slots(workers, lane=own.lane, devices=own.devices)
    if typical is None or slots == 0:
        return WaitEstimate(
            position=position + 1,
            workers_slots=slots,
            typical_s=typical,
            basis_runs=runs,
            start_in_s=None,
            finish_in_s=None,
            start_at=None,
            finish_at=None,
        )

    def duration(exercise_id: str) -> float:
        return medians.get(exercise_id, (typical, 0))[0]

    left = [max(0.0, duration(r.exercise_id) - (now - (r.claimed_at or now)).total_seconds()) for r in running_rows]
    start, finish = schedule(
        ahead_s=[duration(j.exercise_id) for j in order[:position]], running_left_s=left, slots=slots, own_s=typical
    )
    return WaitEstimate(
        position=position + 1,
        workers_slots=slots,
        typical_s=typical,
        basis_runs=runs,
        start_in_s=start,
        finish_in_s=finish,
        start_at=now + dt.timedelta(seconds=start),
        finish_at=now + dt.timedelta(seconds=finish),
    )
