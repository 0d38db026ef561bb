"""Exercise views sent to clients (never reference material)."""

from __future__ import annotations

from pydantic import BaseModel


class ExercisePublic(BaseModel):
    id: str
    chapter: int
    title: str
    title_zh: str
    max_score: float
    kernel_family: str
    lane: str
    resources: dict
    limits: dict
    checks: list[dict]
