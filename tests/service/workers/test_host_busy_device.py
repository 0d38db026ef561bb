"""A granted device that another process holds at the run's start is a shortage of the host: the job is
handed back unattempted and graded once the device is free. The real worker, executor path, kernel and
database; the devices are a FAKE inventory ("cuda:0" on a machine with no GPU) and "held" is the vendor
check swapped for a flag, since there is no nvidia-smi here."""

from __future__ import annotations

import threading
import time

import pytest
from host_busy_support import InThreadExecutor, events
from sqlalchemy import select

from grading.errors import HostBusy
from grading.sandbox import DeviceGrant, devices
from grading.sandbox.devices import DeviceInventory, check_free
from grading.sandbox.local import UnsafeLocalSandbox
from service.db import transaction
from service.queue.models import Job
from service.submissions.models import Submission
from service.workers.devices import WorkerDevices
from service.workers.executor import _CHILD
from service.workers.worker import Worker


def test_a_held_device_is_a_host_shortage_naming_the_tool_and_the_fix():
    asked = []
    with pytest.raises(HostBusy) as busy:
        check_free(DeviceGrant(kind="npu", ids=(0, 3)), busy_check=lambda kind, i: asked.append(i) or i == 3)
    assert busy.value.resource == "device" and asked == [0, 3]
    assert "npu device(s) [3]" in str(busy.value) and "npu-smi" in str(busy.value)
    assert "TITANGRADE_WORKER_DEVICES" in str(busy.value)
    check_free(DeviceGrant(), busy_check=lambda kind, i: pytest.fail("a CPU run has no device to check"))


def test_a_worker_whose_devices_are_all_held_says_so_as_a_host_shortage():
    """FAKE inventory: two npu ids that exist only in this test."""
    worker_devices = WorkerDevices(DeviceInventory({"npu": range(2)}, busy_check=lambda kind, i: False, label="fake"))
    worker_devices.acquire(2)
    with pytest.raises(HostBusy, match=r"no device kind has 1 free devices now \(npu: 2 held, 0 quarantined\)"):
        worker_devices.acquire(1)


@pytest.mark.slow
def test_a_job_waits_unattempted_while_another_process_holds_its_device(
    db_url, sessions, svc, add_submission, test_catalogue, monkeypatch
):
    held = threading.Event()
    held.set()
    monkeypatch.setattr(devices, "host_busy_check", lambda kind, i: held.is_set())  # the at-start vendor check
    with transaction(sessions) as s:
        sub, _ = add_submission(s, notebook=svc.notebook(), devices=1, max_attempts=3)
    monkeypatch.setitem(_CHILD, "sessions", sessions)
    monkeypatch.setitem(_CHILD, "catalogue", test_catalogue)
    monkeypatch.setitem(_CHILD, "sandbox", UnsafeLocalSandbox())
    # FAKE inventory; its own after-the-job hygiene check says clean (quarantine is tested in test_devices.py)
    inventory = DeviceInventory({"cuda": [0]}, busy_check=lambda kind, i: False, label="fake")
    worker = Worker(
        settings=svc.settings(db_url, sandbox="unsafe-local", retry_backoff_s=0.2, worker_slots=1),
        sessions=sessions,
        executor=InThreadExecutor(),
        devices=WorkerDevices(inventory),
    )

    def handed_back() -> int:
        return events(sessions, sub.id, "requeued")

    runner = threading.Thread(target=worker.run, kwargs={"burst": True}, name="tg-test-worker")
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while handed_back() < 4:  # old code: the device was never checked, so the job ran on a held device
            assert time.monotonic() < deadline, "timed out waiting for the job to be handed back four times"
            time.sleep(0.05)
        with sessions() as s:
            job = s.scalar(select(Job).where(Job.submission_id == sub.id))
            row = s.get(Submission, sub.id)
            assert (row.status, job.attempts) == ("queued", 0) or (row.status, job.attempts) == ("running", 1)
            assert job.last_error.startswith("not started: cuda device(s) [0] granted to this job are held")
    finally:
        held.clear()  # the other process let go: the next try grades
        runner.join(120)
    assert not runner.is_alive()
    with sessions() as s:
        job = s.scalar(select(Job).where(Job.submission_id == sub.id))
        row = s.get(Submission, sub.id)
        assert (row.status, row.score, job.status, job.attempts) == ("graded", 3.0, "done", 1)
    assert worker.stored == 1


def test_devices_taken_between_claim_and_start_hand_the_job_back_unattempted(db_url, sessions, svc, add_submission):
    """FAKE inventory: the claim saw a free device, but by the time the job starts it is held (another slot
    took it, or it was quarantined): the worker's own shortage is not started, not an attempt (it was a
    counted grader fault)."""
    from service.queue import service as queue

    with transaction(sessions) as s:
        sub, _ = add_submission(s, notebook=svc.notebook(), devices=1, max_attempts=3)
    inventory = DeviceInventory({"npu": [0]}, busy_check=lambda kind, i: False, label="fake")
    worker = Worker(
        settings=svc.settings(db_url, sandbox="unsafe-local", retry_backoff_s=30, worker_slots=1),
        sessions=sessions,
        executor=InThreadExecutor(),
        devices=WorkerDevices(inventory),
    )
    try:
        with transaction(sessions) as s:
            job = queue.claim(
                s, worker_id=worker.id, lanes=("short", "long"), free_devices=1, max_world_size=8, lease_s=30
            )
        assert job is not None
        worker.devices.acquire(1)  # taken meanwhile
        worker._start(job)
        worker._collect(timeout=5)
        with sessions() as s:
            row, stored = s.get(Submission, sub.id), s.get(Job, job.job_id)
            assert (row.status, stored.status, stored.attempts) == ("queued", "queued", 0)
            assert stored.last_error.startswith("not started: device busy: ")
    finally:
        worker.executor.shutdown()
