"""The local executor starts its pool processes with the worker, and the worker claims only once they are up."""
from __future__ import annotations

import os
import time

import pytest

from service.workers.executor import LocalExecutor

pytestmark = pytest.mark.slow


def initialized_here() -> tuple[int, bool]:
    """Runs inside a pool process; long enough that two calls land on two processes."""
    from service.workers.executor import _CHILD

    time.sleep(0.5)
    return os.getpid(), "sandbox" in _CHILD


def test_wait_ready_returns_once_every_pool_process_has_initialized(tmp_path, svc):
    settings = svc.settings(f"sqlite:///{tmp_path}/t.db")
    executor = LocalExecutor(settings=settings, processes=2)
    try:
        executor.wait_ready(timeout_s=120)
        processes = list(executor._pool._processes.values())  # CPython's pool internals
        assert len(processes) == 2 and all(p.is_alive() for p in processes)
        got = [executor._pool.submit(initialized_here) for _ in range(2)]
        answers = [f.result(timeout=2) for f in got]  # no process still importing
        assert len({pid for pid, _ in answers}) == 2 and all(ok for _, ok in answers)
    finally:
        executor.shutdown()


def test_a_worker_claims_its_first_job_after_the_pool_is_up(sessions, svc, add_submission):
    from service.db import transaction
    from service.submissions.models import Submission
    from service.wiring import build_worker

    with transaction(sessions) as s:
        sub, _ = add_submission(s, notebook=svc.notebook())
    settings = svc.settings(str(sessions.kw["bind"].url.render_as_string(hide_password=False)))
    worker = build_worker(settings, sessions=sessions)
    ready_at: list[float] = []
    wait_ready = worker.executor.wait_ready
    worker.executor.wait_ready = lambda timeout_s: (wait_ready(timeout_s), ready_at.append(time.time()))
    try:
        worker.run(burst=True)
    finally:
        worker.executor.shutdown()
    with sessions() as s:
        started = s.get(Submission, sub.id).started_at
    assert ready_at and started.timestamp() >= ready_at[0] - 0.001
