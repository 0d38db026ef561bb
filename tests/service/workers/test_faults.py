"""The fault suite: real servers, real workers and real kernels while the database goes away and comes back.

A private PostgreSQL is killed mid-grading for 10 s and then blipped for 3 s; a small filesystem under the
SQLite file is filled and freed. Each time grading resumes by itself, every submission ends graded exactly
once (one grade event each), /readyz is 200 again, the API answers 503 with Retry-After (never a 500)
meanwhile, and the separate `titangrade worker` survives and exits 0 only on SIGTERM.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

pytestmark = pytest.mark.slow
SUPPORT = Path(__file__).resolve().parents[1] / "fault_support.py"


@pytest.fixture(scope="module")
def faults():
    spec = importlib.util.spec_from_file_location("tg_fault_support", SUPPORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def private_pg(faults):
    bindir = faults.postgres_bindir()
    if bindir is None:
        pytest.skip("initdb/pg_ctl not installed (apt-get install postgresql); the fault suite needs its own server")
    from service.db import make_engine, upgrade

    pg = faults.PrivatePostgres(bindir)
    engine = make_engine(pg.url)
    upgrade(engine)
    engine.dispose()
    yield pg
    pg.close()


@pytest.fixture
def small_disk(faults):
    if os.geteuid() != 0:
        pytest.skip("mounting the small filesystem needs root (CI runs as root)")
    disk = faults.SmallDisk(size_mb=24)
    yield disk
    disk.close()


def _env(e2e, db_url: str, **extra: str) -> dict[str, str]:
    # a lease long enough to outlast the outage (as the 60 s default does), so the held results are stored
    # by the workers that graded them; a 1 s credential cache so the test sees requests after it expires
    return e2e.service_env(db_url, e2e.CATALOGUE_DIR, TITANGRADE_LEASE_S="30", TITANGRADE_AUTH_CACHE_S="1",
                           TITANGRADE_DB_RETRY_BASE_S="0.2", TITANGRADE_DB_RETRY_MAX_S="1",
                           TITANGRADE_WORKER_SLOTS="2", TITANGRADE_SHORT_RESERVED_SLOTS="0", **extra)


def _token(e2e, db_url: str) -> str:
    from service.auth.service import create_token
    from service.db import transaction

    sessions = e2e.sessions_for(db_url)
    with transaction(sessions) as s:
        token = create_token(s, user="alice", role="learner", course="c1")
    sessions.kw["bind"].dispose()
    return token


def _once_each(e2e, db_url: str, ids: list[str]) -> dict[str, tuple]:
    """Per submission: (status, score, grade events in the outbox, `done` events of its run, attempts)."""
    from service.outbox.models import OutboxEvent
    from service.queue.models import Job
    from service.submissions.models import ProgressEvent, Submission

    sessions = e2e.sessions_for(db_url)
    try:
        with sessions() as s:
            out = {}
            for sid in ids:
                sub = s.get(Submission, sid)
                outbox = s.scalar(select(func.count()).select_from(OutboxEvent).where(OutboxEvent.submission_id == sid))
                done = s.scalar(select(func.count()).select_from(ProgressEvent).where(
                    ProgressEvent.submission_id == sid, ProgressEvent.event == "done"))
                attempts = s.scalar(select(Job.attempts).where(Job.submission_id == sid))
                out[sid] = (sub.status, sub.score, outbox, done, attempts)
            return out
    finally:
        sessions.kw["bind"].dispose()


def _running(url: str, token: str, sid: str) -> bool:
    try:
        return httpx.get(f"{url}/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"},
                         timeout=10).json().get("status") == "running"
    except (httpx.TransportError, ValueError):
        return False


def _assert_503(resp: httpx.Response) -> None:
    assert resp.status_code == 503, resp.text
    assert int(resp.headers["retry-after"]) >= 1
    assert resp.json()["error"]["code"] in ("database_unavailable", "intake_unavailable"), resp.text


def _outage_answers(url: str, token: str, sid: str, nb: bytes) -> list[int]:
    """What the API answers while the database is gone: reads, an idempotent upload, a plain upload."""
    auth = {"Authorization": f"Bearer {token}"}
    answers = []
    for _ in range(2):  # the second round runs after the 1 s credential cache expired
        for resp in (
            httpx.get(f"{url}/api/v1/submissions/{sid}", headers=auth, timeout=30),
            httpx.get(f"{url}/api/v1/submissions", headers=auth, timeout=30),
            httpx.post(f"{url}/api/v1/submissions", files={"notebook": ("n.ipynb", nb)},
                       headers={**auth, "Idempotency-Key": f"outage-{time.monotonic_ns()}"}, timeout=30),
        ):
            _assert_503(resp)
            answers.append(resp.status_code)
        time.sleep(1.5)
    ready = httpx.get(f"{url}/readyz", timeout=30)
    assert ready.status_code == 503
    return answers


class _Stream:
    """Follows one submission's event stream in a thread; `events` are the event names seen."""

    def __init__(self, url: str, token: str, sid: str) -> None:
        import threading

        self.events: list[str] = []
        self.error: BaseException | None = None
        self._args = (f"{url}/api/v1/submissions/{sid}/events", {"Authorization": f"Bearer {token}"})
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self) -> None:
        path, headers = self._args
        try:
            with httpx.stream("GET", path, headers=headers, timeout=httpx.Timeout(120, connect=10)) as resp:
                for line in resp.iter_lines():
                    if line.startswith("event: "):
                        self.events.append(line[len("event: "):])
                        if self.events[-1] == "done":
                            return
        except BaseException as exc:
            self.error = exc


