"""Storing a grade (service.grades.record_grade): score, events and outbox row together; faults never zero."""

from __future__ import annotations

from sqlalchemy import select

from grading.result import GradeResult, Status
from service.db import transaction
from service.outbox.models import OutboxEvent
from service.grades.service import record_grade
from service.queue import service as queue
from service.submissions.models import ProgressEvent, Submission

RESULT = GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0, duration_s=0.5)


def _claim(sessions):
    with transaction(sessions) as s:
        return queue.claim(s, worker_id="w1", lanes=("short", "long"), free_devices=0, max_world_size=8, lease_s=30)


def test_a_grade_stores_score_done_event_and_outbox_row_together(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    with transaction(sessions) as s:
        record_grade(s, submission_id=sub.id, result=RESULT)
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert (stored.status, stored.score, stored.grading_s) == ("graded", 3.0, 0.5)
        done = s.scalars(select(ProgressEvent).where(ProgressEvent.event == "done")).one()
        assert done.data == {"status": "graded", "score": 3.0, "max_score": 3.0}
        outbox = s.scalars(select(OutboxEvent)).one()
        assert (outbox.kind, outbox.payload["score"], outbox.payload["user"]) == ("grade.stored", 3.0, "alice")


def test_a_fault_is_not_gradable_never_a_zero(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    with transaction(sessions) as s:
        record_grade(s, submission_id=sub.id, result=None, fault="kernel did not start")
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert stored.status == "not_gradable" and stored.score is None
        assert "not scored" in stored.message and "kernel did not start" in stored.message


def test_a_failed_regrade_keeps_the_previous_grade(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, max_attempts=1)
    held = _claim(sessions)
    with transaction(sessions) as s:
        assert queue.complete(s, job=held)
        record_grade(s, submission_id=held.submission_id, result=RESULT)
    with transaction(sessions) as s:
        queue.enqueue(
            s,
            submission_id=sub.id,
            lane="short",
            priority=queue.BULK_REGRADE_PRIORITY,
            devices=0,
            world_size=1,
            max_attempts=1,
        )
    regrade = _claim(sessions)
    with transaction(sessions) as s:
        assert queue.fault(s, job=regrade, error="kernel did not start", retryable=True, backoff_s=0) == "failed"
        record_grade(s, submission_id=sub.id, result=None, fault="kernel did not start")
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert (stored.status, stored.score) == ("graded", 3.0)
        assert "previous grade stands" in stored.message
        kinds = [o.kind for o in s.scalars(select(OutboxEvent).order_by(OutboxEvent.id))]
        assert kinds == ["grade.stored", "grade.regrade_failed"]
