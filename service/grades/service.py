"""Storing a grade: the score, check results, the final progress event and the outbox row, written together.

The queue decides whether a worker may store (its lease fence); this module decides what is stored. The
caller passes its open transaction, so the job's fenced status change and the grade commit together.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from service.db import utcnow
from service.grades.models import OutboxEvent
from service.submissions.models import ProgressEvent, Submission
from service.timefmt import rfc3339


def not_gradable_message(error: str) -> str:
    return (
        "the grader failed on its side, so this attempt was not scored (it does not count against you): "
        f"{error[:500]}. Resubmit later or ask an instructor to regrade."
    )


def record_grade(session: Session, *, submission_id: str, result: dict | None, fault: str | None = None) -> None:
    """Store the engine's `result` (graded or error), or with `fault` a not_gradable outcome (keeping the
    engine's partial `result` if it produced one). A failed regrade never destroys an earlier grade."""
    now = utcnow()
    sub = session.get_one(Submission, submission_id)
    if fault is None:
        if result is None:
            raise ValueError("record_grade needs the engine's result, or a fault")
        status, score, message = result["status"], result["score"], result.get("message", "")
    else:
        status, score, message = "not_gradable", None, not_gradable_message(fault)
    grading_s = result.get("duration_s") if result else None
    kind = "grade.stored"
    if status == "not_gradable" and sub.result and sub.score is not None:
        status, score, kind = sub.result["status"], sub.score, "grade.regrade_failed"
        sub.message = f"a regrade could not run, the previous grade stands: {message}"
    else:
        sub.score, sub.result, sub.message = score, result, message
        sub.graded_at, sub.grading_s = now, grading_s
    sub.status = status
    session.add(
        ProgressEvent(
            submission_id=submission_id,
            event="done",
            data={"status": status, "score": score, "max_score": sub.max_score},
        )
    )
    session.add(
        OutboxEvent(
            submission_id=submission_id,
            kind=kind,
            payload={
                "submission_id": submission_id,
                "user": sub.user,
                "course": sub.course,
                "exercise_id": sub.exercise_id,
                "status": status,
                "score": score,
                "manual_score": sub.manual_score,
                "max_score": sub.max_score,
                "attempt": sub.attempt,
                "timestamp": rfc3339(now),
            },
        )
    )
