"""The gradebook's CSV and download name (the matrix itself: service/courses/gradebook.py) and per-course settings."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from urllib.parse import quote

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from service.courses.models import CourseSettings
from service.grades.sheet import guard_row

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
    # since 0010, after the older columns so a sheet's column positions stay
    "raw_score",
    "submitted_at",
    "late",
    "late_by_s",
    "penalty_percent",
)


def to_csv(rows: list[dict]) -> str:
    """Every learner x exercise row (a missing one: empty score, attempts 0), spreadsheet-safe."""
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
