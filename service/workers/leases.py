"""A worker's side of the lease protocol: its heartbeat row, renewing the leases it holds, and reaping the
leases dead workers left to expire (requeued, or recorded not gradable after the last attempt).

The worker loop (service/workers/worker.py) decides when each runs; this module is what each one writes.
Each is its own short transaction, so a database outage fails it whole and the loop simply tries again.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Sequence

from sqlalchemy.orm import Session, sessionmaker

from service.config import Settings
from service.db import transaction
from service.grades import service as grades
from service.queue import service as queue
from service.queue.service import ClaimedJob

log = logging.getLogger("titangrade.worker")


class Leases:
    """The lease writes of one worker (`worker_id`)."""

    def __init__(self, *, settings: Settings, sessions: sessionmaker[Session], worker_id: str) -> None:
        self.settings = settings
        self.sessions = sessions
        self.worker_id = worker_id
        self.fresh = True  # False after a failed renewal: renew before reaping, never reap our own
        self._last_reap = float("-inf")

    def beat(self, *, slots: int, devices: int, device_kind: str, long_slots: int) -> None:
        """Say this worker is alive, and what it offers."""
        with transaction(self.sessions) as s:
            queue.beat(
                s,
                worker_id=self.worker_id,
                host=socket.gethostname(),
                pid=os.getpid(),
                slots=slots,
                devices=devices,
                device_kind=device_kind,
                long_slots=long_slots,
            )

    def renew(self, held: Sequence[ClaimedJob]) -> set[int]:
        """Extend the leases of `held`; returns the job ids whose lease was lost. A renewal that fails
        raises, and the leases count as stale (`fresh` False) until one succeeds."""
        if not held:
            return set()
        try:
            with transaction(self.sessions) as s:
                lost = queue.renew(s, held=held, lease_s=self.settings.lease_s)
        except Exception:
            self.fresh = False
            raise
        self.fresh = True
        return lost

    def reap_due(self) -> bool:
        """Reaping is a write transaction: at most once per heartbeat interval."""
        return time.monotonic() - self._last_reap >= self.settings.heartbeat_s

    def reap(self) -> None:
        """Requeue the jobs whose lease expired; a job given up is recorded not gradable, in the same
        transaction."""
        self._last_reap = time.monotonic()
        with transaction(self.sessions) as s:
            expired = queue.reap_expired(s)
            for job in expired:
                if job.gave_up:
                    grades.record_grade(s, submission_id=job.submission_id, result=None, fault=job.reason)
        if expired:
            log.warning("worker %s reaped %d job(s) whose lease expired", self.worker_id, len(expired))
