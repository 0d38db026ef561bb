"""The fair-share choice of the next job, as SQL: the claim (service/queue/service.py) locks what this picks.

Within a lane and priority the next job goes to the learner with the fewest jobs running, then to the one
granted a job longest ago (per-learner round robin), so one learner's burst delays each other learner by
about one job. A per-learner cap on running jobs is a condition of the same query; on PostgreSQL it is
re-checked under an advisory lock, since concurrent claims each see the count before the other's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import and_, false, func, or_, select
from sqlalchemy.orm import Session, aliased

from service.queue.models import Job
from service.states import JobStatus

FAIR_SHARE_MEMORY_S = 3600.0  # grants older than this no longer count against a learner


def _learner_running():
    """Correlated: how many jobs of the candidate's learner are running (for the per-learner cap)."""
    other = aliased(Job)
    return (
        select(func.count())
        .where(other.learner == Job.learner, other.status == JobStatus.RUNNING)
        .correlate(Job)
        .scalar_subquery()
    )


def _device_fit(free_devices: int, installed_devices: int | None):
    """A job whose devices are free now, or one that falls back to CPU ranks on a worker with too few."""
    if installed_devices is None:
        return Job.devices <= free_devices
    return or_(Job.devices <= free_devices, and_(Job.cpu_fallback, Job.devices > installed_devices))


def candidate(
    *,
    now: dt.datetime,
    lanes: Sequence[str],
    free_devices: int,
    max_world_size: int,
    policy: str,
    max_running_per_learner: int,
    skip_learners: set[str],
    postgres: bool,
    fits: Sequence[tuple[str, int, int]] | None = None,
    installed_devices: int | None = None,
):
    """The SELECT of the one job to take next (id and learner): what this worker can run, its learners under
    the cap and not in `skip_learners`, fair-share order under policy "fair" (else priority, then age)."""
    stmt = select(Job.id, Job.learner).where(
        Job.status == JobStatus.QUEUED,
        Job.lane.in_(list(lanes)),
        _device_fit(free_devices, installed_devices),
        Job.world_size <= max_world_size,
        Job.available_at <= now,
    )
    if fits is not None:
        stmt = stmt.where(
            or_(false(), *(and_(Job.lane == lane, Job.devices == d, Job.world_size == w) for lane, d, w in fits))
        )
    if max_running_per_learner:
        stmt = stmt.where(_learner_running() < max_running_per_learner)
    if skip_learners:
        stmt = stmt.where(Job.learner.not_in(sorted(skip_learners)))
    if policy == "fair":
        # Round robin over learners within a priority: fewest jobs running in the lane, then the learner
        # granted a job in the lane longest ago (never: first). Aggregated once per claim, not per row.
        running = (
            select(Job.learner, Job.lane, func.count().label("n"))
            .where(Job.status == JobStatus.RUNNING)
            .group_by(Job.learner, Job.lane)
            .subquery("running")
        )
        granted = (
            select(Job.learner, Job.lane, func.max(Job.claimed_at).label("at"))
            .where(Job.claimed_at >= now - dt.timedelta(seconds=FAIR_SHARE_MEMORY_S))
            .group_by(Job.learner, Job.lane)
            .subquery("granted")
        )
        stmt = (
            stmt.outerjoin(running, and_(running.c.learner == Job.learner, running.c.lane == Job.lane))
            .outerjoin(granted, and_(granted.c.learner == Job.learner, granted.c.lane == Job.lane))
            .order_by(Job.priority, func.coalesce(running.c.n, 0), granted.c.at.nulls_first(), Job.id)
        )
    else:
        stmt = stmt.order_by(Job.priority, Job.id)
    stmt = stmt.limit(1)
    return stmt.with_for_update(of=Job, skip_locked=True) if postgres else stmt


def learner_has_room(session: Session, *, learner: str, cap: int) -> bool:
    """PostgreSQL only: serialise claims per learner, then recount, so concurrent workers respect the cap
    (under READ COMMITTED the count taken after the lock sees every claim committed before it)."""
    session.execute(select(func.pg_advisory_xact_lock(func.hashtext("titangrade.learner:" + learner))))
    running = session.execute(
        select(func.count()).select_from(Job).where(Job.learner == learner, Job.status == JobStatus.RUNNING)
    ).scalar_one()
    return running < cap
