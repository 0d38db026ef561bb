"""A run whose control group cannot be had now (a previous run's group still holds a process that will not
die) is handed back unattempted, and graded once the group is free: the real worker, executor path, bwrap
sandbox, cgroup v1 and database. The leftover's process is really frozen (v1 freezer)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from pathlib import Path

import pytest
from host_busy_support import InThreadExecutor, events, wait_for
from sqlalchemy import select

from grading.sandbox import cgroups, probe
from grading.sandbox.cgroups import PREFIX
from service.db import transaction
from service.queue.models import Job
from service.submissions.models import Submission
from service.workers.devices import WorkerDevices
from service.workers.executor import _CHILD
from service.workers.worker import Worker


def _freezer_root() -> Path | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        tail = right.split()
        if len(tail) >= 3 and tail[0] == "cgroup" and "freezer" in tail[2].split(","):
            return Path(left.split()[4])
    return None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe().usable, reason="needs the bwrap sandbox (root, bubblewrap, tgsbxN users)"),
    pytest.mark.skipif(not cgroups.probe().usable, reason="needs control groups (root, cgroup v1 or delegated v2)"),
    pytest.mark.skipif(_freezer_root() is None, reason="needs the cgroup v1 freezer hierarchy"),
]
USER = "tgsbx28"  # near the range's tail, so other tests' sandboxes seldom want it


@contextlib.contextmanager
def frozen_leftover(layout, name: str):
    """Group `PREFIX + name` holding a frozen process (SIGKILL ends it only once thawed). Yields `thaw`."""
    proc = subprocess.Popen(["sleep", "600"])
    freezer = _freezer_root() / f"titangrade-test-freeze-{os.getpid()}"  # type: ignore[operator]
    freezer.mkdir()

    def thaw() -> None:
        (freezer / "freezer.state").write_text("THAWED")

    try:
        for d in layout.dirs(PREFIX + name):
            d.mkdir(exist_ok=True)
            (d / "cgroup.procs").write_text(str(proc.pid))
        (freezer / "cgroup.procs").write_text(str(proc.pid))
        (freezer / "freezer.state").write_text("FROZEN")
        wait_for(lambda: (freezer / "freezer.state").read_text().strip() == "FROZEN", 10, "the freeze")
        yield thaw
    finally:
        thaw()
        proc.kill()
        proc.wait()
        for d in layout.dirs(PREFIX + name):  # where the test failed before the worker removed it
            with contextlib.suppress(OSError):
                d.rmdir()
        freezer.rmdir()


def test_a_job_waits_unattempted_while_its_runs_control_group_is_held_by_a_leftover(
    db_url, sessions, svc, add_submission, test_catalogue, monkeypatch
):
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    with transaction(sessions) as s:
        sub, _ = add_submission(s, notebook=svc.notebook(), max_attempts=3)
    sandbox = BwrapSandbox(BwrapConfig(users=(USER,), cgroups="require"))
    sandbox.groups.leftover_wait_s = 0.3  # the default 5 s only makes the test slower
    monkeypatch.setitem(_CHILD, "sessions", sessions)
    monkeypatch.setitem(_CHILD, "catalogue", test_catalogue)
    monkeypatch.setitem(_CHILD, "sandbox", sandbox)
    worker = Worker(
        settings=svc.settings(db_url, sandbox="bwrap", retry_backoff_s=0.2, worker_slots=1),
        sessions=sessions,
        executor=InThreadExecutor(),
        devices=WorkerDevices.from_setting(""),
    )

    def handed_back() -> int:
        return events(sessions, sub.id, "requeued")

    runner = threading.Thread(target=worker.run, kwargs={"burst": True}, name="tg-test-worker")
    with frozen_leftover(sandbox.groups.layout, USER) as thaw:
        runner.start()
        wait_for(lambda: handed_back() >= 4, 60, "the job to be handed back four times")  # old code: failed at 3
        with sessions() as s:
            job = s.scalar(select(Job).where(Job.submission_id == sub.id))
            row = s.get(Submission, sub.id)
            assert (row.status, job.attempts) == ("queued", 0) or (row.status, job.attempts) == ("running", 1)
            assert job.last_error.startswith(f"not started: control group {PREFIX}{USER} of a previous run")
            assert "holds pids" in job.last_error
        thaw()  # the leftover's pending SIGKILL ends it: the next try removes the group and grades
        runner.join(120)
    assert not runner.is_alive()
    with sessions() as s:
        job = s.scalar(select(Job).where(Job.submission_id == sub.id))
        row = s.get(Submission, sub.id)
        assert (row.status, row.score, job.status, job.attempts) == ("graded", 3.0, "done", 1)
    assert worker.stored == 1
