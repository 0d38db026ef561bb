"""Exercise views from the catalogue, and per-exercise statistics from stored grades."""

from __future__ import annotations

import statistics
from collections import Counter

from sqlalchemy import select, true
from sqlalchemy.orm import Session

from grading.exercise import Catalogue, Exercise
from service.auth.principal import Principal
from service.catalogue.schemas import ExercisePublic, ExerciseStats
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


def _bucket(score: float, max_score: float) -> str:
    """Ten-percent buckets of the max score: '0-10%', ..., '90-100%'."""
    frac = 0.0 if max_score <= 0 else min(max(score / max_score, 0.0), 1.0)
    low = min(int(frac * 10), 9) * 10
    return f"{low}-{low + 10}%"


def stats(session: Session, *, user: Principal, exercise: Exercise) -> ExerciseStats:
    subs = list(session.scalars(select(Submission).where(Submission.exercise_id == exercise.id, taught_by(user))))
    scored = [(s, score) for s in subs if (score := s.effective_score) is not None]
    passes: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for s, _ in scored:
        for check in (s.result or {}).get("checks", []):
            seen[check["name"]] += 1
            passes[check["name"]] += bool(check["passed"])
    times = [s.grading_s for s in subs if s.grading_s is not None]
    return ExerciseStats(
        exercise_id=exercise.id,
        submissions=len(subs),
        learners=len({s.user for s in subs}),
        by_status=dict(Counter(s.status for s in subs)),
        score_histogram=dict(sorted(Counter(_bucket(score, s.max_score) for s, score in scored).items())),
        mean_score=statistics.fmean(score for _, score in scored) if scored else None,
        check_pass_rates={name: passes[name] / seen[name] for name in sorted(seen)},
        median_grading_s=statistics.median(times) if times else None,
    )
