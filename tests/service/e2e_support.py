"""Helpers for the end-to-end tests: `titangrade` subprocesses (server, worker) and HTTP polling."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
REPO = Path(__file__).resolve().parents[2]
CATALOGUE_DIR = REPO / "tests" / "fixtures" / "service_catalogue"
CLI = [sys.executable, "-m", "service.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def service_env(db_url: str, catalogue_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), TITANGRADE_MODE="dev", TITANGRADE_DATABASE_URL=db_url,
               TITANGRADE_SECRET_KEY="e2e-" + "x" * 40, TITANGRADE_SANDBOX="unsafe-local",
               TITANGRADE_EXERCISES_ROOT=str(catalogue_dir / "exercises"),
               TITANGRADE_REFERENCE_ROOT=str(catalogue_dir / "reference"),
               TITANGRADE_LEASE_S="3", TITANGRADE_HEARTBEAT_S="0.5", TITANGRADE_POLL_S="0.1",
               TITANGRADE_RETRY_BACKOFF_S="0", TITANGRADE_SUBMISSIONS_PER_MINUTE="1000")
    env.update(extra)
    return env


class Proc:
    """A `titangrade` subprocess with its output in a log file (read on failure)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._fh = log.open("ab")
        self.p = subprocess.Popen(CLI + args, env=env, cwd=log.parent, stdout=self._fh, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        self._fh.close()


class Server(Proc):
    def __init__(self, env: dict[str, str], log: Path, *, workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__(["serve", "--port", str(self.port), "--workers", str(workers)], env, log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.p.poll() is None, self.output()
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError("server did not start:\n" + self.output())


def wait_for(predicate, timeout_s: float, what: str, proc: Proc | None = None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}" + ("\n" + proc.output() if proc else ""))


def submit(url: str, token: str, nb: bytes, **headers: str) -> str:
    resp = httpx.post(url + "/api/v1/submissions", files={"notebook": ("nb.ipynb", nb)},
                      headers={"Authorization": f"Bearer {token}", **headers}, timeout=30)
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def get(url: str, token: str, sid: str) -> dict:
    return httpx.get(f"{url}/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}, timeout=30).json()


def final(url: str, token: str, sid: str, timeout_s: float = 90, proc: Proc | None = None) -> dict:
    return wait_for(lambda: (d := get(url, token, sid))["status"] in ("graded", "error", "not_gradable") and d,
                     timeout_s, f"submission {sid} to finish", proc)


def sessions_for(db_url: str):
    from service import bootstrap
    from service.db import make_engine

    return bootstrap.sessions(make_engine(db_url))


def processes_using(db_url: str) -> list[int]:
    """Pids of live processes started with TITANGRADE_DATABASE_URL=db_url (servers, workers, pool processes)."""
    needle = f"TITANGRADE_DATABASE_URL={db_url}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                stat = (entry / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found
