"""Fair share in the claim (SQLite and PostgreSQL): a burst delays others by about one job, priorities still
win, the per-learner cap holds under concurrent workers, and `fifo` keeps the old order."""

from __future__ import annotations

import threading

from sqlalchemy import func, select

from service.db import transaction
from service.queue import service as queue
from service.queue.models import Job
from service.submissions.models import Submission


def _claim(sessions, *, worker="w1", lanes=("short", "long"), policy="fair", cap=0):
    with transaction(sessions) as s:
        return queue.claim(
            s,
            worker_id=worker,
            lanes=lanes,
            free_devices=0,
            max_world_size=8,
            lease_s=30,
            policy=policy,
            max_running_per_learner=cap,
        )


def _finish(sessions, job):
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)


def _owner(sessions, job) -> str:
    """The display name of the job's learner (the queue itself keys learners by identity)."""
    with sessions() as s:
        return s.get(Submission, s.get(Job, job.job_id).submission_id).user


def _run_one_slot(sessions, policy="fair") -> list[str]:
    """Drain the queue through one slot (claim, finish, claim, ...); returns the learners in start order."""
    order = []
    while (job := _claim(sessions, policy=policy)) is not None:
        order.append(_owner(sessions, job))
        _finish(sessions, job)
    return order


def test_a_burst_delays_a_later_learner_by_about_one_job(sessions, add_submission):
    with transaction(sessions) as s:
        for _ in range(8):
            add_submission(s, user="anna", lane="long")
        add_submission(s, user="ben", lane="long")
    order = _run_one_slot(sessions)
    assert order.index("ben") <= 1, order  # B starts before most (here: 7 of 8) of A's jobs
    assert order.count("anna") == 8


def test_fifo_policy_keeps_arrival_order(sessions, add_submission):
    with transaction(sessions) as s:
        for _ in range(4):
            add_submission(s, user="anna", lane="long")
        add_submission(s, user="ben", lane="long")
    assert _run_one_slot(sessions, policy="fifo") == ["anna"] * 4 + ["ben"]


def test_learners_take_turns_and_running_work_counts(sessions, add_submission):
    with transaction(sessions) as s:
        for _ in range(3):
            add_submission(s, user="anna")
        for _ in range(3):
            add_submission(s, user="ben")
        add_submission(s, user="cleo")
    assert _run_one_slot(sessions) == ["anna", "ben", "cleo", "anna", "ben", "anna", "ben"]
    with transaction(sessions) as s:
        add_submission(s, user="anna")
        add_submission(s, user="ben")
    held = _claim(sessions)  # two slots: whoever runs one job waits for the other learner
    second = _claim(sessions)
    assert {_owner(sessions, held), _owner(sessions, second)} == {"anna", "ben"}


def test_priority_wins_over_fair_share(sessions, add_submission):
    with transaction(sessions) as s:
        add_submission(s, user="anna")
        add_submission(s, user="anna")
        add_submission(s, user="ben", priority=queue.BULK_REGRADE_PRIORITY)
    assert _run_one_slot(sessions) == ["anna", "anna", "ben"]


def test_per_learner_cap_leaves_room_for_others_and_lifts_when_a_job_ends(sessions, add_submission):
    with transaction(sessions) as s:
        for _ in range(4):
            add_submission(s, user="anna")
        add_submission(s, user="ben")
    held = [_claim(sessions, cap=2) for _ in range(3)]
    assert sorted(_owner(sessions, j) for j in held) == ["anna", "anna", "ben"]
    assert _claim(sessions, cap=2) is None  # anna is at her cap, nothing else is queued
    _finish(sessions, held[0])
    assert _owner(sessions, _claim(sessions, cap=2)) == "anna"


def test_concurrent_workers_respect_the_cap_and_never_share_a_job(sessions, add_submission):
    learners = ("anna", "ben", "cleo")
    with transaction(sessions) as s:
        for name in learners:
            for _ in range(3):
                add_submission(s, user=name)
    for _round in range(3):
        barrier = threading.Barrier(6)
        got, lock = [], threading.Lock()

        def grab(name, barrier=barrier, got=got, lock=lock):
            barrier.wait()
            job = _claim(sessions, worker=name, cap=1)
            if job is not None:
                with lock:
                    got.append(job)

        threads = [threading.Thread(target=grab, args=(f"w{i}",)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with sessions() as s:
            running = dict(
                s.execute(
                    select(Submission.user, func.count())
                    .join(Job, Job.submission_id == Submission.id)
                    .where(Job.status == "running")
                    .group_by(Submission.user)
                ).all()
            )
        assert running == dict.fromkeys(learners, 1), running  # one each: the cap held, nobody starved
        assert len({j.job_id for j in got}) == len(got) == 3
        for job in got:
            _finish(sessions, job)


def test_fair_share_counts_identities_not_display_names(sessions, add_submission):
    """Two learners both called "alice" (one local, one from an LMS) are two learners: the LMS alice's single
    job goes second, not behind the local alice's burst, and the per-learner cap applies to each."""
    with transaction(sessions) as s:
        burst = [add_submission(s, user="alice")[0].id for _ in range(3)]
        other = add_submission(s, user="alice", issuer="https://lms.example")[0].id
    order = []
    while (job := _claim(sessions)) is not None:
        order.append(job.submission_id)
        _finish(sessions, job)
    assert order[1] == other and order[0] == burst[0], order
    with sessions() as s:
        keys = set(s.scalars(select(Job.learner)))
    assert len(keys) == 2 and all(k.startswith("identity:") for k in keys), keys
