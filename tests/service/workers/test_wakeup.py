"""Idle workers and open event streams learn of new work at once, not at their next poll: polls here are
set to 60 s, so only a wake-up explains a result within the (generous) waits below."""
from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from service.db import transaction
from service.wiring import build_worker

pytestmark = pytest.mark.slow
POLL_S = 60.0  # also the heartbeat (an idle worker waits at most one heartbeat, to keep reaping on time)
LEASE_S = 120.0
WAIT_S = 40.0  # generous for a 2-core machine under load, and still well short of one poll


def _status(api, token: str, sid: str) -> str:
    return api.get(f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}).json()["status"]


def _wait(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not within {WAIT_S} s (the poll is {POLL_S} s)"
        time.sleep(0.1)


def test_a_worker_in_the_api_process_wakes_on_the_intake_commit(api, svc, db_url):
    """`serve`: API and worker share a process; the intake transaction's commit wakes the idle worker."""
    settings = svc.settings(db_url, poll_s=POLL_S, heartbeat_s=POLL_S, lease_s=LEASE_S)
    worker = build_worker(settings, sessions=api.app_state.sessions)
    thread = threading.Thread(target=worker.run, name="tg-test-worker", daemon=True)
    thread.start()
    token = api.tokens["alice"]
    try:
        for n in (1, 2):  # the second arrives while the worker sleeps in its 60 s poll after storing the first
            resp = api.post("/api/v1/submissions", files={"notebook": ("a.ipynb", svc.notebook())},
                            headers={"Authorization": f"Bearer {token}"})
            assert resp.status_code == 202, resp.text
            sid = resp.json()["id"]
            _wait(lambda sid=sid: _status(api, token, sid) == "graded", f"submission {n} graded")
            _wait(lambda n=n: worker.stored == n, "the grade stored")
            time.sleep(0.5)  # the worker is back in its wait
    finally:
        worker.request_stop()
        thread.join(30)


def test_a_separate_worker_process_wakes_on_postgresql_notify(db_url, svc, e2e, tmp_path):
    """`titangrade worker` in its own process: the intake's NOTIFY wakes it (SQLite would wait for a poll)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("across processes only PostgreSQL NOTIFY wakes a worker; SQLite falls back to polling")
    env = e2e.service_env(db_url, e2e.CATALOGUE_DIR, TITANGRADE_POLL_S=str(POLL_S),
                          TITANGRADE_HEARTBEAT_S=str(POLL_S), TITANGRADE_LEASE_S=str(LEASE_S))
    server = e2e.Server(env, tmp_path / "server.log", workers=0)
    sessions = e2e.sessions_for(db_url)
    tokens = svc.tokens(sessions)
    first = e2e.submit(server.url, tokens["alice"], svc.notebook())  # queued before the worker starts
    worker = e2e.Proc(["worker", "--slots", "1"], env, tmp_path / "worker.log")
    try:
        e2e.final(server.url, tokens["alice"], first, timeout_s=WAIT_S, proc=worker)
        time.sleep(1.0)  # the worker is back in its 60 s wait
        second = e2e.submit(server.url, tokens["alice"], svc.notebook())
        done = e2e.final(server.url, tokens["alice"], second, timeout_s=WAIT_S, proc=worker)
        assert done["status"] == "graded"
    finally:
        worker.kill(signal.SIGTERM)
        server.kill(signal.SIGTERM)
        sessions.kw["bind"].dispose()


def test_an_event_stream_hears_a_grade_stored_in_its_process_at_once(live_api, svc):
    """The stream's poll is 60 s; the `done` committed in the API's process ends it at once."""
    from service.client import _follow

    state = live_api.app.state
    saved = state.settings
    state.settings = saved.model_copy(update={"events_poll_s": POLL_S})
    try:
        headers = {"Authorization": f"Bearer {live_api.tokens['bob']}"}
        with httpx.Client(base_url=live_api.url, headers=headers, timeout=WAIT_S) as client:
            sid = client.post("/api/v1/submissions", files={"notebook": ("a.ipynb", svc.notebook())}).json()["id"]
            follower = threading.Thread(target=_follow, args=(client, sid), daemon=True)
            follower.start()
            time.sleep(1.0)  # the stream has sent `queued` and waits
            _store_grade(state.sessions)
            follower.join(WAIT_S)
            assert not follower.is_alive(), f"the stream did not end within {WAIT_S} s of done (poll {POLL_S} s)"
            assert client.get(f"/api/v1/submissions/{sid}").json()["status"] == "graded"
    finally:
        state.settings = saved


def _store_grade(sessions) -> None:
    from grading.result import GradeResult, Status
    from service.grades.service import record_grade
    from service.queue import service as queue

    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)
        record_grade(s, submission_id=job.submission_id,
                     result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0))



def test_an_event_stream_hears_progress_from_a_grading_process_before_done(live_api, svc, module_db_url):
    """`serve` on any database: progress committed in a pool process reaches the API process's streams
    (a datagram relay), so `started` arrives while the job still runs, not with `done` 60 s later."""
    import json

    state = live_api.app.state
    saved = state.settings
    state.settings = saved.model_copy(update={"events_poll_s": POLL_S})
    worker = build_worker(svc.settings(module_db_url, poll_s=POLL_S, heartbeat_s=POLL_S, lease_s=LEASE_S),
                          sessions=state.sessions)
    thread = threading.Thread(target=worker.run, name="tg-test-worker", daemon=True)
    thread.start()
    try:
        headers = {"Authorization": f"Bearer {live_api.tokens['bob']}"}
        with httpx.Client(base_url=live_api.url, headers=headers, timeout=WAIT_S) as client:
            nb = svc.notebook(slow_s=6)
            sid = client.post("/api/v1/submissions", files={"notebook": ("a.ipynb", nb)}).json()["id"]
            status_at_started = None
            with client.stream("GET", f"/api/v1/submissions/{sid}/events") as resp:
                for line in resp.iter_lines():
                    if not line.startswith("data: "):
                        continue
                    event = json.loads(line[6:])["event"]
                    if event == "started":
                        status_at_started = client.get(f"/api/v1/submissions/{sid}").json()["status"]
                    if event == "done":
                        break
            assert status_at_started == "running"
    finally:
        state.settings = saved
        worker.request_stop()
        thread.join(30)
