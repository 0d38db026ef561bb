"""What the course settings API sends and receives."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from service.patterns import PRINTABLE_NAME
from service.timefmt import TimeIn, Timestamp

Supersede = Literal["off", "training", "all"]


class CourseSettingsUpdate(BaseModel):
    supersede: Supersede | None = Field(
        None,
        description="off | training (long-lane exercises) | all: whether a new "
        "attempt supersedes the learner's still-queued ones; null = the default; absent: unchanged",
    )
    timezone: str | None = Field(
        None,
        max_length=64,
        pattern=PRINTABLE_NAME,
        description="IANA zone the course's times are shown in (e.g. Asia/Shanghai); absent: unchanged",
    )


class CourseSettingsPublic(BaseModel):
    course: str
    supersede: Supersede = Field(description="the policy in force")
    supersede_is_default: bool = Field(description="true when the course made no choice (TITANGRADE_SUPERSEDE_QUEUED)")
    timezone: str = Field("UTC", description="IANA zone the course's times are shown in")


class GradebookRow(BaseModel):
    """One learner and one exercise; a `missing` row has attempts 0 and no score or submission."""

    user: str = Field(description="the learner's display name (when they submitted, for a submitted row)")
    issuer: str
    subject: str
    exercise_id: str
    score: float | None = Field(
        description="the counted attempt's score that counts: an override if any (final, no penalty on top), "
        "else its auto score after the late penalty; null: none yet"
    )
    raw_score: float | None = Field(None, description="the same attempt's score before any late penalty")
    max_score: float
    status: str = Field(description="the counted attempt's status, or `missing` when there is no attempt")
    attempts: int
    superseded: int = Field(description="how many of the attempts a later one superseded")
    submission_id: str | None
    graded_at: str | None = Field(description="RFC 3339")
    submitted_at: str | None = Field(None, description="RFC 3339: when the counted attempt was uploaded")
    late: bool = Field(False, description="the counted attempt came after the learner's due time")
    late_by_s: int = 0
    penalty_percent: float = Field(0.0, description="the late penalty applied to `score` (0 under an override)")


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


# ---- deadlines (service/courses/schedules.py, lateness.py) ----------------------------------------------

LateKindName = Literal["none", "per_day", "per_hour", "closed"]


class LatePolicyBody(BaseModel):
    kind: LateKindName = Field(
        "none",
        description="none: late work accepted, marked late, no penalty; per_day / per_hour: `percent` off per "
        "started day / hour late, never below `floor_percent` of the points earned; closed: no uploads after due_at",
    )
    percent: float = Field(0.0, ge=0, le=100, description="per started day or hour (per_day, per_hour)")
    floor_percent: float = Field(0.0, ge=0, le=100, description="the share of its points late work always keeps")

    model_config = ConfigDict(extra="forbid")


class ScheduleUpdate(BaseModel):
    opens_at: TimeIn | None = Field(None, description="RFC 3339 with an offset; null: open from the start")
    due_at: TimeIn | None = Field(None, description="RFC 3339 with an offset; null: no due date")
    late_policy: LatePolicyBody = LatePolicyBody()

    model_config = ConfigDict(extra="forbid")


class SchedulePublic(BaseModel):
    course: str
    exercise_id: str
    timezone: str = Field(description="the course's IANA zone: the `*_local` fields are in it")
    opens_at: Timestamp | None = Field(description="RFC 3339, UTC")
    due_at: Timestamp | None = Field(description="RFC 3339, UTC")
    opens_at_local: str | None = Field(description="RFC 3339 in the course's zone (its offset at that instant)")
    due_at_local: str | None
    late_policy: LatePolicyBody
    updated_by: str = ""
    updated_at: Timestamp | None = None


class ScheduleList(BaseModel):
    course: str
    timezone: str
    items: list[SchedulePublic] = Field(description="every exercise of the catalogue (no schedule: all nulls, none)")


class ExtensionCreate(BaseModel):
    user: str = Field(
        min_length=1, max_length=200, pattern=PRINTABLE_NAME, description="the learner's subject at `issuer`"
    )
    issuer: str = Field("titangrade", min_length=1, max_length=200, pattern=PRINTABLE_NAME)
    exercise_id: str = Field(min_length=1, max_length=100, pattern=PRINTABLE_NAME)
    due_at: TimeIn = Field(description="RFC 3339 with an offset: the learner's due time, replacing the exercise's")

    model_config = ConfigDict(extra="forbid")


class ExtensionPublic(BaseModel):
    id: int
    course: str
    user: str = Field(description="the learner's subject")
    issuer: str
    name: str = Field(description="the learner's display name")
    exercise_id: str
    due_at: Timestamp
    due_at_local: str
    granted_by: str
    granted_at: Timestamp


class ExtensionList(BaseModel):
    course: str
    timezone: str
    items: list[ExtensionPublic]
