"""The DB queue on SQLite and PostgreSQL: atomic claims, lanes, devices, priorities, leases and fencing."""
from __future__ import annotations

import datetime as dt
import threading

from sqlalchemy import func, select, update

from grading.result import GradeResult, Status
from service.db import transaction, utcnow
from service.outbox.models import OutboxEvent
from service.grades.service import record_grade
from service.queue import service as queue
from service.queue.models import Job
from service.submissions.models import Submission

RESULT = GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0, duration_s=0.5)


def _claim(sessions, worker="w1", lanes=("short", "long"), free_devices=0, lease_s=30.0):
    with transaction(sessions) as s:
        return queue.claim(s, worker_id=worker, lanes=lanes, free_devices=free_devices, max_world_size=8,
                           lease_s=lease_s)


def _store(session, job, result=RESULT) -> bool:
    """What the worker does with a finished job: the fenced finish, then the grade, in one transaction."""
    if not queue.complete(session, job=job):
        return False
    record_grade(session, submission_id=job.submission_id, result=result)
    return True


def _fail(session, job, error, retryable=True) -> str:
    state = queue.fault(session, job=job, error=error, retryable=retryable, backoff_s=0)
    if state == "failed":
        record_grade(session, submission_id=job.submission_id, result=None, fault=error)
    return state


def _expire(sessions, job_id):
    with transaction(sessions) as s:
        s.execute(update(Job).where(Job.id == job_id).values(lease_expires_at=utcnow() - dt.timedelta(seconds=1)))


def test_claim_takes_oldest_and_marks_running(sessions, add_submission):
    with transaction(sessions) as s:
        first, _ = add_submission(s)
        second, _ = add_submission(s)
    a, b, none = _claim(sessions), _claim(sessions), _claim(sessions)
    assert (a.submission_id, b.submission_id, none) == (first.id, second.id, None)
    assert a.attempt == 1 and a.lease_token != b.lease_token
    with sessions() as s:
        assert s.get(Submission, first.id).status == "running"
        assert s.get(Job, a.job_id).worker_id == "w1"


def test_concurrent_claims_never_share_a_job(sessions, add_submission):
    with transaction(sessions) as s:
        ids = {add_submission(s)[0].id for _ in range(24)}
    got: list[str] = []
    lock = threading.Lock()

    def drain(name):
        while (job := _claim(sessions, worker=name)) is not None:
            with lock:
                got.append(job.submission_id)

    threads = [threading.Thread(target=drain, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == sorted(ids)


def test_lanes_devices_and_priorities_decide_what_is_claimed(sessions, add_submission):
    with transaction(sessions) as s:
        long_sub, _ = add_submission(s, lane="long")
        gpu_sub, _ = add_submission(s, devices=2)
        bulk_sub, _ = add_submission(s, priority=queue.BULK_REGRADE_PRIORITY)
        live_sub, _ = add_submission(s)
    assert _claim(sessions, lanes=("short",)).submission_id == live_sub.id  # interactive before bulk
    assert _claim(sessions, lanes=("short",)).submission_id == bulk_sub.id  # never the long or GPU job
    assert _claim(sessions, lanes=("short",)) is None
    assert _claim(sessions, lanes=("short", "long")).submission_id == long_sub.id
    assert _claim(sessions, free_devices=2).submission_id == gpu_sub.id


def test_expired_lease_is_reclaimed_and_old_holder_is_fenced_off(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    old = _claim(sessions, worker="dead")
    _expire(sessions, old.job_id)
    with transaction(sessions) as s:
        assert [e.gave_up for e in queue.reap_expired(s)] == [False]
    new = _claim(sessions, worker="alive")
    assert new.job_id == old.job_id and new.attempt == 2
    with transaction(sessions) as s:
        assert _store(s, old) is False
    with transaction(sessions) as s:
        assert _store(s, new) is True
    with transaction(sessions) as s:
        assert _store(s, new) is False  # a job is stored once
        stored = s.get(Submission, sub.id)
        assert (stored.status, stored.score) == ("graded", 3.0)
        assert s.scalar(select(func.count()).select_from(OutboxEvent)) == 1


def test_renew_reports_lost_leases(sessions, add_submission):
    with transaction(sessions) as s:
        add_submission(s)
    held = _claim(sessions, lease_s=0.5)
    with transaction(sessions) as s:
        assert queue.renew(s, held=[held], lease_s=30) == set()
    _expire(sessions, held.job_id)
    with transaction(sessions) as s:
        queue.reap_expired(s)
    with transaction(sessions) as s:
        assert queue.renew(s, held=[held], lease_s=30) == {held.job_id}


def test_grader_faults_retry_then_become_not_gradable(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, max_attempts=2)
    first = _claim(sessions)
    with transaction(sessions) as s:
        assert _fail(s, first, "kernel did not start") == "queued"
    second = _claim(sessions)
    assert second.attempt == 2
    with transaction(sessions) as s:
        assert _fail(s, second, "kernel did not start") == "failed"
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert stored.status == "not_gradable" and stored.score is None
        assert "not scored" in stored.message
        assert s.scalar(select(func.count()).select_from(OutboxEvent)) == 1


def test_non_retryable_fault_fails_at_once(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    job = _claim(sessions)
    with transaction(sessions) as s:
        assert _fail(s, job, "exercise removed", retryable=False) == "failed"
    with sessions() as s:
        assert s.get(Submission, sub.id).status == "not_gradable"


def test_reaping_after_the_last_attempt_gives_up(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, max_attempts=1)
    job = _claim(sessions)
    _expire(sessions, job.job_id)
    with transaction(sessions) as s:
        expired = queue.reap_expired(s)
        assert [(e.submission_id, e.gave_up) for e in expired] == [(sub.id, True)]
        record_grade(s, submission_id=sub.id, result=None, fault=expired[0].reason)
    with sessions() as s:
        assert s.get(Submission, sub.id).status == "not_gradable"
        assert s.get(Job, job.job_id).status == "failed"


def test_backoff_delays_a_retried_job(sessions, add_submission):
    with transaction(sessions) as s:
        add_submission(s)
    job = _claim(sessions)
    with transaction(sessions) as s:
        queue.fault(s, job=job, error="flaky", retryable=True, backoff_s=60)
    assert _claim(sessions) is None


def test_release_requeues_at_once_without_counting_an_attempt(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    held = _claim(sessions)
    with transaction(sessions) as s:
        assert queue.release(s, job=held, reason="worker shut down") is True
    with transaction(sessions) as s:
        assert queue.release(s, job=held, reason="again") is False  # fenced: no longer held
    again = _claim(sessions, worker="w2")
    assert again.job_id == held.job_id and again.attempt == 1
    with sessions() as s:
        assert s.get(Submission, sub.id).status == "running"


def test_a_fault_reason_quoting_hostile_text_is_stored_cleaned(sessions, add_submission):
    """A fault's reason can quote an exception raised by grading (`grading process died: ...`): PostgreSQL
    refuses NUL in the job's text column and no driver encodes a lone surrogate, so it is cleaned first."""
    with transaction(sessions) as s:
        add_submission(s)
    job = _claim(sessions)
    with transaction(sessions) as s:
        assert queue.fault(s, job=job, error="died: \x00 \udc80 \x1b[31m", retryable=True, backoff_s=0) == "queued"
    with sessions() as s:
        assert s.get(Job, job.job_id).last_error == "died: \\x00 \ufffd "
