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
