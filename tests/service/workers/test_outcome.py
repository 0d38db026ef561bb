"""The executor's typed outcome: `Graded(result)`, `Faulted(reason, retryable)` or `NotStarted(reason)`,
and how the worker stores each (real database; no kernels needed)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from grading.result import GradeResult, Status
from service.db import transaction
from service.queue import service as queue
from service.queue.models import Job
from service.submissions.models import Submission
from service.workers.executor import _CHILD, Executor, Faulted, Graded, GradingTicket, NotStarted, grade_ticket
from service.workers.worker import Worker


def _result(status: str, score: float) -> GradeResult:
    return GradeResult(
        exercise_id="ch05.svc_sum",
        status=Status(status),
        score=score,
        max_score=3.0,
        message="kernel did not start" if status == "not_gradable" else "",
        sandbox="unsafe-local",
        duration_s=0.1,
        engine_version="test",
    )


def _claimed(sessions, add_submission, *, max_attempts=3):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, max_attempts=max_attempts)
    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="w1", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
    return sub, job


def _worker(sessions, svc, db_url) -> Worker:
    from service.workers.devices import WorkerDevices

    return Worker(
        settings=svc.settings(db_url),
        sessions=sessions,
        executor=None,  # type: ignore[arg-type]
        devices=WorkerDevices.from_setting(""),
    )


def _state(sessions, sub_id):
    with sessions() as s:
        sub = s.get(Submission, sub_id)
        job = s.scalar(select(Job).where(Job.submission_id == sub_id))
        return sub.status, sub.score, job.status


@pytest.mark.parametrize(
    "outcome, expected",
    [
        (Graded(_result("graded", 3.0)), ("stored", ("graded", 3.0, "done"))),
        (Graded(_result("not_gradable", 0.0)), ("queued", ("queued", None, "queued"))),
        (Faulted("sandbox failed", retryable=True), ("queued", ("queued", None, "queued"))),
        (Faulted("exercise removed", retryable=False), ("failed", ("not_gradable", None, "failed"))),
        (NotStarted("node gone"), ("handed back (not started)", ("queued", None, "queued"))),
    ],
)
def test_worker_branches_on_the_outcome_type(db_url, sessions, svc, add_submission, outcome, expected):
    sub, job = _claimed(sessions, add_submission)
    worker = _worker(sessions, svc, db_url)
    state = worker._store_in_transaction(job, outcome)
    assert (state, _state(sessions, sub.id)) == expected
    assert worker.stored == (1 if state == "stored" else 0)


def test_a_job_that_never_started_is_not_an_attempt(db_url, sessions, svc, add_submission):
    """A job handed back unstarted (its node vanished) keeps all its attempts, even on its last one, and
    waits the retry backoff before it can be claimed again."""
    from service.workers.devices import WorkerDevices

    sub, job = _claimed(sessions, add_submission, max_attempts=1)
    worker = Worker(
        settings=svc.settings(db_url, retry_backoff_s=60.0),
        sessions=sessions,
        executor=None,  # type: ignore[arg-type]
        devices=WorkerDevices.from_setting(""),
    )
    assert worker._store_in_transaction(job, NotStarted("node gone")) == "handed back (not started)"
    with sessions() as s:
        row = s.scalar(select(Job).where(Job.submission_id == sub.id))
        assert (row.status, row.attempts, row.last_error) == ("queued", 0, "not started: node gone")
    with transaction(sessions) as s:  # not claimable during the backoff
        assert queue.claim(s, worker_id="w2", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30) is None
    # the old lease cannot hand it back twice
    assert worker._store_in_transaction(job, NotStarted("node gone")) == "discarded (lease lost)"


def test_hand_backs_for_a_shortage_wait_longer_while_they_follow_each_other(db_url, sessions, svc, add_submission):
    """During a long host shortage every queued job was handed back every retry_backoff_s, writing a started
    and a requeued event each time: the delay now doubles (with jitter) up to not_started_max_s, and a job
    that runs resets it."""
    from service.db import utcnow
    from service.workers.devices import WorkerDevices

    worker = Worker(
        settings=svc.settings(db_url, retry_backoff_s=4.0, not_started_max_s=10.0),
        sessions=sessions,
        executor=None,  # type: ignore[arg-type]
        devices=WorkerDevices.from_setting(""),
    )

    def waits_s(outcome) -> float:
        sub, job = _claimed(sessions, add_submission)
        worker._store_in_transaction(job, outcome)
        with sessions() as s:
            available = s.scalar(select(Job.available_at).where(Job.submission_id == sub.id))
        if available.tzinfo is None:  # SQLite gives naive UTC back
            available = available.replace(tzinfo=utcnow().tzinfo)
        return (available - utcnow()).total_seconds()

    first, second, third, fourth = (waits_s(NotStarted("no free sandbox user")) for _ in range(4))
    assert 1.5 < first <= 4.0 and 3.5 < second <= 8.0 and 4.5 < third <= 10.0 and 4.5 < fourth <= 10.0
    assert worker._shortage.failures == 4
    waits_s(Graded(_result("graded", 3.0)))  # a job ran: the host has room again
    assert worker._shortage.failures == 0 and waits_s(NotStarted("no free sandbox user")) <= 4.0


def test_an_untyped_outcome_is_refused(db_url, sessions, svc, add_submission):
    _, job = _claimed(sessions, add_submission)
    worker = _worker(sessions, svc, db_url)
    with pytest.raises(TypeError, match="expected Graded, Faulted or NotStarted"):
        worker._store_in_transaction(job, {"result": _result("graded", 3.0)})
    assert worker.stored == 0


def test_a_stale_ticket_is_a_final_fault(db_url, sessions, add_submission, monkeypatch):
    """A ticket whose lease token no longer matches the job is refused before any grading starts."""
    sub, job = _claimed(sessions, add_submission)
    monkeypatch.setitem(_CHILD, "sessions", sessions)
    outcome = grade_ticket(GradingTicket(job_id=job.job_id, submission_id=sub.id, lease_token="0" * 32))
    assert isinstance(outcome, Faulted) and not outcome.retryable and "lease no longer held" in outcome.reason


class _ScriptedExecutor(Executor):
    """Answers each submission from a script, at once: the loop's error paths without a process pool."""

    name = "scripted"

    def __init__(self, script) -> None:
        self.script = list(script)

    def submit(self, ticket: GradingTicket):
        import concurrent.futures as cf

        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        future: cf.Future = cf.Future()
        future.set_result(step)
        return future

    def shutdown(self) -> None:
        pass


