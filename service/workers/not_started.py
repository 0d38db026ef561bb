"""Telling a job that never ran from one that did, so the host's trouble never costs a learner an attempt.

Two cases hand a job back as `NotStarted` (not counted) instead of `Faulted` (an attempt):
- the host had no sandbox user, control group or device free at the first kernel start (`HostBusy`), so
  none of the learner's code ran; `FirstStartWatch` notices it under the engine, which itself only sees
  a grader fault (and checks, before that start, that no other process holds the job's granted devices);
- another pool process died: CPython's ProcessPoolExecutor then fails every job of the pool, and
  terminates the pool's healthy processes, so a job in the other slot was stopped by us, not by its run.
  `PoolLedger` records which pool process runs which job, so only the job whose process died is counted.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import os
import shutil
import tempfile
from typing import Any

from grading.errors import HostBusy
from grading.sandbox import KernelRequest, KernelSession, Sandbox
from grading.sandbox.devices import check_free


class FirstStartWatch(Sandbox):
    """Wraps a process's sandbox for one grading: keeps the HostBusy of the first kernel start (before any
    learner code ran). A HostBusy at a restart is left to the engine: the learner's code ran by then."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner
        self.mode = inner.mode
        self.starts = 0
        self.busy: HostBusy | None = None

    def start(self, request: KernelRequest) -> KernelSession:
        try:
            if self.starts == 0:  # a granted device another process holds: nothing of the run has begun
                check_free(request.devices)
            session = self.inner.start(request)
        except HostBusy as exc:
            if self.starts == 0:
                self.busy = exc
            raise
        self.starts += 1
        return session

    def __getattr__(self, name: str) -> Any:  # prepare, config, uids, ... of the inner sandbox
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class PoolLedger:
    """Which pool process runs which job: a file per running job, named by job id, holding the pid.

    Files, not a pipe: a pool process writes its entry before it grades and removes it after, and a
    process that is SIGKILLed mid-job leaves its entry for the worker to read.
    """

    def __init__(self, path: str | None = None) -> None:
        self.path = path or self._new_dir()

    @staticmethod
    def _new_dir() -> str:
        """`<tmp>/titangrade-pools/<worker pid>-XXXX`; the dirs of workers that are gone (SIGKILLed, so their
        `close` never ran) are removed here."""
        base = os.path.join(tempfile.gettempdir(), "titangrade-pools")
        os.makedirs(base, mode=0o700, exist_ok=True)
        for name in os.listdir(base):
            owner = name.partition("-")[0]
            if owner.isdigit() and not _alive(int(owner)):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        return tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=base)

    def started(self, job_id: int) -> None:
        """In the pool process, before the job's grading begins."""
        tmp = os.path.join(self.path, f".{job_id}.{os.getpid()}")
        with contextlib.suppress(OSError):  # the executor shut down meanwhile: nobody will ask
            with open(tmp, "w") as fh:
                fh.write(str(os.getpid()))
            os.replace(tmp, os.path.join(self.path, str(job_id)))

    def finished(self, job_id: int) -> None:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(self.path, str(job_id)))

    def pid_of(self, job_id: int) -> int | None:
        try:
            with open(os.path.join(self.path, str(job_id))) as fh:
                return int(fh.read().strip())
        except (OSError, ValueError):
            return None

    def running(self) -> dict[int, int]:
        """job id -> pid of the pool process grading it now (for operators and tests)."""
        found = {}
        for name in os.listdir(self.path):
            if name.isdigit() and (pid := self.pid_of(int(name))) is not None:
                found[int(name)] = pid
        return found

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dead_pool_pids(processes: dict[int, Any]) -> set[int]:
    """Pids of a broken pool's processes that have exited. Asked from the future's callback, which the pool
    runs before it terminates its surviving processes: only the ones that died by themselves are gone."""
    sentinels = {proc.sentinel: pid for pid, proc in processes.items()}
    try:
        ready = multiprocessing.connection.wait(list(sentinels), timeout=0)
    except (OSError, ValueError):  # a sentinel already closed: that process was reaped, so it is gone
        return set(processes)
    return {sentinels[s] for s in ready}
