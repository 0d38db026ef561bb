"""What the submissions API sends and receives (never ORM rows)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from service.timefmt import Timestamp


class CheckPublic(BaseModel):
    name: str
    score: float
    max_score: float
    passed: bool
    feedback: str = ""


class SubmissionAccepted(BaseModel):
    id: str
    status: str
    exercise_id: str
    course: str
    attempt: int
    links: dict[str, str]


class SubmissionPublic(BaseModel):
    id: str
    user: str
    course: str
    exercise_id: str
    status: str = Field(description="queued | running | graded | error | not_gradable")
    score: float | None = Field(description="the score that counts: a manual override if any, else the auto score")
    auto_score: float | None
    manual_score: float | None
    max_score: float
    attempt: int
    run: int = Field(description="grading run: 1 at intake, +1 per regrade; the event stream follows the current run")
    lang: str
    message: str
    checks: list[CheckPublic]
    limits_hit: list[str] = []
    sandbox: str = ""
    grading_s: float | None
    created_at: Timestamp
    started_at: Timestamp | None
    graded_at: Timestamp | None


class SubmissionList(BaseModel):
    items: list[SubmissionPublic]


class OverrideCreate(BaseModel):
    score: float | None = Field(ge=0, description="the score to record; null removes the override")
    reason: str = Field(min_length=3, max_length=2000)

    model_config = ConfigDict(strict=True, extra="forbid")  # `false` is not a score of 0


class RegradeSkipped(BaseModel):
    submission_id: str
    reason: str = Field(description="why no new run was queued, e.g. already_pending")
    message: str


class RegradeAccepted(BaseModel):
    queued: int
    submission_ids: list[str] = Field(description="the submissions that got a new run")
    skipped: list[RegradeSkipped] = []
    message: str = ""


class OverridePublic(BaseModel):
    old_score: float | None
    new_score: float | None
    reason: str
    by: str
    at: Timestamp
