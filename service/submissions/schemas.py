"""What the submissions API sends and receives (never ORM rows)."""
from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field


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
    lang: str
    message: str
    checks: list[CheckPublic]
    limits_hit: list[str] = []
    sandbox: str = ""
    grading_s: float | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    graded_at: dt.datetime | None


class SubmissionList(BaseModel):
    items: list[SubmissionPublic]


class OverrideCreate(BaseModel):
    score: float | None = Field(ge=0, description="the score to record; null removes the override")
    reason: str = Field(min_length=3, max_length=2000)


class RegradeAccepted(BaseModel):
    queued: int
    submission_ids: list[str]
