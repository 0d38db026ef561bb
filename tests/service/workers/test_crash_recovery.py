"""Nothing is lost: a SIGKILLed `titangrade worker` and a SIGKILLed `titangrade serve` (real processes,
real kernels, a 3 s lease) leave jobs that are reclaimed and graded exactly once."""
from __future__ import annotations

import signal

import pytest
from sqlalchemy import func, select

pytestmark = pytest.mark.slow


def _tokens(sessions):
    from service.auth.service import create_token
    from service.db import transaction

    with transaction(sessions) as s:
        return create_token(s, user="alice", role="learner", course="c1")


def _outbox_counts(sessions) -> dict[str, int]:
    from service.outbox.models import OutboxEvent

    with sessions() as s:
        return dict(s.execute(select(OutboxEvent.submission_id, func.count()).group_by(OutboxEvent.submission_id)).all())


def test_killed_worker_job_is_reclaimed_and_graded_once(db_url, svc, e2e, tmp_path):
    from service.queue.models import Job

    env = e2e.service_env(db_url, e2e.CATALOGUE_DIR)
    sessions = e2e.sessions_for(db_url)
    token = _tokens(sessions)
    api = e2e.Server(env, tmp_path / "api.log", workers=0)
    victim = e2e.Proc(["worker", "--slots", "1"], env, tmp_path / "victim.log")
    rescuer = None
    try:
        sid = e2e.submit(api.url, token, svc.notebook(slow_s=5))
        e2e.wait_for(lambda: e2e.get(api.url, token, sid)["status"] == "running", 60, "the victim to claim", victim)
        with sessions() as s:
            e2e.wait_for(lambda: s.scalar(select(func.count()).select_from(Job).where(
                Job.submission_id == sid, Job.status == "running")) == 1, 30, "running job")
        import time

        time.sleep(2.0)  # mid-job: the kernel is sleeping in its first cell
        victim.kill(signal.SIGKILL)
        rescuer = e2e.Proc(["worker", "--slots", "1", "--burst"], env, tmp_path / "rescuer.log")
        done = e2e.final(api.url, token, sid, timeout_s=120, proc=rescuer)
        assert (done["status"], done["score"]) == ("graded", 3.0), rescuer.output()
        with sessions() as s:
            job = s.scalar(select(Job).where(Job.submission_id == sid))
            assert job.attempts == 2 and job.status == "done"
            assert f":{victim.p.pid}:" not in job.worker_id
        assert _outbox_counts(sessions) == {sid: 1}
        rescuer.p.wait(60)  # burst mode: exits once the queue is drained
        assert rescuer.p.returncode == 0, rescuer.output()
    finally:
        for proc in (victim, rescuer, api):
            if proc is not None:
                proc.kill()
        sessions.kw["bind"].dispose()
    e2e.wait_for(lambda: not e2e.processes_using(db_url), 20, "every titangrade process (incl. pool) to exit")


def test_server_killed_with_queued_jobs_grades_them_all_after_restart(db_url, svc, e2e, tmp_path):
    env = e2e.service_env(db_url, e2e.CATALOGUE_DIR, TITANGRADE_WORKER_SLOTS="1",
                          TITANGRADE_SHORT_RESERVED_SLOTS="0")
    sessions = e2e.sessions_for(db_url)
    token = _tokens(sessions)
    first = e2e.Server(env, tmp_path / "first.log", workers=1)
    second = None
    try:
        ids = [e2e.submit(first.url, token, svc.notebook(slow_s=4))]
        ids += [e2e.submit(first.url, token, svc.notebook(solved=bool(i % 2))) for i in range(3)]
        e2e.wait_for(lambda: e2e.get(first.url, token, ids[0])["status"] == "running", 60, "a running job", first)
        first.kill(signal.SIGKILL)  # one job mid-grading, three queued
        second = e2e.Server(env, tmp_path / "second.log", workers=2)
        results = [e2e.final(second.url, token, sid, timeout_s=150, proc=second) for sid in ids]
        assert [(r["status"], r["score"]) for r in results] == [
            ("graded", 3.0), ("graded", 0.0), ("graded", 3.0), ("graded", 0.0)]
        assert _outbox_counts(sessions) == {sid: 1 for sid in ids}
    finally:
        first.kill()
        if second is not None:
            second.kill(signal.SIGTERM)
        sessions.kw["bind"].dispose()
    e2e.wait_for(lambda: not e2e.processes_using(db_url), 20, "every titangrade process (incl. pool) to exit")


def test_sigterm_hands_a_running_job_back_without_waiting_for_the_lease(db_url, svc, e2e, tmp_path):
    from service.queue.models import Job

    env = e2e.service_env(db_url, e2e.CATALOGUE_DIR, TITANGRADE_LEASE_S="60", TITANGRADE_HEARTBEAT_S="1",
                          TITANGRADE_SHUTDOWN_GRACE_S="0.5")
    sessions = e2e.sessions_for(db_url)
    token = _tokens(sessions)
    api = e2e.Server(env, tmp_path / "api.log", workers=0)
    leaving = e2e.Proc(["worker", "--slots", "1"], env, tmp_path / "leaving.log")
    rescuer = None
    try:
        sid = e2e.submit(api.url, token, svc.notebook(slow_s=5))
        e2e.wait_for(lambda: e2e.get(api.url, token, sid)["status"] == "running", 60, "the claim", leaving)
        leaving.kill(signal.SIGTERM)
        assert leaving.p.returncode == 0, leaving.output()
        with sessions() as s:
            job = s.scalar(select(Job).where(Job.submission_id == sid))
            assert (job.status, job.attempts, job.lease_token) == ("queued", 0, None)  # back at once, not in 60 s
        rescuer = e2e.Proc(["worker", "--slots", "1", "--burst"], env, tmp_path / "rescuer.log")
        done = e2e.final(api.url, token, sid, timeout_s=60, proc=rescuer)
        assert (done["status"], done["score"]) == ("graded", 3.0)
        assert _outbox_counts(sessions) == {sid: 1}
    finally:
        for proc in (leaving, rescuer, api):
            if proc is not None:
                proc.kill()
        sessions.kw["bind"].dispose()
    e2e.wait_for(lambda: not e2e.processes_using(db_url), 20, "every titangrade process (incl. pool) to exit")
