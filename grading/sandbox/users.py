"""The sandbox users (tgsbxN): one per live sandbox on the host, and proof that a uid is empty."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import re
import signal
import threading
import time
from collections.abc import Callable

from grading.errors import GraderFault


class UidPool:
    """Hands out the sandbox users, one per live sandbox, so per-uid limits never pool across runs.

    Ownership is an flock on `<lock_dir>/<user>.lock`, so worker processes never share a user either,
    and a crashed worker's lock dies with it (its leftovers are swept by the next owner).
    """

    def __init__(self, users: tuple[str, ...], lock_dir: str) -> None:
        self._users = [pwd.getpwnam(u) for u in users]
        self._lock_dir = lock_dir
        self._held: dict[int, int] = {}  # uid -> fd holding its flock
        self._lock = threading.Lock()

    def acquire(self) -> pwd.struct_passwd:
        os.makedirs(self._lock_dir, mode=0o700, exist_ok=True)
        with self._lock:
            for user in self._users:
                if user.pw_uid in self._held:
                    continue
                fd = os.open(os.path.join(self._lock_dir, f"{user.pw_name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                self._held[user.pw_uid] = fd
                break
            else:
                raise GraderFault(
                    "no free sandbox user: every tgsbxN is running a kernel; retry later or "
                    "add users with TITANGRADE_SANDBOX_USERS=N scripts/install-system-deps.sh"
                )
        if not kill_uid(user.pw_uid):  # leftovers of a crashed worker that held this user
            raise GraderFault(
                f"sandbox user {user.pw_name} has processes that cannot be killed; it stays locked until a restart"
            )
        return user

    def sweep(self, clean: Callable[[pwd.struct_passwd], object]) -> None:
        """Call `clean(user)` for every user no live sandbox holds, holding its lock meanwhile (the
        start-up sweep of what a crashed worker left behind)."""
        os.makedirs(self._lock_dir, mode=0o700, exist_ok=True)
        for user in self._users:
            with self._lock:
                if user.pw_uid in self._held:
                    continue
            fd = os.open(os.path.join(self._lock_dir, f"{user.pw_name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                clean(user)
            except BlockingIOError:
                pass  # a live sandbox (maybe another worker's) holds it
            finally:
                os.close(fd)

    def release(self, user: pwd.struct_passwd) -> None:
        with self._lock:
            fd = self._held.pop(user.pw_uid, None)
        if fd is not None:
            os.close(fd)  # drops the flock


def uid_processes(uid: int) -> list[int]:
    """Host pids whose real uid is `uid` (should be none once a sandbox is gone)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    for line in fh:
                        if line.startswith("Uid:"):
                            if int(line.split()[1]) == uid:
                                pids.append(int(entry))
                            break
            except OSError:
                continue
    return pids


def kill_uid(uid: int, timeout_s: float = 5.0) -> bool:
    """SIGKILL every process of `uid` until none is left; False if some survive `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    pause_s = 0.002  # a killed kernel is usually gone (reaped with its pid namespace) within a few ms
    while True:
        pids = uid_processes(uid)
        if not pids:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(pause_s)
        pause_s = min(pause_s * 2, 0.05)


def installed_sandbox_users() -> tuple[str, ...]:
    """Every `tgsbxN` account on the host (install-system-deps.sh makes TITANGRADE_SANDBOX_USERS of them),
    in N order; falls back to tgsbx0..7 where none is installed, so the probe names the fix."""
    found = sorted(
        (int(m.group(1)), p.pw_name) for p in pwd.getpwall() if (m := re.fullmatch(r"tgsbx(\d+)", p.pw_name))
    )
    return tuple(name for _, name in found) or tuple(f"tgsbx{i}" for i in range(8))
