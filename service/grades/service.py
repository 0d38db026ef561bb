"""Storing a grade: the score, check results, the final progress event and the outbox row, written together.

The queue decides whether a worker may store (its lease fence); this module decides what is stored. The
caller passes its open transaction, so the job's fenced status change and the grade commit together.
What a kernel sent is normalised by the engine (grading/text.py); storing normalises again as a last
defence, and a result the database still refuses becomes an error the learner sees, never a worker crash.
"""

from __future__ import annotations

import logging
import math

from sqlalchemy.exc import DataError, StatementError
from sqlalchemy.orm import Session

from grading.progress import Done
from grading.result import GradeResult
from grading.text import clean_text, clean_value
from service.db import utcnow
from service.grades.faults import REASON_CHARS, not_gradable_message, regrade_failed_message, unstorable_message
from service.outbox.models import OutboxEvent
from service.states import SubmissionStatus
from service.submissions.models import ProgressEvent, Submission
from service.timefmt import rfc3339

log = logging.getLogger(__name__)


def record_grade(session: Session, *, submission_id: str, result: GradeResult | None, fault: str | None = None) -> None:
    """Store the engine's `result` (graded or error), or with `fault` a not_gradable outcome (keeping the
    engine's partial `result` if it produced one). A failed regrade never destroys an earlier grade. The
    result stays a GradeResult up to here; what is stored is its dict (the `result` JSON column).

    The write happens in a SAVEPOINT: a result the database refuses for its content (too large, a value it
    cannot encode) is rolled back alone and replaced by a smaller error result naming the reason, which the
    learner sees. A lost connection still raises: the caller's transaction is gone and the job is retried."""
    if fault is None and result is None:
        raise ValueError("record_grade needs the engine's result, or a fault")
    row = clean_value(result.to_dict()) if result is not None else None  # idempotent: the engine did it already
    fault = clean_text(fault) if fault is not None else None
    reason = ""  # the database's reason for refusing the full result; the smaller ones name it
    for step in ("full", "reduced", "bare"):
        stored, stored_fault = (
            (row, fault) if step == "full" else (_reduced if step == "reduced" else _bare)(row, fault, reason)
        )
        try:
            _write_savepoint(session, submission_id=submission_id, result=stored, fault=stored_fault)
            return
        except _CONTENT_ERRORS as exc:
            if not _refused_for_content(exc):
                raise
            refused = _reason(exc)
        if step == "full":
            reason = refused
            log.warning(
                "submission %s: the database refused its result (%s); storing a smaller one", submission_id, reason
            )
        else:
            log.warning("submission %s: the %s result was refused too (%s)", submission_id, step, refused)
    raise RuntimeError(f"submission {submission_id}: not even a bare error result could be stored ({reason})")


_CONTENT_ERRORS = (StatementError, UnicodeError)  # DataError is a StatementError; _refused_for_content sorts


def _write_savepoint(session: Session, *, submission_id: str, result: dict | None, fault: str | None) -> None:
    with session.begin_nested():
        _write(session, submission_id=submission_id, result=result, fault=fault)
        session.flush()  # inside the savepoint: a refused value raises here, not at the caller's commit


def _reduced(result: dict | None, fault: str | None, reason: str) -> tuple[dict | None, str | None]:
    """Keep the score and each check's numbers; drop every text a kernel could have grown."""
    if fault is not None:
        return None, fault  # a grader fault stays one; only the engine's partial result is left out
    assert result is not None
    checks = [
        {
            "name": str(c.get("name", ""))[:200],
            "score": _number(c.get("score")),
            "max_score": _number(c.get("max_score")),
            "passed": bool(c.get("passed")),
            "feedback": "",
            "title": "",
        }
        for c in result.get("checks", [])
        if isinstance(c, dict)
    ]
    return _error_result(result, checks=checks, score=_number(result.get("score")), reason=reason), None


def _bare(result: dict | None, fault: str | None, reason: str) -> tuple[dict | None, str | None]:
    """Only our own words: storable whenever the database is."""
    if fault is not None:
        return None, "the grader's result could not be stored"
    assert result is not None
    return _error_result(result, checks=[], score=0.0, reason=reason), None


def _error_result(result: dict, *, checks: list[dict], score: float, reason: str) -> dict:
    return {
        "exercise_id": str(result.get("exercise_id", ""))[:100],
        "status": SubmissionStatus.ERROR,
        "score": score,
        "max_score": _number(result.get("max_score")),
        "checks": checks,
        "message": unstorable_message(reason),
        "cells": [],
        "limits_hit": [],
        "sandbox": str(result.get("sandbox", ""))[:40],
        "device": str(result.get("device", ""))[:20],
        "device_count": int(_number(result.get("device_count"))),
        "dtype": None,
        "duration_s": _number(result.get("duration_s")),
    }


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def _refused_for_content(exc: Exception) -> bool:
    """A DataError, or a value the driver or the JSON serialiser could not encode; not a lost connection."""
    if isinstance(exc, DataError | UnicodeError):
        return True
    return type(exc) is StatementError and isinstance(exc.orig, UnicodeError | ValueError | TypeError | OverflowError)


def _reason(exc: Exception) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return clean_text(text)[:REASON_CHARS]


def _write(session: Session, *, submission_id: str, result: dict | None, fault: str | None) -> None:
    now = utcnow()
    sub = session.get_one(Submission, submission_id)
    if fault is None:
        assert result is not None
        status, score, message = result["status"], result["score"], result.get("message", "")
    else:
        status, score, message = SubmissionStatus.NOT_GRADABLE, None, not_gradable_message(fault)
    # a result that never timed its run (a fault, an unstorable result rebuilt from our own words) says 0.0:
    # stored as "not measured", never as a grading time of 0 s
    measured = result.get("duration_s") if result else None
    grading_s = float(measured) if isinstance(measured, (int, float)) and measured > 0 else None
    kind = "grade.stored"
    if status == SubmissionStatus.NOT_GRADABLE and sub.result and sub.score is not None:
        status, score, kind = sub.result["status"], sub.score, "grade.regrade_failed"
        sub.message = regrade_failed_message(message)
    else:
        sub.score, sub.result, sub.message = score, result, message
        sub.graded_at, sub.grading_s = now, grading_s
    sub.status = status
    session.add(
        ProgressEvent.of(submission_id=submission_id, event=Done(status=status, score=score, max_score=sub.max_score))
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
                **sub.lateness_fields(manual_score=sub.manual_score),
            },
        )
    )
