"""The DB queue on SQLite and PostgreSQL: atomic claims, lanes, devices, priorities, leases and fencing."""
from __future__ import annotations

import datetime as dt
import threading

from sqlalchemy import func, select, update

from service.db import transaction, utcnow
from service.grades.models import OutboxEvent
from service.queue import service as queue
from service.queue.models import Job
from service.submissions.models import Submission

RESULT = {"status": "graded", "score": 3.0, "max_score": 3.0, "checks": [], "message": "", "duration_s": 0.5}


def _claim(sessions, worker="w1", lanes=("short", "long"), free_devices=0, lease_s=30.0):
    with transaction(sessions) as s:
        return queue.claim(s, worker_id=worker, lanes=lanes, free_devices=free_devices, max_world_size=8,
                           lease_s=lease_s)


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
        assert queue.reap_expired(s) == 1
    new = _claim(sessions, worker="alive")
    assert new.job_id == old.job_id and new.attempt == 2
    with transaction(sessions) as s:
        assert queue.complete(s, job=old, result=RESULT) is False
    with transaction(sessions) as s:
        assert queue.complete(s, job=new, result=RESULT) is True
    with transaction(sessions) as s:
        assert queue.complete(s, job=new, result=RESULT) is False  # a job is stored once
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
        assert queue.fault(s, job=first, error="kernel did not start", retryable=True, backoff_s=0) == "queued"
    second = _claim(sessions)
    assert second.attempt == 2
    with transaction(sessions) as s:
        assert queue.fault(s, job=second, error="kernel did not start", retryable=True, backoff_s=0) == "failed"
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
        assert queue.fault(s, job=job, error="exercise removed", retryable=False, backoff_s=0) == "failed"
    with sessions() as s:
        assert s.get(Submission, sub.id).status == "not_gradable"


def test_reaping_after_the_last_attempt_gives_up(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, max_attempts=1)
    job = _claim(sessions)
    _expire(sessions, job.job_id)
    with transaction(sessions) as s:
        queue.reap_expired(s)
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


def test_a_failed_regrade_keeps_the_previous_grade(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, max_attempts=1)
    with transaction(sessions) as s:
        queue.complete(s, job=_claim(sessions), result=RESULT)
    with transaction(sessions) as s:
        queue.enqueue(s, submission_id=sub.id, lane="short", priority=queue.BULK_REGRADE_PRIORITY, devices=0,
                      world_size=1, max_attempts=1)
    regrade = _claim(sessions)
    with transaction(sessions) as s:
        assert queue.fault(s, job=regrade, error="kernel did not start", retryable=True, backoff_s=0) == "failed"
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert (stored.status, stored.score) == ("graded", 3.0)
        assert "previous grade stands" in stored.message
        kinds = [o.kind for o in s.scalars(select(OutboxEvent).order_by(OutboxEvent.id))]
        assert kinds == ["grade.stored", "grade.regrade_failed"]
