"""Telling "the database cannot be reached now" apart from a bug, and waiting it out.

A database that is down, restarting, or out of disk is an ordinary fault: workers back off and retry
(`Retrier`: `Backoff` and `Outage`), the API answers 503 with Retry-After. A bug (a missing table, bad SQL, a refused
value) is not retried and stays a 500 or a grader fault. `is_unavailable` is the one place that decides.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator

from sqlalchemy import exc as sa_exc

# SQLite reports bugs ("no such table", syntax errors) and outages with the same exception class
# (sqlite3.OperationalError); only these messages mean the file or its disk is unavailable for now.
SQLITE_TRANSIENT = (
    "database is locked",
    "database table is locked",
    "disk i/o error",
    "database or disk is full",
    "unable to open database file",
    "locking protocol",
    "attempt to write a readonly database",
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 10:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _psycopg_unavailable(err: BaseException) -> bool:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    # psycopg's OperationalError: connection refused or lost, server shutting down or starting, disk full,
    # statement cancelled; its ProgrammingError/DataError/IntegrityError are bugs or bad values.
    return isinstance(err, psycopg.OperationalError | psycopg.InterfaceError)


def is_unavailable(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) says the database is unreachable or failing for now."""
    for err in _chain(exc):
        if isinstance(err, sa_exc.DBAPIError) and err.connection_invalidated:
            return True
        if isinstance(err, sa_exc.TimeoutError | sa_exc.DisconnectionError):  # pool exhausted, ping failed
            return True
        raw = err.orig if isinstance(err, sa_exc.DBAPIError) and err.orig is not None else err
        if isinstance(raw, sqlite3.OperationalError):
            if any(m in str(raw).lower() for m in SQLITE_TRANSIENT):
                return True
        elif _psycopg_unavailable(raw) or isinstance(raw, ConnectionError):
            return True
    return False


def describe(exc: BaseException) -> str:
    """One log line's worth: the class and the first line of the driver's message."""
    raw = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc
    first = (str(raw).strip().splitlines() or [""])[0][:200]
    return f"{type(raw).__name__}: {first}"


class Backoff:
    """Capped exponential delays with jitter: base, 2*base, 4*base ... up to cap, each scaled by 0.5-1.0
    so that workers which lost the database together do not come back in lock-step."""

    def __init__(self, *, base_s: float, cap_s: float, rng: random.Random | None = None) -> None:
        self.base_s, self.cap_s = base_s, cap_s
        self.failures = 0
        self._rng = rng or random.Random()

    def next_s(self) -> float:
        ceiling = min(self.cap_s, self.base_s * 2 ** min(self.failures, 30))
        self.failures += 1
        return ceiling * self._rng.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.failures = 0


class Outage:
    """Tracks one component's database outage for its logs: a warning when it starts, a short line at each
    retry (how long it lasted so far, what is held), one info line when the database answers again."""

    def __init__(
        self,
        *,
        who: str,
        log: logging.Logger,
        resumes: str = "grading goes on",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.who, self.log, self.resumes, self.clock = who, log, resumes, clock
        self.since: float | None = None
        self.outages = 0  # outages seen (for tests and logs)
        self._lock = threading.Lock()  # the worker loop and its heartbeat thread report here

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, exc: BaseException, *, doing: str, retry_in_s: float | None, held: str = "") -> None:
        with self._lock:
            now = self.clock()
            if self.since is None:
                self.since, self.outages = now, self.outages + 1
                self.log.warning("%s: database unreachable while %s (%s)", self.who, doing, describe(exc))
            when = f"retrying in {retry_in_s:.1f} s" if retry_in_s is not None else "retrying at the next heartbeat"
            self.log.info(
                "%s: database down for %.1f s; %s%s", self.who, now - self.since, when, f"; {held}" if held else ""
            )

    def recovered(self, *, held: str = "") -> None:
        with self._lock:
            if self.since is None:
                return
            lasted = self.clock() - self.since
            self.since = None
        self.log.info(
            "%s: database reachable again after %.1f s; %s%s",
            self.who,
            lasted,
            self.resumes,
            f" ({held})" if held else "",
        )


class Retrier:
    """One loop's answer to an error of its own (the worker loop, the LISTEN thread, webhook delivery): how
    long to wait before the next try (`Backoff`) and what to log (`Outage`; a bug keeps its traceback)."""

    def __init__(
        self, *, who: str, log: logging.Logger, base_s: float, cap_s: float, resumes: str = "grading goes on"
    ) -> None:
        self.who, self.log = who, log
        self.outage = Outage(who=who, log=log, resumes=resumes)
        self.backoff = Backoff(base_s=base_s, cap_s=cap_s)

    @classmethod
    def from_settings(cls, settings, *, who: str, log: logging.Logger, resumes: str = "grading goes on") -> Retrier:
        """With the database retry settings (`db_retry_base_s`, `db_retry_max_s`) every loop shares."""
        return cls(who=who, log=log, base_s=settings.db_retry_base_s, cap_s=settings.db_retry_max_s, resumes=resumes)

    def failed(self, exc: BaseException, *, doing: str, held: str = "") -> float:
        """Log a failed try and return the seconds to wait before the next one."""
        delay_s = self.backoff.next_s()
        if is_unavailable(exc):
            self.outage.failed(exc, doing=doing, retry_in_s=delay_s, held=held)
        else:
            self.log.exception("%s: unexpected error while %s; retrying in %.1f s", self.who, doing, delay_s)
        return delay_s

    def succeeded(self, *, held: str = "") -> None:
        """A try went through: the next failure waits the shortest delay again; an outage is over."""
        self.backoff.reset()
        self.outage.recovered(held=held)
