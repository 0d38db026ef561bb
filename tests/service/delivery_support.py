"""Fixtures for the outbox and webhook tests (their conftest.py files import them): a receiver process
(webhooks/receiver.py) that can be started, stopped and restarted on a fixed port, and a helper to store
grades through the queue's own record path."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

RECEIVER = Path(__file__).parent / "webhooks" / "receiver.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """receiver.py in its own process; `entries()` is what it has verified and logged so far."""

    def __init__(self, directory: Path, secrets: list[str], *, port: int | None = None, status: int = 204,
                 redirect: str | None = None, body_bytes: int = 0) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.log = directory / f"receiver-{self.port}.jsonl"
        self.secrets, self.status, self.redirect, self.body_bytes = secrets, status, redirect, body_bytes
        self.proc: subprocess.Popen | None = None

    def start(self) -> Receiver:
        args = [sys.executable, str(RECEIVER), str(self.port), str(self.log), ",".join(self.secrets),
                "--status", str(self.status), "--body-bytes", str(self.body_bytes)]
        args += ["--redirect", self.redirect] if self.redirect else []
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout.readline().strip() == "ready"
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def entries(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


@pytest.fixture
def receivers(tmp_path):
    made: list[Receiver] = []

    def make(secrets: list[str], **kw) -> Receiver:
        r = Receiver(tmp_path, secrets, **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.stop()


@pytest.fixture
def store_grade(add_submission):
    """store_grade(sessions, ...) -> submission id; see _store_grade."""
    return lambda sessions, **kw: _store_grade(sessions, add=add_submission, **kw)


def _store_grade(sessions, *, add, user: str = "alice", course: str = "c1", score: float = 3.0, status: str = "graded",
                submission_id: str | None = None) -> str:
    """Grade a submission the way a worker does (claim, the queue's fenced complete/fault, then record_grade), so the
    outbox row is exactly what real grading writes. A new submission unless `submission_id` (a regrade)."""
    from grading.result import GradeResult, Status
    from service.db import transaction
    from service.grades.service import record_grade
    from service.queue import service as queue
    from service.submissions.models import Submission

    with transaction(sessions) as s:
        if submission_id is None:
            sub, _ = add(s, user=user, course=course)
            submission_id = sub.id
        else:
            sub = s.get(Submission, submission_id)
            sub.run += 1
            queue.enqueue(s, submission_id=sub.id, lane="short", priority=10, devices=0, world_size=1, max_attempts=1)
    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="test", lanes=("short",), free_devices=0, max_world_size=1, lease_s=60)
        assert job is not None and job.submission_id == submission_id
    with transaction(sessions) as s:
        if status == "not_gradable":  # as Worker._fault: the queue gives up, the grade is recorded as such
            assert queue.fault(s, job=job, error="kernel did not start", retryable=False, backoff_s=0) == "failed"
            record_grade(s, submission_id=submission_id, result=None, fault="kernel did not start")
        else:  # as Worker._store: the fenced complete, then the grade and its outbox row, one transaction
            assert queue.complete(s, job=job)
            record_grade(s, submission_id=submission_id,
                         result=GradeResult(exercise_id="ch05.svc_sum", status=Status(status), score=score,
                                              max_score=3.0))
    return submission_id


@pytest.fixture(scope="session")
def wait_for():
    return _wait_for


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
