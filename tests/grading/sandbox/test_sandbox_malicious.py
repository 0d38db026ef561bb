"""Malicious notebooks graded end to end (grade_notebook, real bwrap sandbox, real kernels): each ends
with a clear status and limit, keeps the honest point earned before the attack, and leaves no trace."""
from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
import threading
import uuid
from pathlib import Path

import pytest

from grading.exercise import REPO_ROOT, Catalogue
from grading.pipeline import grade_notebook
from grading.result import Status

from sandbox_helpers import FIXTURES, Recording, needs_bwrap, procs_with, uid_is_clean, wait_gone

pytestmark = [needs_bwrap, pytest.mark.slow]
CATALOGUE = FIXTURES / "catalogue"
REFERENCE = CATALOGUE / "reference" / "ch05.sbx_attack" / "sbx_attack_answer.txt"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue(CATALOGUE / "exercises", CATALOGUE / "reference")


@pytest.fixture(scope="module")
def listener():
    """A real TCP listener on the host's loopback; records every connection that arrives."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    arrived: list = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                arrived.append(sock.accept())
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield sock.getsockname()[1], arrived
    stop.set()
    t.join()
    sock.close()


@pytest.fixture(scope="module")
def database():
    """A SQLite file where the service keeps its default database (the repo root, titangrade.db)."""
    path = REPO_ROOT / f"titangrade-sbxtest-{uuid.uuid4().hex[:8]}.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table secrets (v text)")
        conn.execute("insert into secrets values ('learner emails')")
    yield path
    path.unlink(missing_ok=True)


def runtime_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((REPO_ROOT / "exercises").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path).encode() + path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def grade(catalogue, listener, database, bwrap_sandbox, monkeypatch):
    monkeypatch.setenv("TITANGRADE_SECRET_KEY", "fake-secret-for-the-sandbox-tests-0123456789")

    def run(name: str):
        text = (FIXTURES / f"{name}.ipynb").read_text()
        for key, value in {"@@REFERENCE@@": REFERENCE, "@@REPO@@": REPO_ROOT, "@@DB@@": database,
                           "@@PORT@@": listener[0]}.items():
            text = text.replace(key, str(value))
        recording = Recording(bwrap_sandbox)
        result = grade_notebook(text, catalogue=catalogue, sandbox=recording)
        assert recording.sessions
        for session in recording.sessions:
            assert uid_is_clean(bwrap_sandbox, session.user), "a sandbox process outlived its run"
        assert result.sandbox == "bwrap"
        return result

    return run


def points(result, check: str) -> float:
    return next(c.score for c in result.checks if c.name == check)


def learner_error(result, index: int) -> str:
    return result.cells[index].message


@pytest.mark.parametrize("name, error", [
    ("read_reference", "FileNotFoundError"),
    ("read_database", "FileNotFoundError"),
    ("read_secrets", "KeyError"),
    ("connect_host_loopback", "ConnectionRefusedError"),
    ("kill_parent", "PermissionError"),
])
def test_reads_and_escapes_fail_and_honest_credit_stays(grade, listener, name, error):
    result = grade(name)
    assert result.status == Status.ERROR
    assert error in learner_error(result, 1) and "LEAK" not in learner_error(result, 1)
    assert points(result, "product") == 1 and points(result, "token") == 0
    assert listener[1] == []  # nothing ever reached the host's loopback


def test_cheater_who_loads_the_reference_scores_zero(grade):
    result = grade("cheat_submit_reference")
    assert result.score == 0 and result.status == Status.ERROR
    assert "FileNotFoundError" in learner_error(result, 0)


@pytest.mark.parametrize("name, limit", [
    ("fork_bomb", "process limit"),
    ("allocate_50gb", "memory limit"),
    ("write_10gb_file", "file size limit"),
    ("fill_scratch", "disk limit"),
    ("print_200mb", "output limit"),
    ("infinite_loop", "time limit"),
])
def test_resource_attacks_end_with_their_limit(grade, name, limit):
    result = grade(name)
    expected = {limit}
    if name == "print_200mb":  # a flood faster than the readers can make libzmq itself run out of memory
        expected.add("memory limit")
    assert expected & set(result.limits_hit), (result.limits_hit, result.cells)
    assert result.status == Status.ERROR
    assert points(result, "product") == 1


def test_os_exit_kills_only_that_run(grade):
    result = grade("os_exit")
    assert result.cells[1].status == "killed"
    assert points(result, "product") == 1


def test_background_processes_do_not_survive(grade):
    result = grade("background_process")
    assert result.cells[1].status == "ok"
    assert wait_gone(lambda: not procs_with("987654"))


def test_course_runtime_cannot_be_overwritten(grade):
    before = runtime_digest()
    result = grade("overwrite_runtime")
    assert "Read-only file system" in learner_error(result, 1) or "Permission denied" in learner_error(result, 1)
    assert runtime_digest() == before
    assert points(result, "product") == 1


def test_two_rank_fsdp2_training_runs_inside_the_sandbox(catalogue, bwrap_sandbox):
    text = (FIXTURES / "two_rank_training.ipynb").read_text()
    result = grade_notebook(text, catalogue=catalogue, sandbox=bwrap_sandbox)
    assert result.status == Status.GRADED, (result.message, result.cells)
    assert result.score == result.max_score == 2
