"""The gradebook: one row per learner and exercise, best or latest attempt."""
from __future__ import annotations

import csv
import io
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.submissions.models import Submission

Policy = Literal["best", "latest"]
CSV_COLUMNS = ("user", "exercise_id", "score", "max_score", "status", "attempts", "submission_id", "graded_at")


def gradebook(session: Session, *, course: str, policy: Policy) -> list[dict]:
    subs = session.scalars(select(Submission).where(Submission.course == course)
                           .order_by(Submission.created_at, Submission.id))
    chosen: dict[tuple[str, str], Submission] = {}
    attempts: dict[tuple[str, str], int] = {}
    for sub in subs:
        key = (sub.user, sub.exercise_id)
        attempts[key] = attempts.get(key, 0) + 1
        if sub.effective_score is None:  # not graded yet, or not gradable: never counts as a score
            chosen.setdefault(key, sub)  # a placeholder so the learner appears even before grading
            continue
        held = chosen.get(key)
        held_score = held.effective_score if held is not None else None
        if policy == "latest" or held_score is None or sub.effective_score > held_score:
            chosen[key] = sub
    return [{"user": s.user, "exercise_id": s.exercise_id, "score": s.effective_score,
             "max_score": s.max_score, "status": s.status, "attempts": attempts[key], "submission_id": s.id,
             "graded_at": s.graded_at.isoformat() if s.graded_at else None}
            for key, s in sorted(chosen.items())]


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
