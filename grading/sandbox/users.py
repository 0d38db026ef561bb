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

from grading.errors import HostBusy


class UidPool:
    """Hands out the sandbox users, one per live sandbox, so per-uid limits never pool across runs.

    Ownership is an flock on `<lock_dir>/<user>.lock`, so worker processes never share a user either,
    and a crashed worker's lock dies with it (its leftovers are swept by the next owner). The users are
    shared by every titangrade process on the host, so running out is a shortage of the host, not a
    fault of the run: `acquire` raises HostBusy (after waiting up to `wait_s`, for one-shot callers).
    """

    def __init__(
        self,
        users: tuple[str, ...],
        lock_dir: str,
        *,
        wait_s: float = 0.0,
        on_wait: Callable[[str], object] | None = None,
    ) -> None:
        self._users = [pwd.getpwnam(u) for u in users]
        self._lock_dir = lock_dir
        self._held: dict[int, int] = {}  # uid -> fd holding its flock
        self._stuck: set[int] = set()  # uids with processes that cannot be killed: held, never handed out
        self._lock = threading.Lock()
        self.wait_s = wait_s  # 0: a shortage raises at once (the service's queue is where a job waits)
        self.on_wait = on_wait  # told once per acquire, with the reason, when it has to wait

    def acquire(self) -> pwd.struct_passwd:
        """A free sandbox user, its flock held; HostBusy when none is free within `wait_s`."""
        os.makedirs(self._lock_dir, mode=0o700, exist_ok=True)
        deadline = time.monotonic() + self.wait_s
        pause_s, told = 0.05, False
        while True:
            user = self._take_free()
            if user is not None:
                return user
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise HostBusy(self.shortage(), resource="sandbox user")
            if not told and self.on_wait is not None:
                self.on_wait(f"{self.shortage()}; waiting up to {left_s:.0f} s for one to be free")
                told = True
            time.sleep(min(pause_s, left_s))
            pause_s = min(pause_s * 2, 0.5)

    def _take_free(self) -> pwd.struct_passwd | None:
        """The first user no sandbox holds, emptied of a crashed owner's leftovers; None if none is free."""
        while True:
            with self._lock:
                user = self._lock_first_free()
            if user is None:
                return None
            if kill_uid(user.pw_uid):  # leftovers of a crashed worker that held this user
                return user
            with self._lock:  # it keeps its flock: out of circulation on the host until a restart
                self._stuck.add(user.pw_uid)

    def _lock_first_free(self) -> pwd.struct_passwd | None:
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
            return user
        return None

    def shortage(self) -> str:
        """Why no user is free, and the fix (for logs, the queue row and the CLI)."""
        with self._lock:
            mine = len(self._held) - len(self._stuck)
            stuck = len(self._stuck)
        total = len(self._users)
        others = total - mine - stuck
        text = (
            f"no free sandbox user: all {total} are in use ({mine} by this process, {others} by other "
            "titangrade processes on this host"
        )
        if stuck:
            text += f", {stuck} kept out because processes of theirs cannot be killed"
        return (
            f"{text}); a host needs one user per grading slot of every process plus one per `titangrade grade` "
            "run and pre-warmed kernel: add users with TITANGRADE_SANDBOX_USERS=N scripts/install-system-deps.sh"
        )

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
