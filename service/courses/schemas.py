"""What the course settings API sends and receives."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Supersede = Literal["off", "training", "all"]


class CourseSettingsUpdate(BaseModel):
    supersede: Supersede | None = Field(
        description="off | training (long-lane exercises) | all: whether a new "
        "attempt supersedes the learner's still-queued ones; null = the default"
    )


class CourseSettingsPublic(BaseModel):
    course: str
    supersede: Supersede = Field(description="the policy in force")
    supersede_is_default: bool = Field(description="true when the course made no choice (TITANGRADE_SUPERSEDE_QUEUED)")


class GradebookRow(BaseModel):
    """One learner and one exercise; a `missing` row has attempts 0 and no score or submission."""

    user: str = Field(description="the learner's display name (when they submitted, for a submitted row)")
    issuer: str
    subject: str
    exercise_id: str
    score: float | None = Field(description="the counted attempt's score (an override wins); null: none yet")
    max_score: float
    status: str = Field(description="the counted attempt's status, or `missing` when there is no attempt")
    attempts: int
    superseded: int = Field(description="how many of the attempts a later one superseded")
    submission_id: str | None
    graded_at: str | None = Field(description="RFC 3339")


class GradebookExercise(BaseModel):
    exercise_id: str
    max_score: float


class GradebookTotal(BaseModel):
    """A learner's total over every exercise: a cell without a score adds 0 points and its max."""

    user: str
    issuer: str
    subject: str
    points: float
    max_points: float
    percent: float | None = Field(description="100 * points / max_points, one decimal; null when max_points is 0")
    submitted: int = Field(description="exercises with at least one attempt")
    missing: int = Field(description="exercises without an attempt")


class GradebookPublic(BaseModel):
    course: str
    policy: Literal["best", "latest"]
    rows: list[GradebookRow] = Field(description="every learner x every exercise, by issuer, subject, exercise")
    exercises: list[GradebookExercise] = Field(description="the columns: the catalogue's exercises")
    totals: list[GradebookTotal] = Field(description="one per learner, in the order of `rows`")
