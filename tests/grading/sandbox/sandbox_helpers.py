"""Sandbox test helpers (own module name: tests/grading has a conftest too): the real bwrap sandbox
(skipped only where `probe()` says this host cannot run it, with its reason), a tiny kernel client,
and process checks."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from grading.sandbox import probe

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks" / "malicious"
_PROBE = probe()
needs_bwrap = pytest.mark.skipif(not _PROBE.usable, reason=f"bwrap sandbox unusable here: {_PROBE.reason}")


@pytest.fixture(scope="module")
def bwrap_sandbox():
    if not _PROBE.usable:
        pytest.skip(f"bwrap sandbox unusable here: {_PROBE.reason}")
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox
    from grading.sandbox.forkserver import ForkingSandbox

    # TITANGRADE_SANDBOX_KERNEL_START=fork runs these tests against forked kernels (forkserver.py)
    return ForkingSandbox() if BwrapConfig().kernel_start == "fork" else BwrapSandbox()


class Runner:
    """Executes code in a started session's kernel; returns (status, text of all outputs)."""

    def __init__(self, session) -> None:
        self.kc = session.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=30)

    def __call__(self, code: str, timeout: float = 30) -> tuple[str, str]:
        chunks: list[str] = []

        def hook(msg):
            c = msg["content"]
            if msg["msg_type"] == "stream":
                chunks.append(c["text"])
            elif msg["msg_type"] == "error":
                chunks.append(f"{c['ename']}: {c['evalue']}")
            elif msg["msg_type"] in ("execute_result", "display_data"):
                chunks.append(c["data"].get("text/plain", ""))

        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=hook)
        return reply["content"]["status"], "".join(chunks)

    def close(self) -> None:
        self.kc.stop_channels()


def uid_pids(uid: int) -> list[int]:
    from grading.sandbox.users import uid_processes

    return uid_processes(uid)


def wait_gone(pred, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def procs_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


class Recording:
    """A Sandbox wrapper that remembers the sessions it started (so tests can inspect their uids)."""

    mode = "bwrap"

    def __init__(self, inner) -> None:
        self.inner = inner
        self.sessions: list = []

    def start(self, request):
        session = self.inner.start(request)
        self.sessions.append(session)
        return session


def uid_is_clean(sandbox, user, timeout: float = 5.0) -> bool:
    """True if `user` has no process left. Other test runs on this machine may legitimately take the
    same sandbox user right after us, so the check holds the user's lock while it looks."""
    import fcntl

    path = os.path.join(sandbox.uids._lock_dir, f"{user.pw_name}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return True  # in use by someone else all along: nothing of ours can be told apart
                time.sleep(0.1)
        return wait_gone(lambda: not uid_pids(user.pw_uid), timeout)
    finally:
        os.close(fd)
