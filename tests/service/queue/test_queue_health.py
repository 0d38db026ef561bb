"""service/queue/health.py on SQLite and PostgreSQL: real job rows faulted, handed back, reaped and graded
through the worker's own paths (outcomes.store, Leases.reap), then grouped by cause; dead workers from an
aged heartbeat; the oldest queued job per lane; a not-gradable run stays listed after its regrade."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import update

from grading.errors import HostBusy
from grading.result import GradeResult, Status
from service.auth.principal import Principal
from service.db import transaction, utcnow
from service.errors import clip
from service.queue import health
from service.queue import service as queue
from service.queue.causes import Cause
from service.queue.models import Job, WorkerBeat
from service.submissions import service as submissions
from service.workers import outcomes
from service.workers.executor import Faulted, Graded, NotStarted
from service.workers.leases import Leases

RESULT = GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0, duration_s=0.5)
TEACHER = Principal(identity_id=0, issuer="titangrade", subject="t", name="t", memberships={"c1": "instructor"})
SHORTAGE = HostBusy(
    "no free sandbox user: all 3 are in use (3 by this process, 0 by other titangrade processes on this host)",
    resource="sandbox user",
)


def _claim(sessions, worker="w1"):
    with transaction(sessions) as s:
        return queue.claim(s, worker_id=worker, lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)


def _store(sessions, job, outcome):
    with transaction(sessions) as s:
        return outcomes.store(s, job=job, outcome=outcome, retry_backoff_s=0.0)


def _by_cause(report) -> dict[str, tuple[int, int, int]]:
    return {c.cause: (c.failed, c.recovered, c.retrying) for c in report.causes}


def test_faults_are_grouped_by_cause_and_stay_visible_after_recovery(
    db_url, sessions, svc, add_submission, test_catalogue
):
    with transaction(sessions) as s:
        recovered, _ = add_submission(s, user="a1")
        gave_up, _ = add_submission(s, user="a2", max_attempts=1)
        crashing, _ = add_submission(s, user="a3")
        other_course, _ = add_submission(s, user="z9", course="c2", max_attempts=1)
    plan = {  # what each claim of each submission ends in, in the worker's own words
        # a1: handed back for want of a sandbox user (not an attempt), then graded on its next claim
        recovered.id: [NotStarted(f"{SHORTAGE.resource} busy: {clip(SHORTAGE, 300)}"), Graded(RESULT)],
        # a2: its grading process died on its only attempt: given up, recorded not gradable
        gave_up.id: [Faulted("grading process 4242 died: BrokenProcessPool", retryable=True)],
        # a3: the kernel would not start; it waits for its next attempt
        crashing.id: [Faulted("kernel failed to start: Kernel died before replying", retryable=True)],
        # z9 (course c2): a text the patterns do not know, given up
        other_course.id: [Faulted("reference for ch05.svc_sum has no check 'x'", retryable=False)],
    }
    states = []
    while (job := _claim(sessions)) is not None and plan[job.submission_id]:
        states.append(_store(sessions, job, plan[job.submission_id].pop(0)).state)
    assert not any(plan.values()) and sorted(states).count("failed") == 2 and "stored" in states

    with sessions() as s:
        report = health.build(s, user=TEACHER, window_s=3600, dead_after_s=60)
    assert _by_cause(report) == {
        Cause.SANDBOX_USERS_EXHAUSTED: (0, 1, 0),
        Cause.WORKER_LOST: (1, 0, 0),
        Cause.KERNEL_CRASH: (0, 0, 1),
        Cause.OTHER: (1, 0, 0),
    }
    sandbox = next(c for c in report.causes if c.cause == Cause.SANDBOX_USERS_EXHAUSTED)
    assert "no free sandbox user" in sandbox.example and sandbox.example.startswith("not started: sandbox user busy")
    # the not-gradable list: only what the teacher of c1 may read, and still there after a regrade
    with transaction(sessions) as s:
        again = s.get_one(type(gave_up), gave_up.id)
        ids, _ = submissions.regrade(s, subs=[again], priority=10, max_attempts=3, catalogue=test_catalogue)
    assert ids == [gave_up.id]
    with sessions() as s:
        report = health.build(s, user=TEACHER, window_s=3600, dead_after_s=60)
    assert [(n.submission_id, n.cause, n.status_now) for n in report.not_gradable] == [
        (gave_up.id, Cause.WORKER_LOST, "queued")
    ]
    assert _by_cause(report)[Cause.WORKER_LOST] == (1, 0, 0)  # the failed job row is kept; the regrade is new
    assert report.jobs["failed"] == 2 and report.jobs["done"] == 1 and report.jobs["cancelled"] == 0


def test_the_window_leaves_out_older_faults_and_cancelled_jobs(db_url, sessions, add_submission):
    with transaction(sessions) as s:
        _, old_job = add_submission(s, user="o1", max_attempts=1)
        cancelled, _ = add_submission(s, user="o2")
    job = _claim(sessions)
    _store(sessions, job, Faulted("kernel failed to start", retryable=True))
    with transaction(sessions) as s:
        queue.cancel_queued(s, submission_ids=[cancelled.id], reason="superseded by x")
        long_ago = utcnow() - dt.timedelta(days=2)
        s.execute(
            update(Job)
            .where(Job.id == old_job.id)
            .values(created_at=long_ago, claimed_at=long_ago, finished_at=long_ago)
        )
    with sessions() as s:
        assert health.build(s, user=TEACHER, window_s=86400, dead_after_s=60).causes == []
        wide = health.build(s, user=TEACHER, window_s=3 * 86400, dead_after_s=60)
    assert _by_cause(wide) == {Cause.KERNEL_CRASH: (1, 0, 0)}


def test_a_worker_whose_heartbeat_stopped_is_dead_with_what_it_held_and_lost(db_url, sessions, svc, add_submission):
    with transaction(sessions) as s:
        lost, _ = add_submission(s, user="b1")
        held, _ = add_submission(s, user="b2")
    settings = svc.settings(db_url)  # lease_s 4: dead after 4 s without a heartbeat
    for worker in ("wlive", "wdead"):
        Leases(settings=settings, sessions=sessions, worker_id=worker).beat(
            slots=2, devices=0, device_kind="cpu", long_slots=1
        )
    first, second = _claim(sessions, "wdead"), _claim(sessions, "wdead")
    assert {first.submission_id, second.submission_id} == {lost.id, held.id}
    with transaction(sessions) as s:
        s.execute(
            update(WorkerBeat).where(WorkerBeat.id == "wdead").values(heartbeat_at=utcnow() - dt.timedelta(minutes=10))
        )
        s.execute(update(Job).where(Job.id == first.job_id).values(lease_expires_at=utcnow() - dt.timedelta(seconds=1)))
    Leases(settings=settings, sessions=sessions, worker_id="wlive").reap()  # the live worker takes one back
    with sessions() as s:
        report = health.build(s, user=TEACHER, window_s=3600, dead_after_s=settings.lease_s)
    assert [w.id for w in report.live_workers] == ["wlive"]
    (dead,) = report.dead_workers
    assert dead.id == "wdead" and 590 <= dead.heartbeat_age_s <= 660
    assert dead.held == [second.job_id] and dead.reaped == 1
    assert _by_cause(report) == {Cause.WORKER_LOST: (0, 0, 1)}
    # a heartbeat again: alive, on the real setting (not a fixed number of seconds)
    with transaction(sessions) as s:
        s.execute(
            update(WorkerBeat)
            .where(WorkerBeat.id == "wdead")
            .values(heartbeat_at=utcnow() - dt.timedelta(seconds=settings.lease_s / 2))
        )
    with sessions() as s:
        assert {
            w.id for w in health.build(s, user=TEACHER, window_s=3600, dead_after_s=settings.lease_s).live_workers
        } == {"wlive", "wdead"}
        assert health.build(s, user=TEACHER, window_s=3600, dead_after_s=settings.lease_s / 4).dead_workers


def test_oldest_queued_job_per_lane(db_url, sessions, add_submission):
    with sessions() as s:
        assert [(x.lane, x.queued, x.oldest_age_s) for x in health.oldest_queued(s)] == [
            ("short", 0, None),
            ("long", 0, None),
        ]
    with transaction(sessions) as s:
        _, first = add_submission(s, user="c1")
        add_submission(s, user="c2")
        _, slow = add_submission(s, user="c3", lane="long")
        s.flush()
        s.execute(update(Job).where(Job.id == first.id).values(created_at=utcnow() - dt.timedelta(minutes=30)))
        s.execute(update(Job).where(Job.id == slow.id).values(created_at=utcnow() - dt.timedelta(minutes=5)))
    with sessions() as s:
        lanes = {x.lane: x for x in health.oldest_queued(s)}
    assert lanes["short"].queued == 2 and lanes["short"].oldest_job_id == first.id
    assert 1790 <= lanes["short"].oldest_age_s <= 1860
    assert lanes["long"].queued == 1 and 290 <= lanes["long"].oldest_age_s <= 360
