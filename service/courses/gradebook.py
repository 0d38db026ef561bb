"""The course gradebook: one row for every learner of the course and every exercise of the catalogue.

A learner is an active `learner` member of the course (an LMS roster sync adds those who never launched and
marks those it no longer lists inactive), or anyone who submitted to it (an instructor trying an
exercise, a membership removed later): their work never drops out of the sheet. A learner who has no
attempt at an exercise gets a `missing` row (attempts 0, no score), so a sheet shows who is missing.

The chosen attempt of each learner and exercise is picked by the database in one query (window functions,
SQLite and PostgreSQL alike), reading only the columns a row shows, never the notebooks or results.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.auth.models import Identity, Membership
from service.courses.lateness import counted_score
from service.states import SubmissionStatus
from service.submissions.models import Submission
from service.timefmt import rfc3339

Policy = Literal["best", "latest"]
LEARNER_ROLE = "learner"


class CellStatus(enum.StrEnum):
    """A gradebook cell's state beyond a submission's own: the learner has no attempt at the exercise."""

    MISSING = "missing"


@dataclass(slots=True, kw_only=True)
class Learner:
    """One learner's row of the matrix: their cells by exercise id and their totals over every exercise."""

    issuer: str
    subject: str
    user: str  # display name
    cells: dict[str, dict] = field(default_factory=dict)
    points: float = 0.0
    max_points: float = 0.0
    submitted: int = 0  # exercises with at least one attempt
    missing: int = 0

    @property
    def percent(self) -> float | None:
        return round(100.0 * self.points / self.max_points, 1) if self.max_points > 0 else None


@dataclass(slots=True, kw_only=True)
class Gradebook:
    course: str
    policy: Policy
    exercises: list[tuple[str, float]]  # (exercise id, max score), sorted by id
    learners: list[Learner]  # sorted by (issuer, subject)

    def rows(self) -> list[dict]:
        """Every learner x exercise row, by (issuer, subject, exercise id): the JSON's `rows` and the CSV."""
        return [learner.cells[ex_id] for learner in self.learners for ex_id, _ in self.exercises]

    def totals(self) -> list[dict]:
        return [
            {
                "user": learner.user,
                "issuer": learner.issuer,
                "subject": learner.subject,
                "points": learner.points,
                "max_points": learner.max_points,
                "percent": learner.percent,
                "submitted": learner.submitted,
                "missing": learner.missing,
            }
            for learner in self.learners
        ]


def _chosen_attempts(course: str, policy: Policy):
    """One row per (identity, exercise) that has attempts: the attempt the policy counts, with the counts.

    Scored attempts win over unscored ones (queued, not gradable, superseded); among scored ones `best` takes
    the highest score that counts (after the late penalty; an override as it is; the earliest on a tie) and
    `latest` the last. With nothing scored, the first attempt that was not superseded stands in (the learner
    appears before grading), else the last superseded one."""
    part = (Submission.identity_id, Submission.exercise_id)
    is_superseded = case((Submission.status == SubmissionStatus.SUPERSEDED, 1), else_=0)
    inner = (
        select(
            Submission.id,
            Submission.identity_id,
            Submission.exercise_id,
            Submission.user,
            # what counts: an override (final), else the auto score after the late penalty; `best` ranks by it
            func.coalesce(
                Submission.manual_score, Submission.score * (100.0 - Submission.penalty_percent) / 100.0
            ).label("score"),
            Submission.score.label("auto_score"),
            Submission.manual_score,
            Submission.penalty_percent,
            Submission.late_by_s,
            Submission.created_at,
            Submission.max_score,
            Submission.status,
            Submission.graded_at,
            func.row_number().over(partition_by=part, order_by=(Submission.created_at, Submission.id)).label("seq"),
            func.count().over(partition_by=part).label("attempts"),
            func.sum(is_superseded).over(partition_by=part).label("superseded"),
        )
        .where(Submission.course == course)
        .subquery()
    )
    c = inner.c
    unscored = c.score.is_(None)
    stand_in_last = unscored & (c.status == SubmissionStatus.SUPERSEDED)
    order: list[ColumnElement] = [case((unscored, 1), else_=0)]
    if policy == "best":
        order.append(func.coalesce(c.score, 0.0).desc())
    order.append(case((stand_in_last, 1), else_=0))
    scored_seq = c.seq if policy == "best" else -c.seq
    order.append(case((stand_in_last, -c.seq), (unscored, c.seq), else_=scored_seq))
    rank = func.row_number().over(partition_by=(c.identity_id, c.exercise_id), order_by=order).label("rank")
    ranked = select(inner, rank).subquery()
    r = ranked.c
    return (
        select(r.identity_id, r.exercise_id, r.id, r.user, r.score, r.max_score, r.status, r.graded_at)
        .add_columns(r.auto_score, r.manual_score, r.penalty_percent, r.late_by_s, r.created_at)
        .add_columns(r.attempts, r.superseded, Identity.issuer, Identity.subject, Identity.name)
        .join(Identity, Identity.id == r.identity_id)
        .where(r.rank == 1)
    )


