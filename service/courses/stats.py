"""Per-exercise statistics over each learner's best attempt, and the best attempts that failed a check.

The best attempt is the gradebook's (service/courses/gradebook.py, policy `best`): one value per learner,
so a learner who tried ten times counts once. Attempt counts by status are the one number over every attempt.
Stats are course-scoped like every staff page: the course asked for (if the caller teaches it), else every
course the caller teaches (admins: every course with members or submissions).
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import Counter
from collections.abc import Iterable

from sqlalchemy import func, select, union
from sqlalchemy.orm import Session

from grading.exercise import Catalogue, Exercise
from service.auth.models import Membership
from service.auth.principal import Principal
from service.courses import gradebook as books
from service.courses import timing as timings
from service.courses.stats_schemas import CheckFailures, CheckRate, ExerciseStats, FailedAttempt
from service.errors import Forbidden, ServiceError, clip
from service.messages import error
from service.submissions.models import Submission

CHUNK = 500  # ids per IN (...) when reading the best attempts' check results


def courses_in_scope(session: Session, *, user: Principal, course: str | None = None) -> list[str]:
    """The courses a statistic counts for `user`; asking for a course one does not teach is a 403."""
    if course:
        if not user.can_teach(course):
            raise Forbidden(error("not_instructor", course=clip(course)))
        return [course]
    if not user.is_admin:
        return user.teaching()
    found = session.scalars(union(select(Submission.course).distinct(), select(Membership.course).distinct()))
    return sorted(found)


def bucket(percent: float) -> str:
    """Ten-percent buckets of the max score: '0-10%', ..., '90-100%' (100 % goes in the last)."""
    low = min(int(min(max(percent, 0.0), 100.0) // 10), 9) * 10
    return f"{low}-{low + 10}%"


def best_cells(
    session: Session, *, courses: Iterable[str], exercise_id: str, catalogue: Catalogue
) -> list[tuple[str, dict]]:
    """(course, gradebook cell) for every learner of every course: their best attempt, or a `missing` cell."""
    out = []
    for course in courses:
        book = books.build(session, course=course, policy="best", catalogue=catalogue)
        out += [(course, p.cells[exercise_id]) for p in book.learners if exercise_id in p.cells]
    return out


def percent_of(cell: dict) -> float | None:
    if cell["score"] is None:
        return None
    return 100.0 * cell["score"] / cell["max_score"] if cell["max_score"] > 0 else 0.0


def _results(session: Session, ids: list[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for start in range(0, len(ids), CHUNK):
        stmt = select(Submission.id, Submission.result).where(Submission.id.in_(ids[start : start + CHUNK]))
        found.update({sid: result or {} for sid, result in session.execute(stmt)})
    return found


def _checks_of(result: dict) -> list[dict]:
    return [c for c in result.get("checks", []) if isinstance(c, dict) and isinstance(c.get("name"), str)]


def _scored(cells: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    return [(course, cell) for course, cell in cells if cell["score"] is not None and cell["submission_id"]]


def check_rates(session: Session, *, exercise: Exercise, cells: list[tuple[str, dict]]) -> list[CheckRate]:
    """Each manifest check (then any other name a stored result carries), over the best scored attempts."""
    scored = _scored(cells)
    results = _results(session, [cell["submission_id"] for _, cell in scored])
    passed: Counter[str] = Counter()
    ran: Counter[str] = Counter()
    for _, cell in scored:
        for check in _checks_of(results.get(cell["submission_id"], {})):
            ran[check["name"]] += 1
            passed[check["name"]] += bool(check.get("passed"))
    titles = {c.name: (c.title.en if c.title else c.name) for c in exercise.manifest.checks}
    names = [*titles, *sorted(set(ran) - set(titles))]
    return [
        CheckRate(
            name=name,
            title=titles.get(name, name),
            passed=passed[name],
            failed=ran[name] - passed[name],
            rate=passed[name] / ran[name] if ran[name] else None,
        )
        for name in names
    ]


def exercise_stats(
    session: Session,
    *,
    user: Principal,
    exercise: Exercise,
    catalogue: Catalogue,
    course: str | None = None,
    window_days: int = timings.DEFAULT_WINDOW_DAYS,
    now: dt.datetime | None = None,
) -> ExerciseStats:
    courses = courses_in_scope(session, user=user, course=course)
    cells = best_cells(session, courses=courses, exercise_id=exercise.id, catalogue=catalogue)
    statuses = dict(
        session.execute(
            select(Submission.status, func.count())
            .where(Submission.exercise_id == exercise.id, Submission.course.in_(courses))
            .group_by(Submission.status)
        ).all()
    )
    scores = [cell["score"] for _, cell in _scored(cells)]
    percents = [p for _, cell in _scored(cells) if (p := percent_of(cell)) is not None]
    checks = check_rates(session, exercise=exercise, cells=cells)
    since, runs = timings.runs(session, courses=courses, window_days=window_days, now=now)
    timing = timings.timing(since, window_days, [runs[exercise.id]] if exercise.id in runs else [])
    missing = sum(1 for _, cell in cells if cell["attempts"] == 0)
    return ExerciseStats(
        exercise_id=exercise.id,
        max_score=float(exercise.manifest.max_score),
        courses=courses,
        submissions=sum(statuses.values()),
        by_status={str(k): int(v) for k, v in sorted(statuses.items())},
        learners=len(cells),
        learners_submitted=len(cells) - missing,
        learners_missing=missing,
        learners_scored=len(scores),
        score_histogram=dict(sorted(Counter(bucket(p) for p in percents).items())),
        mean_score=statistics.fmean(scores) if scores else None,
        median_score=statistics.median(scores) if scores else None,
        mean_percent=round(statistics.fmean(percents), 1) if percents else None,
        median_percent=round(statistics.median(percents), 1) if percents else None,
        checks=checks,
        check_pass_rates={c.name: c.rate for c in checks if c.rate is not None},
        timing=timing,
        median_grading_s=timing.grading.p50_s,
    )


def check_failures(
    session: Session,
    *,
    user: Principal,
    exercise: Exercise,
    catalogue: Catalogue,
    check: str,
    course: str | None = None,
) -> CheckFailures:
    """The best attempts (the ones the pass rate counts) whose result failed `check`, lowest score first."""
    known = [c.name for c in exercise.manifest.checks]
    if check not in known:
        raise ServiceError(
            error("unknown_check", check=clip(check), exercise=exercise.id, checks=", ".join(known) or "none"),
            code="unknown_check",
            status_code=422,
        )
    courses = courses_in_scope(session, user=user, course=course)
    scored = _scored(best_cells(session, courses=courses, exercise_id=exercise.id, catalogue=catalogue))
    results = _results(session, [cell["submission_id"] for _, cell in scored])
    items = []
    for course_id, cell in scored:
        for found in _checks_of(results.get(cell["submission_id"], {})):
            if found["name"] == check and not found.get("passed"):
                items.append(
                    FailedAttempt(
                        submission_id=cell["submission_id"],
                        user=cell["user"],
                        issuer=cell["issuer"],
                        subject=cell["subject"],
                        course=course_id,
                        score=cell["score"],
                        max_score=cell["max_score"],
                        graded_at=cell["graded_at"],
                        feedback=str(found.get("feedback") or "")[:500],
                    )
                )
                break
    items.sort(key=lambda i: (i.score if i.score is not None else 0.0, i.course, i.user.casefold(), i.subject))
    return CheckFailures(exercise_id=exercise.id, check=check, courses=courses, items=items)
