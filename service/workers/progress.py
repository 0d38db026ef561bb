"""Progress events from a grading process into the database, a few at a time.

A light grading emits `started`, one `cell` per learner cell and `checks` within half a second; one write
transaction each (plus its wake-up datagram or NOTIFY) was a visible share of a grading's CPU at full load.
`ProgressWriter` writes an event at once when the last write is `flush_s` old, else holds it and writes
the held events together, in order, one transaction, at most `flush_s` later (a timer) or at `close()`.
A stream therefore lags by at most `flush_s`; `close()` runs before the worker writes `done`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from service.db import transaction
from service.submissions import events

FLUSH_S = 0.25  # the most a progress event waits to be written with the next ones
log = logging.getLogger(__name__)


class ProgressWriter:
    """`writer(event)` is the engine's progress callback; best effort: a failed write loses events, never a grade."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        submission_id: str,
        flush_s: float = FLUSH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sessions = sessions
        self.submission_id = submission_id
        self.flush_s = flush_s
        self.clock = clock
        self.writes = 0  # transactions made (for tests)
        self._held: list[dict] = []
        self._last = float("-inf")
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __call__(self, event: dict) -> None:
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
                for event in held:
                    events.add(s, submission_id=self.submission_id, event=event)
            self.writes += 1
        except Exception:  # progress is best effort; grading goes on
            log.warning("progress events for %s not written", self.submission_id, exc_info=True)
