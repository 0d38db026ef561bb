"""Time-to-grade from the jobs' own timestamps: how long runs waited in the queue and how long they graded.

One job row is one grading run (a regrade adds one), so regrades count as runs of their own and a regrade's
wait starts when it was queued, not when the learner first submitted. Only runs that finished (`done`) in
the window count; a run that is still waiting has no wait yet. No runs gives null percentiles, never 0.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.courses.stats_schemas import Percentiles, Timing
from service.db import utcnow
from service.queue.models import Job
from service.states import JobStatus
from service.submissions.models import Submission

DEFAULT_WINDOW_DAYS = 30
MAX_WINDOW_DAYS = 366


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile (the smallest value with at least p % of the values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def summarise(values: Sequence[float]) -> Percentiles:
    def r(v: float | None) -> float | None:
        return None if v is None else round(v, 3)

    return Percentiles(
        runs=len(values),
        p50_s=r(percentile(values, 50)),
        p90_s=r(percentile(values, 90)),
        p95_s=r(percentile(values, 95)),
    )


def runs(
    session: Session, *, courses: Iterable[str], window_days: int, now: dt.datetime | None = None
) -> tuple[dt.datetime, dict[str, tuple[list[float], list[float]]]]:
    """(since, {exercise id: (queue waits, grading durations)}) in seconds, for the courses' finished runs."""
    since = (now or utcnow()) - dt.timedelta(days=window_days)
    stmt = (
        select(Submission.exercise_id, Job.created_at, Job.claimed_at, Job.finished_at)
        .join(Submission, Submission.id == Job.submission_id)
        .where(
            Submission.course.in_(list(courses)),
            Job.status == JobStatus.DONE,
            Job.finished_at >= since,
            Job.claimed_at.is_not(None),
        )
    )
    out: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for exercise_id, created, claimed, finished in session.execute(stmt):
        if claimed is None or finished is None:  # excluded by the query; the columns are nullable
            continue
        waits, durations = out[exercise_id]
        waits.append(max(0.0, (claimed - created).total_seconds()))
        durations.append(max(0.0, (finished - claimed).total_seconds()))
    return since, dict(out)


def timing(since: dt.datetime, window_days: int, found: Iterable[tuple[list[float], list[float]]]) -> Timing:
    waits: list[float] = []
    durations: list[float] = []
    for w, d in found:
        waits += w
        durations += d
    return Timing(window_days=window_days, since=since, queue_wait=summarise(waits), grading=summarise(durations))
