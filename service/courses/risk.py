"""A course at a glance: its exercises side by side, and the learners at risk.

A learner is at risk with nothing submitted, or with a best total (the gradebook's `best` policy) below the
threshold. With due dates (`due`: exercise id -> naive-UTC datetime, from the course schedule), work that is
missing or below the threshold and due within `within_days` ranks first, for the learner and in the list.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Mapping

from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.courses import gradebook as books
from service.courses import schedules
from service.courses import timing as timings
from service.courses.stats import percent_of
from service.courses.stats_schemas import CourseStats, ExerciseColumn, LearnerAtRisk, RiskItem
from service.db import utcnow

DEFAULT_THRESHOLD_PERCENT = 50.0
DEFAULT_DUE_WITHIN_DAYS = 7
FAR = dt.datetime.max


def utc_naive(at: dt.datetime) -> dt.datetime:
    """A due date as the database keeps times (naive UTC); an aware one is converted, not relabelled."""
    return at.astimezone(dt.UTC).replace(tzinfo=None) if at.tzinfo is not None else at


def columns(book: books.Gradebook, *, threshold: float, medians: Mapping[str, float | None]) -> list[ExerciseColumn]:
    out = []
    for ex_id, max_score in book.exercises:
        cells = [p.cells[ex_id] for p in book.learners]
        percents = [p for c in cells if (p := percent_of(c)) is not None]
        submitted = sum(1 for c in cells if c["attempts"] > 0)
        out.append(
            ExerciseColumn(
                exercise_id=ex_id,
                max_score=max_score,
                learners=len(cells),
                submitted=submitted,
                median_percent=round(statistics.median(percents), 1) if percents else None,
                pass_rate=sum(1 for p in percents if p >= threshold) / submitted if submitted else None,
                median_grading_s=medians.get(ex_id),
            )
        )
    return out


def _items(learner: books.Learner, *, threshold: float, due: Mapping[str, dt.datetime], soon: dt.datetime):
    items = []
    for ex_id, cell in learner.cells.items():
        percent = percent_of(cell)
        if cell["attempts"] and percent is not None and percent >= threshold:
            continue
        due_at = due.get(ex_id)
        items.append(
            RiskItem(
                exercise_id=ex_id,
                reason="missing" if not cell["attempts"] else "below_threshold",
                percent=None if percent is None else round(percent, 1),
                due_at=due_at,
                due_soon=due_at is not None and due_at <= soon,
            )
        )
    # due soonest first; then work with no due date, missing before low
    items.sort(key=lambda i: (i.due_at or FAR, i.reason != "missing", i.exercise_id))
    return items


def at_risk(
    book: books.Gradebook,
    *,
    threshold: float = DEFAULT_THRESHOLD_PERCENT,
    due: Mapping[str, dt.datetime] | None = None,
    within_days: int = DEFAULT_DUE_WITHIN_DAYS,
    now: dt.datetime | None = None,
) -> list[LearnerAtRisk]:
    """Learners with nothing submitted or a best total below `threshold` %: those with risky work due within
    `within_days` first (soonest first), then nothing submitted, then the lowest total first."""
    due = {ex_id: utc_naive(at) for ex_id, at in (due or {}).items()}
    soon = (now or utcnow()) + dt.timedelta(days=within_days)
    found = []
    for p in book.learners:
        percent = p.percent
        if p.submitted and percent is not None and percent >= threshold:
            continue
        items = _items(p, threshold=threshold, due=due, soon=soon)
        found.append(
            LearnerAtRisk(
                user=p.user,
                issuer=p.issuer,
                subject=p.subject,
                reason="nothing_submitted" if not p.submitted else "below_threshold",
                points=p.points,
                max_points=p.max_points,
                percent=percent,
                submitted=p.submitted,
                items=items,
            )
        )

    def rank(r: LearnerAtRisk):
        next_due = min((i.due_at for i in r.items if i.due_soon and i.due_at), default=FAR)
        return (next_due, r.submitted > 0, r.percent or 0.0, r.user.casefold(), r.subject)

    return sorted(found, key=rank)


def course_stats(
    session: Session,
    *,
    course: str,
    catalogue: Catalogue,
    threshold: float = DEFAULT_THRESHOLD_PERCENT,
    due: Mapping[str, dt.datetime] | None = None,
    within_days: int = DEFAULT_DUE_WITHIN_DAYS,
    window_days: int = timings.DEFAULT_WINDOW_DAYS,
    now: dt.datetime | None = None,
) -> CourseStats:
    """The caller checked `can_teach(course)`. `due` defaults to the course's schedules (the due times set
    per exercise; an exercise without one never ranks as due soon)."""
    if due is None:
        due = {eid: row.due_at for eid, row in schedules.schedules(session, course=course).items() if row.due_at}
    book = books.build(session, course=course, policy="best", catalogue=catalogue)
    since, runs = timings.runs(session, courses=[course], window_days=window_days, now=now)
    medians = {ex_id: timings.summarise(d).p50_s for ex_id, (_, d) in runs.items()}
    cols = columns(book, threshold=threshold, medians=medians)
    for col in cols:
        at = (due or {}).get(col.exercise_id)
        col.due_at = utc_naive(at) if at is not None else None
    return CourseStats(
        course=course,
        threshold_percent=threshold,
        due_within_days=within_days,
        learners=len(book.learners),
        exercises=cols,
        at_risk=at_risk(book, threshold=threshold, due=due, within_days=within_days, now=now),
        timing=timings.timing(since, window_days, runs.values()),
    )
