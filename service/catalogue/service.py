"""Exercise views from the catalogue, and what a bulk regrade of an exercise covers (the statistics are
service/courses/stats.py's: they are per learner of a course)."""

from __future__ import annotations

from sqlalchemy import select, true
from sqlalchemy.orm import Session

from grading.exercise import Catalogue, Exercise
from service.auth.principal import Principal
from service.catalogue.schemas import ExercisePublic
from service.submissions.models import Submission


def taught_by(user: Principal):
    """A WHERE clause for the submissions in courses `user` teaches (admins: all)."""
    return true() if user.is_admin else Submission.course.in_(user.teaching())


def to_public(exercise: Exercise) -> ExercisePublic:
    m = exercise.manifest
    return ExercisePublic(
        id=m.id,
        chapter=m.chapter,
        title=m.title.en,
        title_zh=m.title.zh,
        max_score=m.max_score,
        kernel_family=m.kernel_family,
        lane=m.lane,
        resources=m.resources.model_dump(),
        limits=m.limits.model_dump(),
        checks=[{"name": c.name, "points": c.points, "title": c.title.en if c.title else c.name} for c in m.checks],
    )


def list_all(catalogue: Catalogue) -> list[ExercisePublic]:
    return [to_public(e) for e in catalogue]


def bulk_candidates(session: Session, *, user: Principal, exercise_id: str) -> list[Submission]:
    """Every submission of an exercise in the courses `user` teaches, oldest first: what a bulk regrade asks for."""
    stmt = select(Submission).where(Submission.exercise_id == exercise_id, taught_by(user))
    return list(session.scalars(stmt.order_by(Submission.created_at, Submission.id)))