def _submit_and_wait_running(e2e, url, token, nb, n, proc) -> list[str]:
    ids = [e2e.submit(url, token, nb) for _ in range(n)]
    e2e.wait_for(lambda: any(_running(url, token, sid) for sid in ids), 90, "a job mid-grading", proc)
    time.sleep(1.0)  # inside the kernel's sleep: the grading outlives the outage's start
    return ids


def _all_graded_once(e2e, db_url, url, token, ids, proc) -> None:
    for sid in ids:
        e2e.final(url, token, sid, timeout_s=240, proc=proc)
    # graded once each, and the outage cost no attempt (the lease outlasted it; "not started" is not one)
    assert _once_each(e2e, db_url, ids) == dict.fromkeys(ids, ("graded", 3.0, 1, 1, 1)), proc.output()


def _ready_again(e2e, url, proc) -> None:
    e2e.wait_for(lambda: httpx.get(f"{url}/readyz", timeout=10).status_code == 200, 60, "/readyz 200", proc)


def test_postgresql_down_10_s_and_a_3_s_blip_mid_grading_lose_nothing(private_pg, e2e, svc, tmp_path):
    db_url = private_pg.url
    env = _env(e2e, db_url)
    token = _token(e2e, db_url)
    api = e2e.Server(env, tmp_path / "serve.log", workers=1)  # API plus a worker thread
    worker = e2e.Proc(["worker", "--slots", "2"], env, tmp_path / "worker.log")  # a separate worker process
    slow = svc.notebook(slow_s=4)
    try:
        # 1. down for 10 s while jobs are mid-grading; the API answers 503, never 500
        ids = _submit_and_wait_running(e2e, api.url, token, slow, 4, worker)
        ids += [e2e.submit(api.url, token, svc.notebook()) for _ in range(2)]  # queued behind them
        stream = _Stream(api.url, token, ids[-1])  # an open event stream outlives the outage
        e2e.wait_for(lambda: stream.events, 30, "the stream's first event", api)
        private_pg.kill()
        down_at = time.monotonic()
        _outage_answers(api.url, token, ids[0], svc.notebook())
        time.sleep(max(0.0, 10.0 - (time.monotonic() - down_at)))
        private_pg.start()
        _all_graded_once(e2e, db_url, api.url, token, ids, worker)
        stream.thread.join(60)
        assert stream.error is None and stream.events[-1] == "done", (stream.events, stream.error)
        _ready_again(e2e, api.url, api)
        assert worker.p.poll() is None, worker.output()

        # 2. a 3 s blip (restart)
        more = _submit_and_wait_running(e2e, api.url, token, slow, 3, worker)
        private_pg.kill()
        time.sleep(3.0)
        private_pg.start()
        _all_graded_once(e2e, db_url, api.url, token, more, worker)
        _ready_again(e2e, api.url, api)
        assert "database unreachable" in worker.output() and "reachable again" in worker.output()

        # 3. the worker process exits 0 on SIGTERM, and only then; serve's worker thread grades on alone
        assert worker.p.poll() is None, worker.output()
        worker.kill(signal.SIGTERM)
        assert worker.p.returncode == 0, worker.output()
        last = [e2e.submit(api.url, token, svc.notebook())]
        _all_graded_once(e2e, db_url, api.url, token, last, api)
    finally:
        for proc in (worker, api):
            proc.kill()
    e2e.wait_for(lambda: not e2e.processes_using(db_url), 30, "every titangrade process (incl. pool) to exit")


def _checkpoint_truncate(db_path: Path) -> None:
    """Empty the WAL, so the next commits must grow it: on a full disk they then fail (a WAL that already has
    room would take them)."""
    import sqlite3

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        conn = sqlite3.connect(db_path, timeout=30)
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            conn.close()
        if not busy:
            return
        time.sleep(0.05)
    raise AssertionError("could not checkpoint the WAL")


def test_a_full_disk_under_sqlite_mid_grading_loses_nothing(small_disk, e2e, svc, sqlite_template, tmp_path):
    import shutil

    db_path = small_disk.path / "titangrade.db"
    shutil.copyfile(sqlite_template, db_path)
    db_url = f"sqlite:///{db_path}"
    env = _env(e2e, db_url)
    token = _token(e2e, db_url)
    api = e2e.Server(env, tmp_path / "serve.log", workers=1)
    worker = e2e.Proc(["worker", "--slots", "2"], env, tmp_path / "worker.log")
    try:
        ids = _submit_and_wait_running(e2e, api.url, token, svc.notebook(slow_s=4), 4, worker)
        ids += [e2e.submit(api.url, token, svc.notebook()) for _ in range(2)]
        _checkpoint_truncate(db_path)
        assert small_disk.fill() > 0
        time.sleep(8.0)  # the running gradings finish meanwhile: their results cannot be stored yet
        refused = httpx.post(f"{api.url}/api/v1/submissions", files={"notebook": ("n.ipynb", svc.notebook())},
                             headers={"Authorization": f"Bearer {token}"}, timeout=30)
        _assert_503(refused)
        small_disk.free()
        _all_graded_once(e2e, db_url, api.url, token, ids, worker)
        _ready_again(e2e, api.url, api)
        assert "database or disk is full" in worker.output() + api.output()
        assert worker.p.poll() is None, worker.output()
        worker.kill(signal.SIGTERM)
        assert worker.p.returncode == 0, worker.output()
    finally:
        for proc in (worker, api):
            proc.kill()
    e2e.wait_for(lambda: not e2e.processes_using(db_url), 30, "every titangrade process (incl. pool) to exit")
