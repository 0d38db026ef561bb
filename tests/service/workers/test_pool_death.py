"""A pool process killed mid-job costs only its own job an attempt: the job in the other slot, which the
broken pool stopped with it, is handed back uncounted. Real spawned pool processes, real kernels, real DB."""

from __future__ import annotations

import os
import signal
import threading

import pytest
from host_busy_support import wait_for
from sqlalchemy import select

from service.db import transaction
from service.queue.models import Job
from service.submissions.models import ProgressEvent, Submission
from service.wiring import build_worker

pytestmark = pytest.mark.slow


def test_killing_one_pool_process_costs_the_job_in_the_other_slot_no_attempt(db_url, sessions, svc, add_submission):
    with transaction(sessions) as s:
        ids = [add_submission(s, notebook=svc.notebook(slow_s=8), max_attempts=3)[0].id for _ in range(2)]
    worker = build_worker(svc.settings(db_url, worker_slots=2, short_reserved_slots=0), sessions=sessions)
    pool = worker.executor._pool  # type: ignore[attr-defined]

    def both_in_a_learner_cell() -> bool:
        with sessions() as s:
            cells = s.scalars(
                select(ProgressEvent.submission_id).where(
                    ProgressEvent.submission_id.in_(ids), ProgressEvent.event == "cell"
                )
            )
            return set(cells) == set(ids)

    runner = threading.Thread(target=worker.run, kwargs={"burst": True}, name="tg-test-worker")
    runner.start()
    try:
        wait_for(both_in_a_learner_cell, 120, "both jobs to run learner code")
        pids = sorted(pool._processes)  # CPython's pool internals: the two processes grading now
        assert len(pids) == 2
        os.kill(pids[0], signal.SIGKILL)
        runner.join(180)
        assert not runner.is_alive()
    finally:
        worker.request_stop()
        runner.join(30)
    with sessions() as s:
        rows = [(s.get(Submission, i), s.scalar(select(Job).where(Job.submission_id == i))) for i in ids]
        assert [(sub.status, sub.score, job.status) for sub, job in rows] == [("graded", 3.0, "done")] * 2
        # the killed process's job: one attempt lost, then graded; the other's: graded on its first count
        assert sorted(job.attempts for _, job in rows) == [1, 2]
        other = next(job for _, job in rows if job.attempts == 1)
        assert other.last_error.startswith("not started: grading pool process")


def test_a_new_ledger_removes_the_ledgers_of_workers_that_are_gone():
    """A SIGKILLed worker never closes its ledger dir; the next worker on the host removes it."""
    import tempfile

    from service.workers.not_started import PoolLedger

    base = os.path.join(tempfile.gettempdir(), "titangrade-pools")
    os.makedirs(base, mode=0o700, exist_ok=True)
    gone = tempfile.mkdtemp(prefix="999999999-", dir=base)  # above any pid_max: that worker is gone
    live = PoolLedger()
    try:
        assert not os.path.exists(gone) and os.path.isdir(live.path)
        assert os.path.basename(live.path).startswith(f"{os.getpid()}-")
    finally:
        live.close()
