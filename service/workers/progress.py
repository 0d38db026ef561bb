"""Progress events from a grading process into the database, a few at a time.

A light grading emits `started`, one `cell` per learner cell and `checks` within half a second; one write
transaction each (plus its wake-up datagram or NOTIFY) was a visible share of a grading's CPU at full load.
`ProgressWriter` writes an event at once when the last write is `flush_s` old, else holds it and writes
the held events together, in order, one transaction, at most `flush_s` later (a timer) or at `close()`.
A stream therefore lags by at most `flush_s`; `close()` runs before the worker writes `done`.
Writes are fenced by the job's lease (events.add_fenced): after a lost lease they are dropped, so a
reclaimed attempt's stream never shows the old attempt's cells.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from grading.progress import Event
from service.db import transaction
from service.outage import is_unavailable
from service.queue.models import Job
from service.states import JobStatus
from service.submissions import events

FLUSH_S = 0.25  # the most a progress event waits to be written with the next ones
log = logging.getLogger(__name__)


class ProgressWriter:
    """`writer(event)` is the engine's progress callback (typed events, grading/progress.py); best effort: a
    failed write loses events, never a grade."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        submission_id: str,
        flush_s: float = FLUSH_S,
        clock: Callable[[], float] = time.monotonic,
        job_id: int | None = None,
        lease_token: str | None = None,
    ) -> None:
        """`job_id`/`lease_token`: the lease this run holds (the grading ticket's). Not given: the lease the
        submission's running job holds now, read here, right after the ticket was checked against it."""
        self.sessions = sessions
        self.submission_id = submission_id
        self.lease: tuple[int, str] | None = (
            (job_id, lease_token) if job_id is not None and lease_token else self._current_lease()
        )
        self.dropped = 0  # events not written because the lease was lost (for tests and logs)
        self.flush_s = flush_s
        self.clock = clock
        self.writes = 0  # transactions made (for tests)
        self._held: list[Event] = []
        self._last = float("-inf")
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def _current_lease(self) -> tuple[int, str] | None:
        """None: the submission has no running job (a test, a direct call): its events are not fenced."""
        try:
            with self.sessions() as s:
                row = s.execute(
                    select(Job.id, Job.lease_token).where(
                        Job.submission_id == self.submission_id,
                        Job.status == JobStatus.RUNNING,
                        Job.lease_token.is_not(None),
                    )
                ).first()
                s.commit()
        except Exception:  # progress is best effort: unfenced rather than no progress at all
            log.warning("lease of %s not read; its progress events are not fenced", self.submission_id, exc_info=True)
            return None
        return (int(row[0]), str(row[1])) if row is not None else None

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._held.append(event)
            if self.clock() - self._last >= self.flush_s:
                self._write_held()
            elif self._timer is None:
                self._timer = threading.Timer(max(self._last + self.flush_s - self.clock(), 0.0), self._on_timer)
                self._timer.daemon = True
                self._timer.start()

    def close(self) -> None:
        """Write whatever is held (call before the grade is stored, so `done` comes last)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._write_held()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
            self._write_held()

    def _write_held(self) -> None:  # with the lock held: writes stay in event order
        held, self._held = self._held, []
        if not held:
            return
        self._last = self.clock()
        try:
            with transaction(self.sessions) as s:
                if self.lease is None:
                    for event in held:
                        events.add(s, submission_id=self.submission_id, event=event)
                    kept = True
                else:
                    job_id, token = self.lease
                    kept = events.add_fenced(
                        s, submission_id=self.submission_id, job_id=job_id, lease_token=token, batch=held
                    )
            self.writes += 1
            if not kept:
                self.dropped += len(held)
                log.info("progress events of %s dropped: the lease on job %s was lost", self.submission_id, job_id)
        except Exception as exc:  # progress is best effort; grading goes on
            if is_unavailable(exc):  # the worker logs the outage itself; one line here, no traceback
                log.warning("progress events for %s not written: database unreachable", self.submission_id)
            else:
                log.warning("progress events for %s not written", self.submission_id, exc_info=True)
