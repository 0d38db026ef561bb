"""service/workers/leases.py: a worker's heartbeat, lease renewal and reaping, on a real database."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select, update

from service.db import transaction, utcnow
from service.queue import service as queue
from service.queue.models import Job, WorkerBeat
from service.states import JobStatus, SubmissionStatus
from service.submissions.models import Submission
from service.workers.leases import Leases


def _leases(sessions, svc, db_url, **overrides) -> Leases:
    return Leases(settings=svc.settings(db_url, **overrides), sessions=sessions, worker_id="w1")


def _claimed(sessions, add_submission, *, max_attempts=3):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, max_attempts=max_attempts)
    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="w1", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
    return sub, job


def test_a_beat_registers_the_worker_and_what_it_offers(db_url, sessions, svc):
    _leases(sessions, svc, db_url).beat(slots=3, devices=0, device_kind="cpu", long_slots=2)
    with sessions() as s:
        beat = s.get_one(WorkerBeat, "w1")
        assert (beat.slots, beat.long_slots, beat.device_kind) == (3, 2, "cpu")


def test_a_failed_renewal_leaves_the_leases_stale_until_one_succeeds(db_url, sessions, svc, add_submission):
    _, job = _claimed(sessions, add_submission)
    leases = _leases(sessions, svc, db_url)
    assert leases.renew([]) == set() and leases.fresh
    with pytest.raises(AttributeError):
        leases.renew([object()])  # type: ignore[list-item]  # not a ClaimedJob: the renewal fails
    assert not leases.fresh
    assert leases.renew([job]) == set() and leases.fresh
    stolen = type(job)(**{**{f: getattr(job, f) for f in job.__slots__}, "lease_token": "0" * 32})
    assert leases.renew([stolen]) == {job.job_id}


def test_reaping_requeues_or_gives_up_and_waits_a_heartbeat(db_url, sessions, svc, add_submission):
    sub, job = _claimed(sessions, add_submission, max_attempts=1)
    with transaction(sessions) as s:
        s.execute(update(Job).values(lease_expires_at=utcnow() - dt.timedelta(seconds=1)))
    leases = _leases(sessions, svc, db_url, heartbeat_s=60.0, lease_s=120.0)
    assert leases.reap_due()
    leases.reap()
    assert not leases.reap_due()  # the next reap waits a heartbeat interval
    with sessions() as s:
        assert s.scalar(select(Job.status).where(Job.id == job.job_id)) == JobStatus.FAILED
        assert s.get_one(Submission, sub.id).status == SubmissionStatus.NOT_GRADABLE  # its last attempt: given up