def test_an_unexpected_error_in_one_job_is_a_grader_fault_and_the_loop_goes_on(db_url, sessions, svc, add_submission):
    """One job cannot be started (the executor raised), one result cannot be stored (record_grade raised
    on a malformed result): both end as retryable grader faults, the worker keeps going and grades the
    rest, and the faulted jobs are graded on their next attempt."""
    from service.workers.devices import WorkerDevices

    with transaction(sessions) as s:
        ids = [add_submission(s)[0].id for _ in range(3)]
    good = Graded(_result("graded", 3.0))
    malformed = dataclasses.replace(good.result, checks=[None])  # record_grade raises on its to_dict()
    script = [RuntimeError("executor bug"), Graded(malformed), good, good, good]
    executor = _ScriptedExecutor(script)
    worker = Worker(
        settings=svc.settings(db_url, worker_slots=1, short_reserved_slots=0),
        sessions=sessions,
        executor=executor,
        devices=WorkerDevices.from_setting(""),
    )
    worker.run(burst=True)
    with sessions() as s:
        jobs = {j.submission_id: (j.status, j.attempts) for j in s.scalars(select(Job))}
        subs = {sid: (s.get(Submission, sid).status, s.get(Submission, sid).score) for sid in ids}
    assert subs == dict.fromkeys(ids, ("graded", 3.0))
    assert {status for status, _ in jobs.values()} == {"done"}
    assert sum(attempts for _, attempts in jobs.values()) == 5  # two faulted attempts, three graded ones
    assert worker.stored == 3 and not executor.script


def test_the_engine_result_stays_typed_from_the_ticket_to_the_stored_grade(
    db_url, sessions, svc, add_submission, monkeypatch
):
    """grade_ticket hands the worker the engine's GradeResult itself (no dict in between), and storing it
    writes its dict: what the engine returned is what the submission row holds."""
    import grading.pipeline

    sub, job = _claimed(sessions, add_submission)
    engine = _result("graded", 3.0)
    monkeypatch.setattr(grading.pipeline, "grade_notebook", lambda *args, **kwargs: engine)
    monkeypatch.setitem(_CHILD, "sessions", sessions)
    monkeypatch.setitem(_CHILD, "sandbox", SimpleNamespace(mode="unsafe-local"))  # grade_notebook is replaced
    monkeypatch.setitem(_CHILD, "catalogue", None)
    outcome = grade_ticket(GradingTicket(job_id=job.job_id, submission_id=sub.id, lease_token=job.lease_token))
    assert isinstance(outcome, Graded) and outcome.result is engine
    assert _worker(sessions, svc, db_url)._store_in_transaction(job, outcome) == "stored"
    with sessions() as s:
        assert s.get(Submission, sub.id).result == engine.to_dict()
