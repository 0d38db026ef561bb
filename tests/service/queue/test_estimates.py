"""Waiting-time estimates: the pure scheduling parts, and estimates checked against a replayed queue that the
real claim drains (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import random
import uuid

import pytest

from service.db import transaction, utcnow
from service.queue import estimates
from service.queue import service as queue
from service.submissions.models import Submission

# The stated error: an estimated start is within 25 % of the true wait or one typical job, whichever is larger,
# when run times vary +-20 % around the exercise's median (docs/service.md).
REL_ERROR, JITTER = 0.25, 0.2
MEDIANS = {"ch05.svc_sum": 2.0, "ch05.svc_other": 6.0}


def test_schedule_fills_the_earliest_free_slot():
    assert estimates.schedule(ahead_s=[], running_left_s=[], slots=2, own_s=3.0) == (0.0, 3.0)
    assert estimates.schedule(ahead_s=[4, 4, 4], running_left_s=[], slots=2, own_s=1.0) == (4.0, 5.0)
    assert estimates.schedule(ahead_s=[2], running_left_s=[5, 1], slots=2, own_s=1.0) == (3.0, 4.0)


def test_claim_order_is_round_robin_over_learners():
    jobs = [
        estimates.QueuedJob(id=i, learner=who, priority=0, exercise_id="x")
        for i, who in enumerate(["a", "a", "a", "b", "c", "c"], start=1)
    ]
    then = dt.datetime(2026, 1, 1)
    fair = estimates.claim_order(jobs, policy="fair", running={"c": 1}, last_grant={"a": then, "c": then})
    assert [j.learner for j in fair] == ["b", "a", "a", "c", "a", "c"]
    assert [j.id for j in estimates.claim_order(jobs, policy="fifo", running={}, last_grant={})] == [1, 2, 3, 4, 5, 6]


def _history(session):
    rng = random.Random(7)
    for exercise_id, median in MEDIANS.items():
        for i in range(7):
            session.add(
                Submission(
                    id=uuid.uuid4().hex,
                    user=f"past{i}",
                    course="c1",
                    exercise_id=exercise_id,
                    lang="en",
                    attempt=1,
                    notebook=b"{}",
                    status="graded",
                    max_score=3.0,
                    message="",
                    grading_s=median * (1 + rng.uniform(-0.1, 0.1)) if i != 3 else median,
                    graded_at=utcnow() - dt.timedelta(minutes=i),
                )
            )


def _replay(sessions, *, slots, policy, durations) -> dict[str, float]:
    """Drain the queue with the real claim on a simulated clock; returns each submission's start time."""
    t, running, started = 0.0, [], {}
    while True:
        while len(running) < slots:
            with transaction(sessions) as s:
                job = queue.claim(
                    s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=8, lease_s=600, policy=policy
                )
            if job is None:
                break
            started[job.submission_id] = t
            running.append((t + durations[job.submission_id], job))
        if not running:
            return started
        running.sort(key=lambda r: r[0])
        t, job = running.pop(0)
        with transaction(sessions) as s:
            assert queue.complete(s, job=job)


@pytest.mark.parametrize("policy", ["fair", "fifo"])
def test_estimates_hold_on_a_replayed_queue(sessions, add_submission, policy):
    rng = random.Random(11)
    burst = ["anna"] * 6 + ["ben"] * 3 + ["cleo", "dora"] + ["anna"] * 2 + ["ben"]
    with transaction(sessions) as s:
        _history(s)
        queue.beat(s, worker_id="w", host="h", pid=1, slots=3, devices=0, device_kind="cpu", long_slots=2)
        subs = [add_submission(s, user=who, exercise_id=rng.choice(sorted(MEDIANS)))[0] for who in burst]
    durations = {sub.id: MEDIANS[sub.exercise_id] * (1 + rng.uniform(-JITTER, JITTER)) for sub in subs}
    with sessions() as s:
        forecast = {
            sub.id: estimates.for_submission(s, submission_id=sub.id, policy=policy, recent_runs=20, live_within_s=60)
            for sub in subs
        }
    assert sorted(f.position for f in forecast.values()) == list(range(1, len(subs) + 1))
    assert {f.workers_slots for f in forecast.values()} == {3}
    actual = _replay(sessions, slots=3, policy=policy, durations=durations)
    errors = []
    for sub in subs:
        est, true = forecast[sub.id].start_in_s, actual[sub.id]
        allowed = max(REL_ERROR * true, MEDIANS[sub.exercise_id])
        errors.append((sub.user, round(est, 1), round(true, 1)))
        assert abs(est - true) <= allowed, errors
        assert forecast[sub.id].finish_in_s == pytest.approx(est + forecast[sub.id].typical_s)


def test_no_live_worker_means_no_estimate_but_a_position(sessions, add_submission):
    with transaction(sessions) as s:
        _history(s)
        add_submission(s, lane="long")
        second, _ = add_submission(s, user="ben", lane="long")
        queue.beat(s, worker_id="w", host="h", pid=1, slots=1, devices=0, device_kind="cpu", long_slots=1)
    with sessions() as s:
        found = estimates.for_submission(s, submission_id=second.id, policy="fair", recent_runs=20, live_within_s=60)
        assert (found.position, found.workers_slots, found.start_in_s) == (2, 1, pytest.approx(2.0, abs=0.3))
        stale = estimates.for_submission(
            s, submission_id=second.id, policy="fair", recent_runs=20, live_within_s=-60
        )  # the beat is "too old": nobody can run it
        assert (stale.position, stale.workers_slots, stale.start_in_s, stale.finish_in_s) == (2, 0, None, None)


def test_a_running_or_finished_submission_has_no_estimate(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    with transaction(sessions) as s:
        queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=8, lease_s=30)
    with sessions() as s:
        assert estimates.for_submission(s, submission_id=sub.id, policy="fair", recent_runs=5, live_within_s=60) is None
