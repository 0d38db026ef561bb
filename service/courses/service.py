"""The gradebook (one row per learner and exercise, best or latest attempt) and per-course settings."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import Literal
from urllib.parse import quote

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from service.auth.models import Identity
from service.courses.models import CourseSettings
from service.grades.sheet import guard_row
from service.states import SubmissionStatus
from service.submissions.models import Submission
from service.timefmt import rfc3339

Policy = Literal["best", "latest"]
CSV_COLUMNS = (
    "user",
    "issuer",
    "subject",
    "exercise_id",
    "score",
    "max_score",
    "status",
    "attempts",
    "superseded",
    "submission_id",
    "graded_at",
)


def gradebook(session: Session, *, course: str, policy: Policy) -> list[dict]:
    rows = session.execute(
        select(Submission, Identity.issuer, Identity.subject)
        .join(Identity, Identity.id == Submission.identity_id)
        .where(Submission.course == course)
        .order_by(Submission.created_at, Submission.id)
    )
    chosen: dict[tuple[str, str, str], Submission] = {}
    attempts: dict[tuple[str, str, str], int] = {}
    superseded: dict[tuple[str, str, str], int] = {}
    for sub, issuer, subject in rows:
        key = (issuer, subject, sub.exercise_id)
        attempts[key] = attempts.get(key, 0) + 1
        superseded[key] = superseded.get(key, 0) + (sub.status == SubmissionStatus.SUPERSEDED)
        if sub.effective_score is None:  # not graded yet, not gradable, superseded: never counts as a score
            held = chosen.get(key)  # a placeholder so the learner appears even before grading
            if held is None or (held.status == SubmissionStatus.SUPERSEDED and held.effective_score is None):
                chosen[key] = sub
            continue
        held = chosen.get(key)
        held_score = held.effective_score if held is not None else None
        if policy == "latest" or held_score is None or sub.effective_score > held_score:
            chosen[key] = sub
    return [
        {
            "user": s.user,
            "issuer": key[0],
            "subject": key[1],
            "exercise_id": s.exercise_id,
            "score": s.effective_score,
            "max_score": s.max_score,
            "status": s.status,
            "attempts": attempts[key],
            "superseded": superseded[key],
            "submission_id": s.id,
            "graded_at": rfc3339(s.graded_at),
        }
        for key, s in sorted(chosen.items())
    ]


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(guard_row(row) for row in rows)  # display names, subjects, issuers: never formulas
    return out.getvalue()


def get_settings(session: Session, *, course: str) -> CourseSettings | None:
    return session.get(CourseSettings, course)


def supersede_policy(session: Session, *, course: str, default: str) -> str:
    """off | training | all: the course's choice, or the service-wide default when it made none."""
    row = session.get(CourseSettings, course)
    return row.supersede if row is not None and row.supersede is not None else default


_POLICIES = select(CourseSettings.course, CourseSettings.supersede).where(
    CourseSettings.course.in_(bindparam("courses", expanding=True))
)  # built once: the intake runs it every batch


def supersede_policies(session: Session, *, courses: Iterable[str], default: str) -> dict[str, str]:
    """`supersede_policy` of several courses in one query (the intake's group commit)."""
    wanted = set(courses)
    rows = session.connection().execute(_POLICIES, {"courses": sorted(wanted)})
    chosen = {course: policy for course, policy in rows if policy is not None}
    return {course: chosen.get(course, default) for course in wanted}


def update_settings(session: Session, *, course: str, supersede: str | None, by_user: str) -> CourseSettings:
    """Set (or with None reset to the default) the course's supersede policy."""
    row = session.get(CourseSettings, course)
    if row is None:
        row = CourseSettings(course=course)
        session.add(row)
    row.supersede, row.updated_by = supersede, by_user
    session.commit()
    return row


def attachment(filename: str) -> str:
    """Content-Disposition for a download (RFC 6266): a plain ASCII `filename` for old clients and the
    exact name as UTF-8 in `filename*` (RFC 8187); quotes, backslashes and control characters never pass."""
    fallback = re.sub(r"[^A-Za-z0-9._-]", "_", filename)[:150] or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename[:150], safe='')}"
