"""A host that has no sandbox user free (another service holds them all) hands the job back unattempted,
and grades it once users are free: the real worker, the real bwrap sandbox, the real database."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading

import pytest
from host_busy_support import InThreadExecutor, events, wait_for
from sqlalchemy import select

from grading.sandbox import cgroups, probe
from service.db import transaction
from service.queue.models import Job
from service.submissions.models import Submission
from service.workers.devices import WorkerDevices
from service.workers.executor import _CHILD
from service.workers.worker import Worker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe().usable, reason="needs the bwrap sandbox (root, bubblewrap, tgsbxN users)"),
]
USERS = ("tgsbx30", "tgsbx31")  # the tail of the range, so other tests' sandboxes seldom want them
LOCK_DIR = "/run/titangrade/users"  # BwrapConfig's runtime_root + /users: the host-wide locks


@contextlib.contextmanager
def held_by_another_service(users: tuple[str, ...]):
    """Hold the users' host-wide flocks, as another titangrade process's live sandboxes would."""
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    fds = [os.open(os.path.join(LOCK_DIR, f"{u}.lock"), os.O_RDWR | os.O_CREAT, 0o600) for u in users]
    try:
        for fd in fds:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits out a sandbox of another test that holds it now
        yield
    finally:
        for fd in fds:
            os.close(fd)


def test_a_job_waits_unattempted_while_another_service_holds_every_sandbox_user(
    db_url, sessions, svc, add_submission, test_catalogue, monkeypatch
):
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    with transaction(sessions) as s:
        sub, _ = add_submission(s, notebook=svc.notebook(), max_attempts=3)
    cgroup_policy = "auto" if cgroups.probe().usable else "off"
    monkeypatch.setitem(_CHILD, "sessions", sessions)
    monkeypatch.setitem(_CHILD, "catalogue", test_catalogue)
    monkeypatch.setitem(_CHILD, "sandbox", BwrapSandbox(BwrapConfig(users=USERS, cgroups=cgroup_policy)))
    worker = Worker(
        settings=svc.settings(db_url, sandbox="bwrap", retry_backoff_s=0.2, worker_slots=1),
        sessions=sessions,
        executor=InThreadExecutor(),
        devices=WorkerDevices.from_setting(""),
    )

    def handed_back() -> int:
        return events(sessions, sub.id, "requeued")

    runner = threading.Thread(target=worker.run, kwargs={"burst": True}, name="tg-test-worker")
    with held_by_another_service(USERS):
        runner.start()
        wait_for(lambda: handed_back() >= 4, 60, "the job to be handed back four times")  # old code: failed at 3
        with sessions() as s:
            job = s.scalar(select(Job).where(Job.submission_id == sub.id))
            row = s.get(Submission, sub.id)
            assert (row.status, job.attempts) == ("queued", 0) or (row.status, job.attempts) == ("running", 1)
            assert job.last_error.startswith("not started: no free sandbox user: all 2 are in use")
            assert "TITANGRADE_SANDBOX_USERS" in job.last_error
    runner.join(120)  # users free: graded by the same worker, which then drains (burst)
    assert not runner.is_alive()
    with sessions() as s:
        job = s.scalar(select(Job).where(Job.submission_id == sub.id))
        row = s.get(Submission, sub.id)
        assert (row.status, row.score, job.status, job.attempts) == ("graded", 3.0, "done", 1)
    assert worker.stored == 1