def _members(course: str):
    return (
        select(Identity.id, Identity.issuer, Identity.subject, Identity.name)
        .join(Membership, Membership.identity_id == Identity.id)
        .where(Membership.course == course, Membership.role == LEARNER_ROLE, Membership.inactive_at.is_(None))
    )


def build(session: Session, *, course: str, policy: Policy, catalogue: Catalogue) -> Gradebook:
    """The course's gradebook under `policy`: two queries (the learners, the chosen attempts)."""
    people: dict[int, Learner] = {
        ident: Learner(issuer=issuer, subject=subject, user=name)
        for ident, issuer, subject, name in session.execute(_members(course))
    }
    max_of = {e.id: float(e.manifest.max_score) for e in catalogue}
    chosen: dict[tuple[int, str], dict] = {}
    for row in session.execute(_chosen_attempts(course, policy)):
        if row.identity_id not in people:
            people[row.identity_id] = Learner(issuer=row.issuer, subject=row.subject, user=row.name)
        max_of.setdefault(row.exercise_id, float(row.max_score))  # an exercise no longer in the catalogue
        chosen[(row.identity_id, row.exercise_id)] = {
            "user": row.user,
            "issuer": row.issuer,
            "subject": row.subject,
            "exercise_id": row.exercise_id,
            "score": counted_score(manual=row.manual_score, raw=row.auto_score, penalty_percent=row.penalty_percent),
            "raw_score": row.manual_score if row.manual_score is not None else row.auto_score,
            "max_score": row.max_score,
            "status": row.status,
            "attempts": int(row.attempts),
            "superseded": int(row.superseded or 0),
            "submission_id": row.id,
            "graded_at": rfc3339(row.graded_at),
            "submitted_at": rfc3339(row.created_at),
            "late": row.late_by_s > 0,
            "late_by_s": int(row.late_by_s),
            # an override is final: no penalty was applied to it
            "penalty_percent": float(row.penalty_percent) if row.manual_score is None else 0.0,
        }
    exercises = sorted(max_of.items())
    for ident, learner in people.items():
        for ex_id, max_score in exercises:
            cell = chosen.get((ident, ex_id))
            if cell is None:
                cell = _missing(learner, ex_id, max_score)
                learner.missing += 1
            else:
                learner.submitted += 1
            learner.cells[ex_id] = cell
            learner.points += cell["score"] or 0.0
            learner.max_points += cell["max_score"]
    learners = sorted(people.values(), key=lambda p: (p.issuer, p.subject))
    return Gradebook(course=course, policy=policy, exercises=exercises, learners=learners)


def _missing(learner: Learner, exercise_id: str, max_score: float) -> dict:
    return {
        "user": learner.user,
        "issuer": learner.issuer,
        "subject": learner.subject,
        "exercise_id": exercise_id,
        "score": None,
        "raw_score": None,
        "max_score": max_score,
        "status": CellStatus.MISSING,
        "attempts": 0,
        "superseded": 0,
        "submission_id": None,
        "graded_at": None,
        "submitted_at": None,
        "late": False,
        "late_by_s": 0,
        "penalty_percent": 0.0,
    }
