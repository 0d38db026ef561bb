"""GET /api/v1/queue/health and the queue metrics on /metrics, over the real app (both databases)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import update

from service.db import transaction, utcnow
from service.grades.service import record_grade
from service.queue import service as queue
from service.queue.models import Job, WorkerBeat


def _post(api, svc, token):
    resp = api.post(
        "/api/v1/submissions",
        headers=svc.auth(token, **{"X-Exercise-Id": "ch05.svc_sum"}),
        files={"notebook": ("nb.ipynb", svc.notebook())},
    )
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def _outage(api, svc):
    """Three uploads: one handed back for want of a sandbox user, one given up after its worker died (the
    dead worker's heartbeat is ten minutes old), one still waiting twenty minutes."""
    sessions = api.app_state.sessions
    ids = [_post(api, svc, api.tokens[who]) for who in ("alice", "bob", "alice")]
    with transaction(sessions) as s:
        queue.beat(s, worker_id="wdead", host="h1", pid=1, slots=1, devices=0, device_kind="cpu")
        s.flush()
        s.execute(update(WorkerBeat).values(heartbeat_at=utcnow() - dt.timedelta(minutes=10)))
        s.execute(
            update(Job)
            .where(Job.submission_id == ids[2])
            .values(created_at=utcnow() - dt.timedelta(minutes=20), available_at=utcnow() + dt.timedelta(hours=1))
        )
    for _ in ids[:2]:
        with transaction(sessions) as s:
            job = queue.claim(s, worker_id="wdead", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
            assert job.submission_id in ids[:2]
            if job.submission_id == ids[0]:
                queue.release(
                    s,
                    job=job,
                    reason="not started: sandbox user busy: no free sandbox user: all 3 in use",
                    after_s=3600,
                )
            else:
                s.execute(update(Job).where(Job.id == job.job_id).values(max_attempts=1))
                s.flush()
                assert (
                    queue.fault(
                        s, job=job, error="lease expired on worker wdead (attempt 1)", retryable=True, backoff_s=0
                    )
                    == "failed"
                )
                record_grade(s, submission_id=job.submission_id, result=None, fault="lease expired on worker wdead")
    return ids


def test_queue_health_for_staff_with_causes_workers_and_the_oldest_job(api, svc):
    ids = _outage(api, svc)
    resp = api.get("/api/v1/queue/health", headers=svc.auth(api.tokens["teacher"]))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert resp.headers["cache-control"] == "no-store"
    causes = {c["cause"]: c for c in body["causes"]}
    assert (causes["sandbox_users_exhausted"]["retrying"], causes["worker_lost"]["failed"]) == (1, 1)
    assert causes["worker_lost"]["example"] == "lease expired on worker wdead (attempt 1)"
    assert body["dead_after_s"] == 4.0 and body["workers_live"] == 0 and body["workers_dead"] == 1
    (worker,) = body["workers"]
    assert worker["id"] == "wdead" and not worker["alive"] and worker["heartbeat_at"].endswith("+00:00")
    assert worker["reaped"] == 1 and 590 <= worker["heartbeat_age_s"] <= 700
    lanes = {x["lane"]: x for x in body["lanes"]}
    assert lanes["short"]["queued"] == 2 and 1190 <= lanes["short"]["oldest_age_s"] <= 1300
    assert lanes["long"] == {"lane": "long", "queued": 0, "oldest_age_s": None, "oldest_job_id": None}
    (ng,) = body["not_gradable"]
    assert (ng["submission_id"], ng["cause"], ng["status_now"]) == (ids[1], "worker_lost", "not_gradable")
    assert body["jobs"]["failed"] == 1 and body["jobs"]["queued"] == 2


def test_queue_health_refuses_learners_and_bad_windows(api, svc):
    assert api.get("/api/v1/queue/health", headers=svc.auth(api.tokens["alice"])).status_code == 403
    bad = api.get("/api/v1/queue/health?window_h=0", headers=svc.auth(api.tokens["root"]))
    assert bad.status_code == 422 and "window_h" in bad.text
    assert api.get("/api/v1/queue/health?window_h=1", headers=svc.auth(api.tokens["root"])).json()["window_s"] == 3600


def test_metrics_carry_the_oldest_queued_age_causes_and_dead_workers(api, svc):
    _outage(api, svc)
    lines = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in api.get("/metrics").text.splitlines()
        if line and not line.startswith("#")
    }
    assert 1190 <= lines['titangrade_queue_oldest_age_seconds{lane="short"}'] <= 1300
    assert lines['titangrade_queue_oldest_age_seconds{lane="long"}'] == 0.0
    assert lines['titangrade_job_faults{cause="sandbox_users_exhausted",outcome="retrying"}'] == 1.0
    assert lines['titangrade_job_faults{cause="worker_lost",outcome="failed"}'] == 1.0
    assert lines['titangrade_job_faults{cause="kernel_crash",outcome="failed"}'] == 0.0
    assert lines['titangrade_workers{state="dead"}'] == 1.0 and lines['titangrade_workers{state="live"}'] == 0.0
